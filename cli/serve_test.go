package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// lockedBuffer is a bytes.Buffer a child process writes while the test
// reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// serveChild starts this test binary as `pixelflight serve` with args
// (see TestMain) on a Unix socket in a temp dir, and returns it once the
// socket answers, with its stderr and a Flight client.
func serveChild(t *testing.T, args ...string) (*exec.Cmd, *lockedBuffer, flight.Client) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "pf.sock")
	cmd := exec.Command(self, append([]string{"serve", "--listen", "grpc+unix://" + sock, "--workers", "1"}, args...)...)
	cmd.Env = append(os.Environ(), benchChildEnv+"=1")
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	waitFor(t, "the socket", func() bool {
		c, err := net.Dial("unix", sock)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return cmd, stderr, flight.NewClientFromConn(conn, nil)
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !ok(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within 30 s", what)
		}
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func getMetrics(addr string) (string, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// exitCode waits for cmd and returns its exit status.
func exitCode(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	err := cmd.Wait()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode()
}

// SIGTERM with a stream that never ends: /metrics still answers while
// the server drains, and when the deadline passes the stream is stopped
// with a warning and the process exits 0, as docs/protocol.md says.
func TestServeDrainDeadlineExits0(t *testing.T) {
	metrics := freeAddr(t)
	cmd, stderr, client := serveChild(t, "--drain-timeout", "1s", "--metrics-listen", metrics)
	ex, err := client.DoExchange(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	desc := &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: []byte(`{"op": "echo"}`)}
	if err := ex.Send(&flight.FlightData{FlightDescriptor: desc}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "open stream", func() bool {
		m, _ := getMetrics(metrics)
		return strings.Contains(m, "\npixelflight_streams_open 1\n")
	})
	cmd.Process.Signal(syscall.SIGTERM)
	waitFor(t, "drain", func() bool { return strings.Contains(stderr.String(), `"msg":"draining"`) })
	if _, err := getMetrics(metrics); err != nil {
		t.Errorf("/metrics while draining: %v", err)
	}
	if code := exitCode(t, cmd); code != 0 {
		t.Errorf("exit %d after the drain deadline, want 0\n%s", code, stderr)
	}
	if !strings.Contains(stderr.String(), `{"level":"warn"`) || !strings.Contains(stderr.String(), "drain deadline of 1s passed with 1 streams open: stopped them") {
		t.Errorf("no warning naming the deadline and the stream stopped:\n%s", stderr)
	}
}

// --max-delay 0 is no delay, not the 2ms default.
func TestServeMaxDelayZero(t *testing.T) {
	cmd, stderr, client := serveChild(t, "--max-delay", "0", "--metrics-listen", "")
	stream, err := client.DoAction(context.Background(), &flight.Action{Type: "capabilities"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var caps struct {
		Limits struct {
			MaxDelayMS *float64 `json:"max_delay_ms"`
		} `json:"limits"`
	}
	if err := json.Unmarshal(res.Body, &caps); err != nil || caps.Limits.MaxDelayMS == nil || *caps.Limits.MaxDelayMS != 0 {
		t.Errorf("capabilities %s (%v): want max_delay_ms 0", res.Body, err)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if code := exitCode(t, cmd); code != 0 {
		t.Errorf("exit %d\n%s", code, stderr)
	}
}

// With --exit-with-parent, SIGINT is ignored: a Ctrl-C in the terminal of
// a PySpark session reaches its sidecar too, which only its parent stops
// (SIGTERM, or by exiting).
func TestServeExitWithParentIgnoresSIGINT(t *testing.T) {
	cmd, stderr, _ := serveChild(t, "--exit-with-parent", "--metrics-listen", "")
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if err := cmd.Process.Signal(syscall.Signal(0)); err != nil || strings.Contains(stderr.String(), "draining") {
		t.Fatalf("SIGINT stopped the sidecar: %v\n%s", err, stderr.String())
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("after SIGTERM: %v\n%s", err, stderr.String())
	}
}
