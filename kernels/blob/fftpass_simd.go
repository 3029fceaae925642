//go:build goexperiment.simd && amd64

package blob

import (
	"math"
	mbits "math/bits"
	"simd/archsimd"
	"unsafe"
)

// The vector passes compute exactly what the scalar ones do, 4 values at a
// time: the same operations in the same order, every product rounded
// before it is added (no fused multiply-add), so the responses do not
// depend on the build or the CPU.

// simdOK reports whether this CPU runs the 4-wide AVX2 passes (and the
// tests have not turned them off).
func simdOK() bool { return !scalarOnly && archsimd.X86.AVX2() }

type vec = archsimd.Float64x4

func splat(f float64) vec { return archsimd.BroadcastFloat64x4(f) }

// The passes load and store through pointers, the bounds checked once per
// stage (runStage), not per vector.

// at is the vector at p + 8·i bytes (float64 i).
func at(p unsafe.Pointer, i int) vec {
	return archsimd.LoadFloat64x4((*[4]float64)(unsafe.Add(p, 8*i)))
}

// put stores v at p + 8·i bytes.
func put(v vec, p unsafe.Pointer, i int) { v.Store((*[4]float64)(unsafe.Add(p, 8*i))) }

func base(s []float64) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(s)) }

// cmul returns (r + i·im)·(wr + i·wi) as Go computes a complex128 product:
// (r·wr - im·wi, r·wi + im·wr).
func cmul(r, i, wr, wi vec) (vec, vec) {
	return r.Mul(wr).Sub(i.Mul(wi)), r.Mul(wi).Add(i.Mul(wr))
}

// planes are the four planes of one pass: input (xr, xi), output (yr, yi).
type planes struct{ xr, xi, yr, yi unsafe.Pointer }

// runStage runs the vector passes over the first multiple of 4 values of
// every block and the scalar ones over the rest.
func runStage(st *fftStage, xr, xi, yr, yi []float64, s int, sign float64, simd bool) {
	s4, n := s&^3, st.sub*s // n: every index a pass touches is below it
	if !simd || s4 == 0 || len(xr) < n || len(xi) < n || len(yr) < n || len(yi) < n {
		scalarStage(st, xr, xi, yr, yi, s, 0, sign)
		return
	}
	m := st.sub / st.radix
	if len(st.wr) < m*(st.radix-1) || len(st.vw) < 2*8*m*(st.radix-1) {
		panic("blob: bad FFT stage")
	}
	vw := unsafe.Pointer(&st.vw[0]) // 4-wide (re, im) per twiddle, forward then inverse
	if sign < 0 {
		vw = unsafe.Pointer(&st.vw[len(st.vw)/2])
	}
	pl := planes{base(xr), base(xi), base(yr), base(yi)}
	switch st.radix {
	case 2:
		radix2v(pl, m, s, s4, vw)
	case 3:
		radix3v(pl, m, s, s4, vw, sign)
	case 4:
		radix4v(pl, m, s, s4, vw, sign < 0)
	case 5:
		radix5v(pl, m, s, s4, vw, sign)
	}
	archsimd.ClearAVXUpperBits()
	if s4 < s {
		scalarStage(st, xr, xi, yr, yi, s, s4, sign)
	}
}

// twiddle returns twiddle k of a stage's vector table.
func twiddle(vw unsafe.Pointer, k int) (wr, wi vec) { return at(vw, 8*k), at(vw, 8*k+4) }

func radix2v(pl planes, m, s, s4 int, vw unsafe.Pointer) {
	for q := range m {
		a, b, o0, o1 := q*s, (q+m)*s, 2*q*s, (2*q+1)*s
		wr, wi := twiddle(vw, q)
		for i := 0; i < s4; i += 4 {
			ar, ai := at(pl.xr, a+i), at(pl.xi, a+i)
			br, bi := at(pl.xr, b+i), at(pl.xi, b+i)
			put(ar.Add(br), pl.yr, o0+i)
			put(ai.Add(bi), pl.yi, o0+i)
			dr, di := ar.Sub(br), ai.Sub(bi)
			if q > 0 {
				dr, di = cmul(dr, di, wr, wi)
			}
			put(dr, pl.yr, o1+i)
			put(di, pl.yi, o1+i)
		}
	}
}

