// Package cli is pixelflight's command line. main only calls Main.
//
//   - serve: the Flight sidecar (package server), with Prometheus metrics
//     on --metrics-listen.
//   - health: asks a sidecar's grpc.health.v1 service whether it serves.
//   - discover: Spark's GPU resource JSON from NVML (package gpu).
//   - bench: the load generator (package loadgen).
//   - version.
//
// # Help and exit codes
//
// `pixelflight COMMAND --help` (or -h) prints the command's flags, as
// --name, to stdout and exits 0. A usage error (an unknown flag, a bad
// value, a location whose scheme is not grpc+unix, grpc or grpc+tls, a
// grpc+unix location with a host, as grpc+unix://tmp/x.sock for
// grpc+unix:///tmp/x.sock) prints the error to stderr and exits 2; a
// failure at run time (a port taken, a sidecar that does not answer)
// exits 1.
//
// # Configuration
//
// Every serve flag has an environment variable: --listen is
// PIXELFLIGHT_LISTEN, --max-pixels is PIXELFLIGHT_MAX_PIXELS, and so on
// (upper case, dashes as underscores). A flag given on the command line
// wins: its variable is not read. A variable set to the empty string
// applies where empty is a value (PIXELFLIGHT_METRICS_LISTEN= turns
// metrics off) and is as if unset for numbers and durations. Operators
// set them through spark-defaults (spark.executorEnv.*) or a systemd
// unit. The server `bench` starts gets none of them: its flags alone.
//
// # Signals
//
// The first SIGTERM or SIGINT (SIGTERM alone with --exit-with-parent,
// which ignores SIGINT: a Ctrl-C in the terminal of a PySpark session
// reaches its sidecar too) marks the server NOT_SERVING, refuses new
// streams and lets open ones finish within --drain-timeout (those still
// open then are stopped, with a warning); the process then exits 0, and
// /metrics answers until then. A second signal exits at once with status
// 1.
//
// # Logs
//
// Logs go to stderr through zap: JSON lines by default (--log-format json),
// or a readable console format. Each stream logs one line when it ends:
// stream id, op, peer, rows, row errors, batches, time taken and rows per
// backend.
package cli
