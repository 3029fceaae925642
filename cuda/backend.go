package cuda

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/pixelflight/pixelflight/kernels"
	"github.com/pixelflight/pixelflight/sched"
	"github.com/pixelflight/pixelflight/udf"
)

// Threads per block: blockX for the 2D kernels (x over columns),
// statsThreads for pf_stats (PF_STATS_THREADS in gpukernels/kernels.cu.h).
const (
	blockX       = 256
	statsThreads = 256
	maxGridYZ    = 65535 // CUDA's limit on gridDim.y and gridDim.z
)

// DefaultLanes is the lanes (streams) per GPU unless Config says.
const DefaultLanes = 2

// Config is what a Backend needs.
type Config struct {
	Device   int // CUDA device ordinal, among those CUDA_VISIBLE_DEVICES shows
	Lanes    int // streams, each a scheduler lane; 0: DefaultLanes
	MaxBatch int // most images of one shape a lane takes at once; 0: 64
	// LaneMemory is the device memory one lane's batch may use, in bytes;
	// 0: 60% of the free memory at Open, shared by the lanes. A batch that
	// needs more runs in parts; an image that alone needs more is declined
	// (the scheduler gives it to the CPU).
	LaneMemory int64
}

// Backend runs fft_convolve, detect_faces and detect_blobs on one GPU:
// sched.Backend, a udf.Device per batch. The scheduler hands it batches
// of one call and one shape: images its decode stage decoded, and JPEGs
// passed on undecoded, which a lane decodes with nvJPEG first
// (DecodesOnDevice); its encode stage encodes the PNGs of its rows.
type Backend struct {
	dev      device
	cfg      Config
	name     string // "cuda" for device 0, "cudaN" for device N
	lanes    []*lane
	pinned   *sched.HostPool // what the decode stage decodes into
	jpeg     jpegInfo        // the device's JPEG decoder (device.jpeg); desc "" for none
	jpegErr  error           // why it has none
	jpegDown atomic.Value    // string: why a lane's decoder could not start; JPEGs then stay on the host
	declined atomic.Int64
	// method chooses fft_convolve's method for a kernel and an image's
	// FFT geometry: gpuMethod, or (benchmarks and tests that compare the
	// methods) fftOnly or sepWherever.
	method func(*kernels.Kernel, *geometry) kernels.Method
}

var (
	_ sched.Backend       = (*Backend)(nil)
	_ sched.Stager        = (*Backend)(nil)
	_ sched.DeviceDecoder = (*Backend)(nil)
)

// pinnedMax bounds the pinned host memory handed to the decode stage;
// rows decoded beyond it go through a lane's own pinned buffer.
const pinnedMax = 1 << 30

// convSpec is an fft_convolve call as a lane runs it: the spec and the
// call's key, under which the lane keeps the kernel's spectrum.
type convSpec struct {
	*udf.ConvolveSpec
	key string
}

func newBackend(dev device, cfg Config) (*Backend, error) {
	if cfg.Lanes <= 0 {
		cfg.Lanes = DefaultLanes
	}
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = 64
	}
	cfg.MaxBatch = min(cfg.MaxBatch, maxGridYZ)
	if cfg.LaneMemory <= 0 {
		free, _, err := dev.memory()
		if err != nil {
			return nil, fmt.Errorf("cuda: device memory: %w", err)
		}
		cfg.LaneMemory = free * 6 / 10 / int64(cfg.Lanes)
	}
	b := &Backend{dev: dev, cfg: cfg, name: "cuda", method: gpuMethod}
	if cfg.Device > 0 {
		b.name = fmt.Sprintf("cuda%d", cfg.Device)
	}
	b.jpeg, b.jpegErr = dev.jpeg()
	if b.jpegErr != nil {
		b.jpeg = jpegInfo{}
	}
	for range cfg.Lanes {
		s, err := dev.newStream()
		if err != nil {
			b.Close()
			return nil, fmt.Errorf("cuda: stream: %w", err)
		}
		b.lanes = append(b.lanes, &lane{s: s, onDevice: map[*sched.Item]devPtr{}})
	}
	b.pinned = sched.NewHostPool(b.hostAlloc, pinnedMax)
	return b, nil
}

// hostAlloc makes pinned memory for the decode stage, through lane 0's
// stream (any thread may call it).
func (b *Backend) hostAlloc(n int) ([]byte, error) {
	s := b.lanes[0].s
	unbind, err := s.bind()
	if err != nil {
		return nil, err
	}
	defer unbind()
	return s.hostAlloc(n)
}

