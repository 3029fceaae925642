//go:build cuda && cgo

package cuda

/*
#cgo LDFLAGS: -lcuda
#include <cuda.h>
#include <stdlib.h>

static CUresult pf_host_alloc(void** p, size_t n) {
	return cuMemHostAlloc(p, n, CU_MEMHOSTALLOC_PORTABLE);
}

// pf_launch launches f with the n 8-byte arguments args (Go memory without
// pointers; cuLaunchKernel copies them). The array of their addresses that
// cuLaunchKernel takes is built here, on the C stack: written from Go into
// C memory it would pass through Go's write barrier, which reads the old
// contents of that memory as Go pointers.
#define PF_MAX_ARGS 32
static CUresult pf_launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                          CUstream s, const unsigned long long *args, int n) {
	void *p[PF_MAX_ARGS];
	if (n < 0 || n > PF_MAX_ARGS) {
		return CUDA_ERROR_INVALID_VALUE;
	}
	for (int i = 0; i < n; i++) {
		p[i] = (void *)&args[i];
	}
	return cuLaunchKernel(f, gx, gy, gz, bx, by, bz, 0, s, p, NULL);
}

static const char *pf_error_name(CUresult r) {
	const char *s = NULL;
	cuGetErrorName(r, &s);
	return s;
}
*/
import "C"

import (
	_ "embed"
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"gorgonia.org/cu"

	"github.com/pixelflight/pixelflight/cuda/cufft"
	"github.com/pixelflight/pixelflight/cuda/nvjpeg"
)

// Built reports whether this binary has the CUDA backend: true in
// pixelflight-cuda (build tag cuda), which needs libcuda.so.1 (the NVIDIA
// driver) to start at all, and cuFFT (libcufft.so.12 or .11, opened at
// run time by package cufft) to open the backend; nvJPEG (libnvjpeg.so.13
// or .12, package nvjpeg) where it is there, to decode JPEGs on the GPU.
const Built = true

// kernels.ptx is gpukernels/kernels.cu.h compiled by `make cuda-ptx` (NVRTC, compute_52);
// the driver JIT-compiles it for the GPU when Open loads it.
//
//go:embed kernels.ptx
var ptx string

// Open starts the backend on CUDA device cfg.Device: its primary context,
// the kernels' module (JIT-compiled from the embedded PTX), a stream per
// lane. gorgonia.org/cu has already called cuInit when the program
// started (and exited if it failed).
func Open(cfg Config) (*Backend, error) {
	d, err := openDevice(cfg.Device)
	if err != nil {
		return nil, err
	}
	b, err := newBackend(d, cfg)
	if err != nil {
		d.close()
		return nil, err
	}
	return b, nil
}

// DeviceCount is the number of CUDA devices this process may use (those
// CUDA_VISIBLE_DEVICES shows).
func DeviceCount() (int, error) {
	n, err := cu.NumDevices()
	if err != nil {
		return 0, fmt.Errorf("cuda: counting devices: %w", err)
	}
	return n, nil
}

type cudaDevice struct {
	dev    cu.Device
	ctx    cu.CUContext
	mod    C.CUmodule
	fns    map[string]C.CUfunction
	fft    *cufft.Lib
	label  string
	jpg    *nvjpeg.Lib    // nil: JPEGs are decoded on the host, for jpgErr
	jpgBk  nvjpeg.Backend // the hardware engines where the GPU has them, else CUDA
	jpgIs  jpegInfo
	jpgErr error
}

func openDevice(ordinal int) (*cudaDevice, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	n, err := cu.NumDevices()
	if err != nil {
		return nil, fmt.Errorf("cuda: counting devices: %w", err)
	}
	if ordinal < 0 || ordinal >= n {
		return nil, fmt.Errorf("%w: device %d of %d", ErrNoDevice, ordinal, n)
	}
	driver := cu.Version()
	fft, err := cufft.Open(cufft.Sonames(driver)...)
	if err != nil {
		return nil, fmt.Errorf("cuda: driver CUDA %d.%d: %w", driver/1000, driver%1000/10, err)
	}
	dev, err := cu.GetDevice(ordinal)
	if err != nil {
		return nil, fmt.Errorf("cuda: device %d: %w", ordinal, err)
	}
	name, err := dev.Name()
	if err != nil {
		return nil, fmt.Errorf("cuda: device %d name: %w", ordinal, err)
	}
	ctx, err := dev.RetainPrimaryCtx()
	if err != nil {
		return nil, fmt.Errorf("cuda: device %d primary context: %w", ordinal, err)
	}
	d := &cudaDevice{dev: dev, ctx: ctx, fns: map[string]C.CUfunction{}, fft: fft,
		label: fmt.Sprintf("%s (CUDA device %d, %s)", name, ordinal, fft.Soname)}
	if err := cu.SetCurrentContext(ctx); err != nil {
		d.close()
		return nil, fmt.Errorf("cuda: making the context current: %w", err)
	}
	d.openJPEG(driver)
	cptx := C.CString(ptx)
	r := C.cuModuleLoadData(&d.mod, unsafe.Pointer(cptx))
	C.free(unsafe.Pointer(cptx))
	if r != C.CUDA_SUCCESS {
		d.close()
		return nil, fmt.Errorf("cuda: loading the kernels' PTX (driver JIT): %w", cuError(r))
	}
	for _, k := range kernelNames {
		var f C.CUfunction
		ck := C.CString(k)
		r := C.cuModuleGetFunction(&f, d.mod, ck)
		C.free(unsafe.Pointer(ck))
		if r != C.CUDA_SUCCESS {
			d.close()
			return nil, fmt.Errorf("cuda: kernel %s: %w", k, cuError(r))
		}
		d.fns[k] = f
	}
	return d, nil
}

