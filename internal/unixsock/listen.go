package unixsock

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Listener is a Unix socket listener at Path; Close removes the socket
// file (unless SetUnlinkOnClose(false)).
type Listener struct {
	*net.UnixListener
	path string

	mu     sync.Mutex
	unlink bool
	closed bool
}

// Addr is the socket's final path.
func (l *Listener) Addr() net.Addr { return &net.UnixAddr{Name: l.path, Net: "unix"} }

// Path is the socket's path.
func (l *Listener) Path() string { return l.path }

// SetUnlinkOnClose says whether Close removes the socket file (the
// default: yes).
func (l *Listener) SetUnlinkOnClose(unlink bool) {
	l.mu.Lock()
	l.unlink = unlink
	l.mu.Unlock()
}

// Close stops listening and removes the socket file.
func (l *Listener) Close() error {
	l.mu.Lock()
	unlink := l.unlink && !l.closed
	l.closed = true
	l.mu.Unlock()
	err := l.UnixListener.Close()
	if unlink {
		_ = os.Remove(l.path)
	}
	return err
}

// maxPath is the longest socket path bind takes (sun_path's 108 bytes,
// with the terminating NUL).
const maxPath = 107

// Listen opens a Unix socket at path, mode 0600 from the moment a client
// can reach it at that path, whatever the umask: the socket is bound in a
// fresh directory of mode 0700 beside path (so on the same file system),
// made 0600 there, then linked to path, and its private name removed. A
// socket file already at path is removed when no server answers there (a
// dead server's); a live one, or a file that is not a socket, is an
// error, and so is a socket another server puts at path meanwhile (a
// link never replaces a file).
func Listen(ctx context.Context, path string) (*Listener, error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("unix socket path %s exists and is not a socket", path)
		}
		d := net.Dialer{Timeout: time.Second}
		if c, err := d.DialContext(ctx, "unix", path); err == nil {
			c.Close()
			return nil, fmt.Errorf("unix socket %s: another server is listening there", path)
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) { // stale socket of a dead server
			return nil, fmt.Errorf("removing stale socket: %w", err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("unix socket path: %w", err)
	}
	private, err := os.MkdirTemp(filepath.Dir(path), ".pixelflight-bind-") // mode 0700
	if err != nil {
		return nil, fmt.Errorf("listen on unix socket %s: making a private directory to bind in: %w", path, err)
	}
	defer os.RemoveAll(private)
	tmp := filepath.Join(private, "s")
	if len(tmp) > maxPath { // longer than path: reach the directory through its descriptor
		d, err := os.Open(private)
		if err != nil {
			return nil, fmt.Errorf("listen on unix socket %s: %w", path, err)
		}
		defer d.Close()
		tmp = fmt.Sprintf("/proc/self/fd/%d/s", d.Fd())
	}
	var lc net.ListenConfig
	nl, err := lc.Listen(ctx, "unix", tmp)
	if err != nil {
		return nil, fmt.Errorf("listen on unix socket %s: %w", path, err)
	}
	ul := nl.(*net.UnixListener)
	ul.SetUnlinkOnClose(false)
	if err := os.Chmod(tmp, 0o600); err != nil {
		ul.Close()
		return nil, fmt.Errorf("chmod unix socket: %w", err)
	}
	// A hard link, as a rename that never replaces a file: the private
	// name goes with the private directory.
	if err := os.Link(tmp, path); err != nil {
		ul.Close()
		if errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("unix socket %s: another server created it while this one started", path)
		}
		return nil, fmt.Errorf("listen on unix socket %s: moving the socket into place: %w", path, err)
	}
	return &Listener{UnixListener: ul, path: path, unlink: true}, nil
}
