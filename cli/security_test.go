package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pixelflight/pixelflight/internal/testpki"
	"github.com/pixelflight/pixelflight/server"
)

func TestServeRefusesPlainTextBeyondLoopback(t *testing.T) {
	var out, errOut bytes.Buffer
	code := Main([]string{"serve", "--listen", "grpc://0.0.0.0:0", "--metrics-listen", ""}, "x", &out, &errOut, env(nil))
	if code != 1 || !strings.Contains(errOut.String(), "--tls-cert") || !strings.Contains(errOut.String(), "--insecure-listen-any") {
		t.Errorf("exit %d, stderr %q; want 1 and a message naming --tls-cert and --insecure-listen-any", code, errOut.String())
	}
}

func TestServeSecurityFlags(t *testing.T) {
	var stderr bytes.Buffer
	f, err := parseServe(nil, &stderr, env(map[string]string{
		"PIXELFLIGHT_TLS_CERT": "c.pem", "PIXELFLIGHT_TLS_KEY": "k.pem", "PIXELFLIGHT_TLS_CLIENT_CA": "ca.pem",
		"PIXELFLIGHT_TOKEN_FILE": "tok", "PIXELFLIGHT_INSECURE_LISTEN_ANY": "true",
	}))
	if err != nil || f.tlsCert != "c.pem" || f.tlsKey != "k.pem" || f.tlsClientCA != "ca.pem" || f.tokenFile != "tok" || !f.insecureListenAny {
		t.Errorf("from the environment: %+v, %v", f, err)
	}
	for _, args := range [][]string{{"--tls-cert", "c.pem"}, {"--tls-key", "k.pem"}, {"--tls-client-ca", "ca.pem"}} {
		if _, err := parseServe(args, &stderr, env(nil)); err == nil || !strings.Contains(err.Error(), "go together") {
			t.Errorf("%v: %v", args, err)
		}
	}

	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, []byte("\n"), 0o600)
	sock := "grpc+unix://" + filepath.Join(dir, "s.sock")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--token-file", empty}, "is empty"},
		{[]string{"--token-file", filepath.Join(dir, "missing")}, "token file"},
		{[]string{"--tls-cert", filepath.Join(dir, "c.pem"), "--tls-key", filepath.Join(dir, "k.pem")}, "TLS certificate"},
	} {
		var out, errOut bytes.Buffer
		code := Main(append([]string{"serve", "--listen", sock, "--metrics-listen", ""}, c.args...), "x", &out, &errOut, env(nil))
		if code != 1 || !strings.Contains(errOut.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 1 and %q", c.args, code, errOut.String(), c.want)
		}
	}
}

// TestHealthTLSAndToken: the probe against a mutual-TLS server with a
// token, its settings from flags or from the Python client's variables.
func TestHealthTLSAndToken(t *testing.T) {
	dir := t.TempDir()
	pki, err := testpki.Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("health-token-42\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := server.LoadTLS(server.TLSFiles{Cert: pki.ServerCert, Key: pki.ServerKey, ClientCA: pki.CA})
	if err != nil {
		t.Fatal(err)
	}
	l, loc, err := server.ListenConfig{TLS: true}.Listen(context.Background(), "grpc+tls://localhost:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := server.New(server.Config{Version: "test", Workers: 1, DrainTimeout: time.Second, TLS: cfg, Token: "health-token-42"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})

	certs := []string{"--tls-ca", pki.CA, "--client-cert", pki.ClientCert, "--client-key", pki.ClientKey}
	clientEnv := map[string]string{"PIXELFLIGHT_ENDPOINT": loc, "PIXELFLIGHT_TLS_CA": pki.CA,
		"PIXELFLIGHT_CLIENT_CERT": pki.ClientCert, "PIXELFLIGHT_CLIENT_KEY": pki.ClientKey}
	with := func(k, v string) map[string]string {
		m := map[string]string{k: v}
		for k, v := range clientEnv {
			m[k] = v
		}
		return m
	}
	for _, c := range []struct {
		name string
		env  map[string]string
		args []string
	}{
		{"flags", nil, append([]string{"--endpoint", loc, "--token-file", tokenFile}, certs...)},
		{"PIXELFLIGHT_TOKEN_FILE", with("PIXELFLIGHT_TOKEN_FILE", tokenFile), nil},
		{"PIXELFLIGHT_TOKEN", with("PIXELFLIGHT_TOKEN", "health-token-42"), nil},
		{"--token-file before PIXELFLIGHT_TOKEN", with("PIXELFLIGHT_TOKEN", "wrong"), []string{"--token-file", tokenFile}},
		{"--tls-override-hostname", with("PIXELFLIGHT_TOKEN", "health-token-42"), []string{"--tls-override-hostname", "localhost"}},
	} {
		if code, out, errOut := runHealth(t, c.env, c.args...); code != 0 || out != "SERVING\n" {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want 0 and SERVING", c.name, code, out, errOut)
		}
	}
	// The load generator takes the same settings.
	bench := []string{"--count", "6", "--streams", "2", "--rows-per-batch", "3", "--warmup", "0", "--generate", "8x8", "--op", "echo", "--json"}
	if code, out, errOut := runBenchMain(t, with("PIXELFLIGHT_TOKEN", "health-token-42"), bench...); code != 0 || !strings.Contains(out, `"images":6`) {
		t.Errorf("bench with TLS and a token: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code, _, errOut := runBenchMain(t, clientEnv, bench...); code != 1 || !strings.Contains(errOut, "Unauthenticated") {
		t.Errorf("bench without the token: exit %d, stderr %q; want 1 and Unauthenticated", code, errOut)
	}
	for _, c := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"no token", clientEnv, nil, "Unauthenticated"},
		{"wrong token", with("PIXELFLIGHT_TOKEN", "wrong-token"), nil, "does not match"},
		{"no client certificate", map[string]string{"PIXELFLIGHT_TOKEN": "health-token-42"}, []string{"--endpoint", loc, "--tls-ca", pki.CA}, "not reachable"},
		{"untrusted server", map[string]string{"PIXELFLIGHT_TOKEN": "health-token-42"}, append([]string{"--endpoint", loc}, certs[2:]...), "not reachable"},
		{"name not in the certificate", with("PIXELFLIGHT_TOKEN", "health-token-42"), []string{"--tls-override-hostname", "other.example"}, "not reachable"},
		{"plain text", map[string]string{"PIXELFLIGHT_TOKEN": "health-token-42"}, []string{"--endpoint", strings.Replace(loc, "grpc+tls", "grpc", 1)}, "not reachable"},
	} {
		var out, errOut bytes.Buffer
		code := Main(append([]string{"health", "--timeout", "2s"}, c.args...), "test", &out, &errOut, env(c.env))
		if code != 1 || out.Len() != 0 || !strings.Contains(errOut.String(), c.want) || strings.Contains(errOut.String(), "health-token-42") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want 1 and %q, without the token", c.name, code, out.String(), errOut.String(), c.want)
		}
	}
}
