//go:build goexperiment.simd && amd64

package watershed

import (
	"math/bits"
	"simd/archsimd"
	"unsafe"
)

// The row loops 8 wide with AVX2 (see rows.go for what each computes).
// Loads and stores go through pointers, bounds checked once per call
// (rather than per load, which costs as much as the work); the tails run
// the scalar loops.

type i32x8 = archsimd.Int32x8

var avx2 = archsimd.X86.AVX2()

// vectorized says whether the row loops run 8 wide.
func vectorized() bool { return avx2 }

func ptr(s []int32) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(s)) }

// at is the vector of 8 int32 at p + 4·i bytes.
func at(p unsafe.Pointer, i int) i32x8 {
	return archsimd.LoadInt32x8((*[8]int32)(unsafe.Add(p, 4*i)))
}

func put(v i32x8, p unsafe.Pointer, i int) { v.Store((*[8]int32)(unsafe.Add(p, 4*i))) }

// bcast is a vector of 8 copies of v (VPINSRD, VPBROADCASTD: VEX-encoded,
// no SSE in between).
func bcast(v int32) i32x8 { return archsimd.BroadcastInt32x8(v) }

func colDown(row, prev []int32, pix []uint8, t, far int32, bm []uint64) {
	n := len(row)
	if !avx2 || len(prev) < n || len(pix) < n || len(bm) < (n+63)/64 {
		colDownScalar(row, prev, pix, t, far, bm)
		return
	}
	// Pixels are read 16 bytes at a time (8 used): stop while 16 remain.
	nv := 0
	if len(pix) >= 16 {
		nv = min(n, len(pix)-8) &^ 7
	}
	pr, pp, pb := ptr(row), ptr(prev), unsafe.Pointer(unsafe.SliceData(pix))
	tv, fv, one := bcast(t), bcast(far), bcast(1)
	for x := 0; x < nv; x += 8 {
		px := archsimd.LoadUint8x16((*[16]uint8)(unsafe.Add(pb, x))).ExtendLo8ToUint32().AsInt32x8()
		in := px.Greater(tv)
		at(pp, x).Add(one).Min(fv).Masked(in).Store((*[8]int32)(unsafe.Add(pr, 4*x)))
		bm[x>>6] |= uint64(in.ToBits()) << (x & 63)
	}
	archsimd.ClearAVXUpperBits()
	if nv < n {
		colDownTail(row, prev, pix, t, far, bm, nv)
	}
}

// colDownTail runs colDownScalar on row[from:], bits placed for the row.
func colDownTail(row, prev []int32, pix []uint8, t, far int32, bm []uint64, from int) {
	for x := from; x < len(row); x++ {
		v := int32(0)
		if int32(pix[x]) > t {
			v = min(prev[x]+1, far)
			bm[x>>6] |= 1 << (x & 63)
		}
		row[x] = v
	}
}

func colUp(row, next []int32) {
	n := len(row)
	if !avx2 || len(next) < n {
		colUpScalar(row, next)
		return
	}
	n8 := n &^ 7
	pr, pn := ptr(row), ptr(next)
	one := bcast(1)
	for x := 0; x < n8; x += 8 {
		put(at(pr, x).Min(at(pn, x).Add(one)), pr, x)
	}
	archsimd.ClearAVXUpperBits()
	colUpScalar(row[n8:], next[n8:])
}

func squares(dst, src []int32) {
	n := len(dst)
	if !avx2 || len(src) < n {
		squaresScalar(dst, src)
		return
	}
	n8 := n &^ 7
	pd, ps := ptr(dst), ptr(src)
	for x := 0; x < n8; x += 8 {
		v := at(ps, x)
		put(v.Mul(v), pd, x)
	}
	archsimd.ClearAVXUpperBits()
	squaresScalar(dst[n8:], src[n8:])
}

