package fft

import (
	"fmt"
	"math"
)

// Plan is a complex FFT of one length n, applied along axis 0 of a row-major
// n×m array held as separate real and imaginary float32 planes (m
// independent sequences, one per column). It is immutable once built and
// safe for concurrent use; scratch buffers are the caller's.
type Plan struct {
	n      int
	stages []stage
	simd   bool // the vector passes can run on this CPU
}

type stage struct {
	radix, sub int       // radix and the sub-length it splits
	wr, wi     []float32 // forward twiddles w^(q*u), q < sub/radix, 1 <= u < radix
	// vw holds every twiddle as three 8-wide vectors (re, im, -im),
	// forward then inverse, for the vector passes; nil without them.
	vw []float32
}

// radix is the radix of the stage that splits sub: 4, 2, 3 or 5, or 0 for
// a prime factor above 5.
func radix(sub int) int {
	switch {
	case sub%4 == 0:
		return 4
	case sub%2 == 0:
		return 2
	case sub%3 == 0:
		return 3
	case sub%5 == 0:
		return 5
	}
	return 0
}

// PlanBytes is what NewPlan(n) holds in twiddles, without building it: a
// long transform's plan is most of its memory (with the vector passes,
// about 200 bytes a point).
func PlanBytes(n int) int {
	per := 2 * 4 // wr, wi
	if simdOK() {
		per += 2 * 3 * 8 * 4 // vw
	}
	total := 0
	for sub := n; sub > 1; {
		r := radix(sub)
		if r == 0 {
			return 0
		}
		total += per * (sub / r) * (r - 1)
		sub /= r
	}
	return total
}

// NewPlan builds a plan for length n, which must be of the form 2^a·3^b·5^c.
func NewPlan(n int) (*Plan, error) {
	if n < 1 {
		return nil, fmt.Errorf("fft: length %d < 1", n)
	}
	p := &Plan{n: n, simd: simdOK()}
	for sub := n; sub > 1; {
		r := radix(sub)
		if r == 0 {
			return nil, fmt.Errorf("fft: length %d has a prime factor above 5", n)
		}
		m := sub / r
		st := stage{radix: r, sub: sub, wr: make([]float32, m*(r-1)), wi: make([]float32, m*(r-1))}
		for q := range m {
			for u := 1; u < r; u++ {
				s, c := math.Sincos(-2 * math.Pi * float64(q*u) / float64(sub))
				st.wr[q*(r-1)+u-1], st.wi[q*(r-1)+u-1] = float32(c), float32(s)
			}
		}
		if p.simd {
			k := len(st.wr)
			st.vw = make([]float32, 2*k*3*8)
			for d, sign := range []float32{1, -1} {
				for i := range k {
					for j, v := range []float32{st.wr[i], sign * st.wi[i], -sign * st.wi[i]} {
						off := ((d*k+i)*3 + j) * 8
						for l := range 8 {
							st.vw[off+l] = v
						}
					}
				}
			}
		}
		p.stages = append(p.stages, st)
		sub = m
	}
	return p, nil
}

// Transform runs the transform over the n×m array (re, im), using (wre,
// wim), each at least n*m long, as scratch, and returns the pair that holds
// the result: (re, im) or (wre, wim). The inverse is unnormalised (no 1/n).
func (p *Plan) Transform(re, im, wre, wim []float32, m int, inverse bool) ([]float32, []float32) {
	n := p.n * m
	xr, xi, yr, yi := re[:n], im[:n], wre[:n], wim[:n]
	sign := float32(1)
	if inverse {
		sign = -1
	}
	s := m // block length: the stride in elements times m
	for i := range p.stages {
		st := &p.stages[i]
		runStage(st, xr, xi, yr, yi, s, sign, p.simd)
		xr, xi, yr, yi = yr, yi, xr, xi
		s *= st.radix
	}
	return xr, xi
}

