// Package udf is the op registry: what the server can run over rows of
// images, independent of the transport (Flight today; any front end that
// delivers Arrow arrays can call it).
//
// # Calls
//
// A call is a Command: {"op": ..., "column": ..., "params": {...},
// "strict": false, "columns": [...]} (columns, optional: the result
// columns to send; the server projects each result batch to them and
// error). ParseCommand decodes it strictly (unknown fields,
// trailing data and non-JSON are refused); Registry.Prepare looks up the op
// and validates its params, names exactly as documented, returning a Task
// or an error wrapping ErrBadCommand whose message names the problem
// ("sigma -1: want more than 0 and at most 1024", "unknown parameter
// \"Sigma\" (known parameters: ...)").
//
// # Ops
//
//   - echo: the row's bytes unchanged.
//   - info: format, width, height, channels from the header only (a
//     Spark struct is checked as for the other ops, but for MaxPixels).
//   - fft_convolve: 8-bit grayscale (Pillow's "L" rule), then convolution
//     with a named or explicit kernel by the cheapest exact method
//     (separable passes, direct, or FFT); output f32, png or stats.
//   - detect_faces: Haar-cascade face detection with OpenCV's cascades
//     and detectMultiScale's semantics (boxes and neighbour counts; an
//     annotated PNG on request).
//   - detect_blobs: Laplacian-of-Gaussian blobs, as skimage's blob_log.
//   - watershed: distance-transform watershed, as scikit-image; segment
//     count and a 16-bit label PNG.
//
// Each Op carries its parameter documentation and output variants, which
// the server publishes as capabilities. A Param's Choices, Min and Max are
// the rules Prepare holds that one parameter to (the choices enforced from
// the table itself, the bounds proven equal to Prepare's by a test); the
// client checks them on the driver from tools/paramschema's copy. A bound
// whose Limit is "max-kernel" (serve's flag) is the registry's
// Limits.MaxKernelSide.
// docs/ops.md has the full reference.
//
// # Tasks and specs
//
// A Task is a prepared call: its op, its key (the op and params as
// parsed, for batching calls together) and its Spec, one type per op
// (echo's, info's, *ConvolveSpec, *BlobsSpec, *WatershedSpec,
// *FacesSpec), whose methods say everything that runs the call needs:
// Schema, the result columns; Decode, what rows are decoded to first
// (DecodeNone, DecodeGray, or DecodeGrayOnHost where the result reads
// the host's pixels); Compute, the CPU's computation on one decoded row;
// PerPixel, its memory model. A Spec whose CPU computation has several
// methods names them (Methods). The ops a GPU also runs have
// DeviceSpecs: a device backend implements Device, one method per such
// op, and Task.RunOn calls the one for the call's op, so no backend asks
// which op it was given.
//
// One row flows: Header and Refused read its header (the scheduler's
// memory budget needs its size), DecodeInto decodes it, Compute computes
// it, and the result row, an Encoder where a PNG is to be made (png
// output, annotated faces), is encoded by the scheduler's encode stage,
// off the compute lanes (Encode); Build makes the record batches of
// encoded rows. Task.Run does it all for one row. watershed writes its
// label PNG in Compute: written by runs (labelsPNG), it costs less than a
// copy of the labels would, and the worker's label buffer is reused.
//
// # Row contract
//
// The server returns exactly one output row per input row, in order. A row
// that cannot be processed (null, empty, corrupt, truncated, unsupported or
// oversized image) gets nulls in every result column and its reason in the
// trailing "error" column; its neighbours are unaffected. In strict mode
// the first failing row fails the whole call with a RowError instead.
// A panic inside an op is caught and becomes that row's error.
//
// # Workers
//
// Each CPU lane of the scheduler owns a Worker: FFT plans, kernel spectra
// and the detectors' buffers reused from image to image, so steady state
// allocates little beyond the results.
package udf
