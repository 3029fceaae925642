package cli

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
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
		{[]string{"--workers", "0"}, nil, "0 only with --backend cuda or sim"},
		{[]string{"--max-inflight-bytes", "1000"}, nil, "at least 1 MiB"},
		{[]string{"--backend", "gpu"}, nil, "want auto, cpu, cuda or sim"},
		{[]string{"--sim", "copy=0"}, nil, `copy="0": want bytes per second`},
		{[]string{"--sim", "fft_convolve=fast"}, nil, `fft_convolve="fast"`},
		{[]string{"--sim", "speed=2"}, nil, `unknown setting "speed"`},
	} {
		var stderr bytes.Buffer
		_, err := parseServe(c.args, &stderr, env(c.env))
		if err == nil || !strings.Contains(err.Error()+stderr.String(), c.want) {
			t.Errorf("%v %v: error %v, want %q", c.args, c.env, err, c.want)
		}
	}
}

func TestSimFlag(t *testing.T) {
	r, err := parseSim("detect_faces=2ms, copy=1e9")
	if err != nil || r.PerImage["detect_faces"] != 2*time.Millisecond || r.Copy != 1e9 || r.PerImage["fft_convolve"] != 12*time.Microsecond {
		t.Fatalf("got %+v %v", r, err)
	}
	if back, err := parseSim(formatSim(r)); err != nil || formatSim(back) != formatSim(r) {
		t.Fatalf("%q read back as %+v, %v", formatSim(r), back, err)
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

// TestMain lets bench's tests start this test binary as their server:
// bench runs os.Executable() serve with PIXELFLIGHT_BENCH_SERVER set.
func TestMain(m *testing.M) {
	if os.Getenv(benchChildEnv) != "" {
		os.Exit(Main(os.Args[1:], "test", os.Stdout, os.Stderr, os.Getenv))
	}
	os.Exit(m.Run())
}

func TestCommands(t *testing.T) {
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
