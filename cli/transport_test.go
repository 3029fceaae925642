package cli

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pixelflight/pixelflight/server"
)

// The transport limits' flags: defaults from server.DefaultTransport, 0
// is "never" (negative in server.Transport), variables apply, bad values
// are usage errors.
func TestTransportFlags(t *testing.T) {
	var help bytes.Buffer
	f, err := parseServe(nil, &help, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	def := server.DefaultTransport()
	def.Handshake = 0 // no flag: the server's default
	if tr, err := f.transport.config(); err != nil || tr != def {
		t.Errorf("defaults: %+v, %v; want %+v", tr, err, def)
	}
	f, err = parseServe([]string{"--conn-idle-timeout", "0", "--stream-idle-timeout", "0", "--keepalive-time", "0", "--command-timeout", "5s", "--max-conn-streams", "10"},
		&help, env(map[string]string{"PIXELFLIGHT_KEEPALIVE_TIMEOUT": "3s", "PIXELFLIGHT_COMMAND_TIMEOUT": "9s"}))
	if err != nil {
		t.Fatal(err)
	}
	want := server.Transport{ConnIdle: -1, KeepaliveTime: -1, KeepaliveTimeout: 3 * time.Second, Command: 5 * time.Second, StreamIdle: -1, MaxStreams: 10}
	if tr, err := f.transport.config(); err != nil || tr != want {
		t.Errorf("0s, flags and variables: %+v, %v; want %+v", tr, err, want)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--conn-idle-timeout", "-1s"}, "must not be negative"},
		{[]string{"--command-timeout", "0"}, "--command-timeout must be positive"},
		{[]string{"--keepalive-timeout", "0"}, "--keepalive-timeout and --command-timeout must be positive"},
		{[]string{"--max-conn-streams", "0"}, "--max-conn-streams 0: want 1 to"},
		{[]string{"--metrics-listen", "9477"}, `--metrics-listen "9477": want host:port`},
	} {
		if _, err := parseServe(c.args, &help, env(nil)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
	if _, err := parseServe([]string{"--help"}, &help, env(nil)); err == nil {
		t.Fatal("--help: no ErrHelp")
	}
	for _, name := range []string{"--conn-idle-timeout", "--keepalive-time", "--keepalive-timeout", "--command-timeout", "--stream-idle-timeout", "--max-conn-streams"} {
		if !strings.Contains(help.String(), name) {
			t.Errorf("--help does not list %s", name)
		}
	}
}

// --metrics-listen with an empty host binds loopback, as --listen does;
// beyond loopback only with a host given.
func TestMetricsListenLoopback(t *testing.T) {
	for in, want := range map[string]string{":9477": "127.0.0.1:9477", "0.0.0.0:9477": "0.0.0.0:9477", "[::1]:1": "[::1]:1", "localhost:9": "localhost:9"} {
		if got, err := metricsAddr(in); err != nil || got != want {
			t.Errorf("metricsAddr(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	var logs bytes.Buffer
	log, _ := newLogger("json", "info", &logs)
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "pixelflight_up 1\n") })
	stop := serveMetrics(":0", h, log)
	defer stop()
	if !strings.Contains(logs.String(), `"metrics_listen":"http://127.0.0.1:`) || strings.Contains(logs.String(), "beyond this machine") {
		t.Fatalf(":0 did not bind loopback alone: %s", logs.String())
	}
}
