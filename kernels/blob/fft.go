package blob

import (
	"math"

	"github.com/pixelflight/pixelflight/kernels/fft"
)

// fftMinRadius is the kernel radius from which the LoG of one scale is done
// by FFT instead of directly. The FFT result differs from scipy's direct
// sums by ~1e-16 relative, which only matters for exact ties between
// neighbouring responses.
const fftMinRadius = 24

// fftChunk is how many lines go through one batched transform.
const fftChunk = 8

// fftConv is the large-kernel path: a 2D FFT convolution of the
// reflect-extended image. The image spectrum is computed once per Detect
// (for the largest radius) and shared by every large scale; each scale then
// costs one filtered inverse 2D transform.
//
// Extension: the image is extended by reflect() to Ny x Nx. Either N >=
// n+2R (no wrap reaches the outputs) or N is a multiple of 2n (reflect is
// periodic with period 2n, so the circular convolution is exact for any
// radius); N is the smallest 2^a·3^b·5^c length that satisfies one of them.
type fftConv struct {
	rmax       int  // largest radius of this Detect's scales
	ready      bool // spec holds the spectrum of the current image
	h, w       int
	ny, nx     int // transform lengths
	nxh        int // nx/2+1: x frequencies kept (the image is real)
	offy, offx int // image (0, 0) sits at extended (offy, offx)
	py, px     *fftPlan
	plans      []*fftPlan
	spec       []complex128 // ny x nxh image spectrum, in chunks of x frequencies
	rows       []complex128 // x spectra of image rows (h x nxh) or of output rows (chunks)
	buf, tmp   []complex128 // one chunk of lines and its scratch
	kk         []complex128 // kernel transform scratch
	ky0, ky2   []float64    // kernel spectra along y (length ny)
	kx0, kx2   []float64    // kernel spectra along x (length nxh), scaled
}

func (f *fftConv) use(h, w, r int) bool { return r >= fftMinRadius }

// reset prepares f for a new Detect whose largest kernel radius is rmax.
func (f *fftConv) reset(rmax int) { f.rmax, f.ready = rmax, false }

// fastLen picks the transform length for a line of n with kernel radius r
// and returns it with the offset of the line in the extended one.
func fastLen(n, r int) (N, off int) {
	N, off = fft.NextFastLen(n+2*r), r
	for m := 2 * n; m < N; m += 2 * n {
		if fft.NextFastLen(m) == m {
			return m, 0
		}
	}
	return N, off
}

// prepare computes the spectrum of the extended image img (h x w).
func (f *fftConv) prepare(img []float64, h, w int) {
	f.h, f.w = h, w
	f.ny, f.offy = fastLen(h, f.rmax)
	f.nx, f.offx = fastLen(w, f.rmax)
	f.nxh = f.nx/2 + 1
	f.py, f.px = f.plan(f.ny), f.plan(f.nx)
	ny, nx, nxh := f.ny, f.nx, f.nxh
	f.spec = growC(f.spec, ny*nxh)
	f.rows = growC(f.rows, h*nxh)
	f.buf = growC(f.buf, max(ny, nx)*fftChunk)
	f.tmp = growC(f.tmp, max(ny, nx)*fftChunk)
	// Rows along x, two real rows per complex line.
	for y0 := 0; y0 < h; y0 += 2 * fftChunk {
		m := min(fftChunk, (h-y0+1)/2)
		buf := f.buf[:nx*m]
		for p := range m {
			y1 := y0 + 2*p
			y2 := min(y1+1, h-1)
			r1, r2 := img[y1*w:y1*w+w], img[y2*w:y2*w+w]
			for i := range nx {
				q := reflect(i-f.offx, w)
				buf[i*m+p] = complex(r1[q], r2[q])
			}
		}
		res := f.px.transform(buf, f.tmp, m, false)
		for p := range m {
			y1 := y0 + 2*p
			o1 := f.rows[y1*nxh : y1*nxh+nxh]
			var o2 []complex128
			if y1+1 < h {
				o2 = f.rows[(y1+1)*nxh : (y1+1)*nxh+nxh]
			}
			for k := range nxh {
				zk, zc := res[k*m+p], res[((nx-k)%nx)*m+p]
				zc = complex(real(zc), -imag(zc))
				o1[k] = (zk + zc) * 0.5
				if o2 != nil {
					d := zk - zc // spectrum of row 2 is d/(2i)
					o2[k] = complex(imag(d)*0.5, -real(d)*0.5)
				}
			}
		}
	}
	// Columns along y; spec is kept in chunk layout (see log).
	for k0 := 0; k0 < nxh; k0 += fftChunk {
		m := min(fftChunk, nxh-k0)
		buf := f.buf[:ny*m]
		for i := range ny {
			src := f.rows[reflect(i-f.offy, h)*nxh+k0:][:m]
			copy(buf[i*m:i*m+m], src)
		}
		copy(f.spec[k0*ny:k0*ny+ny*m], f.py.transform(buf, f.tmp, m, false))
	}
	f.ready = true
}

