// Package loadgen drives a pixelflight sidecar the way one busy Spark node
// does: many executor tasks, each with its own Flight connection and one
// DoExchange stream, all sending images at once. `pixelflight bench` is its
// command line; the figures in BENCHMARKS.md are made with it.
//
// # What one run does
//
// Run opens Config.Streams streams, each on its own gRPC connection (as
// each Python worker of an executor has its own client). Every stream sends
// record batches of Config.RowsPerBatch images in a binary column named
// "image", cycling through Config.Images in order across all streams, and
// reads the results on a second goroutine so the pipe stays full. At most
// Window batches per stream are unanswered at a time: enough to keep the
// server's workers busy, few enough that a batch's latency is the time the
// server took plus a short queue, not the depth of an unbounded buffer.
//
// The run stops sending when Config.Count images have been claimed (exactly
// Count are sent, the last batch short if Count is not a multiple of
// RowsPerBatch) or, with Count 0, when Config.Duration has passed; batches
// already sent are then answered and checked. Every result batch must carry exactly the rows of
// the batch it answers: a lost, extra or duplicated row fails the run with
// an error saying so, because it is a server bug.
//
// # What the numbers mean
//
//   - images: rows answered (errors included), all of them: a timed run's
//     too, answered after Duration.
//   - wall_seconds: the wall time from opening the streams to the last one
//     ending.
//   - images_per_s = images_in_window / seconds. With Count, the window is
//     the whole run: images_in_window is images and seconds wall_seconds.
//     A timed run (Count 0) counts in images_in_window only the rows
//     answered within Duration, and seconds is Duration, so the batches
//     still in flight at the deadline (up to Window per stream) do not
//     stretch the clock with a tail that no longer has full load. A
//     Duration shorter than one batch's latency leaves images_in_window,
//     and so images_per_s, at 0: run longer.
//   - mb_per_s: input megabytes (10^6 bytes of encoded image files sent)
//     per second, over the same window (bytes_sent scaled by
//     images_in_window / images). bytes_received is the Arrow buffer size
//     of the results.
//   - row_errors: rows whose "error" column is not null. A benchmark of
//     good images should show 0; a nonzero count means the figures include
//     cheap failures (a corrupt file is refused before any kernel runs).
//   - latency_ms: per batch ("per": "batch"): from just before a batch is
//     written to the stream to its result batch being read, p50, p90, p99
//     and max. Divide by rows_per_batch for a rough per-image figure; it
//     includes time queued behind the stream's earlier batches.
//   - backend_mix: rows per backend (cpu, cuda, sim; decode: rows whose
//     image did not decode) done during the run, from the server's "stats"
//     action taken before and after, when the server reports
//     "rows_by_backend". It counts every client of that server, so run the
//     benchmark on an otherwise idle sidecar.
//   - host_cpu_us_per_image: the server process's CPU time (every thread)
//     over the run, per image answered, from the same two stats.
//   - stages: each stage's work over the run (decode, encode, and each
//     backend by name): rows, busy seconds (wall time summed over the
//     stage's goroutines), busy_fraction (of their time: the cores for
//     decode and encode, a backend's lanes), us_per_row, cpu_us_per_row
//     (its threads' CPU time: the host stages and the CPU backend), and
//     for backends batches and batch_fill (rows per batch over its max),
//     and for one that decodes JPEGs itself decoded (rows) and
//     decode_share (its share of the rows a device could decode, given it
//     by the measured rates).
//
// # How to measure
//
// Measure on an idle machine, or at least an idle sidecar. Warm up first
// (`pixelflight bench --warmup`: FFT plans, kernel spectra and cascades are
// built on first use). Choose Streams to match the executor cores of the
// node you model: throughput should rise with streams until the server's
// workers are all busy, then latency rises instead; that knee is the
// node's capacity. RowsPerBatch trades latency for per-message overhead:
// larger batches cost fewer messages but wait longer for their last row.
// Repeat each figure a few times and report the spread: shared VMs vary by
// tens of percent between runs. The load generator uses CPU too; when it
// runs on the sidecar's machine, give the server fewer workers than cores
// or pin each (taskset) to its own.
package loadgen
