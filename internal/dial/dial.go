package dial

import (
	"cmp"
	"context"
	"crypto/tls"
	"fmt"
	"math"
	"net"
	"net/url"
	"os"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/pixelflight/pixelflight/internal/unixsock"
)

// Target turns a Flight location (grpc+unix:///path.sock,
// grpc://host:port, grpc+tls://host:port, as the server's --listen takes)
// into a gRPC dial target, and says whether it wants TLS. An empty host
// means 127.0.0.1, as it does for the server.
func Target(endpoint string) (target string, useTLS bool, err error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return "", false, fmt.Errorf("endpoint %q: %w", endpoint, err)
	}
	switch u.Scheme {
	case "grpc+unix", "unix":
		path, err := unixsock.Path(u)
		if err != nil {
			return "", false, fmt.Errorf("endpoint %q: %w", endpoint, err)
		}
		return "unix://" + path, false, nil
	case "grpc", "grpc+tcp", "grpc+tls":
		host := u.Hostname()
		if host == "" {
			host = "127.0.0.1"
		}
		if u.Port() == "" {
			return "", false, fmt.Errorf("endpoint %q: want a port, as in grpc://127.0.0.1:8815", endpoint)
		}
		return "dns:///" + net.JoinHostPort(host, u.Port()), u.Scheme == "grpc+tls", nil
	}
	return "", false, fmt.Errorf("endpoint %q: want grpc+unix:///path.sock or grpc://host:port (grpc+tls:// with TLS)", endpoint)
}

// CheckPeer refuses, before anything is sent, a Unix-socket target (from
// Target) whose listener runs as another user (the rule of SECURITY.md's
// Unix sockets, in unixsock.PeerMessage's words); other targets pass, and
// so does a socket none listens at (the call then says it is unreachable).
func CheckPeer(ctx context.Context, target string) error {
	path, ok := strings.CutPrefix(target, "unix://")
	if !ok {
		return nil
	}
	uid, err := unixsock.PeerUID(ctx, path)
	if err != nil {
		return nil
	}
	if ours := os.Geteuid(); uid != ours {
		return fmt.Errorf(unixsock.PeerMessage, path, uid, ours)
	}
	return nil
}

// Options are a connection's options: TLS for a grpc+tls location
// (useTLS, from Target; cfg, or TLS 1.2 at least with the system's
// roots), the token on every call where there is one, results of any
// size.
func Options(useTLS bool, cfg *tls.Config, token string) []grpc.DialOption {
	creds := insecure.NewCredentials()
	if useTLS {
		creds = credentials.NewTLS(cmp.Or(cfg, &tls.Config{MinVersion: tls.VersionTLS12}))
	}
	opts := []grpc.DialOption{grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(math.MaxInt32))}
	if token != "" {
		opts = append(opts, grpc.WithPerRPCCredentials(bearer(token)))
	}
	return opts
}

// bearer is a token sent as "authorization: Bearer <token>", also over a
// Unix socket or loopback without TLS (where the server accepts it).
type bearer string

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(b)}, nil
}

func (bearer) RequireTransportSecurity() bool { return false }
