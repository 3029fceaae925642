package blob

import "math"

// The scalar passes of fftPlan. The vector ones (fftpass_simd.go) do the
// same operations in the same order.

// scalarStage runs a stage on the values from lo to the end of every block.
func scalarStage(st *fftStage, xr, xi, yr, yi []float64, s, lo int, sign float64) {
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
// output u is multiplied by w^(q*u) (not at q = 0, where it is 1) and
// written to block y[r*q + u]. sign is +1 forward and -1 inverse; it
// conjugates every twiddle and DFT constant.

func radix2(xr, xi, yr, yi []float64, m, s, lo int, twr, twi []float64, sign float64) {
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
			if q == 0 {
				y1r[i], y1i[i] = dr, di
				continue
			}
			y1r[i], y1i[i] = dr*wr-di*wi, dr*wi+di*wr
		}
	}
}

func radix3(xr, xi, yr, yi []float64, m, s, lo int, twr, twi []float64, sign float64) {
	sn := sign * -math.Sqrt(3) / 2 // sin(∓2π/3)
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

// radix4 runs outputs 0 and 2, then 1 and 3, in two loops over the
// block (each keeps fewer lines live than one loop over all four). The
// inverse is the forward pass with input blocks 1 and 3 swapped (see
// radix4v): t3 = ∓i·d, and (-d.im, d.re) is (d'.im, -d'.re) for d' = x3 -
// x1 = -d.
func radix4(xr, xi, yr, yi []float64, m, s, lo int, twr, twi []float64, sign float64) {
	b1, b3 := m, 3*m
	if sign < 0 {
		b1, b3 = b3, b1
	}
	for q := range m {
		a0r, a0i := xr[q*s+lo:q*s+s], xi[q*s+lo:q*s+s]
		a1r, a1i := xr[(q+b1)*s+lo : (q+b1)*s+s][:len(a0r)], xi[(q+b1)*s+lo : (q+b1)*s+s][:len(a0r)]
		a2r, a2i := xr[(q+2*m)*s+lo : (q+2*m)*s+s][:len(a0r)], xi[(q+2*m)*s+lo : (q+2*m)*s+s][:len(a0r)]
		a3r, a3i := xr[(q+b3)*s+lo : (q+b3)*s+s][:len(a0r)], xi[(q+b3)*s+lo : (q+b3)*s+s][:len(a0r)]
		o := 4 * q * s
		y0r, y0i := yr[o+lo : o+s][:len(a0r)], yi[o+lo : o+s][:len(a0r)]
		y2r, y2i := yr[o+2*s+lo : o+3*s][:len(a0r)], yi[o+2*s+lo : o+3*s][:len(a0r)]
		w2r, w2i := twr[3*q+1], sign*twi[3*q+1]
		for i := range a0r {
			t0r, t0i := a0r[i]+a2r[i], a0i[i]+a2i[i]
			t2r, t2i := a1r[i]+a3r[i], a1i[i]+a3i[i]
			y0r[i], y0i[i] = t0r+t2r, t0i+t2i
			br, bi := t0r-t2r, t0i-t2i
			if q == 0 {
				y2r[i], y2i[i] = br, bi
				continue
			}
			y2r[i], y2i[i] = br*w2r-bi*w2i, br*w2i+bi*w2r
		}
		y1r, y1i := yr[o+s+lo : o+2*s][:len(a0r)], yi[o+s+lo : o+2*s][:len(a0r)]
		y3r, y3i := yr[o+3*s+lo : o+4*s][:len(a0r)], yi[o+3*s+lo : o+4*s][:len(a0r)]
		w1r, w1i := twr[3*q], sign*twi[3*q]
		w3r, w3i := twr[3*q+2], sign*twi[3*q+2]
		for i := range a0r {
			t1r, t1i := a0r[i]-a2r[i], a0i[i]-a2i[i]
			dr, di := a1r[i]-a3r[i], a1i[i]-a3i[i]
			pr, pi := t1r+di, t1i-dr // t1 + t3
			nr, ni := t1r-di, t1i+dr // t1 - t3
			if q == 0 {
				y1r[i], y1i[i], y3r[i], y3i[i] = pr, pi, nr, ni
				continue
			}
			y1r[i], y1i[i] = pr*w1r-pi*w1i, pr*w1i+pi*w1r
			y3r[i], y3i[i] = nr*w3r-ni*w3i, nr*w3i+ni*w3r
		}
	}
}

func radix5(xr, xi, yr, yi []float64, m, s, lo int, twr, twi []float64, sign float64) {
	c1, c2 := math.Cos(2*math.Pi/5), math.Cos(4*math.Pi/5)
	s1, s2 := -sign*math.Sin(2*math.Pi/5), -sign*math.Sin(4*math.Pi/5)
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
