package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/pixelflight/pixelflight/internal/testpki"
	"github.com/pixelflight/pixelflight/kernels/haar"
)

// serveSecure serves cfg on location opened with lc and returns the
// location; the cleanup stops the server.
func serveSecure(t *testing.T, lc ListenConfig, location string, cfg Config) string {
	t.Helper()
	l, loc, err := lc.Listen(context.Background(), location)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Version, cfg.DrainTimeout = "test", 5*time.Second
	if cfg.Workers == 0 {
		cfg.Workers = 1
	}
	srv := New(cfg)
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

// dial connects a Flight client to a location.
func dial(t *testing.T, loc string, opts ...grpc.DialOption) (flight.Client, *grpc.ClientConn) {
	t.Helper()
	target := strings.Replace(loc, "grpc+unix://", "unix://", 1)
	target = strings.TrimPrefix(strings.TrimPrefix(target, "grpc://"), "grpc+tls://")
	conn, err := grpc.NewClient(target, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return flight.NewClientFromConn(conn, nil), conn
}

// healthAction runs the "health" action and returns the call's error.
func healthAction(c flight.Client) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := c.DoAction(ctx, &flight.Action{Type: "health"})
	if err != nil {
		return err
	}
	_, err = stream.Recv()
	return err
}

func tlsCreds(t *testing.T, caFile, certFile, keyFile string) grpc.DialOption {
	t.Helper()
	cfg := &tls.Config{RootCAs: x509.NewCertPool()}
	b, err := os.ReadFile(caFile)
	if err != nil || !cfg.RootCAs.AppendCertsFromPEM(b) {
		t.Fatalf("CA %s: %v", caFile, err)
	}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			t.Fatal(err)
		}
		// Sent whatever CAs the server names as acceptable (Go's default
		// would hold back a certificate of another CA).
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }
	}
	return grpc.WithTransportCredentials(credentials.NewTLS(cfg))
}

func TestListenRefusesPlainTextBeyondLoopback(t *testing.T) {
	ctx := context.Background()
	// 192.0.2.1 is TEST-NET-1: refused before any bind is tried.
	for _, loc := range []string{"grpc://0.0.0.0:0", "grpc://[::]:0", "grpc+tcp://192.0.2.1:0"} {
		l, _, err := ListenConfig{}.Listen(ctx, loc)
		if err == nil {
			l.Close()
			t.Errorf("%s: plain text beyond loopback was allowed", loc)
			continue
		}
		if !errors.Is(err, ErrNotLoopback) || !strings.Contains(err.Error(), "--tls-cert") || !strings.Contains(err.Error(), "--insecure-listen-any") {
			t.Errorf("%s: %v; want ErrNotLoopback naming --tls-cert and --insecure-listen-any", loc, err)
		}
	}
	for _, loc := range []string{"grpc://:0", "grpc://127.0.0.2:0", "grpc://localhost:0", "grpc://[::1]:0"} {
		l, _, err := ListenConfig{}.Listen(ctx, loc)
		if err != nil {
			if loc == "grpc://[::1]:0" && !errors.Is(err, ErrNotLoopback) {
				continue // no IPv6 here
			}
			t.Errorf("%s: loopback refused: %v", loc, err)
			continue
		}
		l.Close()
	}
	l, loc, err := ListenConfig{InsecureListenAny: true}.Listen(ctx, "grpc://0.0.0.0:0")
	if err != nil {
		t.Fatalf("--insecure-listen-any: %v", err)
	}
	l.Close()
	if !strings.HasPrefix(loc, "grpc://") || strings.Contains(loc, "127.0.0.1") || strings.HasSuffix(loc, ":0") {
		t.Errorf("location %q: want every interface with the real port", loc)
	}

	// The scheme and the TLS setting must agree.
	sock := "grpc+unix://" + filepath.Join(t.TempDir(), "s.sock")
	for _, c := range []struct {
		lc   ListenConfig
		loc  string
		want string
	}{
		{ListenConfig{}, "grpc+tls://127.0.0.1:0", "--tls-cert"},
		{ListenConfig{TLS: true}, "grpc://127.0.0.1:0", "use grpc+tls://127.0.0.1:0"},
		{ListenConfig{TLS: true}, sock, "Unix socket is plain"},
		{ListenConfig{}, "http://127.0.0.1:0", "want grpc+unix"},
	} {
		if l, _, err := c.lc.Listen(ctx, c.loc); err == nil || !strings.Contains(err.Error(), c.want) {
			if l != nil {
				l.Close()
			}
			t.Errorf("%+v %s: %v; want %q", c.lc, c.loc, err, c.want)
		}
	}
}

