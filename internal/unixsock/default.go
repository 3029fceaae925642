package unixsock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// DefaultPath is the sidecar's default socket, in a directory only its
// user may enter: $XDG_RUNTIME_DIR/pixelflight/pixelflight.sock when
// XDG_RUNTIME_DIR is an absolute path, else
// $TMPDIR/pixelflight-<uid>/pixelflight.sock ($TMPDIR: /tmp when unset or
// empty; <uid>: the effective uid). python/pixelflight/client.py's
// default_endpoint and spark-plugin's Channels.defaultEndpoint apply the
// same rule (tests/test_unix_socket.py compares them with serve's).
func DefaultPath(getenv func(string) string) string {
	return filepath.Join(DefaultDir(getenv), "pixelflight.sock")
}

// DefaultDir is the directory of DefaultPath.
func DefaultDir(getenv func(string) string) string {
	if run := getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(run) {
		return filepath.Join(run, "pixelflight")
	}
	tmp := getenv("TMPDIR")
	if tmp == "" {
		tmp = "/tmp"
	}
	return filepath.Join(tmp, "pixelflight-"+strconv.Itoa(os.Geteuid()))
}

// PrivateDir makes dir with mode 0700 when it is missing (its parent
// must exist), and refuses it when it exists and is not a directory
// (a symbolic link included), is owned by another uid, or group or others
// may use it.
func PrivateDir(dir string) error {
	err := os.Mkdir(dir, 0o700)
	if err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("making the socket directory: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("the socket directory: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("the socket directory %s is not a directory (%v): remove it, or listen elsewhere", dir, fi.Mode().Type())
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("the socket directory %s: no owner known", dir)
	}
	if uid := os.Geteuid(); int(st.Uid) != uid {
		return fmt.Errorf("the socket directory %s is owned by uid %d, not by uid %d (this process): "+
			"another user could replace the socket; remove it, or listen elsewhere", dir, st.Uid, uid)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("the socket directory %s has mode %04o: group or others may use it; "+
			"make it 0700 (chmod 700 %s), or listen elsewhere", dir, perm, dir)
	}
	return nil
}
