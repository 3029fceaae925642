// Package unixsock reads the socket path of a grpc+unix:// (or unix://)
// location, for the server's Listen and the clients' Target alike.
package unixsock