func TestTLS(t *testing.T) {
	pki, err := testpki.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadTLS(TLSFiles{Cert: pki.ServerCert, Key: pki.ServerKey})
	if err != nil {
		t.Fatal(err)
	}
	// TLS may listen beyond loopback without --insecure-listen-any.
	loc := serveSecure(t, ListenConfig{TLS: true}, "grpc+tls://0.0.0.0:0", Config{TLS: cfg})
	_, port, err := net.SplitHostPort(strings.TrimPrefix(loc, "grpc+tls://"))
	if !strings.HasPrefix(loc, "grpc+tls://") || err != nil {
		t.Fatalf("location %q: %v", loc, err)
	}
	loc = "grpc+tls://127.0.0.1:" + port // a name in the certificate

	c, conn := dial(t, loc, tlsCreds(t, pki.CA, "", ""))
	if err := healthAction(c); err != nil {
		t.Fatalf("TLS client trusting the CA: %v", err)
	}
	var p peer.Peer
	if _, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{}, grpc.Peer(&p)); err != nil {
		t.Fatal(err)
	}
	if info, ok := p.AuthInfo.(credentials.TLSInfo); !ok || info.State.Version != tls.VersionTLS13 {
		t.Errorf("peer %+v: want TLS 1.3", p.AuthInfo)
	}

	refused := map[string]grpc.DialOption{
		"plain text":           grpc.WithTransportCredentials(insecure.NewCredentials()),
		"untrusted (other CA)": tlsCreds(t, pki.OtherCA, "", ""),
		"TLS 1.1": grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{
			RootCAs: must(t, pki.CA), MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11})),
	}
	for name, opt := range refused {
		c, _ := dial(t, loc, opt)
		if err := healthAction(c); status.Code(err) != codes.Unavailable {
			t.Errorf("%s: %v; want UNAVAILABLE", name, err)
		}
	}
}

func must(t *testing.T, caFile string) *x509.CertPool {
	t.Helper()
	b, err := os.ReadFile(caFile)
	pool := x509.NewCertPool()
	if err != nil || !pool.AppendCertsFromPEM(b) {
		t.Fatalf("CA %s: %v", caFile, err)
	}
	return pool
}

func TestMutualTLS(t *testing.T) {
	pki, err := testpki.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadTLS(TLSFiles{Cert: pki.ServerCert, Key: pki.ServerKey, ClientCA: pki.CA})
	if err != nil {
		t.Fatal(err)
	}
	loc := serveSecure(t, ListenConfig{TLS: true}, "grpc+tls://127.0.0.1:0", Config{TLS: cfg})

	c, _ := dial(t, loc, tlsCreds(t, pki.CA, pki.ClientCert, pki.ClientKey))
	if err := healthAction(c); err != nil {
		t.Fatalf("client with a certificate of the client CA: %v", err)
	}
	for name, opt := range map[string]grpc.DialOption{
		"no client certificate":            tlsCreds(t, pki.CA, "", ""),
		"client certificate of another CA": tlsCreds(t, pki.CA, pki.OtherClientCert, pki.OtherClientKey),
	} {
		c, _ := dial(t, loc, opt)
		if err := healthAction(c); err == nil {
			t.Errorf("%s: accepted", name)
		} else if code := status.Code(err); code != codes.Unavailable {
			t.Errorf("%s: %v; want UNAVAILABLE (handshake refused)", name, err)
		}
	}

	for _, f := range []TLSFiles{
		{Cert: pki.ServerCert},
		{Cert: pki.ServerCert, Key: pki.ClientKey},                          // not its key
		{Cert: pki.ServerCert, Key: pki.ServerKey, ClientCA: pki.ServerKey}, // no certificate in it
	} {
		if _, err := LoadTLS(f); err == nil {
			t.Errorf("LoadTLS(%+v) accepted", f)
		}
	}
}

// bearer sends "authorization: <value>" with every call, over any transport.
type bearer string

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": string(b)}, nil
}
func (bearer) RequireTransportSecurity() bool { return false }

