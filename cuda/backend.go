package cuda

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/pixelflight/pixelflight/kernels"
	"github.com/pixelflight/pixelflight/kernels/haar"
	"github.com/pixelflight/pixelflight/sched"
	"github.com/pixelflight/pixelflight/udf"
)

// Threads per block: blockX for the 2D kernels (x over columns),
// statsThreads for pf_stats (PF_STATS_THREADS in kernels.cu).
const (
	blockX       = 256
	statsThreads = 256
	maxGridYZ    = 65535 // CUDA's limit on gridDim.y and gridDim.z
)

// Config is what a Backend needs.
type Config struct {
	Device   int // CUDA device ordinal, among those CUDA_VISIBLE_DEVICES shows
	Lanes    int // streams, each a scheduler lane; 0: 2
	MaxBatch int // most images of one shape a lane takes at once; 0: 64
	// Decoders are the goroutines that decode (and PNG-encode) a batch's
	// images on the host; 0: GOMAXPROCS.
	Decoders int
	Limits   udf.Limits
	// LaneMemory is the device memory one lane's batch may use, in bytes;
	// 0: 60% of the free memory at Open, shared by the lanes. A batch that
	// needs more runs in parts; an image that alone needs more runs on
	// the CPU within the lane.
	LaneMemory int64
	// Cascades is the server's cascade library (the one its udf.Registry
	// has): detect_faces runs on the GPU only with it; nil: on the CPU.
	Cascades *haar.Library
}

// Backend runs fft_convolve, detect_faces and detect_blobs on one GPU:
// sched.Backend.
type Backend struct {
	dev     device
	cfg     Config
	lanes   []*lane
	cpuRows atomic.Int64

	mu    sync.Mutex
	specs map[string]*opSpec // by udf.Task.Key; nil: not for us
}

// opSpec is a call the backend runs: one of its fields is set.
type opSpec struct {
	conv  *convSpec
	faces *facesSpec
	blobs *blobsSpec
}

var _ sched.Backend = (*Backend)(nil)

// convSpec is a call the backend runs.
type convSpec struct {
	udf.ConvolveSpec
	key string
}

const maxSpecs = 256

func newBackend(dev device, cfg Config) (*Backend, error) {
	if cfg.Lanes <= 0 {
		cfg.Lanes = 2
	}
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = 64
	}
	cfg.MaxBatch = min(cfg.MaxBatch, maxGridYZ)
	if cfg.Decoders <= 0 {
		cfg.Decoders = runtime.GOMAXPROCS(0)
	}
	if cfg.LaneMemory <= 0 {
		free, _, err := dev.memory()
		if err != nil {
			return nil, fmt.Errorf("cuda: device memory: %w", err)
		}
		cfg.LaneMemory = free * 6 / 10 / int64(cfg.Lanes)
	}
	b := &Backend{dev: dev, cfg: cfg, specs: map[string]*opSpec{}}
	for range cfg.Lanes {
		s, err := dev.newStream()
		if err != nil {
			b.Close()
			return nil, fmt.Errorf("cuda: stream: %w", err)
		}
		l := &lane{s: s, cpuRows: &b.cpuRows, cpu: udf.NewWorker(cfg.Limits)}
		for range cfg.Decoders {
			l.workers = append(l.workers, udf.NewWorker(cfg.Limits))
		}
		b.lanes = append(b.lanes, l)
	}
	return b, nil
}

func (b *Backend) Name() string  { return "cuda" }
func (b *Backend) Lanes() int    { return len(b.lanes) }
func (b *Backend) MaxBatch() int { return b.cfg.MaxBatch }

// CPURows is how many rows the lanes gave the CPU, in the lane: images
// too large for the device or a grid, and detect_blobs images with a
// decision within the GPU's tolerance.
func (b *Backend) CPURows() int64 { return b.cpuRows.Load() }

// Device names the GPU.
func (b *Backend) Device() string { return b.dev.name() }

// Accepts takes fft_convolve calls (every kernel, mode, boundary and
// output), detect_faces calls (every cascade of Config.Cascades, every
// parameter, annotated or not) and detect_blobs calls (every parameter);
// everything else stays on the CPU.
func (b *Backend) Accepts(t *udf.Task) bool { return b.spec(t) != nil }