// rowMin runs rowMinScalar's search 16 pixels at a time (then 8), two
// offsets per step, until no pixel of the 16 can improve; sq must hold
// pad+len(out)+pad values and pad be at least limit+1.
func rowMin(out, sq []int32, pad, limit int) bool {
	n := len(out)
	if !avx2 || pad < limit+1 || len(sq) < 2*pad+n {
		return rowMinScalar(out, sq, pad, limit)
	}
	po, ps := ptr(out), ptr(sq)
	one, three, two := bcast(1), bcast(3), bcast(2)
	x := 0
	for ; x+16 <= n; x += 16 {
		c0, c1 := at(ps, pad+x), at(ps, pad+x+8)
		kk, dk := one, three // k² and the step to the next square, k = 1
		lo, hi := unsafe.Add(ps, 4*(pad+x-1)), unsafe.Add(ps, 4*(pad+x+1))
		for k := 1; c0.Max(c1).Greater(kk).ToBits() != 0; k += 2 {
			if k > limit {
				archsimd.ClearAVXUpperBits()
				return false
			}
			kk2 := kk.Add(dk) // (k+1)²
			c0 = c0.Min(at(lo, 0).Min(at(hi, 0)).Add(kk).Min(at(lo, -1).Min(at(hi, 1)).Add(kk2)))
			c1 = c1.Min(at(lo, 8).Min(at(hi, 8)).Add(kk).Min(at(lo, 7).Min(at(hi, 9)).Add(kk2)))
			dk = dk.Add(two)
			kk = kk2.Add(dk) // (k+2)²
			dk = dk.Add(two)
			lo, hi = unsafe.Add(lo, -8), unsafe.Add(hi, 8)
		}
		put(c0, po, x)
		put(c1, po, x+8)
	}
	for ; x+8 <= n; x += 8 {
		c := at(ps, pad+x)
		kk, dk := one, three
		lo, hi := unsafe.Add(ps, 4*(pad+x-1)), unsafe.Add(ps, 4*(pad+x+1))
		for k := 1; c.Greater(kk).ToBits() != 0; k += 2 {
			if k > limit {
				archsimd.ClearAVXUpperBits()
				return false
			}
			kk2 := kk.Add(dk)
			c = c.Min(at(lo, 0).Min(at(hi, 0)).Add(kk).Min(at(lo, -1).Min(at(hi, 1)).Add(kk2)))
			dk = dk.Add(two)
			kk = kk2.Add(dk)
			dk = dk.Add(two)
			lo, hi = unsafe.Add(lo, -8), unsafe.Add(hi, 8)
		}
		put(c, po, x)
	}
	archsimd.ClearAVXUpperBits()
	return rowMinScalar(out[x:], sq[x:], pad, limit)
}

func max3(dst, a, b, c []int32) {
	n := len(dst)
	if !avx2 || len(a) < n || len(b) < n || len(c) < n {
		max3Scalar(dst, a, b, c)
		return
	}
	n8 := n &^ 7
	pd, pa, pb, pc := ptr(dst), ptr(a), ptr(b), ptr(c)
	for x := 0; x < n8; x += 8 {
		put(at(pa, x).Max(at(pb, x)).Max(at(pc, x)), pd, x)
	}
	archsimd.ClearAVXUpperBits()
	max3Scalar(dst[n8:], a[n8:], b[n8:], c[n8:])
}

func peaks3(list []peakCand, row, vm []int32, base int32) ([]peakCand, bool) {
	n := len(row)
	if !avx2 || len(vm) < n+2 {
		return peaks3Scalar(list, row, vm, base)
	}
	n8 := n &^ 7
	pr, pv := ptr(row), ptr(vm)
	zero := bcast(0)
	fail := false
	for x := 0; x < n8; x += 8 {
		v := at(pr, x)
		fgb := v.Greater(zero).ToBits()
		if fgb == 0 {
			continue
		}
		m := at(pv, x).Max(at(pv, x+1)).Max(at(pv, x+2))
		low := m.Greater(v).ToBits() & fgb
		fail = fail || low != 0
		for c := fgb &^ low; c != 0; c &= c - 1 {
			i := x + bits.TrailingZeros8(c)
			list = append(list, peakCand{row[i], base + int32(i)})
		}
	}
	archsimd.ClearAVXUpperBits()
	list, f := peaks3Scalar(list, row[n8:], vm[n8:], base+int32(n8))
	return list, fail || f
}

func stateRow(st, d []int32, hist []int32, top int32) {
	n := len(st)
	if !avx2 || len(d) < n || hist != nil && len(hist) < int(top)+2+histSpare {
		stateRowScalar(st, d, hist, top)
		return
	}
	n8 := n &^ 7
	ps, pd := ptr(st), ptr(d)
	zero, ones, one, tv := bcast(0), bcast(-1), bcast(1), bcast(top)
	// Background lanes count into the spare entries, one per lane (so that
	// they do not wait on each other): 8 increments, no branches.
	var spare, idx [8]int32
	for i := range spare {
		spare[i] = top + 2 + int32(i)
	}
	sp := archsimd.LoadInt32x8(&spare)
	for x := 0; x < n8; x += 8 {
		v := at(pd, x)
		in := v.Greater(zero)
		put(v.Xor(ones).Masked(in), ps, x)
		if hist == nil || in.ToBits() == 0 {
			continue
		}
		v.Min(tv).Add(one).Merge(sp, in).Store(&idx)
		hist[idx[0]]++
		hist[idx[1]]++
		hist[idx[2]]++
		hist[idx[3]]++
		hist[idx[4]]++
		hist[idx[5]]++
		hist[idx[6]]++
		hist[idx[7]]++
	}
	archsimd.ClearAVXUpperBits()
	stateRowScalar(st[n8:], d[n8:], hist, top)
}

func labelsRow(l, st []int32) {
	n := len(l)
	if !avx2 || len(st) < n {
		labelsRowScalar(l, st)
		return
	}
	n8 := n &^ 7
	pl, ps := ptr(l), ptr(st)
	zero := bcast(0)
	for x := 0; x < n8; x += 8 {
		put(at(ps, x).Max(zero), pl, x)
	}
	archsimd.ClearAVXUpperBits()
	labelsRowScalar(l[n8:], st[n8:])
}