// scalarStage runs a stage on the values from lo to the end of every block.
func scalarStage(st *stage, xr, xi, yr, yi []float32, s, lo int, sign float32) {
	k := st.sub / st.radix
	switch st.radix {
	case 2:
		radix2(xr, xi, yr, yi, k, s, lo, st.wr, st.wi, sign)
	case 3:
		radix3(xr, xi, yr, yi, k, s, lo, st.wr, st.wi, sign)
	case 4:
		radix4(xr, xi, yr, yi, k, s, lo, st.wr, st.wi, sign)
	case 5:
		radix5(xr, xi, yr, yi, k, s, lo, st.wr, st.wi, sign)
	}
}

// The radix passes are Stockham decimation-in-frequency steps: for each q <
// m the input blocks x[q + t*m] (s values each) go through a radix-r DFT,
// output u is multiplied by w^(q*u) and written to block y[r*q + u]. sign is
// +1 forward and -1 inverse; it conjugates every twiddle and DFT constant.

func radix2(xr, xi, yr, yi []float32, m, s, lo int, twr, twi []float32, sign float32) {
	for q := range m {
		ar, ai := xr[q*s+lo:q*s+s], xi[q*s+lo:q*s+s]
		br, bi := xr[(q+m)*s+lo : (q+m)*s+s][:len(ar)], xi[(q+m)*s+lo : (q+m)*s+s][:len(ar)]
		o0, o1 := 2*q*s, (2*q+1)*s
		y0r, y0i := yr[o0+lo : o0+s][:len(ar)], yi[o0+lo : o0+s][:len(ar)]
		y1r, y1i := yr[o1+lo : o1+s][:len(ar)], yi[o1+lo : o1+s][:len(ar)]
		wr, wi := twr[q], sign*twi[q]
		for i := range ar {
			pr, pi := ar[i]+br[i], ai[i]+bi[i]
			dr, di := ar[i]-br[i], ai[i]-bi[i]
			y0r[i], y0i[i] = pr, pi
			y1r[i], y1i[i] = dr*wr-di*wi, dr*wi+di*wr
		}
	}
}

func radix3(xr, xi, yr, yi []float32, m, s, lo int, twr, twi []float32, sign float32) {
	sn := sign * float32(-math.Sqrt(3)/2) // sin(∓2π/3)
	for q := range m {
		a0r, a0i := xr[q*s+lo:q*s+s], xi[q*s+lo:q*s+s]
		a1r, a1i := xr[(q+m)*s+lo : (q+m)*s+s][:len(a0r)], xi[(q+m)*s+lo : (q+m)*s+s][:len(a0r)]
		a2r, a2i := xr[(q+2*m)*s+lo : (q+2*m)*s+s][:len(a0r)], xi[(q+2*m)*s+lo : (q+2*m)*s+s][:len(a0r)]
		o := 3 * q * s
		y0r, y0i := yr[o+lo : o+s][:len(a0r)], yi[o+lo : o+s][:len(a0r)]
		y1r, y1i := yr[o+s+lo : o+2*s][:len(a0r)], yi[o+s+lo : o+2*s][:len(a0r)]
		y2r, y2i := yr[o+2*s+lo : o+3*s][:len(a0r)], yi[o+2*s+lo : o+3*s][:len(a0r)]
		w1r, w1i := twr[2*q], sign*twi[2*q]
		w2r, w2i := twr[2*q+1], sign*twi[2*q+1]
		for i := range a0r {
			sr, si := a1r[i]+a2r[i], a1i[i]+a2i[i]
			dr, di := a1r[i]-a2r[i], a1i[i]-a2i[i]
			rr, ri := a0r[i]-0.5*sr, a0i[i]-0.5*si
			jr, ji := -di*sn, dr*sn // i·sn·d
			y0r[i], y0i[i] = a0r[i]+sr, a0i[i]+si
			br, bi := rr+jr, ri+ji
			cr, ci := rr-jr, ri-ji
			if q == 0 {
				y1r[i], y1i[i], y2r[i], y2i[i] = br, bi, cr, ci
				continue
			}
			y1r[i], y1i[i] = br*w1r-bi*w1i, br*w1i+bi*w1r
			y2r[i], y2i[i] = cr*w2r-ci*w2i, cr*w2i+ci*w2r
		}
	}
}

