package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pixelflight/pixelflight/internal/unixsock"
)

func TestListenUnix(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pf.sock")
	l, loc, err := Listen("grpc+unix://" + path)
	if err != nil {
		t.Fatal(err)
	}
	if loc != "grpc+unix://"+path {
		t.Errorf("location %q", loc)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket mode %v, %v: want 0600", fi.Mode().Perm(), err)
	}
	if _, _, err := Listen("grpc+unix://" + path); err == nil || !strings.Contains(err.Error(), "another server is listening") {
		t.Errorf("second listener on a live socket: %v", err)
	}
	l.(*unixsock.Listener).SetUnlinkOnClose(false)
	l.Close() // a dead server's stale socket file stays behind
	l2, _, err := Listen("grpc+unix://" + path)
	if err != nil {
		t.Fatalf("stale socket not replaced: %v", err)
	}
	l2.Close()

	file := filepath.Join(t.TempDir(), "data")
	os.WriteFile(file, []byte("x"), 0o644)
	if _, _, err := Listen("grpc+unix://" + file); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Errorf("regular file: %v", err)
	}
	if _, _, err := Listen("grpc+unix://relative.sock"); err == nil {
		t.Error("relative path accepted")
	}
}

// The default socket's directory is made 0700, and refused when others
// may use it.
func TestListenUnixDefaultDir(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	path := unixsock.DefaultPath(os.Getenv)
	l, _, err := Listen("grpc+unix://" + path)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	dir := filepath.Dir(path)
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("default directory %v, %v: want mode 0700", fi, err)
	}
	os.Chmod(dir, 0o777)
	if _, _, err := Listen("grpc+unix://" + path); err == nil || !strings.Contains(err.Error(), "mode 0777") {
		t.Errorf("world-writable default directory: %v", err)
	}
}

func TestListenTCPDefaultsToLoopback(t *testing.T) {
	l, loc, err := Listen("grpc://:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if !strings.HasPrefix(loc, "grpc://127.0.0.1:") || strings.HasSuffix(loc, ":0") {
		t.Errorf("location %q: want loopback with the real port", loc)
	}
}

// grpc+unix://tmp/x.sock (two slashes for three) is refused: its host
// "tmp" would be dropped and /x.sock bound.
func TestListenUnixWithHost(t *testing.T) {
	dir := t.TempDir()
	for _, loc := range []string{"grpc+unix://tmp" + dir + "/pf.sock", "unix://tmp" + dir + "/pf.sock", "grpc+unix://localhost" + dir + "/pf.sock"} {
		l, _, err := Listen(loc)
		if err == nil {
			l.Close()
		}
		if err == nil || !strings.Contains(err.Error(), "(three slashes)") || !strings.Contains(err.Error(), "would be read as a host") {
			t.Errorf("%s: %v, want it refused for its host", loc, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "pf.sock")); err == nil {
		t.Error("a socket was made at the location's path without its host")
	}
	if _, _, err := Listen("grpc+unix:tmp/pf.sock"); err == nil || !strings.Contains(err.Error(), "absolute") {
		t.Errorf("opaque location: %v", err)
	}
}