func (d *cudaDevice) name() string { return d.label }

// openJPEG opens nvJPEG, if it is there, with the GPU's hardware JPEG
// engines where nvjpegGetHardwareDecoderInfo finds them (A100, A30, H100;
// in a container only with NVIDIA_DRIVER_CAPABILITIES including video),
// else its CUDA decoder; the context is current.
func (d *cudaDevice) openJPEG(driver int) {
	lib, err := nvjpeg.Open(nvjpeg.Sonames(driver)...)
	if err != nil {
		d.jpgErr = err
		return
	}
	bk, engines := nvjpeg.Default, 0
	if dec, err := lib.NewDecoder(nvjpeg.Hardware); err == nil {
		if n, _, err := dec.HardwareEngines(); err == nil && n > 0 {
			bk, engines = nvjpeg.Hardware, n
		}
		dec.Close() //nolint:errcheck // a probe
	}
	dec, err := lib.NewDecoder(bk)
	if err != nil {
		d.jpgErr = fmt.Errorf("nvjpeg %s backend: %w", bk, err)
		return
	}
	dec.Close() //nolint:errcheck // a probe
	v := lib.Version
	d.jpg, d.jpgBk = lib, bk
	d.jpgIs = jpegInfo{desc: fmt.Sprintf("nvJPEG %d.%d.%d (%s), %s backend, %d hardware engines", v[0], v[1], v[2], lib.Soname, bk, engines),
		hardware: bk == nvjpeg.Hardware}
}

func (d *cudaDevice) jpeg() (jpegInfo, error) { return d.jpgIs, d.jpgErr }

func (d *cudaDevice) memory() (free, total int64, err error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cu.SetCurrentContext(d.ctx); err != nil {
		return 0, 0, err
	}
	return cu.MemInfo()
}

func (d *cudaDevice) newStream() (stream, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cu.SetCurrentContext(d.ctx); err != nil {
		return nil, err
	}
	s, err := cu.MakeStream(cu.NonBlocking)
	if err != nil {
		return nil, err
	}
	return &cudaStream{d: d, s: s}, nil
}

func (d *cudaDevice) close() error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if d.mod != nil {
		if err := cu.SetCurrentContext(d.ctx); err == nil {
			C.cuModuleUnload(d.mod) // releasing the context frees it too
		}
	}
	return d.dev.ReleasePrimaryCtx()
}

type cudaStream struct {
	d *cudaDevice
	s cu.Stream
}

func (s *cudaStream) bind() (func(), error) {
	runtime.LockOSThread()
	if err := cu.SetCurrentContext(s.d.ctx); err != nil {
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("cuda: making the context current: %w", err)
	}
	return runtime.UnlockOSThread, nil
}

func (s *cudaStream) alloc(n int) (devPtr, error) {
	p, err := cu.MemAlloc(int64(n))
	if err != nil {
		return 0, err
	}
	if err := cu.MemsetD8Async(p, 0, int64(n), s.s); err != nil {
		cu.MemFree(p) //nolint:errcheck // the first error is the one to report
		return 0, err
	}
	return devPtr(p), nil
}

func (s *cudaStream) free(p devPtr) error { return cu.MemFree(cu.DevicePtr(p)) }

func (s *cudaStream) hostAlloc(n int) ([]byte, error) {
	var p unsafe.Pointer
	if r := C.pf_host_alloc(&p, C.size_t(n)); r != C.CUDA_SUCCESS {
		return nil, fmt.Errorf("cuMemHostAlloc(%d bytes): CUresult %d", n, int(r))
	}
	return unsafe.Slice((*byte)(p), n), nil
}

func (s *cudaStream) hostFree(b []byte) error { return cu.MemFreeHost(unsafe.Pointer(&b[0])) }