func radix3v(pl planes, m, s, s4 int, vw unsafe.Pointer, sign float64) {
	half := splat(0.5)
	sn := sign * -math.Sqrt(3) / 2 // sin(∓2π/3)
	vsn, nsn := splat(sn), splat(-sn)
	for q := range m {
		a0, a1, a2, o := q*s, (q+m)*s, (q+2*m)*s, 3*q*s
		w1r, w1i := twiddle(vw, 2*q)
		w2r, w2i := twiddle(vw, 2*q+1)
		for i := 0; i < s4; i += 4 {
			x0r, x0i := at(pl.xr, a0+i), at(pl.xi, a0+i)
			x1r, x1i := at(pl.xr, a1+i), at(pl.xi, a1+i)
			x2r, x2i := at(pl.xr, a2+i), at(pl.xi, a2+i)
			sr, si := x1r.Add(x2r), x1i.Add(x2i)
			dr, di := x1r.Sub(x2r), x1i.Sub(x2i)
			rr, ri := x0r.Sub(sr.Mul(half)), x0i.Sub(si.Mul(half))
			jr, ji := di.Mul(nsn), dr.Mul(vsn) // i·sn·d
			put(x0r.Add(sr), pl.yr, o+i)
			put(x0i.Add(si), pl.yi, o+i)
			br, bi := rr.Add(jr), ri.Add(ji)
			cr, ci := rr.Sub(jr), ri.Sub(ji)
			if q > 0 {
				br, bi = cmul(br, bi, w1r, w1i)
				cr, ci = cmul(cr, ci, w2r, w2i)
			}
			put(br, pl.yr, o+s+i)
			put(bi, pl.yi, o+s+i)
			put(cr, pl.yr, o+2*s+i)
			put(ci, pl.yi, o+2*s+i)
		}
	}
}

// radix4v: with t3 = ∓i·d, outputs 1 and 3 are t1 + t3 and t1 - t3. The
// forward t3 is (d.im, -d.re); the inverse one is (-d.im, d.re), which is
// the forward one of d' = x3 - x1 = -d exactly, and t2 = x1 + x3 = x3 +
// x1: so the inverse pass is the forward one with the input blocks 1 and
// 3 swapped (and the inverse twiddles). Offsets are in bytes from the
// blocks of q, to keep few values live in the loop.
func radix4v(pl planes, m, s, s4 int, vw unsafe.Pointer, inverse bool) {
	d1, d2, d3, e := 8*m*s, 16*m*s, 24*m*s, 8*s // input blocks 1..3; output block 1
	if inverse {
		d1, d3 = d3, d1
	}
	end := 8 * s4
	for q := range m {
		xr, xi := unsafe.Add(pl.xr, 8*q*s), unsafe.Add(pl.xi, 8*q*s)
		yr, yi := unsafe.Add(pl.yr, 32*q*s), unsafe.Add(pl.yi, 32*q*s)
		if q == 0 { // no twiddles
			for i := 0; i < end; i += 32 {
				x0r, x0i := atb(xr, i), atb(xi, i)
				x2r, x2i := atb(xr, i+d2), atb(xi, i+d2)
				x1r, x1i := atb(xr, i+d1), atb(xi, i+d1)
				x3r, x3i := atb(xr, i+d3), atb(xi, i+d3)
				t0r, t0i := x0r.Add(x2r), x0i.Add(x2i)
				t1r, t1i := x0r.Sub(x2r), x0i.Sub(x2i)
				t2r, t2i := x1r.Add(x3r), x1i.Add(x3i)
				dr, di := x1r.Sub(x3r), x1i.Sub(x3i)
				putb(t0r.Add(t2r), yr, i)
				putb(t0i.Add(t2i), yi, i)
				putb(t1r.Add(di), yr, i+e)
				putb(t1i.Sub(dr), yi, i+e)
				putb(t0r.Sub(t2r), yr, i+2*e)
				putb(t0i.Sub(t2i), yi, i+2*e)
				putb(t1r.Sub(di), yr, i+3*e)
				putb(t1i.Add(dr), yi, i+3*e)
			}
			continue
		}
		radix4q(xr, xi, yr, yi, unsafe.Add(vw, 3*q*64), end, d1, d2, d3, e)
	}
}

// radix4q is radix4v's loop for one q > 0, tw its twiddles u = 1, 2, 3.
//
//go:noinline
func radix4q(xr, xi, yr, yi, tw unsafe.Pointer, end, d1, d2, d3, e int) {
	w1r, w1i, w2r, w2i, w3r, w3i := atb(tw, 0), atb(tw, 32), atb(tw, 64), atb(tw, 96), atb(tw, 128), atb(tw, 160)
	for i := 0; i < end; i += 32 {
		x0r, x0i := atb(xr, i), atb(xi, i)
		x2r, x2i := atb(xr, i+d2), atb(xi, i+d2)
		x1r, x1i := atb(xr, i+d1), atb(xi, i+d1)
		x3r, x3i := atb(xr, i+d3), atb(xi, i+d3)
		t0r, t0i := x0r.Add(x2r), x0i.Add(x2i)
		t1r, t1i := x0r.Sub(x2r), x0i.Sub(x2i)
		t2r, t2i := x1r.Add(x3r), x1i.Add(x3i)
		dr, di := x1r.Sub(x3r), x1i.Sub(x3i)
		putb(t0r.Add(t2r), yr, i)
		putb(t0i.Add(t2i), yi, i)
		br, bi := cmul(t1r.Add(di), t1i.Sub(dr), w1r, w1i)
		putb(br, yr, i+e)
		putb(bi, yi, i+e)
		br, bi = cmul(t0r.Sub(t2r), t0i.Sub(t2i), w2r, w2i)
		putb(br, yr, i+2*e)
		putb(bi, yi, i+2*e)
		br, bi = cmul(t1r.Sub(di), t1i.Add(dr), w3r, w3i)
		putb(br, yr, i+3*e)
		putb(bi, yi, i+3*e)
	}
}

