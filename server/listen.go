package server

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"time"
)

// Listen opens a listener for a Flight location: grpc+unix:///abs/path.sock
// (or unix://) for a Unix socket, made mode 0600, or grpc://host:port (or
// grpc+tcp://) for TCP, where an empty host means 127.0.0.1. It returns the
// listener and the location clients should use (with the real port when
// port 0 was asked for).
func Listen(location string) (net.Listener, string, error) {
	u, err := url.Parse(location)
	if err != nil {
		return nil, "", fmt.Errorf("listen location %q: %w", location, err)
	}
	switch u.Scheme {
	case "grpc+unix", "unix":
		return listenUnix(u.Path)
	case "grpc", "grpc+tcp":
		host := u.Hostname()
		if host == "" {
			host = "127.0.0.1"
		}
		l, err := net.Listen("tcp", net.JoinHostPort(host, u.Port()))
		if err != nil {
			return nil, "", fmt.Errorf("listen on %s: %w", location, err)
		}
		return l, "grpc://" + l.Addr().String(), nil
	}
	return nil, "", fmt.Errorf("listen location %q: want grpc+unix:///path.sock or grpc://host:port", location)
}

func listenUnix(path string) (net.Listener, string, error) {
	if !filepath.IsAbs(path) {
		return nil, "", fmt.Errorf("unix socket path %q: want an absolute path, as in grpc+unix:///tmp/pixelflight.sock", path)
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, "", fmt.Errorf("unix socket path %s exists and is not a socket", path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, "", fmt.Errorf("unix socket %s: another server is listening there", path)
		}
		if err := os.Remove(path); err != nil { // stale socket of a dead server
			return nil, "", fmt.Errorf("removing stale socket: %w", err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, "", fmt.Errorf("unix socket path: %w", err)
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, "", fmt.Errorf("listen on unix socket %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return nil, "", fmt.Errorf("chmod unix socket: %w", err)
	}
	return l, "grpc+unix://" + path, nil
}
