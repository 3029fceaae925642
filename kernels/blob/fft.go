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
const fftChunk = 16

// fftConv is the large-kernel path: the convolution with the symmetric
// kernels done on the 2D DCT-II of the image. The image spectrum is computed
// once per Detect (for the largest radius) and shared by every large scale;
// each scale then costs one filtered inverse 2D DCT (a DCT-III).
//
// Extension: along each axis the image line x[0..n-1] is extended by
// reflect() to e[0..M-1], and the DCT works on the even extension of e to
// length 2M (e[2M-1-i] = e[i]). That is the reflect extension of x wherever
// a kernel of radius R reaches when M >= n+R, and everywhere when M is a
// multiple of n (reflect is periodic with period 2n), so the circular
// convolution of length 2M gives scipy's 'reflect' result. M is the smallest
// 2^a·3^b·5^c length that satisfies one of them (dctLen).
//
// A length-M DCT costs one complex FFT of length M for two real lines
// (Makhoul's reordering, see dctPost and the inverse in log).
type fftConv struct {
	rmax     int  // largest radius of this Detect's scales
	ready    bool // spec holds the spectrum of the current image
	my, mx   int  // DCT lengths
	cols     int  // mx rounded up to even (an odd mx gets a zero column)
	py, px   *fftPlan
	plans    []*fftPlan
	spec     []float64    // my x cols image DCT, in chunks of 2*fftChunk columns
	buf, tmp []complex128 // one chunk of lines and its scratch
	kk       []complex128 // kernel transform scratch
	fil      []float64    // DCTs of one column pair (prepare)
	line     []float64    // two image rows, scaled (prepare)
	ky0, ky2 []float64    // kernel spectra along y (length my)
	kx0, kx2 []float64    // kernel spectra along x (length cols), scaled
	twy, twx []complex128 // e^(-iπk/2M), k < M
}

func (f *fftConv) use(h, w, r int) bool { return r >= fftMinRadius }

// reset prepares f for a new Detect whose largest kernel radius is rmax.
func (f *fftConv) reset(rmax int) { f.rmax, f.ready = rmax, false }

// width is cols for an image w wide: the row length of the h x cols
// intermediate (row DCTs in prepare, the y-inverse output in log) that
// both write in the layer log fills, so the layer needs room for h*cols.
func (f *fftConv) width(w int) int {
	mx := dctLen(w, f.rmax)
	return mx + mx%2
}

// dctLen picks the DCT length for a line of n with kernel radius r.
func dctLen(n, r int) int {
	M := fft.NextFastLen(n + r)
	for m := n; m < M; m += n {
		if fft.NextFastLen(m) == m {
			return m
		}
	}
	return M
}

// perm is Makhoul's reordering: element i of a length-M line goes to
// position perm(i, M) of the complex FFT input (even i first, then odd i
// reversed).
func perm(i, M int) int {
	if i%2 == 0 {
		return i / 2
	}
	return M - 1 - i/2
}

func halfTwiddles(t []complex128, M int) []complex128 {
	t = growC(t, M)
	for k := range t {
		s, c := math.Sincos(math.Pi * float64(k) / float64(2*M))
		t[k] = complex(c, -s)
	}
	return t
}

// dctPost turns line p of res (the FFT of two reordered real lines a + i·b
// in m interleaved sequences of length M) into their DCT-II a[k], b[k] =
// sum_i line[i]·cos(πk(2i+1)/2M).
func dctPost(res []complex128, p, m int, tw []complex128, a, b []float64) {
	M := len(tw)
	for k, t := range tw {
		z, zc := res[k*m+p], res[((M-k)%M)*m+p]
		// spectra of the two real lines: (z + conj zc)/2, (z - conj zc)/2i
		ar, ai := (real(z)+real(zc))*0.5, (imag(z)-imag(zc))*0.5
		br, bi := (imag(z)+imag(zc))*0.5, (real(zc)-real(z))*0.5
		a[k] = real(t)*ar - imag(t)*ai
		b[k] = real(t)*br - imag(t)*bi
	}
}

