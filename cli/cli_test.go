package cli

import (
	"bytes"
	"context"
	"flag"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
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
		{[]string{"--gpu-lanes", "0"}, nil, "must be positive"},
		{[]string{"--metrics-labels", "spark_app_id"}, nil, "want name=value"},
		{[]string{"--metrics-labels", "9x=1"}, nil, "want name=value"},
		{[]string{"--metrics-labels", "a=1,a=2"}, nil, "given twice"},
		{[]string{"--workers", "0"}, nil, "0 only with --backend cuda or sim"},
		{[]string{"--memory-budget", "1000"}, nil, "at least 16 MiB"},
		{[]string{"--backend", "gpu"}, nil, "want auto, cpu, cuda or sim"},
		{[]string{"--sim", "copy=0"}, nil, `copy="0": want bytes per second`},
		{[]string{"--sim", "fft_convolve=fast"}, nil, `fft_convolve="fast"`},
		{[]string{"--sim", "speed=2"}, nil, `unknown setting "speed"`},
		{[]string{"--listen", "grpc+unix://tmp/pixelflight.sock"}, nil, `--listen: endpoint "grpc+unix://tmp/pixelflight.sock": want grpc+unix:///absolute/path.sock (three slashes): "tmp" would be read as a host`},
		{[]string{"--listen", "unix://tmp/pixelflight.sock"}, nil, `"tmp" would be read as a host`},
		{[]string{"--drain-timeout", "0"}, nil, "--drain-timeout 0s: want a positive duration"},
		{[]string{"--drain-timeout", "-1s"}, nil, "--drain-timeout -1s: want a positive duration"},
		{nil, map[string]string{"PIXELFLIGHT_DRAIN_TIMEOUT": "0s"}, "--drain-timeout 0s"},
	} {
		var stderr bytes.Buffer
		_, err := parseServe(c.args, &stderr, env(c.env))
		if err == nil || !strings.Contains(err.Error()+stderr.String(), c.want) {
			t.Errorf("%v %v: error %v, want %q", c.args, c.env, err, c.want)
		}
	}
}

// A flag on the command line wins, and its variable is not read; a
// variable that is set applies, even empty where empty is a value;
// --help works whatever the
// variables say.
func TestServeEnvironment(t *testing.T) {
	var help bytes.Buffer
	bad := env(map[string]string{"PIXELFLIGHT_WORKERS": "lots", "PIXELFLIGHT_LISTEN": "grpc+unix://tmp/x.sock", "PIXELFLIGHT_MAX_PIXELS": "lots"})
	f, err := parseServe([]string{"--workers", "3", "--listen", "grpc://127.0.0.1:1", "--max-pixels", "5"}, &help, bad)
	if err != nil || f.workers != 3 || f.listen != "grpc://127.0.0.1:1" || f.maxPixels != 5 {
		t.Errorf("good flags over bad variables: %+v, %v", f, err)
	}
	if _, err := parseServe([]string{"--help"}, &help, bad); err != flag.ErrHelp || !strings.Contains(help.String(), "--max-pixels") {
		t.Errorf("--help with bad variables: %v", err)
	}
	t.Setenv("PIXELFLIGHT_METRICS_LISTEN", "") // getenv says "", the environment says set
	if f, err := parseServe(nil, &help, env(nil)); err != nil || f.metricsListen != "" {
		t.Errorf("empty PIXELFLIGHT_METRICS_LISTEN: metrics on %q, %v; want off", f.metricsListen, err)
	}
	if f, err := parseServe([]string{"--metrics-listen", "127.0.0.1:1"}, &help, env(nil)); err != nil || f.metricsListen != "127.0.0.1:1" {
		t.Errorf("--metrics-listen over an empty variable: %q, %v", f.metricsListen, err)
	}
	t.Setenv("PIXELFLIGHT_WORKERS", "") // empty is no number: as if unset
	if f, err := parseServe(nil, &help, env(nil)); err != nil || f.workers != runtime.GOMAXPROCS(0) {
		t.Errorf("empty PIXELFLIGHT_WORKERS: %d workers, %v; want the default %d", f.workers, err, runtime.GOMAXPROCS(0))
	}
}

func TestSimFlag(t *testing.T) {
	r, err := parseSim("detect_faces=2ms, copy=1e9, decode_jpeg=30us")
	if err != nil || r.PerImage["detect_faces"] != 2*time.Millisecond || r.Copy != 1e9 || r.PerImage["fft_convolve"] != 12*time.Microsecond ||
		r.DecodeJPEG != 30*time.Microsecond {
		t.Fatalf("got %+v %v", r, err)
	}
	for _, bad := range []string{"decode_jpeg=-1s", "decode_jpeg=x", "nvjpeg=1us"} {
		if _, err := parseSim(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	if back, err := parseSim(formatSim(r)); err != nil || formatSim(back) != formatSim(r) {
		t.Fatalf("%q read back as %+v, %v", formatSim(r), back, err)
	}
}

func TestServeMetrics(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "pixelflight_up 1\n") })
	defer serveMetrics(addr, h, zap.NewNop())()
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
	serveMetrics(addr, h, log)()
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
	go func() { watchParent(ctx, func() { close(stopped) }, os.Getppid(), zap.NewNop()) }()
	select {
	case <-stopped:
		t.Fatal("watchParent stopped with the parent alive")
	case <-ctx.Done():
	}
	// A parent that exited before the watch began (during the start):
	// the parent pid read at the start is no longer this one's.
	gone := make(chan struct{})
	go watchParent(context.Background(), func() { close(gone) }, os.Getppid()+1e6, zap.NewNop())
	select {
	case <-gone:
	case <-time.After(5 * time.Second):
		t.Fatal("watchParent missed a parent that exited before it began")
	}
}
