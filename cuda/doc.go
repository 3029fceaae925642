// Package cuda is the GPU backend: fft_convolve on an NVIDIA GPU, behind
// sched.Backend, with the CPU backend as the reference and the fallback.
//
// Nothing in this package has run on a GPU yet. What has run, on
// machines without one: every kernel's logic (compiled for the CPU, see
// package gpukernels) inside the backend's whole pipeline, against a
// direct convolution and the CPU backend; and the CUDA build compiled,
// vetted and linked against NVIDIA's headers and libraries (make
// cuda-check).
//
// # Two binaries, one image
//
// The default build (pixelflight) links nothing of CUDA: Open returns
// ErrNotBuilt and the binary starts on any machine. The CUDA build
// (pixelflight-cuda, `go build -tags cuda`, `make build-cuda`) links
// gorgonia.org/cu (the driver API; its init calls cuInit and exits the
// process if that fails) and cuFFT, so it needs libcuda.so.1 and
// libcufft.so.11 just to start. The image ships both side by side.
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
//
// # The convolution on the GPU
//
// The scheduler gives a lane up to --max-batch rows of one call and one
// image shape. Run decodes them on the host (Decoders goroutines), then:
// the pixels and the row and column index tables go to the device in one
// copy from pinned memory; pf_pack widens them to float32 on the padded
// transform grid (the tables encode the boundary: zero, reflect, wrap);
// cuFFT runs a batched 2D R2C (cufftPlanMany, one plan per shape and
// power-of-two batch, kept per lane); pf_mul multiplies by the kernel's
// spectrum (computed once per lane, shape and call, kept on the device)
// and scales; cuFFT's C2R inverts; then only the output crosses back:
// pf_crop_f32 (4 bytes a pixel), pf_crop_u8 (png: clipped and rounded on
// the device, 1 byte a pixel, encoded on the host) or pf_stats (per
// image partial count/mean/M2/min/max, merged on the host: 40 bytes per
// block). Copies, launches and transforms of a lane are queued on its
// own stream and waited for once per batch; two lanes overlap one
// batch's copies with another's compute. Transform sizes are 7-smooth;
// the layout matches the CPU's (package kernels), so the outputs agree
// to float32 rounding.
//
// Each lane may use LaneMemory (default 60% of the free device memory,
// shared by the lanes): a batch that needs more runs in parts; an image
// that alone needs more, or a shape beyond a grid's 65535 rows, runs on
// the CPU inside the lane.
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
// detect_faces, detect_blobs, watershed, echo and info: Accepts takes
// fft_convolve only. The kernels for the first step of Haar detection
// (integral images and squared integrals, pf_integral_rows and
// pf_integral_cols) are written and tested on the emulator but not yet
// used: cascade evaluation per window, with its early exits and
// grouping, is the larger part and is not written; LoG filtering for
// blobs could reuse this FFT path but its 3D local maxima and scikit-
// image's pruning are not ported; watershed's priority flood is
// sequential. Decoding and PNG encoding are on the host in every case.
//
// # Tests
//
// TestConformance runs one table of fft_convolve calls (every mode,
// boundary, output, kernels larger than the image, undecodable and null
// rows) through the scheduler on every backend the test binary has: the
// CPU, the emulated device (three memory budgets: whole batches, parts,
// none), and, in a binary built with -tags cuda, the GPU, where a GPU
// that cannot start FAILS the suite rather than skipping it. So
// `go test -tags cuda ./cuda/` belongs only on machines with a GPU; CI
// compiles it (make cuda-check) and runs the emulated suite (make test).
package cuda
