// Package cuda is the GPU backend. It runs fft_convolve, detect_faces and
// detect_blobs on NVIDIA GPUs, and decodes JPEGs there with nvJPEG, as a
// sched.Backend beside the CPU backend, which is its reference and its
// fallback. Its rows are the CPU's: fft_convolve's to float32 rounding,
// detect_faces' and detect_blobs' exactly.
//
// Select is serve's --backend: it returns one Backend per GPU the process
// may use, or execs pixelflight-cuda, or leaves the rows to the CPU;
// Choose makes the decision from Facts. Open starts one GPU's Backend
// from a Config. A Backend is a sched.Backend (Run), a sched.Stager
// (pinned host buffers the decode stage decodes into) and a
// sched.DeviceDecoder (DecodesOnDevice, Decoder).
//
// It relies on the NVIDIA driver (libcuda.so.1, through cgo and
// gorgonia.org/cu), on cuFFT and nvJPEG, opened at run time (packages
// cufft and nvjpeg), and on the kernels of package gpukernels, compiled
// to kernels.ptx. Only the build tag cuda has it; elsewhere Open returns
// ErrNotBuilt. Why it is built this way: docs/gpu.md. Where it has run:
// README.md, Status. Its figures: BENCHMARKS.md.
//
// # Two binaries, one image
//
// The default build (pixelflight) links nothing of CUDA and starts on any
// machine. The CUDA build (pixelflight-cuda: `go build -tags cuda`, `make
// build-cuda`) needs libcuda.so.1 to start, and gorgonia.org/cu's init
// exits the process when cuInit fails. It opens cuFFT when it opens a
// backend: libcufft.so.12 under a CUDA 13 driver, else libcufft.so.11.
// The image ships both binaries side by side.
//
// `pixelflight serve --backend auto` (the default) asks NVML for a GPU
// this process may use (CUDA_VISIBLE_DEVICES honoured). When there is one
// and pixelflight-cuda lies next to the binary and runs (`version`, as a
// child), it execs `pixelflight-cuda serve` with the same arguments and
// environment, before listening; otherwise it serves on the CPU and logs
// why. In pixelflight-cuda, auto opens the GPU backends and, if none
// opens, serves on the CPU and says so; `--backend cuda` fails instead;
// `--backend cpu` never touches the GPU. A backend opens on every GPU the
// process may use, named "cuda" for device 0 and "cudaN" for device N; a
// GPU whose backend cannot start is left out and logged.
//
// # Lanes, batches and memory
//
// Each backend has Config.Lanes lanes (DefaultLanes), each a CUDA stream.
// A lane takes up to Config.MaxBatch rows of one call and one image shape,
// decoded into pinned memory the backend handed the decode stage (1 GiB
// at most; beyond it a lane copies the pixels through its own pinned
// buffer). It queues the batch's copies, launches and transforms on its
// stream and waits once per batch, so two lanes overlap one batch's copies
// with another's compute. Kernels launch through pf_launch (open_cuda.go),
// which calls cuLaunchKernel from C.
//
// A lane may use Config.LaneMemory of device memory (default: 60% of the
// free memory at Open, shared by the lanes). A batch that needs more runs
// in parts. An image that alone needs more, or whose grid passes CUDA's
// 65535 rows, is declined (sched.Item.Decline): the scheduler gives it to
// the CPU, decoded.
//
// # JPEG decoding on the GPU
//
// Where nvJPEG opens (libnvjpeg.so.13 or .12), the scheduler passes the
// backend the JPEG rows DecodesOnDevice takes undecoded, in the share the
// measured rates of its decoder and the host's give it (decode.go). A lane decodes them in one
// batch to luma in device memory; the pixels never cross to the host.
// What nvJPEG refuses, or a batch it fails, goes back to the host
// decoders, so a bad image is still its own row's error. nvJPEG uses the
// GPU's hardware JPEG engines where nvjpegGetHardwareDecoderInfo finds
// them (A100, A30, H100; in a container only with
// NVIDIA_DRIVER_CAPABILITIES including video), else its CUDA decoder.
// Decoder says which, in the log and in capabilities.
//
// # fft_convolve
//
// The row and column index tables (which encode the boundary: zero,
// reflect, wrap) and the images go to the device; pf_pack widens them to
// float32 on the padded, 7-smooth transform grid; cuFFT runs a batched 2D
// R2C (cufftPlanMany: a plan per shape and power-of-two batch, kept per
// lane); pf_mul multiplies by the kernel's spectrum (computed once per
// lane, shape and call, kept on the device) and scales; cuFFT's C2R
// inverts. Only the output crosses back: pf_crop_f32 (4 bytes a pixel),
// pf_crop_u8 (png: clipped and rounded on the device, 1 byte a pixel,
// encoded by the scheduler's encode stage) or pf_stats (per block
// count/mean/M2/min/max, merged on the host). The layout is the CPU's
// (package kernels).
//
// A separable kernel (rank one: kernels.Kernel's Col and Row) whose two
// 1-D passes cost fewer multiply-adds than the FFT's transforms by
// gpuMethod's model (separable.go; its rate awaits GPU figures) skips
// cuFFT: pf_sep_rows filters the extended rows (the CPU's Separable
// method's tables: mode and boundary) along x, pf_sep_cols the result
// along y, both from shared-memory tiles; the f32 output comes back as
// the passes wrote it, png and stats through pf_crop_u8 and pf_stats.
// Each row names its method (fft or separable) in
// pixelflight_method_rows_total, as the CPU's.
//
// # detect_faces
//
// Accepts takes every detect_faces call. The cascade the server's library
// parsed is flattened once per lane into two device arrays (haar.go). A
// batch goes up with the resize tables of every pyramid level
// (haar.ResizeAxis, on the host). Then per level: pf_resize
// (INTER_LINEAR_EXACT), pf_integral_rows, pf_tilted_a and pf_tilted_b
// (cascades with tilted features), pf_integral_cols (integral and squared
// integral, modulo 2^32 as the CPU's), pf_haar_stage0 (per window:
// variance normalisation and the first stage) and pf_haar_scan (per
// window: the rest of the cascade, hits appended under an atomic
// counter). pf_haar_scan evaluates exactly the windows the CPU evaluates.
// The hits come back as (image, level, y, x); the host sorts them into
// the CPU's order and groups them with haar.Group.
//
// # detect_blobs
//
// Per scale: pf_blob_y and pf_blob_x sum the Gaussian and its second
// derivative along y, then x, from the 8-bit pixels (v/255), giving
// -sigma²·LoG in float64 into a ring of three layers per image;
// pf_blob_first keeps each image's first response; once scale k+1
// exists, pf_blob_peaks classifies scale k's points (threshold, the 26
// neighbours within the cube) and appends peaks under an atomic counter.
// Only the counters and the peaks cross back; the host sorts them
// (blob.SortPeaks) and prunes them (blob.Prune), as package blob does. A
// scale the CPU sums directly comes out bit for bit; for the others the
// CPU filters in the DCT domain and blobTol (1e-10) bounds the
// difference. An image with any decision within that tolerance, or with
// more peaks than its list holds (a quarter of its pixels), is declined
// and redone on the CPU (Backend.CPURows counts them).
//
// # Faults
//
// A CUDA or cuFFT error (out of memory, a failed launch, a lost device) or
// a panic in Run makes Run return the error: the scheduler takes the
// backend out of service, logs it, shows it in health and capabilities,
// and redoes the batch on the CPU. A bad image is that row's error, as on
// the CPU.
//
// # What stays on the CPU
//
// detect_faces' grouping and annotation, detect_blobs' sort and pruning,
// watershed, echo and info, PNG encoding, and the decoding of every image
// nvJPEG does not take.
//
// # Tests
//
// The conformance tests (TestConformance, TestSeparableConformance,
// TestFacesConformance, TestBlobsConformance) run one table of calls through the scheduler on
// every backend the test binary has and require the CPU's rows: the CPU,
// the emulated device (package gpukernels runs the kernels on the CPU),
// and, under -tags cuda, the GPU, where a GPU that cannot start fails the
// suite. So `go test -tags cuda ./cuda/` belongs on GPU machines only;
// make test runs the emulated suite, and make cuda-check compiles, vets
// and links the CUDA build against NVIDIA's headers and libraries.
package cuda
