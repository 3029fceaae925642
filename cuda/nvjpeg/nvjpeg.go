//go:build cgo

package nvjpeg

/*
#cgo CFLAGS: -I${SRCDIR} -I${SRCDIR}/../../internal/dl
#cgo LDFLAGS: -ldl
#include "dl.h"
#include "nvjpeg_api.h"
#include <stdint.h>
#include <stdlib.h>

typedef struct {
	pf_nvjpegGetProperty getProperty;
	pf_nvjpegCreateEx createEx;
	pf_nvjpegDestroy destroy;
	pf_nvjpegGetHardwareDecoderInfo hardwareDecoderInfo;
	pf_nvjpegJpegStateCreate stateCreate;
	pf_nvjpegJpegStateDestroy stateDestroy;
	pf_nvjpegGetImageInfo imageInfo;
	pf_nvjpegJpegStreamCreate streamCreate;
	pf_nvjpegJpegStreamDestroy streamDestroy;
	pf_nvjpegJpegStreamParse streamParse;
	pf_nvjpegDecodeBatchedSupported batchedSupported;
	pf_nvjpegDecodeBatchedInitialize batchedInitialize;
	pf_nvjpegDecodeBatched batched;
} pf_nvjpeg;

static int pf_nvjpeg_open(const char *soname, pf_nvjpeg *l, char *msg, size_t n) {
	const char *const names[] = {"nvjpegGetProperty", "nvjpegCreateEx", "nvjpegDestroy",
		"nvjpegGetHardwareDecoderInfo", "nvjpegJpegStateCreate", "nvjpegJpegStateDestroy",
		"nvjpegGetImageInfo", "nvjpegJpegStreamCreate", "nvjpegJpegStreamDestroy", "nvjpegJpegStreamParse",
		"nvjpegDecodeBatchedSupported", "nvjpegDecodeBatchedInitialize", "nvjpegDecodeBatched"};
	void *fns[13];
	if (dl_open(soname, names, fns, 13, msg, n) == NULL) {
		return -1;
	}
	l->getProperty = (pf_nvjpegGetProperty)fns[0];
	l->createEx = (pf_nvjpegCreateEx)fns[1];
	l->destroy = (pf_nvjpegDestroy)fns[2];
	l->hardwareDecoderInfo = (pf_nvjpegGetHardwareDecoderInfo)fns[3];
	l->stateCreate = (pf_nvjpegJpegStateCreate)fns[4];
	l->stateDestroy = (pf_nvjpegJpegStateDestroy)fns[5];
	l->imageInfo = (pf_nvjpegGetImageInfo)fns[6];
	l->streamCreate = (pf_nvjpegJpegStreamCreate)fns[7];
	l->streamDestroy = (pf_nvjpegJpegStreamDestroy)fns[8];
	l->streamParse = (pf_nvjpegJpegStreamParse)fns[9];
	l->batchedSupported = (pf_nvjpegDecodeBatchedSupported)fns[10];
	l->batchedInitialize = (pf_nvjpegDecodeBatchedInitialize)fns[11];
	l->batched = (pf_nvjpegDecodeBatched)fns[12];
	return 0;
}

// cgo cannot call function pointers; these small wrappers do. Each
// returns an nvjpegStatus_t.
static unsigned int pf_property(const pf_nvjpeg *l, unsigned int type, int *v) { return l->getProperty(type, v); }
static unsigned int pf_create(const pf_nvjpeg *l, unsigned int backend, struct nvjpegHandle **h) {
	return l->createEx(backend, NULL, NULL, 0, h); // default allocators, NVJPEG_FLAGS_DEFAULT
}
static unsigned int pf_destroy(const pf_nvjpeg *l, struct nvjpegHandle *h) { return l->destroy(h); }
static unsigned int pf_hardware_info(const pf_nvjpeg *l, struct nvjpegHandle *h, unsigned int *engines, unsigned int *cores) {
	return l->hardwareDecoderInfo(h, engines, cores);
}
static unsigned int pf_state_create(const pf_nvjpeg *l, struct nvjpegHandle *h, struct nvjpegJpegState **s) { return l->stateCreate(h, s); }
static unsigned int pf_state_destroy(const pf_nvjpeg *l, struct nvjpegJpegState *s) { return l->stateDestroy(s); }
static unsigned int pf_stream_create(const pf_nvjpeg *l, struct nvjpegHandle *h, struct nvjpegJpegStream **s) { return l->streamCreate(h, s); }
static unsigned int pf_stream_destroy(const pf_nvjpeg *l, struct nvjpegJpegStream *s) { return l->streamDestroy(s); }

// pf_info writes the components, the subsampling and component 0's width
// and height to out.
static unsigned int pf_info(const pf_nvjpeg *l, struct nvjpegHandle *h, const unsigned char *data, size_t n, int *out) {
	int w[PF_NVJPEG_MAX_COMPONENT] = {0}, hh[PF_NVJPEG_MAX_COMPONENT] = {0};
	unsigned int r = l->imageInfo(h, data, n, &out[0], &out[1], w, hh);
	out[2] = w[0];
	out[3] = hh[0];
	return r;
}

// pf_parse parses the headers only (no metadata, no copy of the stream).
static unsigned int pf_parse(const pf_nvjpeg *l, struct nvjpegHandle *h, const unsigned char *data, size_t n, struct nvjpegJpegStream *s) {
	return l->streamParse(h, data, n, 0, 0, s);
}
static unsigned int pf_batched_supported(const pf_nvjpeg *l, struct nvjpegHandle *h, struct nvjpegJpegStream *s, int *is) {
	return l->batchedSupported(h, s, is);
}
static unsigned int pf_batched_init(const pf_nvjpeg *l, struct nvjpegHandle *h, struct nvjpegJpegState *s, int batch, int threads) {
	return l->batchedInitialize(h, s, batch, threads, 2); // NVJPEG_OUTPUT_Y
}

// The batch's arrays are filled from Go as words (uintptr_t): Go must not
// store through pointer-typed fields in C memory, whose old values (the
// last batch's JPEGs, freed since) its write barrier would read as Go
// pointers.
#define PF_IMAGE_WORDS (2 * PF_NVJPEG_MAX_COMPONENT)
_Static_assert(sizeof(pf_nvjpeg_image) == PF_IMAGE_WORDS * sizeof(uintptr_t), "pf_nvjpeg_image is not 8 words");
_Static_assert(sizeof(unsigned char *) == sizeof(uintptr_t), "pointers are not words");
static unsigned int pf_batched(const pf_nvjpeg *l, struct nvjpegHandle *h, struct nvjpegJpegState *s,
                               const uintptr_t *data, const size_t *lengths, uintptr_t *dst, uintptr_t stream) {
	return l->batched(h, s, (const unsigned char *const *)data, lengths, (pf_nvjpeg_image *)dst, (struct CUstream_st *)stream);
}
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"unsafe"

	"github.com/pixelflight/pixelflight/internal/dl"
)

// Lib is an opened nvJPEG. It is never closed; each Decoder of it may be
// used from any goroutine, by one at a time.
type Lib struct {
	fns     C.pf_nvjpeg
	Soname  string // what was opened
	Version [3]int // nvjpegGetProperty: MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL
}

// Backend is an nvjpegBackend_t: the decoder a handle uses.
type Backend int

// The backends for JPEGs in host memory.
const (
	Default   Backend = 0 // NVJPEG_BACKEND_DEFAULT
	Hybrid    Backend = 1 // NVJPEG_BACKEND_HYBRID: Huffman decoding on the CPU
	GPUHybrid Backend = 2 // NVJPEG_BACKEND_GPU_HYBRID: Huffman decoding on the GPU for batches of over 50 baseline JPEGs
	Hardware  Backend = 3 // NVJPEG_BACKEND_HARDWARE: the JPEG engines of A100, A30, H100 and later; baseline, single scan, not 4:1:1 or 4:1:0
)

func (b Backend) String() string {
	switch b {
	case Default:
		return "default"
	case Hybrid:
		return "hybrid"
	case GPUHybrid:
		return "gpu-hybrid"
	case Hardware:
		return "hardware"
	}
	return fmt.Sprintf("nvjpegBackend_t %d", int(b))
}

// Chroma subsamplings (nvjpegChromaSubsampling_t), as Info reports them.
const (
	CSS444     = 0
	CSS422     = 1
	CSS420     = 2
	CSS440     = 3
	CSS411     = 4
	CSS410     = 5
	CSSGray    = 6
	CSS410V    = 7
	CSSUnknown = -1
)

// Status is an nvjpegStatus_t.
type Status int

// The statuses other than NVJPEG_STATUS_SUCCESS (0).
const (
	StatusNotInitialized             Status = 1
	StatusInvalidParameter           Status = 2
	StatusBadJPEG                    Status = 3
	StatusJPEGNotSupported           Status = 4
	StatusAllocatorFailure           Status = 5
	StatusExecutionFailed            Status = 6
	StatusArchMismatch               Status = 7
	StatusInternalError              Status = 8
	StatusImplementationNotSupported Status = 9
	StatusIncompleteBitstream        Status = 10
)

// String is the status's name in nvjpeg.h.
func (s Status) String() string {
	names := [...]string{"NVJPEG_STATUS_SUCCESS", "NVJPEG_STATUS_NOT_INITIALIZED", "NVJPEG_STATUS_INVALID_PARAMETER",
		"NVJPEG_STATUS_BAD_JPEG", "NVJPEG_STATUS_JPEG_NOT_SUPPORTED", "NVJPEG_STATUS_ALLOCATOR_FAILURE",
		"NVJPEG_STATUS_EXECUTION_FAILED", "NVJPEG_STATUS_ARCH_MISMATCH", "NVJPEG_STATUS_INTERNAL_ERROR",
		"NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED", "NVJPEG_STATUS_INCOMPLETE_BITSTREAM"}
	if s >= 0 && int(s) < len(names) {
		return names[s]
	}
	return fmt.Sprintf("nvjpegStatus_t %d", int(s))
}

// Error is an nvJPEG call that did not return NVJPEG_STATUS_SUCCESS.
type Error struct {
	Op     string // what was called, e.g. "decode batched"
	Status Status
}

func (e *Error) Error() string { return "nvjpeg " + e.Op + ": " + e.Status.String() }

// check is nil for NVJPEG_STATUS_SUCCESS, else an *Error.
func check(op string, r C.uint) error {
	if r == 0 {
		return nil
	}
	return &Error{Op: op, Status: Status(r)}
}

var errClosed = errors.New("nvjpeg: decoder is closed")

// Sonames are the nvJPEGs to try, in order, under a driver of CUDA version
// driver (cuDriverGetVersion: 13000 for 13.0).
func Sonames(driver int) []string {
	if driver >= 13000 {
		return []string{"libnvjpeg.so.13", "libnvjpeg.so.12"}
	}
	return []string{"libnvjpeg.so.12"}
}

// Open opens the first of sonames (names or paths) that loads and has
// every function used; its error names each one tried and why not.
func Open(sonames ...string) (*Lib, error) {
	l, err := dl.First(sonames, open)
	if err != nil {
		return nil, fmt.Errorf("nvjpeg: cannot open %s (put the CUDA toolkit's or the nvidia-nvjpeg wheel's lib directory on LD_LIBRARY_PATH): %w",
			strings.Join(sonames, " or "), err)
	}
	return l, nil
}

func open(soname string) (*Lib, error) {
	cs := C.CString(soname)
	defer C.free(unsafe.Pointer(cs))
	l := &Lib{Soname: soname}
	var msg [512]C.char
	if C.pf_nvjpeg_open(cs, &l.fns, &msg[0], C.size_t(len(msg))) != 0 {
		return nil, errors.New(C.GoString(&msg[0]))
	}
	for i := range l.Version {
		var v C.int
		if err := check("get property", C.pf_property(&l.fns, C.uint(i), &v)); err != nil {
			return nil, fmt.Errorf("%s: %w", soname, err)
		}
		l.Version[i] = int(v)
	}
	return l, nil
}

// Decoder is an nvjpegHandle of one backend (default allocators) with one
// nvjpegJpegState and one nvjpegJpegStream, decoding batches to 8-bit luma
// (NVJPEG_OUTPUT_Y). It is not safe for concurrent use. Every call must be
// made on an OS thread whose current CUDA context is the one the streams
// and destinations belong to.
type Decoder struct {
	lib     *Lib
	backend Backend
	h       *C.struct_nvjpegHandle
	state   *C.struct_nvjpegJpegState
	stream  *C.struct_nvjpegJpegStream
	threads int // max_cpu_threads
	batch   int // the batch size the state is initialised for; 0: none

	// C arrays of capacity images for nvjpegDecodeBatched, reused.
	capacity int
	// Words only (see pf_batched): data holds the JPEGs' addresses,
	// images PF_IMAGE_WORDS per image (channel pointers, then pitches).
	data    *C.uintptr_t
	lengths *C.size_t
	images  *C.uintptr_t

	// pin holds the last batch's JPEGs (Go memory nvJPEG may still read
	// from the stream) until Unpin.
	pin runtime.Pinner
}

// NewDecoder makes a Decoder of backend b. With Hardware it fails where
// the GPU has no JPEG engine (nvjpegCreateEx's status says why); a caller
// then uses GPUHybrid or Default.
func (l *Lib) NewDecoder(b Backend) (*Decoder, error) {
	if b < Default || b > Hardware {
		return nil, fmt.Errorf("nvjpeg: backend %d is not Default, Hybrid, GPUHybrid or Hardware", int(b))
	}
	d := &Decoder{lib: l, backend: b, threads: 1}
	if err := check("create", C.pf_create(&l.fns, C.uint(b), &d.h)); err != nil {
		return nil, err
	}
	if err := check("state create", C.pf_state_create(&l.fns, d.h, &d.state)); err != nil {
		d.Close()
		return nil, err
	}
	if err := check("stream create", C.pf_stream_create(&l.fns, d.h, &d.stream)); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// Backend is the backend d was made with.
func (d *Decoder) Backend() Backend { return d.backend }

// SetMaxCPUThreads sets nvjpegDecodeBatchedInitialize's max_cpu_threads
// (1 unless set; n < 1 is 1) for the batches that follow.
func (d *Decoder) SetMaxCPUThreads(n int) {
	if n < 1 {
		n = 1
	}
	if n != d.threads {
		d.threads = n
		d.batch = 0
	}
}

// HardwareEngines is nvjpegGetHardwareDecoderInfo: the JPEG engines and
// cores per engine the handle's hardware decoder uses (0, 0 when none).
func (d *Decoder) HardwareEngines() (engines, coresPerEngine int, err error) {
	if d.h == nil {
		return 0, 0, errClosed
	}
	var e, c C.uint
	if err := check("get hardware decoder info", C.pf_hardware_info(&d.lib.fns, d.h, &e, &c)); err != nil {
		return 0, 0, err
	}
	return int(e), int(c), nil
}

// Info is what nvjpegGetImageInfo says of a JPEG.
type Info struct {
	Components  int
	Subsampling int // nvjpegChromaSubsampling_t: CSS444 ... CSSUnknown
	W, H        int // of component 0, the luma
}

// Info reads a JPEG's headers (nvjpegGetImageInfo).
func (d *Decoder) Info(jpeg []byte) (Info, error) {
	if d.h == nil {
		return Info{}, errClosed
	}
	if len(jpeg) == 0 {
		return Info{}, errors.New("nvjpeg get image info: empty JPEG")
	}
	var out [4]C.int
	if err := check("get image info", C.pf_info(&d.lib.fns, d.h, (*C.uchar)(unsafe.Pointer(&jpeg[0])), C.size_t(len(jpeg)), &out[0])); err != nil {
		return Info{}, err
	}
	return Info{Components: int(out[0]), Subsampling: int(out[1]), W: int(out[2]), H: int(out[3])}, nil
}

// Supported says whether DecodeBatched can take jpeg. It parses the
// headers (nvjpegJpegStreamParse; its error when they do not parse); with
// Hardware it then asks nvjpegDecodeBatchedSupported, which is what
// refuses, say, progressive JPEGs. A batch for Hardware must hold only
// images it supports; the others are for the host.
func (d *Decoder) Supported(jpeg []byte) (bool, error) {
	if d.h == nil {
		return false, errClosed
	}
	if len(jpeg) == 0 {
		return false, errors.New("nvjpeg jpeg stream parse: empty JPEG")
	}
	if err := check("jpeg stream parse", C.pf_parse(&d.lib.fns, d.h, (*C.uchar)(unsafe.Pointer(&jpeg[0])), C.size_t(len(jpeg)), d.stream)); err != nil {
		return false, err
	}
	if d.backend != Hardware {
		return true, nil
	}
	var is C.int
	if err := check("decode batched supported", C.pf_batched_supported(&d.lib.fns, d.h, d.stream, &is)); err != nil {
		return false, err
	}
	return is == 0, nil
}

// DecodeBatched queues the decoding of len(jpegs) JPEGs to 8-bit luma on
// stream (a CUstream or cudaStream_t; 0 is the legacy default stream):
// image i to device address dst[i], rows pitch[i] bytes apart, each
// destination at least pitch[i] × Info's H bytes with pitch[i] ≥ Info's W.
// It (re)initialises the batch state (nvjpegDecodeBatchedInitialize) when
// the batch size or max_cpu_threads changed, or the last batch failed.
//
// Before the call the caller must wait on the host for all earlier work
// that uses the destinations (cuStreamSynchronize, or cuEventSynchronize
// on an event recorded after it): on H100 the hardware decoder writes
// them when the call is made, ahead of work queued before it on the same
// stream, and a cuStreamWaitEvent does not hold it back either.
//
// Until the stream is synchronised after the call, the destinations and
// d must stay alive (Close d only after that), and the jpegs should stay
// unmodified: nvJPEG copies them to the device on stream. They stay pinned
// until Unpin (or the next call, or Close), even when the call fails.
func (d *Decoder) DecodeBatched(jpegs [][]byte, dst []uintptr, pitch []int, stream uintptr) error {
	n := len(jpegs)
	if len(dst) != n || len(pitch) != n {
		return fmt.Errorf("nvjpeg decode batched: %d JPEGs, %d destinations, %d pitches", n, len(dst), len(pitch))
	}
	if d.h == nil {
		return errClosed
	}
	if n == 0 {
		return nil
	}
	if err := d.fill(jpegs, dst, pitch); err != nil {
		return err
	}
	if d.batch != n {
		if err := check("decode batched initialize", C.pf_batched_init(&d.lib.fns, d.h, d.state, C.int(n), C.int(d.threads))); err != nil {
			d.batch = 0
			d.pin.Unpin()
			return err
		}
		d.batch = n
	}
	if err := check("decode batched", C.pf_batched(&d.lib.fns, d.h, d.state, d.data, d.lengths, d.images, C.uintptr_t(stream))); err != nil {
		d.batch = 0 // nvjpeg.h: initialise again to reset a failed batch
		return err  // pinned until Unpin: the stream may still read them
	}
	return nil
}

// fill writes a batch into the C arrays, pinning the JPEGs: their
// addresses are Go pointers in C memory, which nvJPEG may read from the
// stream after the call. On error nothing stays pinned.
func (d *Decoder) fill(jpegs [][]byte, dst []uintptr, pitch []int) error {
	n := len(jpegs)
	d.grow(n)
	data := unsafe.Slice((*uintptr)(unsafe.Pointer(d.data)), n)
	lengths := unsafe.Slice(d.lengths, n)
	words := unsafe.Slice((*uintptr)(unsafe.Pointer(d.images)), n*C.PF_IMAGE_WORDS)
	d.pin.Unpin()
	for i, j := range jpegs {
		if len(j) == 0 || dst[i] == 0 || pitch[i] < 1 {
			d.pin.Unpin()
			return fmt.Errorf("nvjpeg decode batched: image %d: %d bytes to %#x, pitch %d", i, len(j), dst[i], pitch[i])
		}
		d.pin.Pin(&j[0])
		data[i] = uintptr(unsafe.Pointer(&j[0]))
		lengths[i] = C.size_t(len(j))
		img := words[i*C.PF_IMAGE_WORDS : (i+1)*C.PF_IMAGE_WORDS]
		clear(img)
		img[0] = dst[i]
		img[C.PF_NVJPEG_MAX_COMPONENT] = uintptr(pitch[i])
	}
	return nil
}

// Unpin releases the JPEGs of the last DecodeBatched: call it once the
// stream is synchronised after it (the next DecodeBatched and Close do it
// too).
func (d *Decoder) Unpin() { d.pin.Unpin() }

// grow makes the C arrays hold at least n images.
func (d *Decoder) grow(n int) {
	if n <= d.capacity {
		return
	}
	d.free()
	d.data = (*C.uintptr_t)(C.calloc(C.size_t(n), C.size_t(unsafe.Sizeof(C.uintptr_t(0)))))
	d.lengths = (*C.size_t)(C.calloc(C.size_t(n), C.size_t(unsafe.Sizeof(C.size_t(0)))))
	d.images = (*C.uintptr_t)(C.calloc(C.size_t(n*C.PF_IMAGE_WORDS), C.size_t(unsafe.Sizeof(C.uintptr_t(0)))))
	if d.data == nil || d.lengths == nil || d.images == nil {
		panic("nvjpeg: out of memory")
	}
	d.capacity = n
}

func (d *Decoder) free() {
	C.free(unsafe.Pointer(d.data))
	C.free(unsafe.Pointer(d.lengths))
	C.free(unsafe.Pointer(d.images))
	d.data, d.lengths, d.images, d.capacity = nil, nil, nil, 0
}

// Close frees the stream, the state and the handle; later calls of d
// fail, and a second Close does nothing. Its error is the first failure.
func (d *Decoder) Close() error {
	d.pin.Unpin()
	var errs []error
	if d.stream != nil {
		errs = append(errs, check("jpeg stream destroy", C.pf_stream_destroy(&d.lib.fns, d.stream)))
		d.stream = nil
	}
	if d.state != nil {
		errs = append(errs, check("state destroy", C.pf_state_destroy(&d.lib.fns, d.state)))
		d.state = nil
	}
	if d.h != nil {
		errs = append(errs, check("destroy", C.pf_destroy(&d.lib.fns, d.h)))
		d.h = nil
	}
	d.free()
	d.batch = 0
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
