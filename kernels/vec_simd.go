//go:build goexperiment.simd && amd64

package kernels

import (
	"math"
	"simd/archsimd"
	"unsafe"
)

type vec = archsimd.Float32x8

func load(s []float32) vec { return archsimd.LoadFloat32x8Slice(s) }

func mulSpectrum(tr, ti, sr, si []float32) {
	n8 := 0
	if archsimd.X86.AVX2() && archsimd.X86.FMA() {
		n8 = len(tr) &^ 7
		for i := 0; i < n8; i += 8 {
			a, b, c, d := load(tr[i:]), load(ti[i:]), load(sr[i:]), load(si[i:])
			a.Mul(c).Sub(b.Mul(d)).StoreSlice(tr[i:])
			b.MulAdd(c, a.Mul(d)).StoreSlice(ti[i:])
		}
		archsimd.ClearAVXUpperBits()
	}
	mulScalar(tr[n8:], ti[n8:], sr[n8:], si[n8:])
}

func pairs(kr, ki, jr, ji, w []float32) {
	n8 := 0
	if archsimd.X86.AVX2() && archsimd.X86.FMA() {
		n8 = len(kr) &^ 7
		// Twiddles come from memory: broadcasting a scalar float here would
		// mix SSE and AVX code, which some CPUs make very slow.
		ur, ui, vr, vi := load(w[0:]), load(w[8:]), load(w[16:]), load(w[24:])
		for x := 0; x < n8; x += 8 {
			ar, ai, br, bi := load(kr[x:]), load(ki[x:]), load(jr[x:]), load(ji[x:])
			dr, di := ar.Sub(br), ai.Add(bi)
			er, ei := ur.Mul(dr).Sub(ui.Mul(di)), ur.Mul(di).Add(ui.Mul(dr))
			gr, gi := vr.Mul(dr).Add(vi.Mul(di)), vr.Mul(di).Sub(vi.Mul(dr))
			ar.Add(br).Sub(ei).StoreSlice(kr[x:])
			ai.Sub(bi).Add(er).StoreSlice(ki[x:])
			br.Add(ar).Sub(gi).StoreSlice(jr[x:])
			bi.Sub(ai).Sub(gr).StoreSlice(ji[x:])
		}
		archsimd.ClearAVXUpperBits()
	}
	pairsScalar(kr[n8:], ki[n8:], jr[n8:], ji[n8:], w)
}

func vectorized() bool { return archsimd.X86.AVX2() && archsimd.X86.FMA() }

// copyBlock copies rows×cols values, dst[r*ds + i] = src[r*ss + i], 8 at
// a time (a strip's rows are too short for copy's call to pay).
func copyBlock(dst []float32, ds int, src []float32, ss, rows, cols int) {
	c8 := cols &^ 7
	if !vectorized() || rows == 0 || c8 == 0 {
		copyBlockScalar(dst, ds, src, ss, rows, cols)
		return
	}
	_, _ = dst[(rows-1)*ds+cols-1], src[(rows-1)*ss+cols-1] // every load and store below is inside
	pd, ps := data(dst), data(src)
	for r := range rows {
		for i := 0; i < c8; i += 8 {
			store(at(ps, r*ss+i), pd, r*ds+i)
		}
	}
	archsimd.ClearAVXUpperBits()
	if c8 < cols {
		copyBlockScalar(dst[c8:], ds, src[c8:], ss, rows, cols-c8)
	}
}

