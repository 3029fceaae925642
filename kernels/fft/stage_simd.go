//go:build goexperiment.simd && amd64

package fft

import (
	"math"
	"simd/archsimd"
	"unsafe"
)

// simdOK reports whether this CPU runs the 8-wide AVX2+FMA passes.
func simdOK() bool { return archsimd.X86.AVX2() && archsimd.X86.FMA() }

type vec = archsimd.Float32x8

func load(s []float32) vec { return archsimd.LoadFloat32x8Slice(s) }
func splat(f float32) vec  { return archsimd.BroadcastFloat32x8(f) }

// The passes load and store through pointers, bounds checked once per
// pass in runStage (rather than per load, which cost as much as the
// butterflies).
func ptr(s []float32) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(s)) }

// at is the vector at p + 4·i bytes (float32 i); put stores one there.
func at(p unsafe.Pointer, i int) vec {
	return archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(p, 4*i)))
}

func put(v vec, p unsafe.Pointer, i int) { v.Store((*[8]float32)(unsafe.Add(p, 4*i))) }

// cmul returns (r + i·im)·(wr + i·wi), with nwi = -wi.
func cmul(r, i, wr, wi, nwi vec) (vec, vec) {
	return i.MulAdd(nwi, r.Mul(wr)), i.MulAdd(wr, r.Mul(wi))
}

// runStage runs the vector passes over the first multiple of 8 values of
// every block and the scalar ones over the rest.
func runStage(st *stage, xr, xi, yr, yi []float32, s int, sign float32, simd bool) {
	s8 := s &^ 7
	if !simd || s8 == 0 {
		scalarStage(st, xr, xi, yr, yi, s, 0, sign)
		return
	}
	// Every pass reads and writes st.sub blocks of s values.
	if n := st.sub * s; len(xr) < n || len(xi) < n || len(yr) < n || len(yi) < n {
		panic("fft: stage buffers shorter than the transform")
	}
	m := st.sub / st.radix
	vw := st.vw
	if sign < 0 {
		vw = vw[len(vw)/2:]
	}
	pxr, pxi, pyr, pyi := ptr(xr), ptr(xi), ptr(yr), ptr(yi)
	switch st.radix {
	case 2:
		radix2v(pxr, pxi, pyr, pyi, m, s, s8, vw)
	case 3:
		radix3v(pxr, pxi, pyr, pyi, m, s, s8, vw, sign)
	case 4:
		radix4v(pxr, pxi, pyr, pyi, m, s, s8, vw, sign)
	case 5:
		radix5v(pxr, pxi, pyr, pyi, m, s, s8, vw, sign)
	}
	archsimd.ClearAVXUpperBits()
	if s8 < s {
		scalarStage(st, xr, xi, yr, yi, s, s8, sign)
	}
}

// twiddle returns twiddle k as vectors (re, im, -im) from the stage's
// table, with no scalar float arithmetic: mixing SSE scalar and AVX code
// costs a state transition on some CPUs.
func twiddle(vw []float32, k int) (wr, wi, nwi vec) {
	v := vw[k*24 : k*24+24]
	return load(v[0:8]), load(v[8:16]), load(v[16:24])
}

func radix2v(xr, xi, yr, yi unsafe.Pointer, m, s, s8 int, vw []float32) {
	for q := range m {
		a, b, o0, o1 := q*s, (q+m)*s, 2*q*s, (2*q+1)*s
		wr, wi, nwi := twiddle(vw, q)
		for i := 0; i < s8; i += 8 {
			ar, ai := at(xr, a+i), at(xi, a+i)
			br, bi := at(xr, b+i), at(xi, b+i)
			put(ar.Add(br), yr, o0+i)
			put(ai.Add(bi), yi, o0+i)
			dr, di := ar.Sub(br), ai.Sub(bi)
			if q > 0 {
				dr, di = cmul(dr, di, wr, wi, nwi)
			}
			put(dr, yr, o1+i)
			put(di, yi, o1+i)
		}
	}
}

// ld is the vector off bytes from p; st stores one there.
func ld(p unsafe.Pointer, off uintptr) vec {
	return archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(p, off)))
}