func radix4(xr, xi, yr, yi []float32, m, s, lo int, twr, twi []float32, sign float32) {
	for q := range m {
		a0r, a0i := xr[q*s+lo:q*s+s], xi[q*s+lo:q*s+s]
		a1r, a1i := xr[(q+m)*s+lo : (q+m)*s+s][:len(a0r)], xi[(q+m)*s+lo : (q+m)*s+s][:len(a0r)]
		a2r, a2i := xr[(q+2*m)*s+lo : (q+2*m)*s+s][:len(a0r)], xi[(q+2*m)*s+lo : (q+2*m)*s+s][:len(a0r)]
		a3r, a3i := xr[(q+3*m)*s+lo : (q+3*m)*s+s][:len(a0r)], xi[(q+3*m)*s+lo : (q+3*m)*s+s][:len(a0r)]
		o := 4 * q * s
		y0r, y0i := yr[o+lo : o+s][:len(a0r)], yi[o+lo : o+s][:len(a0r)]
		y1r, y1i := yr[o+s+lo : o+2*s][:len(a0r)], yi[o+s+lo : o+2*s][:len(a0r)]
		y2r, y2i := yr[o+2*s+lo : o+3*s][:len(a0r)], yi[o+2*s+lo : o+3*s][:len(a0r)]
		y3r, y3i := yr[o+3*s+lo : o+4*s][:len(a0r)], yi[o+3*s+lo : o+4*s][:len(a0r)]
		w1r, w1i := twr[3*q], sign*twi[3*q]
		w2r, w2i := twr[3*q+1], sign*twi[3*q+1]
		w3r, w3i := twr[3*q+2], sign*twi[3*q+2]
		for i := range a0r {
			t0r, t0i := a0r[i]+a2r[i], a0i[i]+a2i[i]
			t1r, t1i := a0r[i]-a2r[i], a0i[i]-a2i[i]
			t2r, t2i := a1r[i]+a3r[i], a1i[i]+a3i[i]
			dr, di := a1r[i]-a3r[i], a1i[i]-a3i[i]
			t3r, t3i := sign*di, -sign*dr // ∓i·d
			y0r[i], y0i[i] = t0r+t2r, t0i+t2i
			br, bi := t1r+t3r, t1i+t3i
			y1r[i], y1i[i] = br*w1r-bi*w1i, br*w1i+bi*w1r
			br, bi = t0r-t2r, t0i-t2i
			y2r[i], y2i[i] = br*w2r-bi*w2i, br*w2i+bi*w2r
			br, bi = t1r-t3r, t1i-t3i
			y3r[i], y3i[i] = br*w3r-bi*w3i, br*w3i+bi*w3r
		}
	}
}