// atb is the vector off bytes from p.
func atb(p unsafe.Pointer, off int) vec {
	return archsimd.LoadFloat64x4((*[4]float64)(unsafe.Add(p, off)))
}

// putb stores v off bytes from p.
func putb(v vec, p unsafe.Pointer, off int) { v.Store((*[4]float64)(unsafe.Add(p, off))) }

func radix5v(pl planes, m, s, s4 int, vw unsafe.Pointer, sign float64) {
	c1, c2 := splat(math.Cos(2*math.Pi/5)), splat(math.Cos(4*math.Pi/5))
	s1, s2 := splat(-sign*math.Sin(2*math.Pi/5)), splat(-sign*math.Sin(4*math.Pi/5))
	for q := range m {
		a0, a1, a2, a3, a4, o := q*s, (q+m)*s, (q+2*m)*s, (q+3*m)*s, (q+4*m)*s, 5*q*s
		for i := 0; i < s4; i += 4 {
			x0r, x0i := at(pl.xr, a0+i), at(pl.xi, a0+i)
			x1r, x1i := at(pl.xr, a1+i), at(pl.xi, a1+i)
			x2r, x2i := at(pl.xr, a2+i), at(pl.xi, a2+i)
			x3r, x3i := at(pl.xr, a3+i), at(pl.xi, a3+i)
			x4r, x4i := at(pl.xr, a4+i), at(pl.xi, a4+i)
			b1r, b1i := x1r.Add(x4r), x1i.Add(x4i)
			b2r, b2i := x2r.Add(x3r), x2i.Add(x3i)
			d1r, d1i := x1r.Sub(x4r), x1i.Sub(x4i)
			d2r, d2i := x2r.Sub(x3r), x2i.Sub(x3i)
			r1r, r1i := x0r.Add(b1r.Mul(c1)).Add(b2r.Mul(c2)), x0i.Add(b1i.Mul(c1)).Add(b2i.Mul(c2))
			r2r, r2i := x0r.Add(b1r.Mul(c2)).Add(b2r.Mul(c1)), x0i.Add(b1i.Mul(c2)).Add(b2i.Mul(c1))
			e1r, e1i := d1r.Mul(s1).Add(d2r.Mul(s2)), d1i.Mul(s1).Add(d2i.Mul(s2))
			e2r, e2i := d1r.Mul(s2).Sub(d2r.Mul(s1)), d1i.Mul(s2).Sub(d2i.Mul(s1))
			put(x0r.Add(b1r).Add(b2r), pl.yr, o+i)
			put(x0i.Add(b1i).Add(b2i), pl.yi, o+i)
			out := [4][2]vec{
				{r1r.Sub(e1i), r1i.Add(e1r)},
				{r2r.Sub(e2i), r2i.Add(e2r)},
				{r2r.Add(e2i), r2i.Sub(e2r)},
				{r1r.Add(e1i), r1i.Sub(e1r)},
			}
			for u := range out {
				vr, vi := out[u][0], out[u][1]
				if q > 0 {
					wr, wi := twiddle(vw, 4*q+u)
					vr, vi = cmul(vr, vi, wr, wi)
				}
				put(vr, pl.yr, o+(u+1)*s+i)
				put(vi, pl.yi, o+(u+1)*s+i)
			}
		}
	}
}