func st(v vec, p unsafe.Pointer, off uintptr) { v.Store((*[8]float32)(unsafe.Add(p, off))) }

// radix3v: for each q, bases for the q's blocks and one byte offset
// stepping through them (few live integers: Go's compiler otherwise
// spills them in the loop).
func radix3v(xr, xi, yr, yi unsafe.Pointer, m, s, s8 int, vw []float32, sign float32) {
	half := splat(-0.5)
	sn := splat(sign * float32(-math.Sqrt(3)/2))
	nsn := splat(-sign * float32(-math.Sqrt(3)/2))
	d, e, end := uintptr(4*m*s), uintptr(4*s), uintptr(4*s8)
	for q := range m {
		pr, pi := unsafe.Add(xr, 4*q*s), unsafe.Add(xi, 4*q*s)
		or, oi := unsafe.Add(yr, 12*q*s), unsafe.Add(yi, 12*q*s)
		w1r, w1i, nw1i := twiddle(vw, 2*q)
		w2r, w2i, nw2i := twiddle(vw, 2*q+1)
		for b := uintptr(0); b < end; b += 32 {
			x0r, x0i := ld(pr, b), ld(pi, b)
			x1r, x1i := ld(pr, b+d), ld(pi, b+d)
			x2r, x2i := ld(pr, b+2*d), ld(pi, b+2*d)
			sr, si := x1r.Add(x2r), x1i.Add(x2i)
			dr, di := x1r.Sub(x2r), x1i.Sub(x2i)
			rr, ri := sr.MulAdd(half, x0r), si.MulAdd(half, x0i)
			jr, ji := di.Mul(nsn), dr.Mul(sn) // i·sn·d
			st(x0r.Add(sr), or, b)
			st(x0i.Add(si), oi, b)
			br, bi := rr.Add(jr), ri.Add(ji)
			cr, ci := rr.Sub(jr), ri.Sub(ji)
			if q > 0 {
				br, bi = cmul(br, bi, w1r, w1i, nw1i)
				cr, ci = cmul(cr, ci, w2r, w2i, nw2i)
			}
			st(br, or, b+e)
			st(bi, oi, b+e)
			st(cr, or, b+2*e)
			st(ci, oi, b+2*e)
		}
	}
}

func radix4v(xr, xi, yr, yi unsafe.Pointer, m, s, s8 int, vw []float32, sign float32) {
	sg, nsg := splat(sign), splat(-sign)
	for q := range m {
		a0, a1, a2, a3, o := q*s, (q+m)*s, (q+2*m)*s, (q+3*m)*s, 4*q*s
		w1r, w1i, nw1i := twiddle(vw, 3*q)
		w2r, w2i, nw2i := twiddle(vw, 3*q+1)
		w3r, w3i, nw3i := twiddle(vw, 3*q+2)
		for i := 0; i < s8; i += 8 {
			x0r, x0i := at(xr, a0+i), at(xi, a0+i)
			x1r, x1i := at(xr, a1+i), at(xi, a1+i)
			x2r, x2i := at(xr, a2+i), at(xi, a2+i)
			x3r, x3i := at(xr, a3+i), at(xi, a3+i)
			t0r, t0i := x0r.Add(x2r), x0i.Add(x2i)
			t1r, t1i := x0r.Sub(x2r), x0i.Sub(x2i)
			t2r, t2i := x1r.Add(x3r), x1i.Add(x3i)
			dr, di := x1r.Sub(x3r), x1i.Sub(x3i)
			t3r, t3i := di.Mul(sg), dr.Mul(nsg) // ∓i·d
			put(t0r.Add(t2r), yr, o+i)
			put(t0i.Add(t2i), yi, o+i)
			b1r, b1i := t1r.Add(t3r), t1i.Add(t3i)
			b2r, b2i := t0r.Sub(t2r), t0i.Sub(t2i)
			b3r, b3i := t1r.Sub(t3r), t1i.Sub(t3i)
			if q > 0 {
				b1r, b1i = cmul(b1r, b1i, w1r, w1i, nw1i)
				b2r, b2i = cmul(b2r, b2i, w2r, w2i, nw2i)
				b3r, b3i = cmul(b3r, b3i, w3r, w3i, nw3i)
			}
			put(b1r, yr, o+s+i)
			put(b1i, yi, o+s+i)
			put(b2r, yr, o+2*s+i)
			put(b2i, yi, o+2*s+i)
			put(b3r, yr, o+3*s+i)
			put(b3i, yi, o+3*s+i)
		}
	}
}

