// Package sched is the node's staged row path: rows from every open
// stream, decoded once, computed by whichever backend finishes them
// soonest (the CPU, and a GPU where there is one), encoded, and handed
// back to their streams in order.
//
// # Stages
//
// A row goes through intake, the decode stage, the ready queue, a
// backend's lane and the encode stage, then its Batch is done:
//
//   - Intake holds the rows of every stream in arrival order. Ops that do
//     not decode (echo, info) skip the decode stage.
//   - The decode stage (Config.Cores goroutines) decodes the oldest row
//     to 8-bit gray (udf.Task.DecodeInto) while the ready queue has room
//     (twice what all lanes take at once, and an eighth of the budget in
//     bytes). A bad image is its row's error here; no backend sees it.
//     A backend that is a Stager (the GPU) hands the stage the memory to
//     decode its calls' rows into (pinned host buffers), so its lanes copy
//     them to the device as they are, without packing them first.
//     A backend that is a DeviceDecoder (the GPU with nvJPEG) decodes
//     some images itself: the stage passes it those rows undecoded
//     (Item.Encoded), keyed for it alone, in the share of the measured
//     rates of its decoder and the host's (devdecode.go), so neither idles
//     while the other has a backlog (with several, in the share of all
//     their rates together); a row it cannot decode after all (an image
//     its decoder refuses, a batch it fails) it declines, and the host
//     decodes it, and its error, if any, is the row's. If the backend
//     fails, its undecoded rows go back to the host decoders.
//   - The ready queue is keyed by call (op and params, udf.Task.Key) and
//     decoded shape. A batching backend (a GPU) takes up to MaxBatch rows
//     of one key, or fewer once the oldest has waited MaxDelay (Triton's
//     dynamic batcher works the same way); keys are served round-robin.
//   - Backends compute: they get decoded pixels (Item.Gray), or for a
//     DeviceDecoder the rows passed on undecoded (Item.Encoded, its shape
//     in Item.Header), and the call's spec (udf.Task.Spec: the CPU calls
//     its Compute, a device backend implements udf.Device and is called
//     by op through udf.Task.RunOn), and set each row's result.
//   - Results still to encode (PNGs: udf.Encoder) go to the encode stage,
//     off the lanes.
//
// A Batch completes when each of its rows has a result; the caller writes
// results in its own order, so each stream gets its rows back in order
// whichever backend ran them.
//
// # Routing
//
// Each row goes where it will finish soonest (StarPU's dmda policy): the
// scheduler measures every backend's time per row, by op and image size
// (a moving average over its batches). A CPU lane takes the oldest row of
// a call no batching backend runs; of a call one does run it takes the
// newest row, and only when it would finish it before that backend
// reached it: its own time per row below the ready rows of that key over
// the backend's rate. A fast GPU so gets every row, a slow one shares them
// with the CPU lanes, and a node without one runs everything on the CPU.
// Rows passed on undecoded to a device are its own: the CPU lanes cannot
// take them (the decode stage's split already weighed the device's
// decoder against the host's).
//
// The host's cores are shared by one semaphore (Config.Cores: the cores
// the process may use, less one beside a GPU on 8 cores or more, for its
// lanes' own host work): the decode and encode stages go before the CPU
// lanes, so the rows a device waits for are decoded first and the CPU
// lanes get the cores left over. --workers caps the CPU lanes; the defaults need no
// tuning on a GPU node or a CPU-only one.
//
// # Faults
//
// A backend reports a bad image as that row's error. A row a backend
// cannot run after all (too large for the device; a blob detection it
// cannot decide) it declines (Item.Decline), and the row goes to the
// fallback, the first backend (the CPU), already decoded; one it was
// passed undecoded goes to the host decoders first (and from there to
// the fallback, if the device had decoded it: its reason was the op's). When a backend
// itself fails a batch (a lost device, out of memory), the scheduler
// takes it out of service, logs it, shows it in Backends (and so in the
// server's health and capabilities) and gives the batch, still decoded,
// first in line, to the fallback. No row is lost and none is decoded
// twice.
//
// # Backpressure and cancellation
//
// Budget is the memory budget (--memory-budget): a stream takes a batch's
// bytes from its input quarter before reading it and returns them once its
// results are written, so when it is spent streams stop reading and gRPC
// flow control holds the clients. A row takes its op's need
// (udf.Task.Need, from the header) before the decode stage decodes it, in
// intake order, waiting for it; once finished it keeps its result's bytes
// until its stream frees them (Batch.Prefix, Take and Free let a stream
// write finished rows before its batch is done). A row that needs more
// than any row may take is its own error (udf.ErrOverBudget). A CPU lane
// keeps its worker's buffers between rows (FFT plans, kernel spectra: a
// new worker computes them again), outside the budget, up to a quarter of
// it over all lanes for each op (after a row that needed more it starts a
// new worker), and one idle for two seconds lets go of anything over 16
// MiB. After a row that took an eighth of the budget,
// the heap's free memory goes back to the system, and again once its
// result is written (and when an idle lane lets go). Memory stays
// bounded however many streams open and however large their images. When
// a stream's context ends (cancelled, client gone, deadline),
// its rows leave the intake and the ready queue at once, and the decode
// and encode stages skip its rows.
//
// # Seeing where the time goes
//
// Stats gives each stage's rows, busy time (wall, summed over its
// goroutines) and thread CPU time, the backends' batches and how full they
// were, the rows they declined, and the queues' depths; the server
// publishes it in its stats action and `pixelflight bench` reads it.
// NewMetrics registers the Prometheus series: queue depth and wait,
// per-stage busy time and queue depth, batch sizes and fill per backend,
// rows per backend and op, row errors per op and kind, decode and kernel
// time, and backend health.
//
// # Without a GPU
//
// Sim stands in for one (serve --backend sim): its lanes do a GPU lane's
// host work and wait out a device time from a rate model (SimRates,
// defaulting to an H100's figures). Its rows have the right shape but no
// results; it is for measuring the row path, in tests and benchmarks.
package sched