func TestToken(t *testing.T) {
	const token = "s3cret-Token-0123456789abcdef"
	loc := serveSecure(t, ListenConfig{}, "grpc+unix://"+filepath.Join(t.TempDir(), "s.sock"), Config{Token: token})
	plain := grpc.WithTransportCredentials(insecure.NewCredentials())
	mem := memory.NewGoAllocator()

	call := func(c flight.Client, conn *grpc.ClientConn) map[string]error {
		batch := imageBatch(mem, "content", []byte("x"))
		defer batch.Release()
		_, xerr := exchange(t, c, `{"op": "echo"}`, batch)
		_, herr := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{})
		lerr := func() error {
			s, err := c.ListActions(context.Background(), &flight.Empty{})
			if err == nil {
				_, err = s.Recv()
			}
			return err
		}()
		return map[string]error{"DoExchange": xerr, "DoAction": healthAction(c), "ListActions": lerr, "health.v1": herr}
	}

	c, conn := dial(t, loc, plain, grpc.WithPerRPCCredentials(bearer("Bearer "+token)))
	for method, err := range call(c, conn) {
		if err != nil {
			t.Errorf("right token, %s: %v", method, err)
		}
	}
	c, conn = dial(t, loc, plain, grpc.WithPerRPCCredentials(bearer("bearer "+token)))
	if err := healthAction(c); err != nil {
		t.Errorf("lower-case scheme: %v", err)
	}

	for name, opts := range map[string][]grpc.DialOption{
		"no token":         {plain},
		"wrong token":      {plain, grpc.WithPerRPCCredentials(bearer("Bearer not-" + token))},
		"token prefix":     {plain, grpc.WithPerRPCCredentials(bearer("Bearer " + token[:10]))},
		"not Bearer":       {plain, grpc.WithPerRPCCredentials(bearer("Basic " + token))},
		"token, no scheme": {plain, grpc.WithPerRPCCredentials(bearer(token))},
	} {
		c, conn := dial(t, loc, opts...)
		for method, err := range call(c, conn) {
			st := status.Convert(err)
			if st.Code() != codes.Unauthenticated {
				t.Errorf("%s, %s: %v; want UNAUTHENTICATED", name, method, err)
			}
			if strings.Contains(st.Message(), token[:10]) {
				t.Errorf("%s, %s: the message %q holds the token", name, method, st.Message())
			}
		}
	}
	c, _ = dial(t, loc, plain)
	if err := healthAction(c); !strings.Contains(status.Convert(err).Message(), "authorization: Bearer <token>") {
		t.Errorf("no token: %v; want a message naming the header", err)
	}
	c, _ = dial(t, loc, plain, grpc.WithPerRPCCredentials(bearer("Bearer wrong")))
	if err := healthAction(c); !strings.Contains(status.Convert(err).Message(), "does not match") {
		t.Errorf("wrong token: %v; want a message saying it does not match", err)
	}
}

func TestReadToken(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil { // past the umask
			t.Fatal(err)
		}
		return p
	}
	if tok, loose, err := ReadToken(write("ok", "  abc123\n", 0o600)); tok != "abc123" || loose || err != nil {
		t.Errorf("0600 file: %q %v %v", tok, loose, err)
	}
	if tok, loose, err := ReadToken(write("loose", "abc123\n", 0o644)); tok != "abc123" || !loose || err != nil {
		t.Errorf("0644 file: %q %v %v; want the token, reported loose", tok, loose, err)
	}
	for _, p := range []string{write("empty", " \n\t", 0o600), write("spaced", "abc 123", 0o600), write("ctl", "abc\x01", 0o600), filepath.Join(dir, "missing")} {
		if tok, _, err := ReadToken(p); err == nil {
			t.Errorf("%s: accepted %q", p, tok)
		} else if strings.Contains(err.Error(), "abc") {
			t.Errorf("%s: the error %q holds the token", p, err)
		}
	}
}

// TestCascadeNamesNeverPaths: requests name a cascade; a path, relative
// or absolute, to a cascade file outside the configured directories is
// refused before any file is opened. (The library's own test is
// kernels/haar TestLibrary; tests/test_faces.py::test_bad_params does the
// same end to end with /usr/share paths and ../../../etc/passwd.)
func TestCascadeNamesNeverPaths(t *testing.T) {
	lib, outside := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(lib, "mine.xml"), []byte("<opencv_storage>"), 0o644)
	os.WriteFile(filepath.Join(outside, "secret.xml"), []byte("<opencv_storage>"), 0o644)
	cascades, err := haar.OpenLibrary(lib)
	if err != nil {
		t.Fatal(err)
	}
	f := startWith(t, "grpc+unix://"+filepath.Join(t.TempDir(), "s.sock"), Config{Workers: 1, Cascades: cascades})
	mem := memory.NewGoAllocator()
	batch := imageBatch(mem, "content", pngBytes(t, 8, 8))
	defer batch.Release()
	rel, _ := filepath.Rel(lib, filepath.Join(outside, "secret"))
	for _, name := range []string{
		rel, filepath.Join(outside, "secret"), filepath.Join(outside, "secret.xml"), "secret",
		"mine.xml", "./mine", "../" + filepath.Base(lib) + "/mine", filepath.Join(lib, "mine.xml"), "/etc/passwd", "",
	} {
		cmd := `{"op": "detect_faces", "params": {"cascade": ` + quote(name) + `}}`
		_, err := exchange(t, f.client, cmd, batch)
		if st := status.Convert(err); st.Code() != codes.InvalidArgument || !strings.Contains(st.Message(), "not installed") {
			t.Errorf("cascade %q: %v; want INVALID_ARGUMENT, not installed", name, err)
		}
	}
	// The configured one is found (and, being broken, fails to parse: the
	// file was opened).
	_, err = exchange(t, f.client, `{"op": "detect_faces", "params": {"cascade": "mine"}}`, batch)
	if st := status.Convert(err); st.Code() != codes.InvalidArgument || strings.Contains(st.Message(), "not installed") {
		t.Errorf("cascade mine: %v; want a parse error", err)
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
