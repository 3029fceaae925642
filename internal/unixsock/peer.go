package unixsock

import (
	"context"
	"fmt"
	"net"
	"os"
	"syscall"
)

// PeerMessage is the error of a client refusing a Unix socket whose
// listening process runs as another uid. The Python client
// (python/pixelflight/client.py, PEER_MESSAGE) and the JVM client
// (spark-plugin's Channels.PEER_MESSAGE) word it the same; the rule is
// SECURITY.md's ("Unix sockets").
const PeerMessage = "refusing the Unix socket %s: the process listening there runs as uid %d, not as uid %d like this client; " +
	"nothing was sent to it (another user's socket could capture the token and the images: see SECURITY.md)"

// PeerUID connects to the Unix socket at path, reads the uid of the
// process listening there (SO_PEERCRED: its credentials when it called
// listen) and closes the connection without sending anything.
func PeerUID(ctx context.Context, path string) (int, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return 0, fmt.Errorf("connecting to %s: %w", path, err)
	}
	defer c.Close()
	raw, err := c.(*net.UnixConn).SyscallConn()
	if err != nil {
		return 0, fmt.Errorf("unix socket %s: %w", path, err)
	}
	var cred *syscall.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return 0, fmt.Errorf("unix socket %s: %w", path, err)
	}
	if credErr != nil {
		return 0, fmt.Errorf("unix socket %s: reading the listener's uid (SO_PEERCRED): %w", path, credErr)
	}
	return int(cred.Uid), nil
}

// CheckPeer returns nil when the process listening at path runs as this
// process's effective uid, else an error in PeerMessage's words; nothing
// is sent on the connection it makes.
func CheckPeer(ctx context.Context, path string) error {
	uid, err := PeerUID(ctx, path)
	if err != nil {
		return err
	}
	if ours := os.Geteuid(); uid != ours {
		return fmt.Errorf(PeerMessage, path, uid, ours)
	}
	return nil
}