// filterVec runs the filter (filter) on the lines 0..lo-1, lo = m rounded
// down to a multiple of 4, 4 lines at a time, and returns lo; fk are the
// factors (fftConv.makeFilter).
func filterVec(fk, br, bi, spec, x0, x2 []float64, m int) int {
	m4 := m &^ 3
	M := len(br) / m
	if !simdOK() || m4 == 0 || len(fk) < 8*(M/2+1) || len(spec) < M*2*m || len(bi) < M*m || len(x0) < 2*m || len(x2) < 2*m {
		return 0
	}
	ps, pbr, pbi := base(spec), base(br), base(bi)
	px0, px2 := base(x0), base(x2)
	for k := 0; 2*k <= M; k++ {
		kc := 0
		if k > 0 {
			kc = M - k
		}
		c := unsafe.Pointer(&fk[8*k])
		a, b, ac, bc := bcast(c, 0), bcast(c, 1), bcast(c, 2), bcast(c, 3)
		s, sc := unsafe.Add(ps, 8*k*2*m), unsafe.Add(ps, 8*kc*2*m)
		ok, oc := k*m, kc*m
		for p := 0; p < m4; p += 4 {
			q := m + p
			xc0, xc2, xd0, xd2 := at(px0, p), at(px2, p), at(px0, q), at(px2, q)
			u1 := at(s, p).Mul(xc0.Mul(a).Add(xc2.Mul(b)))
			u2 := at(s, q).Mul(xd0.Mul(a).Add(xd2.Mul(b)))
			v1 := at(sc, p).Mul(xc0.Mul(ac).Add(xc2.Mul(bc)))
			v2 := at(sc, q).Mul(xd0.Mul(ac).Add(xd2.Mul(bc)))
			zr, zi := cmul(v1.Add(u2), v2.Sub(u1), bcast(c, 6), bcast(c, 7))
			put(zr, pbr, oc+p) // k = 0: overwritten next
			put(zi, pbi, oc+p)
			zr, zi = cmul(u1.Add(v2), u2.Sub(v1), bcast(c, 4), bcast(c, 5))
			put(zr, pbr, ok+p)
			put(zi, pbi, ok+p)
		}
	}
	archsimd.ClearAVXUpperBits()
	return m4
}

// bcast broadcasts the float64 i of p.
func bcast(p unsafe.Pointer, i int) vec {
	return archsimd.BroadcastFloat64x4(*(*float64)(unsafe.Add(p, 8*i)))
}

// ySum is ySumScalar 8 columns at a time, then 4; coef holds k0[j] and
// k2[j] 4 times each, from 8j.
func ySum(a, b []float64, rows [][]float64, k0, k2, coef []float64) {
	r, n := len(k0)-1, len(a)
	var rp [2*fftMinRadius + 1]unsafe.Pointer
	if !simdOK() || n < 4 || len(b) < n || len(rows) != 2*r+1 || len(rows) > len(rp) || len(coef) < 8*(r+1) {
		ySumScalar(a, b, rows, k0, k2, 0)
		return
	}
	for i, row := range rows {
		if len(row) < n {
			panic("blob: short row")
		}
		rp[i] = base(row)
	}
	pa, pb, pc := base(a), base(b), base(coef)
	x := 0
	for ; x+8 <= n; x += 8 {
		c0, c1 := at(rp[0], x), at(rp[0], x+4)
		w0, w2 := at(pc, 0), at(pc, 4)
		sa0, sb0, sa1, sb1 := c0.Mul(w2), c0.Mul(w0), c1.Mul(w2), c1.Mul(w0)
		for j := r; j >= 1; j-- {
			pm, pp := rp[2*(r-j)+1], rp[2*(r-j)+2]
			s0, s1 := at(pm, x).Add(at(pp, x)), at(pm, x+4).Add(at(pp, x+4))
			w0, w2 := at(pc, 8*j), at(pc, 8*j+4)
			sa0, sb0 = sa0.Add(s0.Mul(w2)), sb0.Add(s0.Mul(w0))
			sa1, sb1 = sa1.Add(s1.Mul(w2)), sb1.Add(s1.Mul(w0))
		}
		put(sa0, pa, x)
		put(sa1, pa, x+4)
		put(sb0, pb, x)
		put(sb1, pb, x+4)
	}
	for ; x+4 <= n; x += 4 {
		c := at(rp[0], x)
		sa, sb := c.Mul(at(pc, 4)), c.Mul(at(pc, 0))
		for j := r; j >= 1; j-- {
			s := at(rp[2*(r-j)+1], x).Add(at(rp[2*(r-j)+2], x))
			sa, sb = sa.Add(s.Mul(at(pc, 8*j+4))), sb.Add(s.Mul(at(pc, 8*j)))
		}
		put(sa, pa, x)
		put(sb, pb, x)
	}
	archsimd.ClearAVXUpperBits()
	if x < n {
		ySumScalar(a, b, rows, k0, k2, x)
	}
}

