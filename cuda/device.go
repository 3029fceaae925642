package cuda

import "errors"

// ErrNotBuilt is Open's error in a binary built without the cuda tag (or
// without cgo): the default build, which links nothing of CUDA.
var ErrNotBuilt = errors.New("cuda: this binary is built without the CUDA backend (build tag cuda)")

// ErrNoDevice is Open's error when the driver starts but shows no GPU.
var ErrNoDevice = errors.New("cuda: no CUDA device")

// devPtr is a device address.
type devPtr uintptr

// at is the kernel argument for the address off bytes into d.
func (d devPtr) at(off int) uint64 { return uint64(d) + uint64(off) }

// i64 is an int kernel argument.
func i64(v int) uint64 { return uint64(v) }

// dim3 is a grid or block size: x, y, z.
type dim3 [3]int

// device is one GPU, as the pipeline sees it. The CUDA build's is the
// driver API (gorgonia.org/cu) and cuFFT (open_cuda.go, cufft); the tests'
// runs the same kernels compiled as C++ on the CPU (emu_test.go), or
// fails on purpose.
type device interface {
	name() string
	// memory is the device's free and total memory in bytes.
	memory() (free, total int64, err error)
	newStream() (stream, error)
	// jpeg is its JPEG decoder, or why it has none (JPEGs are then
	// decoded on the host).
	jpeg() (jpegInfo, error)
	close() error
}

// stream is one lane's queue of work on the device: its copies, launches
// and transforms run in order, asynchronously to the host until sync.
// Every method is called between bind and its unbind.
type stream interface {
	// bind makes the device's context current on this goroutine's OS
	// thread (locked until unbind).
	bind() (unbind func(), err error)
	alloc(bytes int) (devPtr, error) // zeroed
	free(p devPtr) error
	// hostAlloc returns page-locked host memory (async copies need it).
	hostAlloc(bytes int) ([]byte, error)
	hostFree(b []byte) error
	upload(dst devPtr, src []byte) error
	download(dst []byte, src devPtr) error
	// launch runs kernel name of gpukernels/kernels.cu.h; every argument is 8 bytes
	// (a device address, an int64, or a float64's bits).
	launch(name string, grid, block dim3, args ...uint64) error
	// plan makes batched 2D real transforms of batch nh×nw arrays
	// (cuFFT's R2C and C2R layouts, unnormalised) on this stream.
	plan(nh, nw, batch int) (fftPlan, error)
	// copy copies n bytes within the device.
	copy(dst, src devPtr, n int) error
	// jpegDecoder makes a JPEG decoder working on this stream, or nil
	// when the device has none.
	jpegDecoder() (jpegDecoder, error)
	sync() error
	close() error
}

// errStream marks a jpegDecoder error that is the stream's (a failed
// synchronisation): the device failed, not the batch's images.
var errStream = errors.New("cuda: stream failed after a JPEG decode")

// jpegInfo describes a device's JPEG decoder.
type jpegInfo struct {
	desc     string // for the log and capabilities
	hardware bool   // the GPU's JPEG engines, which refuse progressive JPEGs
}

// jpegDecoder decodes batches of JPEGs to 8-bit luma (their coded Y
// plane) in device memory, on its stream: nvJPEG in the CUDA build, the
// host's decoder writing into emulated device memory in the tests.
type jpegDecoder interface {
	// supported reports whether it decodes this JPEG (a hardware engine
	// refuses progressive ones, for instance).
	supported(jpeg []byte) bool
	// decode decodes jpegs[i] to dst[i], rows pitch[i] bytes apart, and
	// returns once they are decoded (it synchronises the stream). The
	// caller has synchronised the stream before: nothing queued before
	// it runs (the hazard of nvJPEG's hardware batched decode, package
	// nvjpeg). An error fails the whole batch; what it wrote is undefined.
	// An error wrapping errStream is the stream's, not the images': the
	// device failed.
	decode(jpegs [][]byte, dst []devPtr, pitch []int) error
	close() error
}

// fftPlan is a batched 2D real FFT: forward nh×nw float32 arrays to
// nh×(nw/2+1) complex64, inverse back (the inverse may overwrite in).
type fftPlan interface {
	forward(in, out devPtr) error
	inverse(in, out devPtr) error
	destroy() error
}