// spectra returns the spectra of the symmetric kernels k0, k2 (k[j]: weight
// at ±j), wrapped circularly to length p.n, each multiplied by c, in s0, s2
// (the first len(s0) frequencies).
func (f *fftConv) spectra(p *fftPlan, k0, k2 []float64, c float64, s0, s2 []float64) {
	n := p.n
	f.kk = growC(f.kk, 2*n)
	kk := f.kk[:n]
	clear(kk)
	for j := range k0 { // both kernels at once: k0 real, k2 imaginary
		v := complex(k0[j], k2[j])
		kk[j%n] += v
		if j > 0 {
			kk[(n-j%n)%n] += v
		}
	}
	// Both kernels are real and even, so their spectra are real and even;
	// Z = K0 + i*K2 with K0, K2 real gives them directly.
	res := p.transform(kk, f.kk[n:2*n], 1, false)
	for i := range s0 {
		s0[i], s2[i] = real(res[i])*c, imag(res[i])*c
	}
}

func growC(b []complex128, n int) []complex128 {
	if cap(b) < n {
		return make([]complex128, n)
	}
	return b[:n]
}

// log writes -(order2_y·order0_x + order0_y·order2_x)(img) * s2 into out.
func (f *fftConv) log(out, img []float64, h, w int, k0, k2 []float64, s2 float64) {
	if !f.ready {
		f.prepare(img, h, w)
	}
	ny, nx, nxh := f.ny, f.nx, f.nxh
	f.ky0, f.ky2 = grow(f.ky0, ny), grow(f.ky2, ny)
	f.kx0, f.kx2 = grow(f.kx0, nxh), grow(f.kx2, nxh)
	f.spectra(f.py, k0, k2, 1, f.ky0, f.ky2)
	f.spectra(f.px, k0, k2, -s2/float64(nx*ny), f.kx0, f.kx2)
	// Columns: filter and inverse along y, keeping the h output rows. The
	// column chunk of x frequencies k0..k0+m-1 sits at spec[k0*ny:] as ny x m
	// and goes to rows[k0*h:] as h x m.
	for k0 := 0; k0 < nxh; k0 += fftChunk {
		m := min(fftChunk, nxh-k0)
		buf := f.buf[:ny*m]
		x0, x2 := f.kx0[k0:k0+m], f.kx2[k0:k0+m]
		spec := f.spec[k0*ny : k0*ny+ny*m]
		for i := range ny {
			a, b := f.ky2[i], f.ky0[i]
			src := spec[i*m : i*m+m]
			dst := buf[i*m : i*m+m][:len(src)]
			x0, x2 := x0[:len(src)], x2[:len(src)]
			for j, v := range src {
				dst[j] = scale(v, a*x0[j]+b*x2[j])
			}
		}
		res := f.py.transform(buf, f.tmp, m, true)
		copy(f.rows[k0*h:k0*h+h*m], res[f.offy*m:(f.offy+h)*m])
	}
	// Rows: inverse along x, two real rows per complex line.
	for y0 := 0; y0 < h; y0 += 2 * fftChunk {
		m := min(fftChunk, (h-y0+1)/2)
		buf := f.buf[:nx*m]
		for p := range m {
			y1 := y0 + 2*p
			y2 := min(y1+1, h-1) // a lone last row pairs with itself
			for k0 := 0; k0 < nxh; k0 += fftChunk {
				mc := min(fftChunk, nxh-k0)
				ra := f.rows[k0*h+y1*mc:][:mc]
				rb := f.rows[k0*h+y2*mc:][:mc]
				for j, va := range ra {
					vb := rb[j]
					k := k0 + j
					// va + i*vb, and at nx-k the same of the conjugates
					buf[k*m+p] = complex(real(va)-imag(vb), imag(va)+real(vb))
					buf[((nx-k)%nx)*m+p] = complex(real(va)+imag(vb), real(vb)-imag(va))
				}
			}
			// Frequencies 0 and nx/2 of a real signal are real.
			mc := min(fftChunk, nxh)
			va, vb := f.rows[y1*mc], f.rows[y2*mc]
			buf[p] = complex(real(va), real(vb))
			if nx%2 == 0 {
				k, k0 := nx/2, nx/2/fftChunk*fftChunk
				mc := min(fftChunk, nxh-k0)
				va, vb = f.rows[k0*h+y1*mc+k-k0], f.rows[k0*h+y2*mc+k-k0]
				buf[k*m+p] = complex(real(va), real(vb))
			}
		}
		res := f.px.transform(buf, f.tmp, m, true)
		for p := range m {
			y1 := y0 + 2*p
			o := out[y1*w : y1*w+w]
			for x := range o {
				o[x] = real(res[(x+f.offx)*m+p])
			}
			if y1+1 < h {
				o = out[(y1+1)*w : (y1+1)*w+w]
				for x := range o {
					o[x] = imag(res[(x+f.offx)*m+p])
				}
			}
		}
	}
}