// xSum is xSumScalar 8 outputs at a time, then 4; coef as for ySum.
func xSum(out, a, b, k0, k2, coef []float64, s2 float64) {
	r, n := len(k0)-1, len(out)
	if !simdOK() || n < 4 || len(a) < n+2*r || len(b) < n+2*r || len(coef) < 8*(r+1) {
		xSumScalar(out, a, b, k0, k2, s2, 0)
		return
	}
	po, pa, pb, pc := base(out), base(a), base(b), base(coef)
	ns2 := splat(-s2)
	x := 0
	for ; x+8 <= n; x += 8 {
		w0, w2 := at(pc, 0), at(pc, 4)
		t10, t20 := at(pa, x+r).Mul(w0), at(pb, x+r).Mul(w2)
		t11, t21 := at(pa, x+r+4).Mul(w0), at(pb, x+r+4).Mul(w2)
		for j := r; j >= 1; j-- {
			w0, w2 := at(pc, 8*j), at(pc, 8*j+4)
			lo, hi := x+r-j, x+r+j
			t10 = t10.Add(at(pa, lo).Add(at(pa, hi)).Mul(w0))
			t20 = t20.Add(at(pb, lo).Add(at(pb, hi)).Mul(w2))
			t11 = t11.Add(at(pa, lo+4).Add(at(pa, hi+4)).Mul(w0))
			t21 = t21.Add(at(pb, lo+4).Add(at(pb, hi+4)).Mul(w2))
		}
		put(t10.Add(t20).Mul(ns2), po, x) // -(t1+t2)·s2, exactly
		put(t11.Add(t21).Mul(ns2), po, x+4)
	}
	for ; x+4 <= n; x += 4 {
		t1, t2 := at(pa, x+r).Mul(at(pc, 0)), at(pb, x+r).Mul(at(pc, 4))
		for j := r; j >= 1; j-- {
			t1 = t1.Add(at(pa, x+r-j).Add(at(pa, x+r+j)).Mul(at(pc, 8*j)))
			t2 = t2.Add(at(pb, x+r-j).Add(at(pb, x+r+j)).Mul(at(pc, 8*j+4)))
		}
		put(t1.Add(t2).Mul(ns2), po, x)
	}
	archsimd.ClearAVXUpperBits()
	if x < n {
		xSumScalar(out, a, b, k0, k2, s2, x)
	}
}

// nextAbove returns the first x' in [x, end) with row[x'] > thr, or end.
// It skips 16 values at a time whose maximum is not above thr (responses
// are never NaN).
func nextAbove(row []float64, x, end int, thr float64) int {
	row = row[:end]
	if simdOK() && x+4 <= end {
		p, t := base(row), splat(thr)
		for ; x+16 <= end; x += 16 {
			if at(p, x).Max(at(p, x+4)).Max(at(p, x+8).Max(at(p, x+12))).Greater(t).ToBits() != 0 {
				break
			}
		}
		for ; x+4 <= end; x += 4 {
			if bits := at(p, x).Greater(t).ToBits(); bits != 0 {
				archsimd.ClearAVXUpperBits()
				return x + mbits.TrailingZeros8(bits)
			}
		}
		archsimd.ClearAVXUpperBits()
	}
	for ; x < end && !(row[x] > thr); x++ {
	}
	return x
}

// transpose4 transposes the 4x4 matrix whose rows are r0..r3.
func transpose4(r0, r1, r2, r3 vec) (c0, c1, c2, c3 vec) {
	t0, t1 := r0.SelectFromPairGrouped(0, 2, r1), r0.SelectFromPairGrouped(1, 3, r1)
	t2, t3 := r2.SelectFromPairGrouped(0, 2, r3), r2.SelectFromPairGrouped(1, 3, r3)
	return t0.Select128FromPair(0, 2, t2), t1.Select128FromPair(0, 2, t3),
		t0.Select128FromPair(1, 3, t2), t1.Select128FromPair(1, 3, t3)
}

// dctPostCols is dctPostColsScalar 4 lines at a time.
func dctPostCols(rr, ri []float64, m int, twr, twi, spec []float64) {
	M, m4 := len(twr), m&^3
	if !simdOK() || m4 == 0 || len(twi) < M || len(rr) < M*m || len(ri) < M*m || len(spec) < M*2*m {
		dctPostColsScalar(rr, ri, m, twr, twi, spec, 0)
		return
	}
	prr, pri, ps := base(rr), base(ri), base(spec)
	half := splat(0.5)
	for k := range M {
		kc := 0
		if k > 0 {
			kc = M - k
		}
		tr, ti := splat(twr[k]), splat(twi[k])
		z, zc, o := k*m, kc*m, k*2*m
		for p := 0; p < m4; p += 4 {
			zr, zi := at(prr, z+p), at(pri, z+p)
			cr, ci := at(prr, zc+p), at(pri, zc+p)
			ar, ai := zr.Add(cr).Mul(half), zi.Sub(ci).Mul(half)
			br, bi := zi.Add(ci).Mul(half), cr.Sub(zr).Mul(half)
			put(tr.Mul(ar).Sub(ti.Mul(ai)), ps, o+p)
			put(tr.Mul(br).Sub(ti.Mul(bi)), ps, o+m+p)
		}
		archsimd.ClearAVXUpperBits()
	}
	if m4 < m {
		dctPostColsScalar(rr, ri, m, twr, twi, spec, m4)
	}
}

