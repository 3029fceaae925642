package cli

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	grpchealth "google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/pixelflight/pixelflight/server"
)

// serveAt starts a real sidecar (server.New) on location and returns the
// location clients use; the cleanup stops it.
func serveAt(t *testing.T, location string) string {
	t.Helper()
	l, loc, err := server.Listen(location)
	if err != nil {
		t.Fatal(err)
	}
	srv := server.New(server.Config{Version: "test", Workers: 1, DrainTimeout: time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return loc
}

// runHealth runs `pixelflight health args...` until it exits 0 or the
// deadline passes (the server reports SERVING a moment after it listens).
func runHealth(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		var out, errOut bytes.Buffer
		code := Main(append([]string{"health"}, args...), "test", &out, &errOut, func(k string) string { return env[k] })
		if code == 0 || time.Now().After(deadline) {
			return code, out.String(), errOut.String()
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestHealthServing(t *testing.T) {
	unix := serveAt(t, "grpc+unix://"+filepath.Join(t.TempDir(), "s.sock"))
	tcp := serveAt(t, "grpc://127.0.0.1:0")
	for _, c := range []struct {
		name string
		env  map[string]string
		args []string
	}{
		{"unix flag", nil, []string{"--endpoint", unix}},
		{"tcp flag", nil, []string{"--endpoint", tcp, "--timeout", "2s"}},
		{"PIXELFLIGHT_ENDPOINT", map[string]string{"PIXELFLIGHT_ENDPOINT": unix}, nil},
		{"PIXELFLIGHT_LISTEN", map[string]string{"PIXELFLIGHT_LISTEN": tcp}, nil},
		{"ENDPOINT before LISTEN", map[string]string{"PIXELFLIGHT_ENDPOINT": unix, "PIXELFLIGHT_LISTEN": "grpc+unix:///nonexistent/x.sock"}, nil},
	} {
		code, out, errOut := runHealth(t, c.env, c.args...)
		if code != 0 || out != "SERVING\n" {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want 0 and SERVING", c.name, code, out, errOut)
		}
	}
}

func TestHealthNotServing(t *testing.T) {
	// A health service that answers NOT_SERVING, as a draining sidecar does.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	hs := grpchealth.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	healthpb.RegisterHealthServer(g, hs)
	go g.Serve(l) //nolint:errcheck // stopped below
	defer g.Stop()
	draining := "grpc://" + l.Addr().String()

	// Listening but not a gRPC server: no answer within the timeout.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()

	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--endpoint", draining}, 1, "NOT_SERVING"},
		{[]string{"--endpoint", "grpc+unix://" + filepath.Join(t.TempDir(), "none.sock")}, 1, "not reachable"},
		{[]string{"--endpoint", "grpc://" + silent.Addr().String(), "--timeout", "300ms"}, 1, "no answer within 300ms"},
		{[]string{"--endpoint", "grpc+unix://relative.sock"}, 2, `want grpc+unix:///absolute/path.sock (three slashes): "relative.sock" would be read as a host`},
		{[]string{"--endpoint", "unix://tmp/pixelflight.sock"}, 2, `want unix:///absolute/path.sock (three slashes): "tmp" would be read as a host`},
		{[]string{"--endpoint", "grpc+unix:relative.sock"}, 2, "want an absolute socket path"},
		{[]string{"--endpoint", "grpc://127.0.0.1"}, 2, "want a port"},
		{[]string{"--endpoint", "http://127.0.0.1:80"}, 2, "want grpc+unix:///path.sock or grpc://host:port"},
		{[]string{"--timeout", "soon"}, 2, "invalid value"},
		{[]string{"extra"}, 2, "unexpected arguments"},
	} {
		var out, errOut bytes.Buffer
		code := Main(append([]string{"health"}, c.args...), "test", &out, &errOut, env(nil))
		if code != c.code || out.Len() != 0 || !strings.Contains(errOut.String(), c.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want %d and %q", c.args, code, out.String(), errOut.String(), c.code, c.want)
		}
	}
}

func TestDefaultEndpoint(t *testing.T) {
	t.Chdir(t.TempDir())
	if got := defaultEndpoint(env(nil)); got != DefaultListen() {
		t.Errorf("nothing set: %q, want serve's default %q", got, DefaultListen())
	}
	listen := map[string]string{"PIXELFLIGHT_LISTEN": "grpc://127.0.0.1:1"}
	if got := defaultEndpoint(env(listen)); got != "grpc://127.0.0.1:1" {
		t.Errorf("PIXELFLIGHT_LISTEN: %q", got)
	}
	// The executor plugin's file in the working directory comes before
	// PIXELFLIGHT_LISTEN, after PIXELFLIGHT_ENDPOINT.
	if err := os.WriteFile(endpointFile, []byte("grpc+unix:///x/s.sock\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := defaultEndpoint(env(listen)); got != "grpc+unix:///x/s.sock" {
		t.Errorf("with %s: %q", endpointFile, got)
	}
	if got := defaultEndpoint(env(map[string]string{"PIXELFLIGHT_ENDPOINT": "grpc://127.0.0.1:2"})); got != "grpc://127.0.0.1:2" {
		t.Errorf("PIXELFLIGHT_ENDPOINT: %q", got)
	}
}

func TestHealthFindsThePluginsEndpointFile(t *testing.T) {
	loc := serveAt(t, "grpc+unix://"+filepath.Join(t.TempDir(), "s.sock"))
	t.Chdir(t.TempDir())
	if err := os.WriteFile(endpointFile, []byte(loc+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := runHealth(t, nil); code != 0 || out != "SERVING\n" {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}
