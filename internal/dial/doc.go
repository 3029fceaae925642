// Package dial is how the sidecar's own clients (`pixelflight bench`,
// `pixelflight health`) reach a sidecar: Target turns a Flight location,
// as serve's --listen takes it, into a gRPC target; CheckPeer refuses a
// Unix socket another user listens on before anything is sent; Options
// are the connection's TLS, token and message size.
package dial
