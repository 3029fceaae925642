package cli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/pixelflight/pixelflight/internal/dial"
	"github.com/pixelflight/pixelflight/server"
)

// health is `pixelflight health`: it asks a running sidecar's standard gRPC
// health service (grpc.health.v1.Health/Check, service "") whether it takes
// new streams. It prints SERVING and returns 0, or prints why not and
// returns 1 (2 for a bad flag): the probe of the container image's
// HEALTHCHECK and of Kubernetes exec probes. Against a sidecar with TLS or
// a token it takes the client settings the Python client takes, from
// flags or the same PIXELFLIGHT_* variables.
func health(args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	fs := newFlagSet("health")
	endpoint := fs.String("endpoint", defaultEndpoint(getenv), "the sidecar's location, grpc+unix:///path.sock, grpc://host:port or grpc+tls://host:port; when not given: $PIXELFLIGHT_ENDPOINT, else ./pixelflight.endpoint (the Spark plugin's), else $PIXELFLIGHT_LISTEN, else serve's default")
	timeout := fs.Duration("timeout", 5*time.Second, "how long to wait for the answer")
	p := clientFlags(fs, getenv)
	const head = "Usage: pixelflight health [flags]\n\nExits 0 and prints SERVING when the sidecar at --endpoint takes new streams; else prints why and exits 1.\n\n"
	if err := parseArgs(fs, head, args, stdout); err != nil {
		return usageError("health", err, stderr)
	}
	if _, _, err := dial.Target(*endpoint); err != nil {
		return usageError("health", err, stderr)
	}
	if err := p.readToken(getenv); err != nil {
		return usageError("health", err, stderr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if err := p.check(ctx, *endpoint); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("no answer within %s", *timeout)
		}
		fmt.Fprintf(stderr, "pixelflight health: %s: %v\n", *endpoint, err)
		return 1
	}
	fmt.Fprintln(stdout, "SERVING")
	return 0
}

// clientFlags adds the client settings for a sidecar with TLS or a token
// (what the Python client takes, from the same PIXELFLIGHT_* variables)
// to fs.
func clientFlags(fs *flag.FlagSet, getenv func(string) string) *probe {
	var p probe
	fs.StringVar(&p.tlsCA, "tls-ca", getenv("PIXELFLIGHT_TLS_CA"), "grpc+tls: PEM file of the CA certificates to trust (default $PIXELFLIGHT_TLS_CA, else the system's)")
	fs.StringVar(&p.clientCert, "client-cert", getenv("PIXELFLIGHT_CLIENT_CERT"), "grpc+tls: client certificate (PEM) for a server that asks for one (--tls-client-ca); default $PIXELFLIGHT_CLIENT_CERT")
	fs.StringVar(&p.clientKey, "client-key", getenv("PIXELFLIGHT_CLIENT_KEY"), "the client certificate's key (PEM); default $PIXELFLIGHT_CLIENT_KEY")
	fs.StringVar(&p.serverName, "tls-override-hostname", getenv("PIXELFLIGHT_TLS_OVERRIDE_HOSTNAME"), "grpc+tls: the name to verify the server's certificate against instead of the location's host; default $PIXELFLIGHT_TLS_OVERRIDE_HOSTNAME")
	fs.StringVar(&p.tokenFile, "token-file", "", "file holding the bearer token of a server started with --token-file; default $PIXELFLIGHT_TOKEN (the token itself), else $PIXELFLIGHT_TOKEN_FILE")
	return &p
}

// readToken sets the bearer token to send: from --token-file, else
// $PIXELFLIGHT_TOKEN, else the file $PIXELFLIGHT_TOKEN_FILE names; none
// when none is set.
func (p *probe) readToken(getenv func(string) string) error {
	file := p.tokenFile
	if file == "" {
		if v := strings.TrimSpace(getenv("PIXELFLIGHT_TOKEN")); v != "" {
			p.token = v
			return nil
		}
		file = getenv("PIXELFLIGHT_TOKEN_FILE")
	}
	if file == "" {
		return nil
	}
	var err error
	p.token, _, err = server.ReadToken(file)
	return err
}

// probe holds the client settings of a health check (or a bench).
type probe struct {
	tlsCA, clientCert, clientKey, serverName string // used for grpc+tls locations only
	tokenFile, token                         string
}

// endpointFile is what the Spark executor plugin writes into the
// executor's working directory (spark-plugin's Sidecar.ENDPOINT_FILE).
const endpointFile = "pixelflight.endpoint"

// defaultEndpoint is where the sidecar is when nothing says: as the Python
// client looks, PIXELFLIGHT_ENDPOINT, else the plugin's pixelflight.endpoint
// in the working directory (a probe in a YARN executor container runs
// there); then PIXELFLIGHT_LISTEN (what serve reads, so a probe in the
// sidecar's own container finds it), else serve's default location.
func defaultEndpoint(getenv func(string) string) string {
	if v := getenv("PIXELFLIGHT_ENDPOINT"); v != "" {
		return v
	}
	if b, err := os.ReadFile(endpointFile); err == nil {
		if v := strings.TrimSpace(string(b)); v != "" {
			return v
		}
	}
	if v := getenv("PIXELFLIGHT_LISTEN"); v != "" {
		return v
	}
	return DefaultListen()
}

// check returns nil when the health service at location answers SERVING
// before ctx ends.
func (p probe) check(ctx context.Context, location string) error {
	target, useTLS, err := dial.Target(location)
	if err != nil {
		return err
	}
	var cfg *tls.Config
	if useTLS {
		if cfg, err = p.tlsConfig(); err != nil {
			return err
		}
	}
	if err := dial.CheckPeer(ctx, target); err != nil {
		return err
	}
	conn, err := grpc.NewClient(target, dial.Options(useTLS, cfg, p.token)...)
	if err != nil {
		return err
	}
	defer conn.Close()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: ""})
	if err != nil {
		st := status.Convert(err)
		switch st.Code() {
		case codes.DeadlineExceeded:
			return context.DeadlineExceeded
		case codes.Unavailable:
			return fmt.Errorf("not reachable: %s", st.Message())
		}
		return fmt.Errorf("%s: %s", st.Code(), st.Message())
	}
	if s := resp.GetStatus(); s != healthpb.HealthCheckResponse_SERVING {
		return fmt.Errorf("%s (draining or not started)", s)
	}
	return nil
}

// tlsConfig is the probe's TLS client configuration: the CA file's
// certificates as roots (else the system's), the client certificate when
// given, TLS 1.2 at least.
func (p probe) tlsConfig() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: p.serverName}
	if p.tlsCA != "" {
		b, err := os.ReadFile(p.tlsCA)
		if err != nil {
			return nil, fmt.Errorf("--tls-ca: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("--tls-ca %s holds no PEM certificate", p.tlsCA)
		}
	}
	if p.clientCert != "" || p.clientKey != "" {
		cert, err := tls.LoadX509KeyPair(p.clientCert, p.clientKey)
		if err != nil {
			return nil, fmt.Errorf("--client-cert, --client-key: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}
