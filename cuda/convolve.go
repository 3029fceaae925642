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
	g := &geometry{h: h, w: w, oh: oh, ow: ow,
		rows: newAxis(h, s.Kernel.H, oh, s.Mode, s.Boundary),
		cols: newAxis(w, s.Kernel.W, ow, s.Mode, s.Boundary)}
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
	if err := b.uploadIn(l, din, hin, pixOff, g.h*g.w, items, idx); err != nil {
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
	// What comes back: png's 8-bit pixels when clipped (pf_crop_u8 clips
	// and rounds as the CPU), else the float32 output, or the stats.
	out := s.Output
	if out == udf.OutputPNG && s.PNGScale != udf.ScaleClip {
		out = udf.OutputF32
	}
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
	switch out {
	case udf.OutputF32:
		err = l.s.launch("pf_crop_f32", dim3{ceilDiv(ow, blockX), oh, n}, dim3{blockX, 1, 1}, append([]uint64{dreal.at(0), dout.at(0)}, crop...)...)
	case udf.OutputPNG:
		err = l.s.launch("pf_crop_u8", dim3{ceilDiv(ow, blockX), oh, n}, dim3{blockX, 1, 1}, append([]uint64{dreal.at(0), dout.at(0)}, crop...)...)
	case udf.OutputStats:
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

	// Rows (the encode stage makes the PNGs).
	for j, i := range idx {
		it := items[i]
		it.Kernel = kernel
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
