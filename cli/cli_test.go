package cli

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestServeFlagsFromEnvAndCommandLine(t *testing.T) {
	var stderr bytes.Buffer
	f, err := parseServe([]string{"--workers", "3"}, &stderr, env(map[string]string{
		"PIXELFLIGHT_WORKERS":       "7",
		"PIXELFLIGHT_LISTEN":        "grpc://127.0.0.1:9999",
		"PIXELFLIGHT_MAX_PIXELS":    "1000",
		"PIXELFLIGHT_DRAIN_TIMEOUT": "5s",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if f.workers != 3 || f.listen != "grpc://127.0.0.1:9999" || f.maxPixels != 1000 || f.drain != 5*time.Second {
		t.Errorf("flags = %+v: want the command line's workers and the environment's others", f)
	}
	if f, _ := parseServe(nil, &stderr, env(nil)); !strings.HasPrefix(f.listen, "grpc+unix://") {
		t.Errorf("default listen %q is not a Unix socket", f.listen)
	}
}

func TestServeFlagErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"--max-pixels", "lots"}, nil, "invalid value"},
		{nil, map[string]string{"PIXELFLIGHT_MAX_PIXELS": "lots"}, "PIXELFLIGHT_MAX_PIXELS"},
		{[]string{"--log-format", "xml"}, nil, "want json or console"},
		{[]string{"--max-pixels", "0"}, nil, "must be positive"},
		{[]string{"extra"}, nil, "unexpected arguments"},
		{[]string{"--max-batch", "0"}, nil, "must be positive"},
		{[]string{"--workers", "0"}, nil, "0 only beside --throttled-backend"},
		{[]string{"--max-inflight-bytes", "1000"}, nil, "at least 1 MiB"},
		{[]string{"--throttled-backend", "lanes=0"}, nil, `lanes="0": want 1 to 1024`},
		{[]string{"--throttled-backend", "per-image=fast"}, nil, `per-image="fast"`},
		{[]string{"--throttled-backend", "speed=2"}, nil, `unknown setting "speed"`},
	} {
		var stderr bytes.Buffer
		_, err := parseServe(c.args, &stderr, env(c.env))
		if err == nil || !strings.Contains(err.Error()+stderr.String(), c.want) {
			t.Errorf("%v %v: error %v, want %q", c.args, c.env, err, c.want)
		}
	}
}

func TestThrottledBackendFlag(t *testing.T) {
	lanes, per, err := parseThrottled("lanes=2, per-image=15ms")
	if err != nil || lanes != 2 || per != 15*time.Millisecond {
		t.Fatalf("got %d %v %v", lanes, per, err)
	}
}

func TestServeMetrics(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "pixelflight_up 1\n") })
	serveMetrics(ctx, addr, h, zap.NewNop())
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "pixelflight_up 1\n" {
		t.Fatalf("metrics body %q", body)
	}
	// A second sidecar on the same port serves without metrics, warning.
	var logs bytes.Buffer
	log, _ := newLogger("json", "info", &logs)
	serveMetrics(ctx, addr, h, log)
	if !strings.Contains(logs.String(), "serving without metrics") {
		t.Fatalf("no warning for a taken port: %s", logs.String())
	}
}

func TestMain(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := Main([]string{"version"}, "1.2.3", &out, &errOut, env(nil)); code != 0 || !strings.Contains(out.String(), "pixelflight 1.2.3") {
		t.Errorf("version: %d %q", code, out.String())
	}
	if code := Main([]string{"frobnicate"}, "x", &out, &errOut, env(nil)); code != 2 || !strings.Contains(errOut.String(), `unknown command "frobnicate"`) {
		t.Errorf("unknown command: %d %q", code, errOut.String())
	}
	errOut.Reset()
	if code := Main([]string{"serve", "--listen", "ftp://x"}, "x", &out, &errOut, env(nil)); code != 2 || !strings.Contains(errOut.String(), "want grpc+unix:///path.sock or grpc://host:port") {
		t.Errorf("bad listen: %d %q", code, errOut.String())
	}
	errOut.Reset()
	if code := Main([]string{"serve", "--cascade-dir", "/no/such/dir"}, "x", &out, &errOut, env(nil)); code != 1 || !strings.Contains(errOut.String(), "cascade directory") {
		t.Errorf("missing cascade dir: %d %q", code, errOut.String())
	}
}

func TestWatchParent(t *testing.T) {
	// The parent of this test process stays alive, so nothing happens
	// until ctx ends.
	ctx, cancel := context.WithTimeout(context.Background(), 600*time.Millisecond)
	defer cancel()
	stopped := make(chan struct{})
	go func() { watchParent(ctx, func() { close(stopped) }, zap.NewNop()) }()
	select {
	case <-stopped:
		t.Fatal("watchParent stopped with the parent alive")
	case <-ctx.Done():
	}
}