// transpose writes dst[c*ds + r] = src[r*ss + c] for r < rows, c < cols:
// 8×8 blocks in registers (unpack, shuffle, swap halves), 32×32 tiles of
// them, the edges by transposeScalar.
func transpose(dst []float32, ds int, src []float32, ss, rows, cols int) {
	if !vectorized() || rows < 8 || cols < 8 {
		transposeScalar(dst, ds, src, ss, rows, cols)
		return
	}
	_, _ = src[(rows-1)*ss+cols-1], dst[(cols-1)*ds+rows-1] // every load and store below is inside
	r8, c8 := rows&^7, cols&^7
	ps, pd := data(src), data(dst)
	const tile = 32
	for r0 := 0; r0 < r8; r0 += tile {
		for c0 := 0; c0 < c8; c0 += tile {
			for r := r0; r < min(r0+tile, r8); r += 8 {
				for c := c0; c < min(c0+tile, c8); c += 8 {
					transpose8(pd, c*ds+r, ds, ps, r*ss+c, ss)
				}
			}
		}
	}
	archsimd.ClearAVXUpperBits()
	if r8 < rows {
		transposeScalar(dst[r8:], ds, src[r8*ss:], ss, rows-r8, cols)
	}
	if c8 < cols {
		transposeScalar(dst[c8*ds:], ds, src[c8:], ss, r8, cols-c8)
	}
}

// transpose8 transposes the 8×8 block at src + 4·s (rows ss apart) into
// dst + 4·d (rows ds apart).
func transpose8(dst unsafe.Pointer, d, ds int, src unsafe.Pointer, s, ss int) {
	i32 := func(k int) archsimd.Int32x8 { return at(src, s+k*ss).AsInt32x8() }
	r0, r1, r2, r3, r4, r5, r6, r7 := i32(0), i32(1), i32(2), i32(3), i32(4), i32(5), i32(6), i32(7)
	// t0 = r0[0] r1[0] r0[1] r1[1] | r0[4] r1[4] r0[5] r1[5], ...
	t0, t1 := r0.InterleaveLoGrouped(r1).AsFloat32x8(), r0.InterleaveHiGrouped(r1).AsFloat32x8()
	t2, t3 := r2.InterleaveLoGrouped(r3).AsFloat32x8(), r2.InterleaveHiGrouped(r3).AsFloat32x8()
	t4, t5 := r4.InterleaveLoGrouped(r5).AsFloat32x8(), r4.InterleaveHiGrouped(r5).AsFloat32x8()
	t6, t7 := r6.InterleaveLoGrouped(r7).AsFloat32x8(), r6.InterleaveHiGrouped(r7).AsFloat32x8()
	// s0 = column 0 of rows 0..3 | column 4 of rows 0..3, ...
	s0, s1 := t0.SelectFromPairGrouped(0, 1, 4, 5, t2), t0.SelectFromPairGrouped(2, 3, 6, 7, t2)
	s2, s3 := t1.SelectFromPairGrouped(0, 1, 4, 5, t3), t1.SelectFromPairGrouped(2, 3, 6, 7, t3)
	s4, s5 := t4.SelectFromPairGrouped(0, 1, 4, 5, t6), t4.SelectFromPairGrouped(2, 3, 6, 7, t6)
	s6, s7 := t5.SelectFromPairGrouped(0, 1, 4, 5, t7), t5.SelectFromPairGrouped(2, 3, 6, 7, t7)
	store(s0.Select128FromPair(0, 2, s4), dst, d)
	store(s1.Select128FromPair(0, 2, s5), dst, d+ds)
	store(s2.Select128FromPair(0, 2, s6), dst, d+2*ds)
	store(s3.Select128FromPair(0, 2, s7), dst, d+3*ds)
	store(s0.Select128FromPair(1, 3, s4), dst, d+4*ds)
	store(s1.Select128FromPair(1, 3, s5), dst, d+5*ds)
	store(s2.Select128FromPair(1, 3, s6), dst, d+6*ds)
	store(s3.Select128FromPair(1, 3, s7), dst, d+7*ds)
}

// The box sums' loops below load through pointers, their bounds checked
// once on entry (rather than per load, which costs as much as the
// arithmetic), 8 outputs at a time.

// at is the vector at p + 4·i bytes (float32 i).
func at(p unsafe.Pointer, i int) vec {
	return archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(p, 4*i)))
}

// ld is the vector off bytes from p.
func ld(p unsafe.Pointer, off uintptr) vec {
	return archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(p, off)))
}