func radix5(xr, xi, yr, yi []float32, m, s, lo int, twr, twi []float32, sign float32) {
	c1, c2 := float32(math.Cos(2*math.Pi/5)), float32(math.Cos(4*math.Pi/5))
	s1, s2 := -sign*float32(math.Sin(2*math.Pi/5)), -sign*float32(math.Sin(4*math.Pi/5))
	for q := range m {
		a0r, a0i := xr[q*s+lo:q*s+s], xi[q*s+lo:q*s+s]
		a1r, a1i := xr[(q+m)*s+lo : (q+m)*s+s][:len(a0r)], xi[(q+m)*s+lo : (q+m)*s+s][:len(a0r)]
		a2r, a2i := xr[(q+2*m)*s+lo : (q+2*m)*s+s][:len(a0r)], xi[(q+2*m)*s+lo : (q+2*m)*s+s][:len(a0r)]
		a3r, a3i := xr[(q+3*m)*s+lo : (q+3*m)*s+s][:len(a0r)], xi[(q+3*m)*s+lo : (q+3*m)*s+s][:len(a0r)]
		a4r, a4i := xr[(q+4*m)*s+lo : (q+4*m)*s+s][:len(a0r)], xi[(q+4*m)*s+lo : (q+4*m)*s+s][:len(a0r)]
		o := 5 * q * s
		y0r, y0i := yr[o+lo : o+s][:len(a0r)], yi[o+lo : o+s][:len(a0r)]
		y1r, y1i := yr[o+s+lo : o+2*s][:len(a0r)], yi[o+s+lo : o+2*s][:len(a0r)]
		y2r, y2i := yr[o+2*s+lo : o+3*s][:len(a0r)], yi[o+2*s+lo : o+3*s][:len(a0r)]
		y3r, y3i := yr[o+3*s+lo : o+4*s][:len(a0r)], yi[o+3*s+lo : o+4*s][:len(a0r)]
		y4r, y4i := yr[o+4*s+lo : o+5*s][:len(a0r)], yi[o+4*s+lo : o+5*s][:len(a0r)]
		w1r, w1i := twr[4*q], sign*twi[4*q]
		w2r, w2i := twr[4*q+1], sign*twi[4*q+1]
		w3r, w3i := twr[4*q+2], sign*twi[4*q+2]
		w4r, w4i := twr[4*q+3], sign*twi[4*q+3]
		for i := range a0r {
			b1r, b1i := a1r[i]+a4r[i], a1i[i]+a4i[i]
			b2r, b2i := a2r[i]+a3r[i], a2i[i]+a3i[i]
			d1r, d1i := a1r[i]-a4r[i], a1i[i]-a4i[i]
			d2r, d2i := a2r[i]-a3r[i], a2i[i]-a3i[i]
			r1r, r1i := a0r[i]+c1*b1r+c2*b2r, a0i[i]+c1*b1i+c2*b2i
			r2r, r2i := a0r[i]+c2*b1r+c1*b2r, a0i[i]+c2*b1i+c1*b2i
			e1r, e1i := s1*d1r+s2*d2r, s1*d1i+s2*d2i
			e2r, e2i := s2*d1r-s1*d2r, s2*d1i-s1*d2i
			// j = i·e: (-e.im, e.re)
			y0r[i], y0i[i] = a0r[i]+b1r+b2r, a0i[i]+b1i+b2i
			if q == 0 {
				y1r[i], y1i[i] = r1r-e1i, r1i+e1r
				y2r[i], y2i[i] = r2r-e2i, r2i+e2r
				y3r[i], y3i[i] = r2r+e2i, r2i-e2r
				y4r[i], y4i[i] = r1r+e1i, r1i-e1r
				continue
			}
			br, bi := r1r-e1i, r1i+e1r
			y1r[i], y1i[i] = br*w1r-bi*w1i, br*w1i+bi*w1r
			br, bi = r2r-e2i, r2i+e2r
			y2r[i], y2i[i] = br*w2r-bi*w2i, br*w2i+bi*w2r
			br, bi = r2r+e2i, r2i-e2r
			y3r[i], y3i[i] = br*w3r-bi*w3i, br*w3i+bi*w3r
			br, bi = r1r+e1i, r1i-e1r
			y4r[i], y4i[i] = br*w4r-bi*w4i, br*w4i+bi*w4r
		}
	}
}

// NextFastLen is the smallest n' >= n of the form 2^a·3^b·5^c.
func NextFastLen(n int) int {
	if n <= 1 {
		return 1
	}
	for ; ; n++ {
		k := n
		for _, f := range [...]int{2, 3, 5} {
			for k%f == 0 {
				k /= f
			}
		}
		if k == 1 {
			return n
		}
	}
}

// Vectorized reports whether transforms run the 8-wide AVX2+FMA passes:
// the binary was built with GOEXPERIMENT=simd and the CPU has them.
func Vectorized() bool { return simdOK() }
