package cli

import (
	"bytes"
	"context"
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
	} {
		var stderr bytes.Buffer
		_, err := parseServe(c.args, &stderr, env(c.env))
		if err == nil || !strings.Contains(err.Error()+stderr.String(), c.want) {
			t.Errorf("%v %v: error %v, want %q", c.args, c.env, err, c.want)
		}
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
	if code := Main([]string{"serve", "--listen", "ftp://x"}, "x", &out, &errOut, env(nil)); code != 1 || !strings.Contains(errOut.String(), "want grpc+unix:///path.sock or grpc://host:port") {
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