func scale(v complex128, k float64) complex128 { return complex(real(v)*k, imag(v)*k) }

// fftPlan is a mixed-radix (2, 3, 4, 5) Stockham complex FFT of length n,
// applied to m interleaved sequences (element i of sequence j at i*m+j).
type fftPlan struct {
	n      int
	stages []fftStage
}

type fftStage struct {
	radix, sub int
	fw, iw     []complex128 // w^(q*u) and its conjugate, at q*(radix-1)+u-1
}

func (f *fftConv) plan(n int) *fftPlan {
	for _, p := range f.plans {
		if p.n == n {
			return p
		}
	}
	p := &fftPlan{n: n}
	for sub := n; sub > 1; {
		r := 5
		switch {
		case sub%4 == 0:
			r = 4
		case sub%2 == 0:
			r = 2
		case sub%3 == 0:
			r = 3
		}
		m := sub / r
		st := fftStage{radix: r, sub: sub, fw: make([]complex128, m*(r-1)), iw: make([]complex128, m*(r-1))}
		for q := range m {
			for u := 1; u < r; u++ {
				s, c := math.Sincos(-2 * math.Pi * float64(q*u) / float64(sub))
				st.fw[q*(r-1)+u-1], st.iw[q*(r-1)+u-1] = complex(c, s), complex(c, -s)
			}
		}
		p.stages = append(p.stages, st)
		sub = m
	}
	f.plans = append(f.plans, p)
	return p
}

// transform runs the FFT (inverse: conjugate twiddles, no 1/n) of the m
// sequences in x, using y as scratch, and returns the one of x, y that
// holds the result.
func (p *fftPlan) transform(x, y []complex128, m int, inverse bool) []complex128 {
	x, y = x[:p.n*m], y[:p.n*m]
	sg := 1.0
	if inverse {
		sg = -1
	}
	s := m
	for i := range p.stages {
		st := &p.stages[i]
		tw := st.fw
		if inverse {
			tw = st.iw
		}
		k := st.sub / st.radix
		switch st.radix {
		case 2:
			radix2(x, y, k, s, tw)
		case 3:
			radix3(x, y, k, s, tw, sg)
		case 4:
			radix4(x, y, k, s, tw, sg)
		case 5:
			radix5(x, y, k, s, tw, sg)
		}
		x, y = y, x
		s *= st.radix
	}
	return x
}

// The radix passes are Stockham decimation-in-frequency steps: for each q <
// m the input blocks x[q + t*m] (s values each) go through a radix-r DFT,
// output u is multiplied by w^(q*u) and written to block y[r*q + u].

func radix2(x, y []complex128, m, s int, tw []complex128) {
	for q := range m {
		a := x[q*s : q*s+s]
		b := x[(q+m)*s:][:len(a)]
		y0 := y[2*q*s:][:len(a)]
		y1 := y[(2*q+1)*s:][:len(a)]
		w := tw[q]
		for i := range a {
			y0[i], y1[i] = a[i]+b[i], (a[i]-b[i])*w
		}
	}
}

