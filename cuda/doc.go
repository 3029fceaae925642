// Package cuda is the GPU backend: fft_convolve, detect_faces and
// detect_blobs on an NVIDIA GPU, behind sched.Backend, with the CPU
// backend as the reference and the fallback.
//
// It computes, and decodes JPEGs where the GPU can: the scheduler's decode
// stage hands it images of one call and one shape per batch, with the
// call's typed spec, decoded, or, where nvJPEG is there (package nvjpeg,
// opened at run time: libnvjpeg.so.13 or .12), JPEGs still to decode in
// the share the measured rates give it (sched.DeviceDecoder, decode.go);
// its encode stage makes the PNGs of its rows. nvJPEG decodes with the
// GPU's hardware JPEG engines where nvjpegGetHardwareDecoderInfo finds
// them (A100, A30, H100; in a container only with
// NVIDIA_DRIVER_CAPABILITIES including video, as the image and the pod
// template set), else with its CUDA decoder; Decoder says which, in the
// log and in capabilities. It is emulated (TestJPEGOnDevice) and checked
// against nvjpeg.h.
//
// On one NVIDIA H100 (driver 580, CUDA 13.0; at the commit before the
// staged row path) the conformance and fault tests of this package
// passed, and compute-sanitizer (memcheck, racecheck, initcheck,
// synccheck) found nothing. On one H200 (2026-11-27, the GPU kit) they
// passed again with the staged row path, nvJPEG's luma equalled
// libjpeg-turbo's and memcheck over the JPEG decode found nothing; the
// launch and nvJPEG batch code changed since (no Go store through
// pointer-typed C memory) has run on the CPU only. On machines without a
// GPU (make test): every kernel's logic (compiled for the CPU, see package gpukernels) inside
// the backend's whole pipeline, against a direct convolution and the CPU
// backend; and the CUDA build compiled, vetted and linked against
// NVIDIA's headers and libraries (make cuda-check).
//
// # Two binaries, one image
//
// The default build (pixelflight) links nothing of CUDA: Open returns
// ErrNotBuilt and the binary starts on any machine. The CUDA build
// (pixelflight-cuda, `go build -tags cuda`, `make build-cuda`) links
// gorgonia.org/cu (the driver API; its init calls cuInit and exits the
// process if that fails), so it needs libcuda.so.1 just to start; it
// opens cuFFT when it opens the backend (package cufft: libcufft.so.12
// under a CUDA 13 driver, else libcufft.so.11), so one binary serves
// nodes with CUDA 12 drivers (EMR, Dataproc) and CUDA 13 ones. The image
// ships both binaries side by side. The kernels' module is loaded and
// launched with the driver API from C (open_cuda.go), not gorgonia's
// Function.Launch, which stores pointers from Go into uninitialised C
// memory: Go's write barrier reads what was there as Go pointers, and
// stops the process when one points to freed memory. For the same reason
// Go writes nvJPEG's batch arrays as words (package nvjpeg).
// `pixelflight serve --backend auto` (the default) asks NVML for a GPU
// this process may use (CUDA_VISIBLE_DEVICES honoured); when there is
// one, pixelflight-cuda lies next to the binary and `pixelflight-cuda
// version` runs as a child (so a broken driver cannot take the sidecar
// down), it execs `pixelflight-cuda serve` with the same arguments and
// environment in its place, before listening. Otherwise it serves on the
// CPU and logs why. In pixelflight-cuda, auto opens the GPU backend and,
// if that fails (PTX JIT, memory), serves on the CPU and says so;
// `--backend cuda` fails instead of falling back; `--backend cpu` never
// touches the GPU. Choose is the decision, testable with made-up Facts.
// The CUDA build opens a backend on every GPU the process may use
// (CUDA_VISIBLE_DEVICES: all those lent to it), named "cuda" for device 0
// and "cudaN" for device N; a GPU whose backend cannot start is left out
// and logged.
//
// # The convolution on the GPU
//
// The scheduler gives a lane up to --max-batch decoded rows of one call
// and one image shape, decoded into pinned memory the backend handed the
// decode stage (sched.Stager; 1 GiB at most, beyond that a lane copies
// the pixels through its own pinned buffer). Then: the row and column
// index tables and each image go to the device in async copies from
// pinned memory; pf_pack widens them to float32 on the padded
// transform grid (the tables encode the boundary: zero, reflect, wrap);
// cuFFT runs a batched 2D R2C (cufftPlanMany, one plan per shape and
// power-of-two batch, kept per lane); pf_mul multiplies by the kernel's
// spectrum (computed once per lane, shape and call, kept on the device)
// and scales; cuFFT's C2R inverts; then only the output crosses back:
// pf_crop_f32 (4 bytes a pixel), pf_crop_u8 (png: clipped and rounded on
// the device, 1 byte a pixel, PNG-encoded by the scheduler's encode stage) or pf_stats (per
// image partial count/mean/M2/min/max, merged on the host: 40 bytes per
// block). Copies, launches and transforms of a lane are queued on its
// own stream and waited for once per batch; two lanes overlap one
// batch's copies with another's compute. Transform sizes are 7-smooth;
// the layout matches the CPU's (package kernels), so the outputs agree
// to float32 rounding.
//
// Each lane may use LaneMemory (default 60% of the free device memory,
// shared by the lanes): a batch that needs more runs in parts; an image
// that alone needs more, or a shape beyond a grid's 65535 rows, is
// declined (sched.Item.Decline): the scheduler gives it to the CPU,
// already decoded.
//
// # detect_faces on the GPU
//
// Accepts takes every detect_faces call: its spec carries the cascade
// the server's library parsed. The cascade is flattened once per lane into two
// device arrays (features as rectangle corners, nodes, trees, stages,
// thresholds, leaves: haar.go). A lane's batch of one image shape goes up
// with the resize tables of every pyramid level (haar.ResizeAxis, computed
// on the host in float64 exactly as the CPU's); then per level, on the
// lane's stream: pf_resize (INTER_LINEAR_EXACT: integer arithmetic, bit
// exact), pf_integral_rows (row prefix sums), pf_tilted_a/b for cascades
// with tilted features (the 45° integral from the row prefix sums, one
// thread per diagonal: no barrier), pf_integral_cols (integral and
// squared integral, modulo 2^32 as the CPU's int32/uint32),
// pf_haar_stage0 (one thread per window: variance normalisation and the
// first stage) and pf_haar_scan (one thread per window: the rest of the
// cascade, hits appended to a list under an atomic counter). The CPU
// skips the window after one the first stage rejects; pf_haar_scan
// evaluates a window exactly when the CPU would (the run of first-stage
// rejections just before it has even length), so the raw detections are
// the CPU's, not a superset. The float32/float64 arithmetic per window is
// package haar's, operation for operation, with the _rn intrinsics so
// that nothing is fused into a multiply-add (the PTX has no fma in these
// kernels). The hits come back as (image, level, y, x); the host sorts
// them into the CPU's order and groups them with haar.Group, so the rows
// (boxes, neighbour counts, annotated PNGs) are the CPU's, bit for bit:
// TestFacesConformance compares them on photos with the default (stumps),
// alt2 and alt_tree (trees) and two tilted cascades, with min_neighbors 0
// (every raw detection) among the parameters.
//
// Per image a batch needs its pixels, the largest level's image, three
// integral images (12 bytes a pixel), a status byte per window and room
// for a hit (16 bytes) at every window of every level, so that the list
// cannot overflow: about 45–50 bytes per pixel of the image (11.6 MB for
// 512×512 with frontalface_default, 102 MB for 1920×1080). Images that
// do not fit the lane, or whose pyramid exceeds a grid's 65535 rows, are
// declined, for the CPU.
//
// # detect_blobs on the GPU
//
// blob_log's scale space and its peaks run on the device, the rest on the
// host with package blob's code (blobs.go). Per scale, on the lane's
// stream: pf_blob_y sums the Gaussian and its second derivative along y
// from the 8-bit pixels (v/255), pf_blob_x along x, giving -sigma²·LoG
// in float64, into a ring of three layers per image; once scale k+1
// exists, pf_blob_peaks classifies scale k's points (threshold, the 26
// neighbours of the 3×3×3 box within the cube) and appends peaks to the
// image's list under an atomic counter. Only the counters and the peaks
// cross back; the host sorts them (blob.SortPeaks) and prunes them
// (blob.Prune: the overlap rule in skimage's pair order).
//
// Exactness. The CPU sums scales of kernel radius < 24 directly, in
// scipy's order; the kernels sum every scale in that same order with the
// _rn intrinsics (no fused multiply-add: the PTX of pf_blob_y and
// pf_blob_x has none), so for those scales the responses are the CPU's
// bit for bit (TestBlobResponses checks every response). Larger radii the
// CPU filters in the DCT domain, and a direct sum differs from it by
// ~1e-14 (TestBlobResponses: at most 3e-14 on coins and generated
// images, for sigmas up to 64); blobTol (1e-10) bounds it for those
// scales. A decision is taken on the GPU only when the margin rules it
// out: a threshold or neighbour comparison, the "every response equals the
// first" rule (a constant cube has no peaks), the order of two peaks.
// An image with any decision inside the tolerance, or with more peaks
// than its list holds (a quarter of its pixels), is declined and redone
// on the CPU (Backend.CPURows counts them). So the rows are the CPU's: the
// same blobs in the same order; TestBlobsConformance compares them on
// coins, generated spots, noise, a flat image and a mirror-symmetric one
// (two peaks that tie exactly: redone on the CPU) under six parameter
// sets. What costs time: radius·pixels reads per scale and pass
// (summed directly: no FFT), ~41 bytes of device memory per pixel plus
// the peak list.
//
// # Faults
//
// A CUDA or cuFFT error (out of memory, a failed launch, a lost device)
// or a panic in Run makes Run return the error: the scheduler takes the
// backend out of service, logs it, shows it in health and capabilities,
// and redoes the batch on the CPU. A bad image is that row's error, as
// on the CPU.
//
// # What stays on the CPU
//
//   - detect_faces' grouping (cv::groupRectangles and clipping, on the
//     host after the hits come back): a few hundred rectangles per image
//     at most, union-find over every pair and cluster means whose
//     float32 rounding and first-appearance order decide the output;
//     small, sequential, and exact only as package haar does it, so the
//     host runs haar's own code. Annotation (drawing boxes, PNG) too,
//     in the scheduler's encode stage.
//   - detect_blobs' sort and pruning (on the host after the peaks come
//     back): skimage visits overlapping pairs in the order of a Python
//     set, which package blob replays; sequential, and small.
//   - watershed: the priority flood visits pixels in the order of a
//     global priority queue (value, then age): sequential by definition,
//     and its ties decide labels. Otsu's threshold is one histogram, and
//     the EDT and peak_local_max could run on the GPU, but with the flood
//     on the host the image would cross the bus twice for little gain:
//     not ported.
//   - echo and info; decoding and PNG encoding are the scheduler's host
//     stages, but for the JPEGs nvJPEG decodes (above).
//
// # Tests
//
// TestBlobsConformance and TestBlobsUnsureGoesToCPU do the same for
// detect_blobs; TestBlobResponses compares the scale space itself.
//
// TestFacesConformance runs detect_faces on the CPU and on the emulated
// device (and, under -tags cuda, the GPU) and requires equal rows;
// TestTiltedIntegralKernels checks the tilted integral against its
// definition.
//
// TestConformance runs one table of fft_convolve calls (every mode,
// boundary, output, kernels larger than the image, undecodable and null
// rows) through the scheduler on every backend the test binary has: the
// CPU, the emulated device (three memory budgets: whole batches, parts,
// none: every image declined to the CPU), and, in a binary built with -tags cuda, the GPU, where a GPU
// that cannot start FAILS the suite rather than skipping it. So
// `go test -tags cuda ./cuda/` belongs only on machines with a GPU; CI
// compiles it (make cuda-check) and runs the emulated suite (make test).
package cuda