// interleave is interleaveScalar 4 values at a time.
func interleave(dst, sr, si []float64) {
	n4 := len(sr) &^ 3
	if !simdOK() || n4 == 0 || len(si) < len(sr) || len(dst) < 2*len(sr) {
		interleaveScalar(dst, sr, si, 0)
		return
	}
	pd, pr, pi := base(dst), base(sr), base(si)
	for p := 0; p < n4; p += 4 {
		r, i := at(pr, p), at(pi, p)
		lo, hi := r.SelectFromPairGrouped(0, 2, i), r.SelectFromPairGrouped(1, 3, i) // r0 i0 r2 i2, r1 i1 r3 i3
		put(lo.Select128FromPair(0, 2, hi), pd, 2*p)
		put(lo.Select128FromPair(1, 3, hi), pd, 2*p+4)
	}
	archsimd.ClearAVXUpperBits()
	if n4 < len(sr) {
		interleaveScalar(dst, sr, si, n4)
	}
}

// packRows is packRowsScalar on 4 lines and 4 frequencies at a time: it
// loads 4 values along k from each of the 4 lines' rows and transposes
// them.
func packRows(br, bi, rows []float64, y0, h, m, cols int, twr, twi []float64) {
	M, m4 := len(twr), m&^3
	// Blocks of 4 frequencies k..k+3 from k = 1 read a and b at k..k+3 and
	// at M-k-3..M-k, so they run while k+3 <= M-1.
	kend := 1 + (M-1)/4*4
	if !simdOK() || m4 == 0 || kend == 1 || len(twi) < M || len(br) < M*m || len(bi) < M*m ||
		(min(y0+2*m4, h)-1)*cols+M > len(rows) || cols < M {
		packRowsScalar(br, bi, rows, y0, h, m, cols, twr, twi, 0)
		return
	}
	pbr, pbi, prow := base(br), base(bi), base(rows)
	ptr, pti := base(twr), base(twi)
	for p := 0; p < m4; p += 4 {
		var a, b [4]unsafe.Pointer // rows of lines p..p+3
		for l := range 4 {
			y1 := y0 + 2*(p+l)
			a[l], b[l] = unsafe.Add(prow, 8*y1*cols), unsafe.Add(prow, 8*min(y1+1, h-1)*cols)
		}
		for k := 1; k < kend; k += 4 {
			c := M - k - 3
			ak0, ak1, ak2, ak3 := transpose4(at(a[0], k), at(a[1], k), at(a[2], k), at(a[3], k))
			bk0, bk1, bk2, bk3 := transpose4(at(b[0], k), at(b[1], k), at(b[2], k), at(b[3], k))
			ac0, ac1, ac2, ac3 := transpose4(at(a[0], c), at(a[1], c), at(a[2], c), at(a[3], c))
			bc0, bc1, bc2, bc3 := transpose4(at(b[0], c), at(b[1], c), at(b[2], c), at(b[3], c))
			// frequency k+i: a(k+i) = ak_i, a(M-k-i) = ac_(3-i)
			packFreq(pbr, pbi, (k)*m+p, ak0, bk0, ac3, bc3, ptr, pti, k)
			packFreq(pbr, pbi, (k+1)*m+p, ak1, bk1, ac2, bc2, ptr, pti, k+1)
			packFreq(pbr, pbi, (k+2)*m+p, ak2, bk2, ac1, bc1, ptr, pti, k+2)
			packFreq(pbr, pbi, (k+3)*m+p, ak3, bk3, ac0, bc0, ptr, pti, k+3)
		}
		archsimd.ClearAVXUpperBits()
		for l := range 4 {
			y1 := y0 + 2*(p+l)
			y2 := min(y1+1, h-1)
			packRow(br, bi, p+l, m, rows[y1*cols:y1*cols+M], rows[y2*cols:y2*cols+M], twr, twi, kend, M)
		}
	}
	if m4 < m {
		packRowsScalar(br, bi, rows, y0, h, m, cols, twr, twi, m4)
	}
}

// packFreq stores packRow's value at one frequency k for 4 lines, given
// a(k), b(k), a(M-k), b(M-k) across them: with t = e^(-iπk/2M) = (tr, ti),
// z·conj(t) = (zr·tr - (-ti)·zi, zr·(-ti) + zi·tr) is (zr·tr + zi·ti,
// zi·tr - zr·ti) exactly.
func packFreq(pbr, pbi unsafe.Pointer, o int, ak, bk, ac, bc vec, ptr, pti unsafe.Pointer, k int) {
	zr, zi := ak.Add(bc), bk.Sub(ac)
	tr, ti := bcast(ptr, k), bcast(pti, k)
	put(tr.Mul(zr).Add(ti.Mul(zi)), pbr, o)
	put(tr.Mul(zi).Sub(ti.Mul(zr)), pbi, o)
}