func radix3(x, y []complex128, m, s int, tw []complex128, sg float64) {
	sn := sg * -math.Sqrt(3) / 2 // sin(∓2π/3)
	for q := range m {
		a0 := x[q*s : q*s+s]
		a1 := x[(q+m)*s:][:len(a0)]
		a2 := x[(q+2*m)*s:][:len(a0)]
		o := 3 * q * s
		y0, y1, y2 := y[o:][:len(a0)], y[o+s:][:len(a0)], y[o+2*s:][:len(a0)]
		w1, w2 := tw[2*q], tw[2*q+1]
		for i := range a0 {
			su, d := a1[i]+a2[i], a1[i]-a2[i]
			r := a0[i] - scale(su, 0.5)
			j := complex(-imag(d)*sn, real(d)*sn)
			y0[i] = a0[i] + su
			y1[i], y2[i] = (r+j)*w1, (r-j)*w2
		}
	}
}

func radix4(x, y []complex128, m, s int, tw []complex128, sg float64) {
	for q := range m {
		a0 := x[q*s : q*s+s]
		a1 := x[(q+m)*s:][:len(a0)]
		a2 := x[(q+2*m)*s:][:len(a0)]
		a3 := x[(q+3*m)*s:][:len(a0)]
		o := 4 * q * s
		y0, y1 := y[o:][:len(a0)], y[o+s:][:len(a0)]
		y2, y3 := y[o+2*s:][:len(a0)], y[o+3*s:][:len(a0)]
		w1, w2, w3 := tw[3*q], tw[3*q+1], tw[3*q+2]
		if q == 0 {
			for i := range a0 {
				t0, t1 := a0[i]+a2[i], a0[i]-a2[i]
				t2, d := a1[i]+a3[i], a1[i]-a3[i]
				t3 := complex(sg*imag(d), -sg*real(d)) // ∓i·d
				y0[i], y1[i], y2[i], y3[i] = t0+t2, t1+t3, t0-t2, t1-t3
			}
			continue
		}
		for i := range a0 {
			t0, t1 := a0[i]+a2[i], a0[i]-a2[i]
			t2, d := a1[i]+a3[i], a1[i]-a3[i]
			t3 := complex(sg*imag(d), -sg*real(d)) // ∓i·d
			y0[i] = t0 + t2
			y1[i] = (t1 + t3) * w1
			y2[i] = (t0 - t2) * w2
			y3[i] = (t1 - t3) * w3
		}
	}
}

func radix5(x, y []complex128, m, s int, tw []complex128, sg float64) {
	c1, c2 := math.Cos(2*math.Pi/5), math.Cos(4*math.Pi/5)
	s1, s2 := -sg*math.Sin(2*math.Pi/5), -sg*math.Sin(4*math.Pi/5)
	for q := range m {
		a0 := x[q*s : q*s+s]
		a1 := x[(q+m)*s:][:len(a0)]
		a2 := x[(q+2*m)*s:][:len(a0)]
		a3 := x[(q+3*m)*s:][:len(a0)]
		a4 := x[(q+4*m)*s:][:len(a0)]
		o := 5 * q * s
		y0, y1, y2 := y[o:][:len(a0)], y[o+s:][:len(a0)], y[o+2*s:][:len(a0)]
		y3, y4 := y[o+3*s:][:len(a0)], y[o+4*s:][:len(a0)]
		w1, w2, w3, w4 := tw[4*q], tw[4*q+1], tw[4*q+2], tw[4*q+3]
		for i := range a0 {
			b1, b2 := a1[i]+a4[i], a2[i]+a3[i]
			d1, d2 := a1[i]-a4[i], a2[i]-a3[i]
			r1 := a0[i] + scale(b1, c1) + scale(b2, c2)
			r2 := a0[i] + scale(b1, c2) + scale(b2, c1)
			e1 := scale(d1, s1) + scale(d2, s2)
			e2 := scale(d1, s2) - scale(d2, s1)
			ie1 := complex(-imag(e1), real(e1))
			ie2 := complex(-imag(e2), real(e2))
			y0[i] = a0[i] + b1 + b2
			y1[i] = (r1 + ie1) * w1
			y2[i] = (r2 + ie2) * w2
			y3[i] = (r2 - ie2) * w3
			y4[i] = (r1 - ie1) * w4
		}
	}
}