func (s *cudaStream) upload(dst devPtr, src []byte) error {
	return cu.MemcpyHtoDAsync(cu.DevicePtr(dst), unsafe.Pointer(&src[0]), int64(len(src)), s.s)
}

func (s *cudaStream) download(dst []byte, src devPtr) error {
	return cu.MemcpyDtoHAsync(unsafe.Pointer(&dst[0]), cu.DevicePtr(src), int64(len(dst)), s.s)
}

func (s *cudaStream) launch(name string, grid, block dim3, args ...uint64) error {
	f, ok := s.d.fns[name]
	if !ok {
		return fmt.Errorf("cuda: no kernel %s", name)
	}
	if len(args) > C.PF_MAX_ARGS {
		return fmt.Errorf("cuda: launching %s: %d arguments, at most %d", name, len(args), C.PF_MAX_ARGS)
	}
	var a *C.ulonglong
	if len(args) > 0 {
		a = (*C.ulonglong)(unsafe.Pointer(&args[0]))
	}
	r := C.pf_launch(f, C.uint(grid[0]), C.uint(grid[1]), C.uint(grid[2]), C.uint(block[0]), C.uint(block[1]), C.uint(block[2]),
		C.CUstream(unsafe.Pointer(s.s.C())), a, C.int(len(args)))
	if r != C.CUDA_SUCCESS {
		return fmt.Errorf("cuda: launching %s: %w", name, cuError(r))
	}
	return nil
}

// cuError is a CUresult as an error, by its name (CUDA_ERROR_...).
func cuError(r C.CUresult) error {
	if n := C.pf_error_name(r); n != nil {
		return fmt.Errorf("%s (CUresult %d)", C.GoString(n), int(r))
	}
	return fmt.Errorf("CUresult %d", int(r))
}

func (s *cudaStream) sync() error {
	if err := s.s.Synchronize(); err != nil {
		return fmt.Errorf("cuda: stream: %w", err)
	}
	return nil
}

func (s *cudaStream) close() error { return s.s.Destroy() }

func (s *cudaStream) copy(dst, src devPtr, n int) error {
	return cu.MemcpyDtoDAsync(cu.DevicePtr(dst), cu.DevicePtr(src), int64(n), s.s)
}

func (s *cudaStream) jpegDecoder() (jpegDecoder, error) {
	if s.d.jpg == nil {
		return nil, nil
	}
	dec, err := s.d.jpg.NewDecoder(s.d.jpgBk)
	if err != nil {
		return nil, err
	}
	return &nvjpegDecoder{dec: dec, s: s}, nil
}

// nvjpegDecoder is a lane's nvJPEG decoder on its stream.
type nvjpegDecoder struct {
	dec *nvjpeg.Decoder
	s   *cudaStream
	dst []uintptr
}

func (j *nvjpegDecoder) supported(b []byte) bool {
	ok, err := j.dec.Supported(b)
	return err == nil && ok
}

func (j *nvjpegDecoder) decode(jpegs [][]byte, dst []devPtr, pitch []int) error {
	j.dst = j.dst[:0]
	for _, p := range dst {
		j.dst = append(j.dst, uintptr(p))
	}
	err := j.dec.DecodeBatched(jpegs, j.dst, pitch, uintptr(unsafe.Pointer(j.s.s.C())))
	serr := j.s.sync() // nvJPEG may read the JPEGs from the stream: done only then
	j.dec.Unpin()
	if serr != nil {
		return fmt.Errorf("%w: %w", errStream, serr)
	}
	return err
}

func (j *nvjpegDecoder) close() error { return j.dec.Close() }

func (s *cudaStream) plan(nh, nw, batch int) (fftPlan, error) {
	st := uintptr(unsafe.Pointer(s.s.C()))
	fft := s.d.fft
	fwd, err := fft.Plan2D(nh, nw, batch, cufft.R2C, st)
	if err != nil {
		return nil, err
	}
	inv, err := fft.Plan2D(nh, nw, batch, cufft.C2R, st)
	if err != nil {
		fft.Destroy(fwd) //nolint:errcheck // the first error is the one to report
		return nil, err
	}
	return &cufftPlan{fft, fwd, inv}, nil
}

type cufftPlan struct {
	fft      *cufft.Lib
	fwd, inv cufft.Plan
}

func (p *cufftPlan) forward(in, out devPtr) error {
	return p.fft.ExecR2C(p.fwd, uintptr(in), uintptr(out))
}

func (p *cufftPlan) inverse(in, out devPtr) error {
	return p.fft.ExecC2R(p.inv, uintptr(in), uintptr(out))
}

func (p *cufftPlan) destroy() error {
	return errors.Join(p.fft.Destroy(p.fwd), p.fft.Destroy(p.inv))
}
