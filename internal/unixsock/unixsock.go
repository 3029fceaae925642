package unixsock

import (
	"fmt"
	"net/url"
	"strings"
)

// Path returns the socket path of u, a grpc+unix:// or unix:// URL: its
// path, which must be absolute. A URL with a host is refused: in
// grpc+unix://tmp/x.sock (two slashes for three) "tmp" is the host, and
// the path /x.sock.
func Path(u *url.URL) (string, error) {
	if u.Host != "" || u.User != nil {
		host := u.Host
		if u.User != nil {
			host = u.User.String() + "@" + host
		}
		return "", fmt.Errorf("want %s:///absolute/path.sock (three slashes): %q would be read as a host", u.Scheme, host)
	}
	if u.Opaque != "" || !strings.HasPrefix(u.Path, "/") {
		return "", fmt.Errorf("want an absolute socket path, as in %s:///tmp/pixelflight.sock", u.Scheme)
	}
	return u.Path, nil
}
