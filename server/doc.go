// Package server is pixelflight's Arrow Flight service.
//
// # Streams
//
// DoExchange is the UDF stream. The client's first message carries a CMD
// FlightDescriptor whose bytes are the JSON command (see package udf);
// pyarrow sends it alone and the schema in the next message, other clients
// may send both at once. Bad commands, unknown ops, bad params, a missing
// input column or one of the wrong type fail the call at once with
// INVALID_ARGUMENT and a message naming the problem. Then each input record
// batch yields its rows' results in the same order, in one result batch or,
// where they pass udf.MaxResultBatchBytes (64 MiB), several, with the op's
// result columns, or those of the command's columns list, and error
// (projection, in columns.go, on the send side only). Up
// to Config.Window batches of one stream are processed at once; results are
// always written in input order.
//
// # Scheduling and backpressure
//
// Rows of every stream go to one sched.Scheduler, whose backends (the CPU
// first, then Config.Backends) pull them; see package sched. Before a
// stream reads a batch it takes the batch's bytes from the input's quarter
// of a sched.Budget of Config.MemoryBudget bytes and gives them back once
// the results are written, so a full budget makes streams stop reading and
// gRPC flow control hold the clients. Each row holds its op's need in the
// same budget from its decode, and its result's bytes until the stream has
// written it: the stream writes the finished rows from the first out
// (results.go) as they reach udf.MaxResultBatchBytes, when rows wait for
// memory, and at the batch's end. Flow-control
// windows are fixed (64 KiB per stream, gRPC's least, and 2 MiB per
// connection) so that a stream waiting for the budget holds little in
// gRPC's buffers; a larger message is let in whole once it is read.
// gRPC receives into buffers of a pool that does not clear them (each is
// written in full before it is read; codec.go). A Flight data message is
// joined out of them once and read in place: the batch's Arrow buffers
// are slices of it, not protobuf's copies.
//
// # Metrics
//
// Every series lives in Config.Metrics (a Prometheus registry of this
// server's own, no global state); MetricsHandler serves it, with
// Config.MetricsLabels added to every series (the executor plugin's app and
// executor ids), and the "stats" action returns the same counters, without
// those labels, as JSON with a summary (rows by backend, row errors by
// kind, in-flight bytes). GPUs come from Config.GPUs (NVML), probed at most
// every 10 s. Each stream logs a line when it ends, and a progress line
// every Config.Progress while its batches are answered; the first result
// batch of each run of rows carries the rows by backend as app metadata.
//
// # Actions
//
// DoAction serves "capabilities" (ops, params, output schemas, backends and
// their health, GPUs, limits, version), "health" and "stats" as JSON. The standard
// grpc.health.v1 service is registered too: NOT_SERVING until Serve starts
// and again once draining begins.
//
// # Transport limits
//
// Config.Transport (transport.go; serve's flags) ends what holds the
// server without using it: a connection must finish its handshakes within
// Handshake; one with no open stream for ConnIdle gets GOAWAY and is
// closed (gRPC clients connect again on their next call); one that sends
// nothing for KeepaliveTime is pinged and closed when the ping goes
// unanswered within KeepaliveTimeout; a client pinging more often than
// every 10 s (minPingInterval; allowed without streams too) gets GOAWAY
// ENHANCE_YOUR_CALM. One connection has at most MaxStreams streams open.
// DoExchange reads the client's messages in other goroutines than its
// own, so that it can end an exchange whose command has not come within
// Command, or whose client has sent nothing for StreamIdle while it was
// owed no results (idleWatch: time spent on its rows or waiting for the
// budget does not count), with DEADLINE_EXCEEDED.
//
// # Transports and lifecycle
//
// Listen opens grpc+unix:///path.sock (mode 0600 from the moment it can be
// reached, and the default socket's directory 0700: unixsock.Listen,
// unixsock.PrivateDir; a stale socket of a dead server is replaced, a live
// one is not) or grpc://host:port (empty host:
// 127.0.0.1; loopback only unless ListenConfig.InsecureListenAny), and
// with ListenConfig.TLS grpc+tls://host:port on any address. Serve runs
// until its context ends, then refuses new calls, lets open streams finish
// within Config.DrainTimeout, stops the rest, and returns.
//
// # Security
//
// Config.TLS (LoadTLS: TLS 1.2 at least, client certificates required and
// verified when a client CA is given) and Config.Token (ReadToken: every
// call, the health service included, must carry "authorization: Bearer
// <token>"; checked in constant time by interceptors, refused with
// UNAUTHENTICATED) are both off by default. Requests never name files:
// cascades are chosen by name from haar.Library, fixed at start.
//
// # Errors
//
// Errors are plain Go errors inside and become gRPC status codes only at
// this boundary (toStatus; DoAction, the interceptors and gRPC itself
// set their own). The codes a client gets, and when:
//
//   - INVALID_ARGUMENT: a bad command, op, param or input column, input
//     that is not Arrow IPC, or a batch of more rows than the input's
//     share of the budget holds at 512 bytes a row (udf.ErrBadCommand); a
//     failing row in strict mode (udf.RowError); an unknown action.
//   - UNAVAILABLE: a draining server: new calls are refused, streams still
//     open at Config.DrainTimeout lose their connection, and their queued
//     rows end with sched.ErrClosed. Clients retry it.
//   - FAILED_PRECONDITION: no backend in service runs the call's op
//     (sched.ErrNoBackend).
//   - CANCELLED: the client cancelled.
//   - DEADLINE_EXCEEDED: the client's deadline passed, or an exchange sent
//     no command within Transport.Command, or nothing for
//     Transport.StreamIdle while it was owed no results.
//   - UNAUTHENTICATED: Config.Token is set and the call lacks it.
//   - UNIMPLEMENTED: a method this server does not have (unknownMethod),
//     or a Flight method other than DoExchange, DoAction and ListActions
//     (flight.BaseFlightServer).
//   - RESOURCE_EXHAUSTED: a message larger than Config.MaxMessageBytes
//     (gRPC's own check).
//   - NOT_FOUND: a health check that names a service other than "" and
//     arrow.flight.protocol.FlightService (grpc.health.v1's own answer).
//   - INTERNAL: anything else: a bug.
//
// A strict-mode row failure and a refused command carry a
// google.rpc.ErrorInfo in the status's details as well (status.go:
// reasons STRICT_ROW and BAD_COMMAND), which the clients read instead of
// the message's text.
//
// Text a client sent (action, op, parameter, column and method names) is
// never echoed whole: internal/clip quotes it clipped to 128 bytes with
// its length, and toStatus bounds every status message (clip.Message).
package server
