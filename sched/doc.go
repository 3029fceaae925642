// Package sched is the node's one queue of work: rows from every open
// stream, served at once by every backend (the CPU, and a GPU where there
// is one), in batches.
//
// # Queue and batches
//
// Submit queues the rows of one input record batch. Rows are keyed by
// their call (op and params: udf.Task.Key, equal for equal calls from
// different streams) and, when some backend batches, by image shape read
// from the header. Each lane of each backend pulls what it can take: the
// CPU one row at a time, a batching backend up to MaxBatch rows of one
// key, or fewer once the oldest has waited MaxDelay (Triton's dynamic
// batcher works the same way). Keys are served round-robin, rows of a key
// first in, first out. A Batch completes when each of its rows has a
// result; the caller writes results in its own order, so each stream gets
// its rows back in order whichever backend ran them.
//
// # Faults
//
// A backend reports a bad image as that row's error. When the backend
// itself fails a batch (a lost device, out of memory), the scheduler takes
// it out of service, logs it, shows it in Backends (and so in the
// server's health and capabilities) and gives the batch, first in line,
// to the fallback backend: the first one, the CPU. No row is lost.
//
// # Backpressure and cancellation
//
// Budget caps the input bytes in flight (--max-inflight-bytes): a stream
// takes a batch's bytes before reading it and returns them once its
// results are written, so when the budget is spent streams stop reading
// and gRPC flow control holds the clients; memory stays bounded however
// many streams open. With Config.Budget the lanes of a WorkingMemory
// backend (the CPU) hold their working memory in it too, estimated from
// each image's header, up to half of it together: input gets what they
// leave. Lanes never wait for it, so they cannot deadlock with the
// streams whose rows they run. When a stream's context ends (cancelled, client gone,
// deadline), its queued rows leave the queue at once.
//
// # Metrics
//
// NewMetrics registers the Prometheus series: queue depth and wait, batch
// sizes per backend, rows per backend and op, row errors per op and kind,
// decode and kernel time per backend and op, and backend health.
package sched