// unpackRows is unpackRowsScalar on 4 lines and 4 columns at a time: the
// columns x..x+3 (x even) are the elements x/2, M-1-x/2, x/2+1, M-2-x/2.
func unpackRows(out, rr, ri []float64, y0, h, w, m, M int) {
	full := min(m, (h-y0)/2) // lines with two rows
	m4, w4 := full&^3, w&^3
	if !simdOK() || m4 == 0 || w4 == 0 || len(rr) < M*m || len(ri) < M*m || (y0+2*m4)*w > len(out) || M < w {
		unpackRowsScalar(out, rr, ri, y0, h, w, m, M, 0)
		return
	}
	prr, pri, po := base(rr), base(ri), base(out)
	for p := 0; p < m4; p += 4 {
		row := unsafe.Add(po, 8*(y0+2*p)*w) // rows y0+2p.., w apart
		for x := 0; x < w4; x += 4 {
			e0, o0, e1, o1 := (x/2)*m+p, (M-1-x/2)*m+p, (x/2+1)*m+p, (M-2-x/2)*m+p
			r0, r1, r2, r3 := transpose4(at(prr, e0), at(prr, o0), at(prr, e1), at(prr, o1))
			i0, i1, i2, i3 := transpose4(at(pri, e0), at(pri, o0), at(pri, e1), at(pri, o1))
			put(r0, row, x)
			put(i0, row, w+x)
			put(r1, row, 2*w+x)
			put(i1, row, 3*w+x)
			put(r2, row, 4*w+x)
			put(i2, row, 5*w+x)
			put(r3, row, 6*w+x)
			put(i3, row, 7*w+x)
		}
		archsimd.ClearAVXUpperBits()
		for l := range 4 { // the columns from w4 on
			y1 := y0 + 2*(p+l)
			o1, o2 := out[y1*w:y1*w+w], out[(y1+1)*w:(y1+1)*w+w]
			for x := w4; x < w; x++ {
				j := perm(x, M)*m + p + l
				o1[x], o2[x] = rr[j], ri[j]
			}
		}
	}
	if m4 < m {
		unpackRowsScalar(out, rr, ri, y0, h, w, m, M, m4)
	}
}

// deinterleave is deinterleaveScalar 4 values at a time.
func deinterleave(dr, di, src []float64) {
	n4 := len(dr) &^ 3
	if !simdOK() || n4 == 0 || len(di) < len(dr) || len(src) < 2*len(dr) {
		deinterleaveScalar(dr, di, src, 0)
		return
	}
	pr, pi, ps := base(dr), base(di), base(src)
	for p := 0; p < n4; p += 4 {
		a, b := at(ps, 2*p), at(ps, 2*p+4)                                   // r0 i0 r1 i1, r2 i2 r3 i3
		lo, hi := a.Select128FromPair(0, 2, b), a.Select128FromPair(1, 3, b) // r0 i0 r2 i2, r1 i1 r3 i3
		put(lo.SelectFromPairGrouped(0, 2, hi), pr, p)
		put(lo.SelectFromPairGrouped(1, 3, hi), pi, p)
	}
	archsimd.ClearAVXUpperBits()
	if n4 < len(dr) {
		deinterleaveScalar(dr, di, src, n4)
	}
}

// packImage is packImageScalar on 4 lines at a time: their 8 rows are
// scaled into line (8 rows), and the columns x < w rounded down to 4 go
// through 4x4 transposes; the columns x..x+3 (x even) land at the
// elements x/2, M-1-x/2, x/2+1, M-2-x/2 (perm). The rest is scalar.
func packImage(br, bi []float64, pix []uint8, y0, h, w, m, M int, line []float64) {
	m4, w4 := m&^3, min(w, M)&^3
	if !simdOK() || m4 == 0 || w4 == 0 || len(line) < 8*w || len(br) < M*m || len(bi) < M*m {
		packImageScalar(br, bi, pix, y0, h, w, m, M, line, 0)
		return
	}
	pbr, pbi, pl := base(br), base(bi), base(line)
	for p := 0; p < m4; p += 4 {
		for l := range 4 { // line p+l: rows at line[2l·w:], line[(2l+1)·w:]
			y1 := y0 + 2*(p+l)
			y2 := min(y1+1, h-1)
			scaleRow(line[2*l*w:(2*l+1)*w], pix[y1*w:y1*w+w])
			scaleRow(line[(2*l+1)*w:(2*l+2)*w], pix[y2*w:y2*w+w])
		}
		for x := 0; x < w4; x += 4 {
			e0, o0, e1, o1 := (x/2)*m+p, (M-1-x/2)*m+p, (x/2+1)*m+p, (M-2-x/2)*m+p
			v0, v1, v2, v3 := transpose4(at(pl, x), at(pl, 2*w+x), at(pl, 4*w+x), at(pl, 6*w+x))
			put(v0, pbr, e0)
			put(v1, pbr, o0)
			put(v2, pbr, e1)
			put(v3, pbr, o1)
			v0, v1, v2, v3 = transpose4(at(pl, w+x), at(pl, 3*w+x), at(pl, 5*w+x), at(pl, 7*w+x))
			put(v0, pbi, e0)
			put(v1, pbi, o0)
			put(v2, pbi, e1)
			put(v3, pbi, o1)
		}
		archsimd.ClearAVXUpperBits()
		for l := range 4 { // the columns from w4 on
			r1, r2 := line[2*l*w:(2*l+1)*w], line[(2*l+1)*w:(2*l+2)*w]
			for i := w4; i < M; i++ {
				q, j := reflect(i, w), perm(i, M)*m+p+l
				br[j], bi[j] = r1[q], r2[q]
			}
		}
	}
	if m4 < m {
		packImageScalar(br, bi, pix, y0, h, w, m, M, line, m4)
	}
}

