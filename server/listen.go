package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"

	"github.com/pixelflight/pixelflight/internal/unixsock"
)

// ErrNotLoopback is returned by ListenConfig.Listen for a plain-TCP
// location beyond loopback when neither TLS nor InsecureListenAny is set.
var ErrNotLoopback = errors.New("plain TCP beyond loopback")

// ListenConfig says what a location may be opened for. The zero value
// allows Unix sockets and loopback TCP only.
type ListenConfig struct {
	// TLS: the server has TLS credentials (Config.TLS). grpc+tls://
	// locations need it, other locations refuse it.
	TLS bool
	// InsecureListenAny allows grpc://host:port on an address that is not
	// loopback without TLS (serve's --insecure-listen-any).
	InsecureListenAny bool
}

// Listen opens location with the zero ListenConfig: Unix sockets and
// loopback TCP only.
func Listen(location string) (net.Listener, string, error) {
	return ListenConfig{}.Listen(context.Background(), location)
}

// Listen opens a listener for a Flight location and returns it with the
// location clients should use (with the real port when port 0 was asked
// for):
//
//   - grpc+unix:///abs/path.sock (or unix://): a Unix socket, mode 0600
//     from the moment it can be reached (see listenUnix); a host
//     (grpc+unix://tmp/x.sock, two slashes) is refused;
//   - grpc://host:port (or grpc+tcp://): plain TCP, where an empty host
//     means 127.0.0.1. A host that is not loopback (0.0.0.0, a LAN
//     address, a name resolving to one) is refused with ErrNotLoopback
//     unless InsecureListenAny is set;
//   - grpc+tls://host:port: TCP for a server with TLS credentials, on any
//     address.
//
// The host is resolved once and the listener bound to that address, so
// the check and the bind see the same address.
func (c ListenConfig) Listen(ctx context.Context, location string) (net.Listener, string, error) {
	u, err := url.Parse(location)
	if err != nil {
		return nil, "", fmt.Errorf("listen location %q: %w", location, err)
	}
	useTLS := u.Scheme == "grpc+tls"
	switch u.Scheme {
	case "grpc+unix", "unix":
		if c.TLS {
			return nil, "", fmt.Errorf("listen location %q: TLS certificates are for grpc+tls://host:port locations; a Unix socket is plain (mode 0600)", location)
		}
		path, err := unixsock.Path(u)
		if err != nil {
			return nil, "", fmt.Errorf("listen location %q: %w", location, err)
		}
		return listenUnix(ctx, path)
	case "grpc", "grpc+tcp", "grpc+tls":
	default:
		return nil, "", fmt.Errorf("listen location %q: want grpc+unix:///path.sock or grpc://host:port, or grpc+tls://host:port", location)
	}
	if useTLS != c.TLS {
		if useTLS {
			return nil, "", fmt.Errorf("listen location %q: grpc+tls needs a certificate and key (--tls-cert, --tls-key)", location)
		}
		return nil, "", fmt.Errorf("listen location %q: TLS certificates were given: use grpc+tls://%s", location, u.Host)
	}
	host := u.Hostname()
	if host == "" {
		host = "127.0.0.1"
	}
	addr, err := resolve(ctx, host, u.Port())
	if err != nil {
		return nil, "", fmt.Errorf("listen location %q: %w", location, err)
	}
	if !useTLS && !c.InsecureListenAny && !addr.IP.IsLoopback() {
		return nil, "", fmt.Errorf("listen location %q: %s is not a loopback address and the connection would be plain text: "+
			"give a certificate (--tls-cert, --tls-key, and a grpc+tls:// location), or accept plain text on the network with --insecure-listen-any: %w",
			location, addr.IP, ErrNotLoopback)
	}
	var lc net.ListenConfig
	l, err := lc.Listen(ctx, "tcp", addr.String())
	if err != nil {
		return nil, "", fmt.Errorf("listen on %s: %w", location, err)
	}
	scheme := "grpc://"
	if useTLS {
		scheme = "grpc+tls://"
	}
	return l, scheme + l.Addr().String(), nil
}

// resolve turns host and port into the one TCP address to bind.
func resolve(ctx context.Context, host, port string) (*net.TCPAddr, error) {
	p, err := net.DefaultResolver.LookupPort(ctx, "tcp", port)
	if err != nil {
		return nil, fmt.Errorf("port: %w", err)
	}
	if ip := net.ParseIP(host); ip != nil {
		return &net.TCPAddr{IP: ip, Port: p}, nil
	}
	ips, err := net.DefaultResolver.LookupIP(ctx, "ip", host)
	if err != nil {
		return nil, fmt.Errorf("resolving %s: %w", host, err)
	}
	// As net.Listen would: the first IPv4 address, else the first one.
	ip := ips[0]
	for _, a := range ips {
		if a.To4() != nil {
			ip = a
			break
		}
	}
	return &net.TCPAddr{IP: ip, Port: p}, nil
}

// listenUnix opens the Unix socket at path (unixsock.Listen: mode 0600
// from the moment it can be reached there). The default socket's
// directory (unixsock.DefaultDir) is made 0700 when missing and refused
// when another user owns it or others may use it.
func listenUnix(ctx context.Context, path string) (net.Listener, string, error) {
	if dir := filepath.Dir(path); dir == unixsock.DefaultDir(os.Getenv) {
		if err := unixsock.PrivateDir(dir); err != nil {
			return nil, "", fmt.Errorf("listen on unix socket %s: %w", path, err)
		}
	}
	l, err := unixsock.Listen(ctx, path)
	if err != nil {
		return nil, "", err
	}
	return l, "grpc+unix://" + path, nil
}