func (b *Backend) spec(t *udf.Task) *opSpec {
	if t.Op != "fft_convolve" && t.Op != "detect_faces" && t.Op != "detect_blobs" {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	s, ok := b.specs[t.Key]
	if ok {
		return s
	}
	switch t.Op {
	case "fft_convolve":
		if cs, ok := t.ConvolveSpec(); ok && (cs.Output == "f32" || cs.Output == "png" || cs.Output == "stats") {
			s = &opSpec{conv: &convSpec{ConvolveSpec: cs, key: t.Key}}
		}
	case "detect_faces":
		if fs, ok := t.FacesSpec(b.cfg.Cascades); ok {
			s = &opSpec{faces: &facesSpec{FacesSpec: fs}}
		}
	case "detect_blobs":
		if p, ok := t.BlobsSpec(); ok {
			s = &opSpec{blobs: newBlobsSpec(p)}
		}
	}
	if len(b.specs) >= maxSpecs {
		clear(b.specs)
	}
	b.specs[t.Key] = s
	return s
}

// Close frees the lanes' device memory, plans and streams, and the
// device.
func (b *Backend) Close() error {
	var errs []error
	for _, l := range b.lanes {
		errs = append(errs, l.close())
	}
	b.lanes = nil
	errs = append(errs, b.dev.close())
	return errors.Join(errs...)
}

// lane is one stream and what it keeps between batches: device and
// pinned host buffers (grown, never shrunk), FFT plans and kernel spectra.
type lane struct {
	s        stream
	cpuRows  *atomic.Int64 // the Backend's count of rows run by cpu
	cpu      *udf.Worker   // images too large for the lane's memory
	workers  []*udf.Worker // decoders
	pix      [][]byte      // decoded images of the batch
	w        []int         // and their widths
	bufs     [nbuf]devBuf
	hin      []byte // pinned: index tables, then the batch's pixels
	hout     []byte // pinned: the batch's results
	plans    []planEntry
	spectra  []spectrumEntry
	cascades []cascadeEntry
}

const (
	bufIn = iota // index tables + pixels
	bufReal
	bufSpec
	bufOut
	bufKernel
	nbuf
)

type devBuf struct {
	p    devPtr
	size int
}

type planEntry struct {
	nh, nw, batch int
	p             fftPlan
}

type spectrumEntry struct {
	key    string
	nh, nw int
	p      devPtr
}

const (
	maxPlans   = 12
	maxSpectra = 8
)

func (l *lane) close() error {
	var errs []error
	unbind, err := l.s.bind()
	if err != nil {
		return err
	}
	defer unbind()
	for _, p := range l.plans {
		errs = append(errs, p.p.destroy())
	}
	for _, s := range l.spectra {
		errs = append(errs, l.s.free(s.p))
	}
	for _, c := range l.cascades {
		errs = append(errs, l.s.free(c.p))
	}
	for _, b := range l.bufs {
		if b.size > 0 {
			errs = append(errs, l.s.free(b.p))
		}
	}
	for _, h := range [][]byte{l.hin, l.hout} {
		if h != nil {
			errs = append(errs, l.s.hostFree(h))
		}
	}
	l.plans, l.spectra, l.cascades, l.bufs, l.hin, l.hout = nil, nil, nil, [nbuf]devBuf{}, nil, nil
	errs = append(errs, l.s.close())
	return errors.Join(errs...)
}

// buf returns device buffer i with room for n bytes.
func (l *lane) buf(i, n int) (devPtr, error) {
	b := &l.bufs[i]
	if b.size >= n {
		return b.p, nil
	}
	if b.size > 0 {
		if err := l.s.free(b.p); err != nil {
			return 0, err
		}
		*b = devBuf{}
	}
	size := (n + 1<<20 - 1) &^ (1<<20 - 1)
	p, err := l.s.alloc(size)
	if err != nil {
		return 0, fmt.Errorf("cuda: allocating %d bytes: %w", size, err)
	}
	*b = devBuf{p, size}
	return p, nil
}

// host returns the pinned buffer *h with room for n bytes.
func (l *lane) host(h *[]byte, n int) ([]byte, error) {
	if len(*h) >= n {
		return *h, nil
	}
	if *h != nil {
		if err := l.s.hostFree(*h); err != nil {
			return nil, err
		}
		*h = nil
	}
	b, err := l.s.hostAlloc((n + 1<<20 - 1) &^ (1<<20 - 1))
	if err != nil {
		return nil, fmt.Errorf("cuda: pinning %d bytes: %w", n, err)
	}
	*h = b
	return b, nil
}

// plan returns a plan for batch transforms of nh×nw, the most recently
// used first.
func (l *lane) plan(nh, nw, batch int) (fftPlan, error) {
	for i, e := range l.plans {
		if e.nh == nh && e.nw == nw && e.batch == batch {
			copy(l.plans[1:i+1], l.plans[:i])
			l.plans[0] = e
			return e.p, nil
		}
	}
	p, err := l.s.plan(nh, nw, batch)
	if err != nil {
		return nil, fmt.Errorf("cuda: fft plan %dx%d batch %d: %w", nh, nw, batch, err)
	}
	if len(l.plans) >= maxPlans {
		last := l.plans[len(l.plans)-1]
		l.plans = l.plans[:len(l.plans)-1]
		if err := last.p.destroy(); err != nil {
			return nil, err
		}
	}
	l.plans = append([]planEntry{{nh, nw, batch, p}}, l.plans...)
	return p, nil
}

// spectrum returns the kernel's transform for nh×nw on the device,
// computed once per lane and kept (the most recent maxSpectra).
func (l *lane) spectrum(s *convSpec, nh, nw int) (devPtr, error) {
	for i, e := range l.spectra {
		if e.key == s.key && e.nh == nh && e.nw == nw {
			copy(l.spectra[1:i+1], l.spectra[:i])
			l.spectra[0] = e
			return e.p, nil
		}
	}
	folded := foldKernel(s.Kernel, nh, nw)
	in, err := l.buf(bufKernel, 4*len(folded))
	if err != nil {
		return 0, err
	}
	out, err := l.s.alloc(nh * (nw/2 + 1) * 8)
	if err != nil {
		return 0, fmt.Errorf("cuda: kernel spectrum: %w", err)
	}
	p, err := l.plan(nh, nw, 1)
	if err == nil {
		err = l.s.upload(in, float32Bytes(folded))
	}
	if err == nil {
		err = p.forward(in, out)
	}
	if err == nil {
		err = l.s.sync() // folded is Go memory: the copy must be done
	}
	if err != nil {
		return 0, errors.Join(err, l.s.free(out))
	}
	if len(l.spectra) >= maxSpectra {
		last := l.spectra[len(l.spectra)-1]
		l.spectra = l.spectra[:len(l.spectra)-1]
		if err := l.s.free(last.p); err != nil {
			return 0, err
		}
	}
	l.spectra = append([]spectrumEntry{{s.key, nh, nw, out}}, l.spectra...)
	return out, nil
}

func float32Bytes(v []float32) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v))
}

