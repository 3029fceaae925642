package unixsock

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// nobody is the uid (and gid) of the other user in these tests.
const nobody = 65534

const helperEnv = "PIXELFLIGHT_UNIXSOCK_HELPER"

// TestMain runs the helper processes of these tests when helperEnv says
// which: "connect PATH" tries to connect to PATH (and to every entry of
// its directory) until its standard input closes, then prints how many
// connections succeeded; "squat PATH" listens at PATH, prints "ready",
// and when its standard input closes prints how many connections it
// accepted and how many bytes they sent.
func TestMain(m *testing.M) {
	if h := os.Getenv(helperEnv); h != "" {
		mode, path, _ := strings.Cut(h, " ")
		switch mode {
		case "connect":
			connectLoop(path)
		case "squat":
			squat(path)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func stdinClosed() <-chan struct{} {
	done := make(chan struct{})
	go func() {
		io.Copy(io.Discard, os.Stdin)
		close(done)
	}()
	return done
}

func connectLoop(path string) {
	done := stdinClosed()
	dir := filepath.Dir(path)
	won := 0
	try := func(p string) {
		if c, err := net.Dial("unix", p); err == nil {
			won++
			c.Close()
		}
	}
	fmt.Println("ready")
	for {
		select {
		case <-done:
			fmt.Println(won)
			return
		default:
		}
		try(path)
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			try(filepath.Join(dir, e.Name()))
			try(filepath.Join(dir, e.Name(), "s"))
		}
	}
}

func squat(path string) {
	l, err := net.Listen("unix", path)
	if err != nil {
		fmt.Println("error", err)
		return
	}
	os.Chmod(path, 0o777)
	got := make(chan int64, 100)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				n, _ := io.Copy(io.Discard, c)
				got <- n
			}()
		}
	}()
	fmt.Println("ready")
	<-stdinClosed()
	time.Sleep(100 * time.Millisecond) // let the last connection's bytes arrive
	l.Close()
	accepted, total := 0, int64(0)
	for len(got) > 0 {
		accepted++
		total += <-got
	}
	fmt.Println(accepted, total)
}

// helper starts this test binary as uid nobody in helper mode; the
// binary is copied into dir, which nobody must be able to enter.
func helper(t *testing.T, dir, mode string) (*exec.Cmd, io.WriteCloser, *bufio.Reader) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root, to run a process as another uid")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "helper.test")
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), helperEnv+"="+mode)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); cmd.Wait() })
	r := bufio.NewReader(out)
	if line, err := r.ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("helper %s: %q, %v", mode, line, err)
	}
	return cmd, in, r
}

// sharedDir is a fresh directory every user may enter and write, as
// /tmp.
func sharedDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "unixsock-shared-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	return dir
}

func lastLine(t *testing.T, in io.Closer, r *bufio.Reader) string {
	t.Helper()
	in.Close()
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("helper's result: %q, %v", line, err)
	}
	return strings.TrimSpace(line)
}

// With umask 0 (a socket bound in place would be 0777 until its chmod),
// another user connecting in a tight loop, to the socket's path and to
// every entry of its directory, never gets a connection during many
// starts.
func TestListenNoWindow(t *testing.T) {
	dir := sharedDir(t)
	path := filepath.Join(dir, "pf.sock")
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	_, in, r := helper(t, dir, "connect "+path)
	ctx := context.Background()
	for range 300 {
		l, err := Listen(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		l.Close()
	}
	if won := lastLine(t, in, r); won != "0" {
		t.Errorf("uid %d connected %s times during 300 starts: want 0", nobody, won)
	}
}

// The same attacker against a socket bound in place and then made 0600
// does connect, most runs: the window TestListenNoWindow closes.
func TestListenWindowInPlace(t *testing.T) {
	dir := sharedDir(t)
	path := filepath.Join(dir, "pf.sock")
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	_, in, r := helper(t, dir, "connect "+path)
	for range 300 {
		l, err := net.Listen("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Microsecond) // the moment between bind and chmod, widened a little
		os.Chmod(path, 0o600)
		l.Close()
	}
	won, _ := strconv.Atoi(lastLine(t, in, r))
	t.Logf("uid %d connected %d times during 300 in-place starts", nobody, won)
	if won == 0 {
		t.Error("the attacker never connected to a socket bound in place: it would not notice a window either")
	}
}

func TestListen(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	dir := t.TempDir()
	path := filepath.Join(dir, "pf.sock")
	ctx := context.Background()
	l, err := Listen(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket %v, %v: want a socket of mode 0600", fi, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("directory holds %v: want the socket only", entries)
	}
	if got := l.Addr().String(); got != path {
		t.Errorf("Addr %q, want %q", got, path)
	}
	go func() {
		c, err := l.Accept()
		if err == nil {
			c.Write([]byte("hi"))
			c.Close()
		}
	}()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(c); string(b) != "hi" {
		t.Errorf("read %q through the socket", b)
	}
	c.Close()
	if _, err := Listen(ctx, path); err == nil || !strings.Contains(err.Error(), "another server is listening") {
		t.Errorf("second listener on a live socket: %v", err)
	}
	l.SetUnlinkOnClose(false)
	l.Close() // a dead server's socket stays
	if _, err := os.Lstat(path); err != nil {
		t.Fatalf("SetUnlinkOnClose(false): %v", err)
	}
	l2, err := Listen(ctx, path)
	if err != nil {
		t.Fatalf("stale socket not replaced: %v", err)
	}
	l2.Close()
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Close left the socket: %v", err)
	}
	file := filepath.Join(dir, "data")
	os.WriteFile(file, []byte("x"), 0o644)
	if _, err := Listen(ctx, file); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Errorf("regular file: %v", err)
	}
}

