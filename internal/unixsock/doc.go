// Package unixsock holds the Unix socket rules shared by the server and
// the clients: Path reads the socket path of a grpc+unix:// (or unix://)
// location, for the server's Listen and the clients' Target alike;
// DefaultPath is serve's default socket, in a directory PrivateDir makes
// 0700 (or refuses); Listen binds a socket that is mode 0600 from the
// moment it can be reached at its path, whatever the umask; CheckPeer is
// the clients' rule, that the process listening at a socket runs as their
// own uid (SECURITY.md, "Unix sockets", states all of them).
package unixsock