func radix5v(xr, xi, yr, yi unsafe.Pointer, m, s, s8 int, vw []float32, sign float32) {
	c1, c2 := splat(float32(math.Cos(2*math.Pi/5))), splat(float32(math.Cos(4*math.Pi/5)))
	s1, s2 := -sign*float32(math.Sin(2*math.Pi/5)), -sign*float32(math.Sin(4*math.Pi/5))
	vs1, vs2, nvs1 := splat(s1), splat(s2), splat(-s1)
	for q := range m {
		a0, a1, a2, a3, a4, o := q*s, (q+m)*s, (q+2*m)*s, (q+3*m)*s, (q+4*m)*s, 5*q*s
		for i := 0; i < s8; i += 8 {
			x0r, x0i := at(xr, a0+i), at(xi, a0+i)
			x1r, x1i := at(xr, a1+i), at(xi, a1+i)
			x4r, x4i := at(xr, a4+i), at(xi, a4+i)
			b1r, b1i := x1r.Add(x4r), x1i.Add(x4i)
			d1r, d1i := x1r.Sub(x4r), x1i.Sub(x4i)
			x2r, x2i := at(xr, a2+i), at(xi, a2+i)
			x3r, x3i := at(xr, a3+i), at(xi, a3+i)
			b2r, b2i := x2r.Add(x3r), x2i.Add(x3i)
			d2r, d2i := x2r.Sub(x3r), x2i.Sub(x3i)
			put(x0r.Add(b1r).Add(b2r), yr, o+i)
			put(x0i.Add(b1i).Add(b2i), yi, o+i)
			r1r, r1i := b2r.MulAdd(c2, b1r.MulAdd(c1, x0r)), b2i.MulAdd(c2, b1i.MulAdd(c1, x0i))
			e1r, e1i := d2r.MulAdd(vs2, d1r.Mul(vs1)), d2i.MulAdd(vs2, d1i.Mul(vs1))
			r2r, r2i := b2r.MulAdd(c1, b1r.MulAdd(c2, x0r)), b2i.MulAdd(c1, b1i.MulAdd(c2, x0i))
			e2r, e2i := d2r.MulAdd(nvs1, d1r.Mul(vs2)), d2i.MulAdd(nvs1, d1i.Mul(vs2))
			// Outputs u = 1..4: (r1 + i·e1), (r2 + i·e2), (r2 - i·e2), (r1 - i·e1),
			// each times twiddle 4q+u-1 but for q = 0.
			o1r, o1i := r1r.Sub(e1i), r1i.Add(e1r)
			o4r, o4i := r1r.Add(e1i), r1i.Sub(e1r)
			o2r, o2i := r2r.Sub(e2i), r2i.Add(e2r)
			o3r, o3i := r2r.Add(e2i), r2i.Sub(e2r)
			if q > 0 {
				wr, wi, nwi := twiddle(vw, 4*q)
				o1r, o1i = cmul(o1r, o1i, wr, wi, nwi)
				wr, wi, nwi = twiddle(vw, 4*q+1)
				o2r, o2i = cmul(o2r, o2i, wr, wi, nwi)
				wr, wi, nwi = twiddle(vw, 4*q+2)
				o3r, o3i = cmul(o3r, o3i, wr, wi, nwi)
				wr, wi, nwi = twiddle(vw, 4*q+3)
				o4r, o4i = cmul(o4r, o4i, wr, wi, nwi)
			}
			put(o1r, yr, o+s+i)
			put(o1i, yi, o+s+i)
			put(o2r, yr, o+2*s+i)
			put(o2i, yi, o+2*s+i)
			put(o3r, yr, o+3*s+i)
			put(o3i, yi, o+3*s+i)
			put(o4r, yr, o+4*s+i)
			put(o4i, yi, o+4*s+i)
		}
	}
}
