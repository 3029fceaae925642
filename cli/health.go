package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// health is `pixelflight health`: it asks a running sidecar's standard gRPC
// health service (grpc.health.v1.Health/Check, service "") whether it takes
// new streams. It prints SERVING and returns 0, or prints why not and
// returns 1 (2 for a bad flag): the probe of the container image's
// HEALTHCHECK and of Kubernetes exec probes.
func health(args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	fs := flag.NewFlagSet("health", flag.ContinueOnError)
	fs.SetOutput(stderr)
	endpoint := fs.String("endpoint", defaultEndpoint(getenv), "the sidecar's location, grpc+unix:///path.sock or grpc://host:port; when not given: $PIXELFLIGHT_ENDPOINT, else ./pixelflight.endpoint (the Spark plugin's), else $PIXELFLIGHT_LISTEN, else serve's default")
	timeout := fs.Duration("timeout", 5*time.Second, "how long to wait for the answer")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: pixelflight health [flags]\n\nExits 0 and prints SERVING when the sidecar at --endpoint takes new streams; else prints why and exits 1.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "pixelflight health: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if err := check(*endpoint, *timeout); err != nil {
		fmt.Fprintf(stderr, "pixelflight health: %s: %v\n", *endpoint, err)
		return 1
	}
	fmt.Fprintln(stdout, "SERVING")
	return 0
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

// check returns nil when the health service at location answers SERVING.
func check(location string, timeout time.Duration) error {
	target, err := dialTarget(location)
	if err != nil {
		return err
	}
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: ""})
	if err != nil {
		st := status.Convert(err)
		switch st.Code() {
		case codes.DeadlineExceeded:
			return fmt.Errorf("no answer within %s", timeout)
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

// dialTarget turns a Flight location, as server.Listen takes it, into a
// gRPC dial target: grpc+unix:///abs/path.sock (or unix://) becomes
// unix:///abs/path.sock; grpc://host:port (or grpc+tcp://) becomes
// host:port, an empty host meaning 127.0.0.1 as it does for Listen.
func dialTarget(location string) (string, error) {
	u, err := url.Parse(location)
	if err != nil {
		return "", fmt.Errorf("location %q: %w", location, err)
	}
	switch u.Scheme {
	case "grpc+unix", "unix":
		if u.Path == "" || u.Path[0] != '/' {
			return "", fmt.Errorf("location %q: want an absolute socket path, as in grpc+unix:///tmp/pixelflight.sock", location)
		}
		return "unix://" + u.Path, nil
	case "grpc", "grpc+tcp":
		if u.Port() == "" {
			return "", fmt.Errorf("location %q: want a port, as in grpc://127.0.0.1:8815", location)
		}
		host := u.Hostname()
		if host == "" {
			host = "127.0.0.1"
		}
		return net.JoinHostPort(host, u.Port()), nil
	}
	return "", fmt.Errorf("location %q: want grpc+unix:///path.sock or grpc://host:port", location)
}