// A path as long as a socket's may be: the private name beside it is
// longer, and is reached through the directory's descriptor.
func TestListenLongPath(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, strings.Repeat("x", maxPath-len(dir)-1))
	if len(path) != maxPath {
		t.Fatalf("path of %d bytes", len(path))
	}
	l, err := Listen(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if fi, err := os.Lstat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket %v, %v: want mode 0600", fi, err)
	}
	if err := CheckPeer(context.Background(), path); err != nil {
		t.Error(err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("directory holds %v: want the socket only", entries)
	}
}

func TestDefaultPath(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	uid := strconv.Itoa(os.Geteuid())
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{nil, "/tmp/pixelflight-" + uid + "/pixelflight.sock"},
		{map[string]string{"TMPDIR": "/var/tmp/"}, "/var/tmp/pixelflight-" + uid + "/pixelflight.sock"},
		{map[string]string{"TMPDIR": "/var/tmp", "XDG_RUNTIME_DIR": "/run/user/7"}, "/run/user/7/pixelflight/pixelflight.sock"},
		{map[string]string{"XDG_RUNTIME_DIR": "relative"}, "/tmp/pixelflight-" + uid + "/pixelflight.sock"},
	} {
		if got := DefaultPath(env(c.env)); got != c.want {
			t.Errorf("%v: %q, want %q", c.env, got, c.want)
		}
	}
}

func TestPrivateDir(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "pixelflight")
	if err := PrivateDir(dir); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("made %v, %v: want mode 0700", fi, err)
	}
	if err := PrivateDir(dir); err != nil {
		t.Errorf("existing private directory: %v", err)
	}
	os.Chmod(dir, 0o750)
	if err := PrivateDir(dir); err == nil || !strings.Contains(err.Error(), "mode 0750") {
		t.Errorf("mode 0750: %v", err)
	}
	os.Chmod(dir, 0o700)
	link := filepath.Join(base, "link")
	os.Symlink(dir, link)
	if err := PrivateDir(link); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("symbolic link: %v", err)
	}
	if os.Geteuid() == 0 {
		os.Chown(dir, nobody, nobody)
		want := fmt.Sprintf("owned by uid %d, not by uid 0", nobody)
		if err := PrivateDir(dir); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("another user's directory: %v, want %q", err, want)
		}
	}
}

// A socket of a process running as another uid is refused, naming both
// uids, and the squatter receives no byte; our own socket passes.
func TestCheckPeer(t *testing.T) {
	dir := sharedDir(t)
	path := filepath.Join(dir, "squat.sock")
	_, in, r := helper(t, dir, "squat "+path)
	ctx := context.Background()
	err := CheckPeer(ctx, path)
	want := fmt.Sprintf(PeerMessage, path, nobody, os.Geteuid())
	if err == nil || err.Error() != want {
		t.Errorf("squatted socket: %v\nwant %s", err, want)
	}
	if got := lastLine(t, in, r); got != "1 0" {
		t.Errorf("the squatter got (connections, bytes) %q: want 1 0", got)
	}

	own, err := Listen(ctx, filepath.Join(t.TempDir(), "own.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()
	go func() {
		if c, err := own.Accept(); err == nil {
			c.Close()
		}
	}()
	if err := CheckPeer(ctx, own.Path()); err != nil {
		t.Errorf("own socket: %v", err)
	}
}