// dctPostRows is dctPostRowsScalar on 4 lines at a time: dctPost over the
// 4 lines for 4 frequencies, then a 4x4 transpose to each line's rows.
func dctPostRows(rr, ri []float64, m int, twr, twi, rows []float64, y0, h, cols int) {
	M := len(twr)
	m4, M4 := m&^3, M&^3
	if !simdOK() || m4 == 0 || M4 == 0 || len(twi) < M || len(rr) < M*m || len(ri) < M*m ||
		(min(y0+2*m4, h)-1)*cols+M > len(rows) || cols < M {
		dctPostRowsScalar(rr, ri, m, twr, twi, rows, y0, h, cols, 0)
		return
	}
	prr, pri, prow, ptr, pti := base(rr), base(ri), base(rows), base(twr), base(twi)
	half := splat(0.5)
	for p := 0; p < m4; p += 4 {
		var ra, rb [4]unsafe.Pointer // rows of lines p..p+3
		for l := range 4 {
			y1 := y0 + 2*(p+l)
			ra[l], rb[l] = unsafe.Add(prow, 8*y1*cols), unsafe.Add(prow, 8*min(y1+1, h-1)*cols)
		}
		for k := 0; k < M4; k += 4 {
			var a, b [4]vec
			for i := range 4 {
				kk, kc := k+i, 0
				if kk > 0 {
					kc = M - kk
				}
				zr, zi := at(prr, kk*m+p), at(pri, kk*m+p)
				cr, ci := at(prr, kc*m+p), at(pri, kc*m+p)
				ar, ai := zr.Add(cr).Mul(half), zi.Sub(ci).Mul(half)
				br, bi := zi.Add(ci).Mul(half), cr.Sub(zr).Mul(half)
				tr, ti := bcast(ptr, kk), bcast(pti, kk)
				a[i], b[i] = tr.Mul(ar).Sub(ti.Mul(ai)), tr.Mul(br).Sub(ti.Mul(bi))
			}
			a0, a1, a2, a3 := transpose4(a[0], a[1], a[2], a[3])
			put(a0, ra[0], k)
			put(a1, ra[1], k)
			put(a2, ra[2], k)
			put(a3, ra[3], k)
			b0, b1, b2, b3 := transpose4(b[0], b[1], b[2], b[3])
			put(b0, rb[0], k) // after a: a lone last row gets b
			put(b1, rb[1], k)
			put(b2, rb[2], k)
			put(b3, rb[3], k)
		}
		archsimd.ClearAVXUpperBits()
		if M4 < M { // the frequencies from M4 on
			for l := range 4 {
				y1 := y0 + 2*(p+l)
				dctPostFrom(rr, ri, p+l, m, twr, twi, rows[y1*cols:y1*cols+M], rows[min(y1+1, h-1)*cols:][:M], M4)
			}
		}
	}
	if m4 < m {
		dctPostRowsScalar(rr, ri, m, twr, twi, rows, y0, h, cols, m4)
	}
}

// scaleRowVec is scaleRowScalar 8 pixels at a time (while 16 bytes can be
// loaded): the same conversion and product.
func scaleRowVec(dst []float64, src []uint8) {
	n, x := len(src), 0
	if simdOK() && n >= 16 && len(dst) >= n {
		pd, inv := base(dst), splat(inv255)
		for ; x+16 <= n; x += 8 {
			v := archsimd.LoadUint8x16Slice(src[x:]).ExtendLo8ToUint32()
			put(v.GetLo().AsInt32x4().ConvertToFloat64().Mul(inv), pd, x)
			put(v.GetHi().AsInt32x4().ConvertToFloat64().Mul(inv), pd, x+4)
		}
		archsimd.ClearAVXUpperBits()
	}
	scaleRowScalar(dst, src, x)
}
