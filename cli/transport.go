package cli

import (
	"cmp"
	"flag"
	"fmt"
	"net"
	"time"

	"github.com/pixelflight/pixelflight/server"
)

// transportFlags are serve's limits on silent connections and streams
// (server.Transport).
type transportFlags struct {
	connIdle, keepalive, keepaliveTimeout time.Duration
	command, streamIdle                   time.Duration
	maxStreams                            uint
}

// define adds the flags to fs, with server.DefaultTransport's defaults.
func (t *transportFlags) define(fs *flag.FlagSet) {
	d := server.DefaultTransport()
	fs.DurationVar(&t.connIdle, "conn-idle-timeout", d.ConnIdle, "close a connection that has had no open stream for this long (GOAWAY: clients connect again on their next call); 0: never")
	fs.DurationVar(&t.keepalive, "keepalive-time", d.KeepaliveTime, "ping a connection that has sent nothing for this long, to find peers that are gone; 0: never")
	fs.DurationVar(&t.keepaliveTimeout, "keepalive-timeout", d.KeepaliveTimeout, "close a connection whose ping is not answered within this")
	fs.DurationVar(&t.command, "command-timeout", d.Command, "end an exchange whose first message (the command) has not come within this (DEADLINE_EXCEEDED)")
	fs.DurationVar(&t.streamIdle, "stream-idle-timeout", d.StreamIdle, "end an exchange whose client has sent nothing for this long while every result it is owed was sent (DEADLINE_EXCEEDED); time spent on its rows does not count; 0: never")
	fs.UintVar(&t.maxStreams, "max-conn-streams", uint(d.MaxStreams), "most streams one connection may have open at once; the client's further streams wait")
}

// config checks the flags and returns the server's Transport (0 on the
// command line, "never", is negative there).
func (t transportFlags) config() (server.Transport, error) {
	if t.connIdle < 0 || t.keepalive < 0 || t.streamIdle < 0 {
		return server.Transport{}, fmt.Errorf("--conn-idle-timeout, --keepalive-time and --stream-idle-timeout must not be negative (0: never)")
	}
	if t.keepaliveTimeout <= 0 || t.command <= 0 {
		return server.Transport{}, fmt.Errorf("--keepalive-timeout and --command-timeout must be positive")
	}
	if t.maxStreams < 1 || t.maxStreams > 1<<31 {
		return server.Transport{}, fmt.Errorf("--max-conn-streams %d: want 1 to 2147483648", t.maxStreams)
	}
	return server.Transport{
		ConnIdle:         cmp.Or(t.connIdle, -1),
		KeepaliveTime:    cmp.Or(t.keepalive, -1),
		KeepaliveTimeout: t.keepaliveTimeout,
		Command:          t.command,
		StreamIdle:       cmp.Or(t.streamIdle, -1),
		MaxStreams:       uint32(t.maxStreams),
	}, nil
}

// metricsAddr is --metrics-listen's address to bind: an empty host is
// 127.0.0.1, as for --listen, so that metrics leave the machine only
// when a host (0.0.0.0, an address) is given.
func metricsAddr(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("--metrics-listen %q: want host:port, as 127.0.0.1:9477 (empty host: 127.0.0.1; 0.0.0.0:9477 for every interface): %w", addr, err)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}