// Run runs the batch: decode on the host (Decoders at once), then per
// image shape, fft_convolve's pipeline (below) or detect_faces' (see
// detectFaces). fft_convolve: pixels to the device, widen and pad (pf_pack), cuFFT
// forward, multiply by the kernel's spectrum (pf_mul), cuFFT inverse, and
// crop (pf_crop_f32, pf_crop_u8) or reduce (pf_stats) so that only the
// output crosses back. A CUDA error fails the batch: the scheduler takes
// the backend out of service and gives the batch to the CPU.
func (b *Backend) Run(ctx context.Context, li int, items []*sched.Item) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("cuda: panic in the GPU lane: %v", r)
		}
	}()
	l := b.lanes[li]
	spec := b.spec(items[0].Task)
	if spec == nil {
		return fmt.Errorf("cuda: given a call it does not accept: %s", items[0].Task.Op)
	}
	l.decode(items)
	unbind, err := l.s.bind()
	if err != nil {
		return err
	}
	defer unbind()
	// Group by shape, in order (the scheduler batches by the header's
	// shape; a decoded image may still differ).
	type shape struct{ h, w int }
	var order []shape
	groups := map[shape][]int{}
	for i, it := range items {
		if it.Err != nil {
			continue
		}
		s := shape{len(l.pix[i]) / max(l.w[i], 1), l.w[i]}
		if _, ok := groups[s]; !ok {
			order = append(order, s)
		}
		groups[s] = append(groups[s], i)
	}
	for _, s := range order {
		var err error
		switch {
		case spec.conv != nil:
			err = b.convolve(ctx, l, spec.conv, items, groups[s], s.h, s.w)
		case spec.faces != nil:
			err = b.detectFaces(l, spec.faces, items, groups[s], s.h, s.w)
		case spec.blobs != nil:
			err = b.detectBlobs(l, spec.blobs, items, groups[s], s.h, s.w)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// onCPU runs the rows idx of items on the CPU, here in the lane: images
// too large for the lane's memory or a grid's limits, and detect_blobs
// images the GPU cannot decide.
func (l *lane) onCPU(items []*sched.Item, idx []int) {
	l.cpuRows.Add(int64(len(idx)))
	for _, i := range idx {
		it := items[i]
		start := time.Now()
		it.Row, it.Decode, it.Err = it.Task.Do(it.Context(), l.cpu, it.In)
		it.Kernel = time.Since(start) - it.Decode
	}
}

// decode decodes every row into l.pix (l.w the widths), Decoders at a
// time; a bad row gets its error.
func (l *lane) decode(items []*sched.Item) {
	for len(l.pix) < len(items) {
		l.pix = append(l.pix, nil)
		l.w = append(l.w, 0)
	}
	parallel(len(items), len(l.workers), func(g, i int) {
		it := items[i]
		if err := it.Context().Err(); err != nil {
			it.Err = err
			return
		}
		start := time.Now()
		im, err := l.workers[g].DecodeGray(it.In)
		if err != nil {
			it.Err = err
			return
		}
		l.pix[i] = append(l.pix[i][:0], im.Pix[:im.H*im.W]...)
		l.w[i] = im.W
		it.Decode = time.Since(start)
	})
}

// parallel calls f(g, i) for i in [0, n), from up to workers goroutines
// (g the goroutine's number).
func parallel(n, workers int, f func(g, i int)) {
	workers = min(workers, n)
	if workers <= 1 {
		for i := range n {
			f(0, i)
		}
		return
	}
	var wg sync.WaitGroup
	next := make(chan int)
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				f(g, i)
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// convolve runs the rows idx of items, all h×w, in parts that fit the
// lane's memory.
func (b *Backend) convolve(ctx context.Context, l *lane, s *convSpec, items []*sched.Item, idx []int, h, w int) error {
	oh, ow, err := kernels.OutputSize(h, w, s.Kernel, s.Mode)
	if err != nil {
		for _, i := range idx {
			items[i].Err = err
		}
		return nil
	}
	g := &geometry{h: h, w: w, oh: oh, ow: ow,
		rows: newAxis(h, s.Kernel.H, oh, s.Mode, s.Boundary),
		cols: newAxis(w, s.Kernel.W, ow, s.Mode, s.Boundary)}
	fit := int(b.cfg.LaneMemory / max(g.bytesPerImage(), 1))
	if fit < 1 || g.rows.n > maxGridYZ || g.oh > maxGridYZ {
		// Too large for the lane (or for a grid's y dimension): the CPU,
		// here in the lane.
		l.onCPU(items, idx)
		return nil
	}
	fit = min(fit, b.cfg.MaxBatch)
	for len(idx) > 0 {
		n := min(len(idx), fit)
		if err := b.runPart(ctx, l, s, g, items, idx[:n]); err != nil {
			return err
		}
		idx = idx[n:]
	}
	return nil
}

// batchSize is the plan's batch for n images: the next power of two, at
// most max, so a lane keeps a few plans per shape, not one per count.
func batchSize(n, most int) int {
	b := 1
	for b < n {
		b *= 2
	}
	return min(b, most)
}

// runPart convolves up to fit images of one shape on the device.
func (b *Backend) runPart(_ context.Context, l *lane, s *convSpec, g *geometry, items []*sched.Item, idx []int) error {
	start := time.Now()
	n := len(idx)
	nh, nw, cw := g.rows.n, g.cols.n, g.cw()
	batch := max(batchSize(n, b.cfg.MaxBatch), n)
	ker, err := l.spectrum(s, nh, nw)
	if err != nil {
		return err
	}
	plan, err := l.plan(nh, nw, batch)
	if err != nil {
		return err
	}

	// In: the row and column tables, then the pixels (256-byte aligned).
	tables := 4 * (nh + nw)
	pixOff := (tables + 255) &^ 255
	inBytes := pixOff + n*g.h*g.w
	hin, err := l.host(&l.hin, inBytes)
	if err != nil {
		return err
	}
	for i, v := range g.rows.src {
		binary.LittleEndian.PutUint32(hin[4*i:], uint32(v))
	}
	for i, v := range g.cols.src {
		binary.LittleEndian.PutUint32(hin[4*(nh+i):], uint32(v))
	}
	for j, i := range idx {
		copy(hin[pixOff+j*g.h*g.w:], l.pix[i])
	}
	din, err := l.buf(bufIn, inBytes)
	if err != nil {
		return err
	}
	dreal, err := l.buf(bufReal, batch*nh*nw*4)
	if err != nil {
		return err
	}
	dspec, err := l.buf(bufSpec, batch*nh*cw*8)
	if err != nil {
		return err
	}
	if err := l.s.upload(din, hin[:inBytes]); err != nil {
		return err
	}
	if err := l.s.launch("pf_pack", dim3{ceilDiv(nw, blockX), nh, n}, dim3{blockX, 1, 1},
		din.at(pixOff), dreal.at(0), din.at(0), din.at(4*nh), i64(g.h), i64(g.w), i64(nh), i64(nw)); err != nil {
		return err
	}
	if err := plan.forward(dreal, dspec); err != nil {
		return err
	}
	scale := 1 / (float64(nh) * float64(nw))
	if err := l.s.launch("pf_mul", dim3{ceilDiv(cw, blockX), nh, n}, dim3{blockX, 1, 1},
		dspec.at(0), ker.at(0), i64(nh), i64(cw), math.Float64bits(scale)); err != nil {
		return err
	}
	if err := plan.inverse(dspec, dreal); err != nil {
		return err
	}

	oh, ow := g.oh, g.ow
	crop := []uint64{i64(nh), i64(nw), i64(g.rows.off), i64(g.cols.off), i64(oh), i64(ow)}
	var outBytes, parts int
	switch s.Output {
	case "f32":
		outBytes = n * oh * ow * 4
	case "png":
		outBytes = n * oh * ow
	case "stats":
		parts = min(max(ceilDiv(oh*ow, statsThreads*16), 1), 64)
		outBytes = n * parts * 5 * 8
	}
	dout, err := l.buf(bufOut, outBytes)
	if err != nil {
		return err
	}
	switch s.Output {
	case "f32":
		err = l.s.launch("pf_crop_f32", dim3{ceilDiv(ow, blockX), oh, n}, dim3{blockX, 1, 1}, append([]uint64{dreal.at(0), dout.at(0)}, crop...)...)
	case "png":
		err = l.s.launch("pf_crop_u8", dim3{ceilDiv(ow, blockX), oh, n}, dim3{blockX, 1, 1}, append([]uint64{dreal.at(0), dout.at(0)}, crop...)...)
	case "stats":
		err = l.s.launch("pf_stats", dim3{parts, 1, n}, dim3{statsThreads, 1, 1}, append([]uint64{dreal.at(0), dout.at(0)}, crop...)...)
	}
	if err != nil {
		return err
	}
	hout, err := l.host(&l.hout, outBytes)
	if err != nil {
		return err
	}
	if err := l.s.download(hout[:outBytes], dout); err != nil {
		return err
	}
	if err := l.s.sync(); err != nil {
		return err
	}
	kernel := time.Since(start) / time.Duration(n)

	// Rows, on the host (PNG encoding in parallel).
	parallel(n, len(l.workers), func(_, j int) {
		it := items[idx[j]]
		it.Kernel = kernel
		switch s.Output {
		case "f32":
			it.Row = udf.F32Row(oh, ow, unsafe.Slice((*float32)(unsafe.Pointer(&hout[j*oh*ow*4])), oh*ow))
		case "png":
			it.Row, it.Err = udf.PNGRow(oh, ow, hout[j*oh*ow:(j+1)*oh*ow])
		case "stats":
			it.Row = statsRow(hout[j*parts*40:(j+1)*parts*40], parts)
		}
	})
	return nil
}

// statsRow merges pf_stats' partials of one image (count, mean, M2, min,
// max each) into its stats row.
func statsRow(b []byte, parts int) udf.Row {
	f := func(i int) float64 { return math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:])) }
	var n, mean, m2 float64
	lo, hi := math.Inf(1), math.Inf(-1)
	for p := range parts {
		pn, pmean, pm2 := f(5*p), f(5*p+1), f(5*p+2)
		if pn == 0 {
			continue
		}
		nn := n + pn
		d := pmean - mean
		mean += d * pn / nn
		m2 += pm2 + d*d*n*pn/nn
		n = nn
		lo, hi = min(lo, f(5*p+3)), max(hi, f(5*p+4))
	}
	return udf.StatsRow(lo, hi, mean, math.Sqrt(m2/n))
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
