package cuda

import (
	"context"
	"encoding/binary"
	"math"
	"time"
	"unsafe"

	"github.com/pixelflight/pixelflight/kernels"
	"github.com/pixelflight/pixelflight/sched"
	"github.com/pixelflight/pixelflight/udf"
)

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
	g := &geometry{h: h, w: w, oh: oh, ow: ow, method: kernels.FFT,
		rows: newAxis(h, s.Kernel.H, oh, s.Mode, s.Boundary),
		cols: newAxis(w, s.Kernel.W, ow, s.Mode, s.Boundary)}
	if b.method(s.Kernel, g) == kernels.Separable {
		g.method = kernels.Separable
		g.rows = sepAxis(h, s.Kernel.H, oh, s.Mode, s.Boundary)
		g.cols = sepAxis(w, s.Kernel.W, ow, s.Mode, s.Boundary)
	}
	fit := int(b.cfg.LaneMemory / max(g.bytesPerImage(), 1))
	if fit < 1 || g.rows.n > maxGridYZ || g.oh > maxGridYZ {
		// Too large for the lane (or for a grid's y dimension): the CPU.
		b.decline(items, idx)
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

// runPart convolves up to fit images of one shape on the device, by
// g's method, and brings back their outputs.
func (b *Backend) runPart(_ context.Context, l *lane, s *convSpec, g *geometry, items []*sched.Item, idx []int) error {
	start := time.Now()
	// What comes back: png's 8-bit pixels when clipped (pf_crop_u8 clips
	// and rounds as the CPU), else the float32 output, or the stats.
	out := s.Output
	if out == udf.OutputPNG && s.PNGScale != udf.ScaleClip {
		out = udf.OutputF32
	}
	// res holds each image's result as an nh×nw array whose output starts
	// at (oy, ox): an inverse transform, or the packed output.
	var res devPtr
	var layout []uint64 // nh, nw, oy, ox
	var err error
	if g.method == kernels.Separable {
		res, err = b.separable(l, s, g, items, idx, out == udf.OutputF32)
		layout = []uint64{i64(g.oh), i64(g.ow), 0, 0}
	} else {
		res, err = b.byFFT(l, s, g, items, idx)
		layout = []uint64{i64(g.rows.n), i64(g.cols.n), i64(g.rows.off), i64(g.cols.off)}
	}
	if err != nil {
		return err
	}
	return b.finish(l, s, g, items, idx, out, res, layout, start)
}

// byFFT runs fft_convolve's transform pipeline on n images (pf_pack,
// cuFFT's R2C, pf_mul, C2R) and returns the inverse transforms, in
// bufReal.
func (b *Backend) byFFT(l *lane, s *convSpec, g *geometry, items []*sched.Item, idx []int) (devPtr, error) {
	n := len(idx)
	nh, nw, cw := g.rows.n, g.cols.n, g.cw()
	batch := max(batchSize(n, b.cfg.MaxBatch), n)
	ker, err := l.spectrum(s, nh, nw)
	if err != nil {
		return 0, err
	}
	plan, err := l.plan(nh, nw, batch)
	if err != nil {
		return 0, err
	}

	// In: the row and column tables, then the pixels (256-byte aligned).
	tables := 4 * (nh + nw)
	pixOff := (tables + 255) &^ 255
	inBytes := pixOff + n*g.h*g.w
	hin, err := l.host(&l.hin, inBytes)
	if err != nil {
		return 0, err
	}
	putTables(hin, g)
	din, err := l.buf(bufIn, inBytes)
	if err != nil {
		return 0, err
	}
	dreal, err := l.buf(bufReal, batch*nh*nw*4)
	if err != nil {
		return 0, err
	}
	dspec, err := l.buf(bufSpec, batch*nh*cw*8)
	if err != nil {
		return 0, err
	}
	if err := b.uploadIn(l, din, hin, pixOff, g.h*g.w, items, idx); err != nil {
		return 0, err
	}
	if err := l.s.launch("pf_pack", dim3{ceilDiv(nw, blockX), nh, n}, dim3{blockX, 1, 1},
		din.at(pixOff), dreal.at(0), din.at(0), din.at(4*nh), i64(g.h), i64(g.w), i64(nh), i64(nw)); err != nil {
		return 0, err
	}
	if err := plan.forward(dreal, dspec); err != nil {
		return 0, err
	}
	scale := 1 / (float64(nh) * float64(nw))
	if err := l.s.launch("pf_mul", dim3{ceilDiv(cw, blockX), nh, n}, dim3{blockX, 1, 1},
		dspec.at(0), ker.at(0), i64(nh), i64(cw), math.Float64bits(scale)); err != nil {
		return 0, err
	}
	if err := plan.inverse(dspec, dreal); err != nil {
		return 0, err
	}
	return dreal, nil
}

// putTables writes g's row and column tables to the start of hin as
// int32s: the rows', then the columns'.
func putTables(hin []byte, g *geometry) {
	for i, v := range g.rows.src {
		binary.LittleEndian.PutUint32(hin[4*i:], uint32(v))
	}
	for i, v := range g.cols.src {
		binary.LittleEndian.PutUint32(hin[4*(g.rows.n+i):], uint32(v))
	}
}

// separable convolves n images by s's factors in two passes: pf_sep_rows
// filters every extended row along x (into bufSpec), pf_sep_cols the
// result along y. It returns the packed oh×ow outputs: in bufOut when
// they are the f32 output itself (toOut), else in bufReal.
func (b *Backend) separable(l *lane, s *convSpec, g *geometry, items []*sched.Item, idx []int, toOut bool) (devPtr, error) {
	n := len(idx)
	k := s.Kernel
	nr, nc, oh, ow := g.rows.n, g.cols.n, g.oh, g.ow
	// In: the row and column tables, the column taps, the row taps, then
	// the pixels (256-byte aligned).
	tapOff := 4 * (nr + nc)
	pixOff := (tapOff + 4*(k.H+k.W) + 255) &^ 255
	inBytes := pixOff + n*g.h*g.w
	hin, err := l.host(&l.hin, inBytes)
	if err != nil {
		return 0, err
	}
	putTables(hin, g)
	copy(hin[tapOff:], float32Bytes(k.Col))
	copy(hin[tapOff+4*k.H:], float32Bytes(k.Row))
	din, err := l.buf(bufIn, inBytes)
	if err != nil {
		return 0, err
	}
	dmid, err := l.buf(bufSpec, n*nr*ow*4)
	if err != nil {
		return 0, err
	}
	which := bufReal
	if toOut {
		which = bufOut
	}
	dres, err := l.buf(which, n*oh*ow*4)
	if err != nil {
		return 0, err
	}
	if err := b.uploadIn(l, din, hin, pixOff, g.h*g.w, items, idx); err != nil {
		return 0, err
	}
	if err := l.s.launch("pf_sep_rows", dim3{ceilDiv(ow, sepRowThreads*sepRowPer), nr, n}, dim3{sepRowThreads, 1, 1},
		din.at(pixOff), dmid.at(0), din.at(0), din.at(4*nr), din.at(tapOff+4*k.H),
		i64(g.h), i64(g.w), i64(nr), i64(ow), i64(k.W)); err != nil {
		return 0, err
	}
	if err := l.s.launch("pf_sep_cols", dim3{ceilDiv(ow, sepColX), ceilDiv(oh, sepColY*sepColPer), n}, dim3{sepColX, sepColY, 1},
		dmid.at(0), dres.at(0), din.at(tapOff), i64(nr), i64(oh), i64(ow), i64(k.H)); err != nil {
		return 0, err
	}
	return dres, nil
}

// finish brings back n images' outputs from res (each an nh×nw array,
// the output at (oy, ox): layout): pf_crop_f32, pf_crop_u8 or pf_stats,
// unless res already holds the packed f32 output (the separable passes
// wrote it to bufOut); then the rows, each with its kernel time since
// start and the method.
func (b *Backend) finish(l *lane, s *convSpec, g *geometry, items []*sched.Item, idx []int, out udf.Output, res devPtr, layout []uint64, start time.Time) error {
	n := len(idx)
	oh, ow := g.oh, g.ow
	crop := append(layout, i64(oh), i64(ow))
	packed := g.method == kernels.Separable && out == udf.OutputF32
	var outBytes, parts int
	switch out {
	case udf.OutputF32:
		outBytes = n * oh * ow * 4
	case udf.OutputPNG:
		outBytes = n * oh * ow
	case udf.OutputStats:
		parts = min(max(ceilDiv(oh*ow, statsThreads*16), 1), 64)
		outBytes = n * parts * 5 * 8
	}
	dout, err := l.buf(bufOut, outBytes)
	if err != nil {
		return err
	}
	switch {
	case packed:
		// res is dout: nothing to crop.
	case out == udf.OutputF32:
		err = l.s.launch("pf_crop_f32", dim3{ceilDiv(ow, blockX), oh, n}, dim3{blockX, 1, 1}, append([]uint64{res.at(0), dout.at(0)}, crop...)...)
	case out == udf.OutputPNG:
		err = l.s.launch("pf_crop_u8", dim3{ceilDiv(ow, blockX), oh, n}, dim3{blockX, 1, 1}, append([]uint64{res.at(0), dout.at(0)}, crop...)...)
	case out == udf.OutputStats:
		err = l.s.launch("pf_stats", dim3{parts, 1, n}, dim3{statsThreads, 1, 1}, append([]uint64{res.at(0), dout.at(0)}, crop...)...)
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

	// Rows (the encode stage makes the PNGs).
	method := g.method.String()
	for j, i := range idx {
		it := items[i]
		it.Kernel = kernel
		it.Method = method
		switch out {
		case udf.OutputF32:
			it.Row = s.Row(unsafe.Slice((*float32)(unsafe.Pointer(&hout[j*oh*ow*4])), oh*ow), oh, ow)
		case udf.OutputPNG:
			it.Row = udf.PNGRow(oh, ow, hout[j*oh*ow:(j+1)*oh*ow])
		case udf.OutputStats:
			it.Row = statsRow(hout[j*parts*40:(j+1)*parts*40], parts)
		}
	}
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