// prepare computes the 2D DCT-II of the extended image pix (h x w, scaled
// to 0..1), using rows (h x cols) for the row transforms.
func (f *fftConv) prepare(pix []uint8, h, w int, rows []float64) {
	f.my, f.mx = dctLen(h, f.rmax), dctLen(w, f.rmax)
	my, mx := f.my, f.mx
	f.cols = f.width(w)
	cols := f.cols
	f.py, f.px = f.plan(my), f.plan(mx)
	f.twy, f.twx = halfTwiddles(f.twy, my), halfTwiddles(f.twx, mx)
	f.spec = grow(f.spec, my*cols)
	f.line = grow(f.line, 2*w)
	r1, r2 := f.line[:w], f.line[w:]
	f.buf = growC(f.buf, max(my, mx)*fftChunk)
	f.tmp = growC(f.tmp, max(my, mx)*fftChunk)
	f.fil = grow(f.fil, 2*my)
	// Rows along x, two real rows per complex line.
	for y0 := 0; y0 < h; y0 += 2 * fftChunk {
		m := min(fftChunk, (h-y0+1)/2)
		buf := f.buf[:mx*m]
		for p := range m {
			y1 := y0 + 2*p
			y2 := min(y1+1, h-1)
			scaleRow(r1, pix[y1*w:y1*w+w])
			scaleRow(r2, pix[y2*w:y2*w+w])
			for i := range mx {
				q := reflect(i, w)
				buf[perm(i, mx)*m+p] = complex(r1[q], r2[q])
			}
		}
		res := f.px.transform(buf, f.tmp, m, false)
		for p := range m {
			y1 := y0 + 2*p
			y2 := min(y1+1, h-1)
			dctPost(res, p, m, f.twx, rows[y1*cols:y1*cols+mx], rows[y2*cols:y2*cols+mx])
			if cols > mx {
				rows[y1*cols+mx], rows[y2*cols+mx] = 0, 0 // zero pad column
			}
		}
	}
	// Columns along y, two columns per complex line. The chunk of columns
	// c0..c0+2m-1 sits at spec[c0*my:] as my x 2m.
	for c0 := 0; c0 < cols; c0 += 2 * fftChunk {
		m := min(fftChunk, (cols-c0)/2)
		buf := f.buf[:my*m]
		for i := range my {
			src := rows[reflect(i, h)*cols+c0:][:2*m]
			dst := buf[perm(i, my)*m:][:m]
			for p := range dst {
				dst[p] = complex(src[2*p], src[2*p+1])
			}
		}
		res := f.py.transform(buf, f.tmp, m, false)
		spec := f.spec[c0*my : c0*my+my*2*m]
		a, b := f.fil[:my], f.fil[my:2*my]
		for p := range m {
			dctPost(res, p, m, f.twy, a, b)
			for k := range my {
				spec[k*2*m+2*p], spec[k*2*m+2*p+1] = a[k], b[k]
			}
		}
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

// log writes -(order2_y·order0_x + order0_y·order2_x)(pix) * s2 into out,
// which must have room for h*cols (width): the y inverse fills its h x
// cols, and the x inverse turns that into the h x w result in place
// (output row y, at y*w, covers only intermediate rows <= y, which it has
// read).
//
// The filtered DCT X'(k) = X(k)·K(k) goes back through DCT-III, y[i] = X'(0)
// + 2·sum_k X'(k)·cos(πk(2i+1)/2M) = M·(the convolution), which is Makhoul
// again: V(k) = e^(iπk/2M)·(X'(k) - i·X'(M-k)), X'(M) = 0, is the spectrum
// of the reordered real output, so V_a + i·V_b inverts two lines at once.
func (f *fftConv) log(out []float64, pix []uint8, h, w int, k0, k2 []float64, s2 float64) {
	rows := out[:h*f.width(w)]
	if !f.ready {
		f.prepare(pix, h, w, rows)
	}
	my, mx, cols := f.my, f.mx, f.cols
	f.ky0, f.ky2 = grow(f.ky0, my), grow(f.ky2, my)
	f.kx0, f.kx2 = grow(f.kx0, cols), grow(f.kx2, cols)
	f.spectra(f.plan(2*my), k0, k2, 1, f.ky0, f.ky2)
	f.spectra(f.plan(2*mx), k0, k2, -s2/float64(mx*my), f.kx0[:mx], f.kx2[:mx])
	if cols > mx {
		f.kx0[mx], f.kx2[mx] = 0, 0 // pad column
	}
	// Columns: filter and inverse along y, keeping the h output rows.
	for c0 := 0; c0 < cols; c0 += 2 * fftChunk {
		m := min(fftChunk, (cols-c0)/2)
		buf := f.buf[:my*m]
		x0, x2 := f.kx0[c0:c0+2*m], f.kx2[c0:c0+2*m]
		spec := f.spec[c0*my : c0*my+my*2*m]
		for k := 0; 2*k <= my; k++ {
			f.filterPair(buf, spec, x0, x2, m, k)
		}
		res := f.py.transform(buf, f.tmp, m, true)
		for y := range h {
			src := res[perm(y, my)*m:][:m]
			dst := rows[y*cols+c0:][:2*m]
			for p, z := range src {
				dst[2*p], dst[2*p+1] = real(z), imag(z)
			}
		}
	}
	// Rows: inverse along x, two rows per complex line.
	for y0 := 0; y0 < h; y0 += 2 * fftChunk {
		m := min(fftChunk, (h-y0+1)/2)
		buf := f.buf[:mx*m]
		for p := range m {
			y1 := y0 + 2*p
			y2 := min(y1+1, h-1) // a lone last row pairs with itself
			a, b := rows[y1*cols:y1*cols+mx], rows[y2*cols:y2*cols+mx]
			buf[p] = complex(a[0], b[0])
			for k := 1; k < mx; k++ {
				t := f.twx[k]
				z := complex(a[k]+b[mx-k], b[k]-a[mx-k])
				buf[k*m+p] = complex(real(t), -imag(t)) * z
			}
		}
		res := f.px.transform(buf, f.tmp, m, true)
		for p := range m {
			y1 := y0 + 2*p
			o1 := out[y1*w : y1*w+w]
			if y1+1 == h { // the lone last row is the real part
				for x := range o1 {
					o1[x] = real(res[perm(x, mx)*m+p])
				}
				break
			}
			o2 := out[(y1+1)*w : (y1+1)*w+w]
			for x := range o1 {
				z := res[perm(x, mx)*m+p]
				o1[x], o2[x] = real(z), imag(z)
			}
		}
	}
}

// filterPair filters the frequencies k and M-k (M = len(f.ky0)) of a chunk
// of m column pairs (spec: M x 2m, x0 and x2 the x spectra of its columns)
// and writes the inverse-FFT inputs of their DCT-III at both: for columns
// (c, d), e^(iπk/2M)·(X'_c(k) + X'_d(M-k) + i·(X'_d(k) - X'_c(M-k))), X'(M)
// = 0.
func (f *fftConv) filterPair(buf []complex128, spec, x0, x2 []float64, m, k int) {
	M := len(f.ky0)
	kc := (M - k) % M
	a, b := f.ky2[k], f.ky0[k]
	ac, bc := f.ky2[kc], f.ky0[kc]
	if k == 0 {
		ac, bc = 0, 0 // X'(M) = 0
	}
	t, tc := f.twy[k], f.twy[kc]
	t, tc = complex(real(t), -imag(t)), complex(real(tc), -imag(tc))
	s, sc := spec[k*2*m:k*2*m+2*m], spec[kc*2*m:kc*2*m+2*m]
	dk, dc := buf[k*m:k*m+m], buf[kc*m:kc*m+m]
	x0, x2, sc = x0[:len(s)], x2[:len(s)], sc[:len(s)]
	for p := range dc {
		j := 2 * p
		u1, u2 := s[j]*(a*x0[j]+b*x2[j]), s[j+1]*(a*x0[j+1]+b*x2[j+1])
		v1, v2 := sc[j]*(ac*x0[j]+bc*x2[j]), sc[j+1]*(ac*x0[j+1]+bc*x2[j+1])
		dc[p] = tc * complex(v1+u2, v2-u1) // k = 0: overwritten next
		dk[p] = t * complex(u1+v2, u2-v1)
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