// HostBuffer hands the decode stage pinned memory to decode a row into,
// which the lanes copy to the device without packing it first.
func (b *Backend) HostBuffer(n int) []byte { return b.pinned.Get(n) }

// FreeHostBuffer takes back a buffer from HostBuffer.
func (b *Backend) FreeHostBuffer(p []byte) { b.pinned.Put(p) }

// Name is "cuda" for the first GPU (device 0), "cudaN" for device N: the
// name in stats, metrics and rows_by_backend.
func (b *Backend) Name() string  { return b.name }
func (b *Backend) Lanes() int    { return len(b.lanes) }
func (b *Backend) MaxBatch() int { return b.cfg.MaxBatch }

// CPURows is how many rows the lanes declined, for the CPU to run: images
// too large for the device or a grid, and detect_blobs images with a
// decision within the GPU's tolerance.
func (b *Backend) CPURows() int64 { return b.declined.Load() }

// Device names the GPU.
func (b *Backend) Device() string { return b.dev.name() }

// Accepts takes fft_convolve calls (every kernel, mode, boundary and
// output), detect_faces calls (every cascade and parameter, annotated or
// not) and detect_blobs calls (every parameter); everything else stays
// on the CPU.
func (b *Backend) Accepts(t *udf.Task) bool { return t.OnDevice() }

// Close frees the pinned memory it handed the decode stage, the lanes'
// device memory, plans and streams, and the device; after the scheduler
// has stopped.
func (b *Backend) Close() error {
	var errs []error
	if b.pinned != nil && len(b.lanes) > 0 {
		s := b.lanes[0].s
		if unbind, err := s.bind(); err != nil {
			errs = append(errs, err)
		} else {
			for _, p := range b.pinned.Drain() {
				errs = append(errs, s.hostFree(p))
			}
			unbind()
		}
	}
	for _, l := range b.lanes {
		errs = append(errs, l.close())
	}
	b.lanes = nil
	errs = append(errs, b.dev.close())
	return errors.Join(errs...)
}

// Run runs a batch of images of one shape: those passed on undecoded it
// decodes first (decodeJPEGs), then fft_convolve's pipeline (see
// convolve), detect_faces' (detectFaces) or detect_blobs' (detectBlobs).
// A CUDA error fails the batch: the scheduler takes the backend out of
// service and gives the batch to the CPU (its undecoded rows to the host
// decoders first).
func (b *Backend) Run(ctx context.Context, li int, items []*sched.Item) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("cuda: panic in the GPU lane: %v", r)
		}
	}()
	l := b.lanes[li]
	unbind, err := l.s.bind()
	if err != nil {
		return err
	}
	defer unbind()
	defer clear(l.onDevice)
	idx := make([]int, len(items))
	for i := range idx {
		idx[i] = i
	}
	h, w := shape(items[0])
	if idx, err = b.decodeJPEGs(l, items, idx, h, w); err != nil || len(idx) == 0 {
		return err
	}
	return items[0].Task.RunOn(&batch{b, ctx, l, items, idx, h, w})
}

// batch is one Run's batch on a lane: the udf.Device that runs it, by
// its op.
type batch struct {
	b     *Backend
	ctx   context.Context
	l     *lane
	items []*sched.Item
	idx   []int // the rows to run
	h, w  int
}

func (r *batch) Convolve(s *udf.ConvolveSpec) error {
	return r.b.convolve(r.ctx, r.l, &convSpec{s, r.items[0].Task.Key}, r.items, r.idx, r.h, r.w)
}

func (r *batch) DetectFaces(s *udf.FacesSpec) error {
	return r.b.detectFaces(r.l, s, r.items, r.idx, r.h, r.w)
}

func (r *batch) DetectBlobs(s *udf.BlobsSpec) error {
	return r.b.detectBlobs(r.l, newBlobsSpec(s), r.items, r.idx, r.h, r.w)
}

// shape is a row's image height and width: decoded, or from the header of
// one passed on undecoded (a batch is of one shape either way).
func shape(it *sched.Item) (h, w int) {
	if it.Gray != nil {
		return it.Gray.H, it.Gray.W
	}
	hdr := it.Header()
	return hdr.H, hdr.W
}

// pixels is a row's decoded pixels on the host, nil for one decoded on
// the device.
func pixels(it *sched.Item) []uint8 {
	if it.Gray == nil {
		return nil
	}
	return it.Gray.Pix
}

// decline gives the rows idx of items back to the scheduler, for the CPU.
func (b *Backend) decline(items []*sched.Item, idx []int) {
	b.declined.Add(int64(len(idx)))
	for _, i := range idx {
		items[i].Decline()
	}
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