func data(s []float32) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(s)) }

func store(a vec, p unsafe.Pointer, i int) { a.Store((*[8]float32)(unsafe.Add(p, 4*i))) }

// boxRow is boxRowScalar 8 at a time: the differences d[x] =
// ext[x+k-1] - ext[x-1] summed along the row, each vector's running sums
// in three adds of itself shifted by 1, 2 and 4 lanes, plus the last sum
// before it. All are integers below 2^24, so the sums are exact.
func boxRow(out, ext []float32, k int) {
	n := len(out)
	if !vectorized() || n < 16 || n%8 != 0 || len(ext) < n+k-1 {
		boxRowScalar(out, ext, k)
		return
	}
	var s float32
	for _, v := range ext[:k] {
		s += v
	}
	out[0] = s
	for x := 1; x < 8; x++ {
		s += ext[x+k-1] - ext[x-1]
		out[x] = s
	}
	i1, m1 := archsimd.LoadUint32x8(&boxIdx[0]), archsimd.LoadInt32x8(&boxMask[0])
	i2, m2 := archsimd.LoadUint32x8(&boxIdx[1]), archsimd.LoadInt32x8(&boxMask[1])
	i4, m4 := archsimd.LoadUint32x8(&boxIdx[2]), archsimd.LoadInt32x8(&boxMask[2])
	i7 := archsimd.LoadUint32x8(&boxIdx[3])
	po, pe := data(out), data(ext)
	carry := at(po, 0).Permute(i7)
	for x := 8; x < n; x += 8 {
		d := at(pe, x+k-1).Sub(at(pe, x-1))
		d = d.Add(d.Permute(i1).AsInt32x8().And(m1).AsFloat32x8())
		d = d.Add(d.Permute(i2).AsInt32x8().And(m2).AsFloat32x8())
		d = d.Add(d.Permute(i4).AsInt32x8().And(m4).AsFloat32x8())
		v := d.Add(carry)
		store(v, po, x)
		carry = v.Permute(i7)
	}
	archsimd.ClearAVXUpperBits()
}

// boxIdx and boxMask shift a vector up by 1, 2 and 4 lanes (zeros in),
// and (boxIdx[3]) spread its last lane. Never written.
var (
	boxIdx  = [4][8]uint32{{0, 0, 1, 2, 3, 4, 5, 6}, {0, 0, 0, 1, 2, 3, 4, 5}, {0, 0, 0, 0, 0, 1, 2, 3}, {7, 7, 7, 7, 7, 7, 7, 7}}
	boxMask = [3][8]int32{{0, -1, -1, -1, -1, -1, -1, -1}, {0, 0, -1, -1, -1, -1, -1, -1}, {0, 0, 0, 0, -1, -1, -1, -1}}
)

// slide is slideScalar 8 values at a time: acc += in - out, dst =
// acc·scale. acc, in and out are one length, a multiple of 8.
func slide(dst, acc, in, out, scale []float32) {
	n := len(acc)
	if !vectorized() || n%8 != 0 || len(in) < n || (out != nil && len(out) < n) || len(dst) > n || len(scale) < 8 {
		slideScalar(dst, acc, in, out, scale)
		return
	}
	pa, pi := data(acc), data(in)
	if out == nil {
		for i := 0; i < n; i += 8 {
			store(at(pa, i).Add(at(pi, i)), pa, i)
		}
	} else {
		po := data(out)
		for i := 0; i < n; i += 8 {
			store(at(pa, i).Add(at(pi, i)).Sub(at(po, i)), pa, i)
		}
	}
	archsimd.ClearAVXUpperBits()
	if dst != nil {
		scaleRow(dst, acc, scale)
	}
}

// scaleRow: dst = src·scale (8 copies of the value), 8 at a time.
func scaleRow(dst, src, scale []float32) {
	n8 := len(dst) &^ 7
	s := load(scale)
	pd, ps := data(dst), data(src)
	for i := 0; i < n8; i += 8 {
		store(at(ps, i).Mul(s), pd, i)
	}
	archsimd.ClearAVXUpperBits()
	for i := n8; i < len(dst); i++ {
		dst[i] = src[i] * scale[0]
	}
}

// widen converts 8-bit pixels to float32, 8 at a time.
func widen(dst []float32, src []uint8) {
	n := len(src)
	if !vectorized() || n < 16 {
		widenScalar(dst, src)
		return
	}
	_, _ = dst[n-1], src[n-1] // every load and store below is inside
	pd, ps := data(dst), unsafe.Pointer(unsafe.SliceData(src))
	i := 0
	for ; i+16 <= n; i += 16 {
		v := archsimd.LoadUint8x16((*[16]uint8)(unsafe.Add(ps, i))).ExtendToUint16()
		store(v.GetLo().ExtendToUint32().AsInt32x8().ConvertToFloat32(), pd, i)
		store(v.GetHi().ExtendToUint32().AsInt32x8().ConvertToFloat32(), pd, i+8)
	}
	archsimd.ClearAVXUpperBits()
	widenScalar(dst[i:], src[i:])
}

// Stats is the min, max, mean and standard deviation (ddof 0) of v, sums
// in float64: 16 values at a time in four float64 accumulators.
func Stats(v []float32) (lo, hi, mean, std float64) {
	if !vectorized() || len(v) < 16 {
		return statsScalar(v)
	}
	p := data(v)
	n16 := len(v) &^ 15
	mn, mx := ld(p, 0), ld(p, 0)
	var s0, s1, s2, s3 archsimd.Float64x4
	for i := 0; i < n16; i += 16 {
		a, b := ld(p, uintptr(4*i)), ld(p, uintptr(4*i+32))
		mn, mx = mn.Min(a).Min(b), mx.Max(a).Max(b)
		s0 = s0.Add(a.GetLo().ConvertToFloat64())
		s1 = s1.Add(a.GetHi().ConvertToFloat64())
		s2 = s2.Add(b.GetLo().ConvertToFloat64())
		s3 = s3.Add(b.GetHi().ConvertToFloat64())
	}
	var lanes [8]float32
	var sums [4]float64
	mn.Store(&lanes)
	lo = float64(lanes[0])
	for _, x := range lanes[1:] {
		lo = min(lo, float64(x))
	}
	mx.Store(&lanes)
	hi = float64(lanes[0])
	for _, x := range lanes[1:] {
		hi = max(hi, float64(x))
	}
	s0.Add(s1).Add(s2.Add(s3)).Store(&sums)
	sum := sums[0] + sums[1] + sums[2] + sums[3]
	for _, x := range v[n16:] {
		lo, hi, sum = min(lo, float64(x)), max(hi, float64(x)), sum+float64(x)
	}
	mean = sum / float64(len(v))
	m := archsimd.BroadcastFloat64x4(mean)
	s0, s1, s2, s3 = archsimd.Float64x4{}, archsimd.Float64x4{}, archsimd.Float64x4{}, archsimd.Float64x4{}
	for i := 0; i < n16; i += 16 {
		a, b := ld(p, uintptr(4*i)), ld(p, uintptr(4*i+32))
		d0, d1 := a.GetLo().ConvertToFloat64().Sub(m), a.GetHi().ConvertToFloat64().Sub(m)
		d2, d3 := b.GetLo().ConvertToFloat64().Sub(m), b.GetHi().ConvertToFloat64().Sub(m)
		s0, s1, s2, s3 = d0.MulAdd(d0, s0), d1.MulAdd(d1, s1), d2.MulAdd(d2, s2), d3.MulAdd(d3, s3)
	}
	s0.Add(s1).Add(s2.Add(s3)).Store(&sums)
	archsimd.ClearAVXUpperBits()
	ss := sums[0] + sums[1] + sums[2] + sums[3]
	for _, x := range v[n16:] {
		d := float64(x) - mean
		ss += d * d
	}
	return lo, hi, mean, math.Sqrt(ss / float64(len(v)))
}
