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

// fftChunk is how many lines go through one batched transform: a
// multiple of 4 (the vector passes' width), and an odd one, as with the
// CPU convolution's strips (kernels.stripWidth): 16 lines took 15% longer
// than 20 on coins on a Zen 4 (BENCHMARKS.md).
const fftChunk = 20

// scalarOnly makes every loop run its scalar code (set by tests, to
// compare the vector code with it).
var scalarOnly bool

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
// (Makhoul's reordering, see dctPost and the inverse in log). Complex data
// is held as separate real and imaginary float64 planes (see fftPlan).
//
// A chunk of 2m columns c0..c0+2m-1 goes through one batched transform of
// m complex lines, line p carrying column c0+2p as its real part and
// c0+2p+1 as its imaginary part; in the chunk's spectrum (spec) and x
// kernel spectra (kxp0, kxp2) column c0+2p is at p and c0+2p+1 at m+p, so
// that the filter reads the real parts' columns and the imaginary parts'
// contiguously.
//
// With GOEXPERIMENT=simd on an AVX2 CPU the transforms' passes and the
// loops around them run 4 lines (or 4 values of a line) at a time
// (fftpass_simd.go); they do the scalar code's operations in the same
// order, with no fused multiply-add, so the responses are the same bit
// for bit on every build and CPU.
type fftConv struct {
	rmax     int  // largest radius of this Detect's scales
	ready    bool // spec holds the spectrum of the current image
	my, mx   int  // DCT lengths
	cols     int  // mx rounded up to even (an odd mx gets a zero column)
	py, px   *fftPlan
	plans    []*fftPlan
	spec     []float64 // my x cols image DCT, in chunks of 2*fftChunk columns (see filter)
	br, bi   []float64 // one chunk of lines (real, imaginary planes)
	tr, ti   []float64 // its scratch
	kr, ki   []float64 // kernel transform and its scratch
	line     []float64 // eight image rows, scaled (prepare)
	ky0, ky2 []float64 // kernel spectra along y (length my)
	kx0, kx2 []float64 // kernel spectra along x (length cols), scaled
	kxp0     []float64 // kx0, kx2 in the chunks' column order
	kxp2     []float64
	fk       []float64 // the filter's factors (makeFilter)
	// e^(-iπk/2M), k < M: cosines and (negative) sines, along y and x
	twyr, twyi, twxr, twxi []float64
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

// halfTwiddles returns e^(-iπk/2M), k < M, as cosines c and sines s
// (s[k] = -sin(πk/2M)), reusing c and s when they already hold them.
func halfTwiddles(c, s []float64, M int) (_, _ []float64) {
	if len(c) == M && len(s) == M {
		return c, s
	}
	c, s = grow(c, M), grow(s, M)
	for k := range M {
		sn, cs := math.Sincos(math.Pi * float64(k) / float64(2*M))
		c[k], s[k] = cs, -sn
	}
	return c, s
}

// dctPost turns line p of (rr, ri) (the FFT of two reordered real lines a
// + i·b in m interleaved sequences of length M) into their DCT-II a[k],
// b[k] = sum_i line[i]·cos(πk(2i+1)/2M); (twr, twi) are e^(-iπk/2M).
func dctPost(rr, ri []float64, p, m int, twr, twi, a, b []float64) {
	dctPostFrom(rr, ri, p, m, twr, twi, a, b, 0)
}

// dctPostFrom is dctPost at the frequencies from k0 on.
func dctPostFrom(rr, ri []float64, p, m int, twr, twi, a, b []float64, k0 int) {
	M := len(twr)
	twi, a, b = twi[:M], a[:M], b[:M]
	for k := k0; k < M; k++ {
		tr := twr[k]
		kc := 0
		if k > 0 {
			kc = M - k
		}
		zr, zi := rr[k*m+p], ri[k*m+p]
		cr, ci := rr[kc*m+p], ri[kc*m+p]
		// spectra of the two real lines: (z + conj zc)/2, (z - conj zc)/2i
		ar, ai := (zr+cr)*0.5, (zi-ci)*0.5
		br, bi := (zi+ci)*0.5, (cr-zr)*0.5
		a[k] = tr*ar - twi[k]*ai
		b[k] = tr*br - twi[k]*bi
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
	f.twyr, f.twyi = halfTwiddles(f.twyr, f.twyi, my)
	f.twxr, f.twxi = halfTwiddles(f.twxr, f.twxi, mx)
	f.spec = grow(f.spec, my*cols)
	f.line = grow(f.line, 8*w)
	n := max(my, mx) * fftChunk
	f.br, f.bi, f.tr, f.ti = grow(f.br, n), grow(f.bi, n), grow(f.tr, n), grow(f.ti, n)
	// Rows along x, two real rows per complex line.
	for y0 := 0; y0 < h; y0 += 2 * fftChunk {
		m := min(fftChunk, (h-y0+1)/2)
		br, bi := f.br[:mx*m], f.bi[:mx*m]
		packImage(br, bi, pix, y0, h, w, m, mx, f.line)
		rr, ri := f.px.transform(br, bi, f.tr, f.ti, m, false)
		dctPostRows(rr, ri, m, f.twxr, f.twxi, rows, y0, h, cols)
		for p := range m {
			y1 := y0 + 2*p
			y2 := min(y1+1, h-1)
			if cols > mx {
				rows[y1*cols+mx], rows[y2*cols+mx] = 0, 0 // zero pad column
			}
		}
	}
	// Columns along y, two columns per complex line. The chunk of columns
	// c0..c0+2m-1 sits at spec[c0*my:] as my x 2m.
	for c0 := 0; c0 < cols; c0 += 2 * fftChunk {
		m := min(fftChunk, (cols-c0)/2)
		br, bi := f.br[:my*m], f.bi[:my*m]
		for i := range my {
			j := perm(i, my) * m
			deinterleave(br[j:j+m], bi[j:j+m], rows[reflect(i, h)*cols+c0:][:2*m])
		}
		rr, ri := f.py.transform(br, bi, f.tr, f.ti, m, false)
		dctPostCols(rr, ri, m, f.twyr, f.twyi, f.spec[c0*my:c0*my+my*2*m])
	}
	f.ready = true
}

// spectra returns the spectra of the symmetric kernels k0, k2 (k[j]: weight
// at ±j), wrapped circularly to length p.n, each multiplied by c, in s0, s2
// (the first len(s0) frequencies).
func (f *fftConv) spectra(p *fftPlan, k0, k2 []float64, c float64, s0, s2 []float64) {
	n := p.n
	f.kr, f.ki = grow(f.kr, 2*n), grow(f.ki, 2*n)
	kr, ki := f.kr[:n], f.ki[:n]
	clear(kr)
	clear(ki)
	for j := range k0 { // both kernels at once: k0 real, k2 imaginary
		kr[j%n] += k0[j]
		ki[j%n] += k2[j]
		if j > 0 {
			kr[(n-j%n)%n] += k0[j]
			ki[(n-j%n)%n] += k2[j]
		}
	}
	// Both kernels are real and even, so their spectra are real and even;
	// Z = K0 + i*K2 with K0, K2 real gives them directly.
	rr, ri := p.transform(kr, ki, f.kr[n:2*n], f.ki[n:2*n], 1, false)
	for i := range s0 {
		s0[i], s2[i] = rr[i]*c, ri[i]*c
	}
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
	f.makeFilter(k0, k2, s2)
	// Columns: filter and inverse along y, keeping the h output rows.
	for c0 := 0; c0 < cols; c0 += 2 * fftChunk {
		m := min(fftChunk, (cols-c0)/2)
		br, bi := f.br[:my*m], f.bi[:my*m]
		x0, x2 := f.kxp0[c0:c0+2*m], f.kxp2[c0:c0+2*m]
		spec := f.spec[c0*my : c0*my+my*2*m]
		filter(f.fk, br, bi, spec, x0, x2, m)
		rr, ri := f.py.transform(br, bi, f.tr, f.ti, m, true)
		for y := range h {
			j := perm(y, my) * m
			interleave(rows[y*cols+c0:][:2*m], rr[j:j+m], ri[j:j+m])
		}
	}
	// Rows: inverse along x, two rows per complex line.
	for y0 := 0; y0 < h; y0 += 2 * fftChunk {
		m := min(fftChunk, (h-y0+1)/2)
		br, bi := f.br[:mx*m], f.bi[:mx*m]
		packRows(br, bi, rows, y0, h, m, cols, f.twxr, f.twxi)
		rr, ri := f.px.transform(br, bi, f.tr, f.ti, m, true)
		unpackRows(out, rr, ri, y0, h, w, m, mx)
	}
}

// The loops that move data between the transforms' layout (element k of
// line p at k*m+p) and the rows follow. Each has a vector version
// (fftpass_simd.go) that does the same operations on 4 lines at a time
// and leaves the rest, from line lo on, to the scalar one here.

// dctPostColsScalar is dctPost for the lines p >= lo of a column chunk:
// it writes the DCTs of columns c0+2p and c0+2p+1 at spec[k*2m+p] and
// spec[k*2m+m+p].
func dctPostColsScalar(rr, ri []float64, m int, twr, twi, spec []float64, lo int) {
	M := len(twr)
	twi = twi[:M]
	for k, tr := range twr {
		kc := 0
		if k > 0 {
			kc = M - k
		}
		z, zc, out := k*m, kc*m, spec[k*2*m:k*2*m+2*m]
		for p := lo; p < m; p++ {
			zr, zi := rr[z+p], ri[z+p]
			cr, ci := rr[zc+p], ri[zc+p]
			ar, ai := (zr+cr)*0.5, (zi-ci)*0.5
			br, bi := (zi+ci)*0.5, (cr-zr)*0.5
			out[p] = tr*ar - twi[k]*ai
			out[m+p] = tr*br - twi[k]*bi
		}
	}
}

// deinterleaveScalar writes dr[p], di[p] = src[2p], src[2p+1] for p >= lo.
func deinterleaveScalar(dr, di, src []float64, lo int) {
	di, src = di[:len(dr)], src[:2*len(dr)]
	for p := lo; p < len(dr); p++ {
		dr[p], di[p] = src[2*p], src[2*p+1]
	}
}

// packImageScalar writes lines p >= lo of the x transform's input for the
// image rows chunk at y0: line p is rows y0+2p and y0+2p+1 (a lone last
// row pairs with itself), scaled to 0..1, reflect-extended to M and
// reordered (perm); line holds two rows.
func packImageScalar(br, bi []float64, pix []uint8, y0, h, w, m, M int, line []float64, lo int) {
	r1, r2 := line[:w], line[w:2*w]
	for p := lo; p < m; p++ {
		y1 := y0 + 2*p
		y2 := min(y1+1, h-1)
		scaleRow(r1, pix[y1*w:y1*w+w])
		scaleRow(r2, pix[y2*w:y2*w+w])
		for i := range M {
			q, j := reflect(i, w), perm(i, M)*m+p
			br[j], bi[j] = r1[q], r2[q]
		}
	}
}

// dctPostRowsScalar is dctPost for the lines p >= lo of the rows chunk at
// y0: rows y0+2p and y0+2p+1 (both the same lone last row, which gets the
// second) get the DCTs of the line's real and imaginary parts.
func dctPostRowsScalar(rr, ri []float64, m int, twr, twi, rows []float64, y0, h, cols, lo int) {
	M := len(twr)
	for p := lo; p < m; p++ {
		y1 := y0 + 2*p
		y2 := min(y1+1, h-1)
		dctPost(rr, ri, p, m, twr, twi, rows[y1*cols:y1*cols+M], rows[y2*cols:y2*cols+M])
	}
}

// interleaveScalar writes dst[2p], dst[2p+1] = sr[p], si[p] for p >= lo.
func interleaveScalar(dst, sr, si []float64, lo int) {
	si = si[:len(sr)]
	for p := lo; p < len(sr); p++ {
		dst[2*p], dst[2*p+1] = sr[p], si[p]
	}
}

// packRowsScalar writes lines p >= lo of the x inverse's input for the
// rows chunk at y0: line p pairs rows y0+2p and y0+2p+1 (a lone last row
// pairs with itself), see packRow.
func packRowsScalar(br, bi, rows []float64, y0, h, m, cols int, twr, twi []float64, lo int) {
	M := len(twr)
	for p := lo; p < m; p++ {
		y1 := y0 + 2*p
		y2 := min(y1+1, h-1)
		packRow(br, bi, p, m, rows[y1*cols:y1*cols+M], rows[y2*cols:y2*cols+M], twr, twi, 1, M)
	}
}

// packRow writes line p of the x inverse's input from the y-inverse rows
// a and b (each M = len(twr) long) at k = 0 and at klo <= k < khi:
// e^(iπk/2M)·(a(k) + b(M-k) + i·(b(k) - a(M-k))), a(M) = b(M) = 0.
func packRow(br, bi []float64, p, m int, a, b, twr, twi []float64, klo, khi int) {
	M := len(twr)
	a, b, twi = a[:M], b[:M], twi[:M]
	br[p], bi[p] = a[0], b[0]
	for k := klo; k < khi; k++ {
		zr, zi := a[k]+b[M-k], b[k]-a[M-k]
		tr, ti := twr[k], -twi[k] // conj(e^(-iπk/2M))
		br[k*m+p], bi[k*m+p] = tr*zr-ti*zi, tr*zi+ti*zr
	}
}

// unpackRowsScalar writes the output rows of lines p >= lo of the x
// inverse (rr, ri) of the rows chunk at y0: row y0+2p is the real part,
// y0+2p+1 the imaginary part, at x the element perm(x, M).
func unpackRowsScalar(out, rr, ri []float64, y0, h, w, m, M, lo int) {
	for p := lo; p < m; p++ {
		y1 := y0 + 2*p
		o1 := out[y1*w : y1*w+w]
		if y1+1 == h { // the lone last row is the real part
			for x := range o1 {
				o1[x] = rr[perm(x, M)*m+p]
			}
			break
		}
		o2 := out[(y1+1)*w : (y1+1)*w+w]
		for x := range o1 {
			j := perm(x, M)*m + p
			o1[x], o2[x] = rr[j], ri[j]
		}
	}
}

// filter writes the y inverse's input for a chunk of m column pairs
// (spec: M x 2m, M = len(br)/m, columns c0+2p in the first m values of
// each frequency and c0+2p+1 in the last m; x0 and x2 the x spectra of its
// columns, in the same order): at each pair of frequencies k and M-k, for
// columns (c, d), e^(iπk/2M)·(X'_c(k) + X'_d(M-k) + i·(X'_d(k) -
// X'_c(M-k))), X'(M) = 0, where X'(k) = X(k)·(Ky2(k)·Kx0 + Ky0(k)·Kx2).
func filter(fk, br, bi, spec, x0, x2 []float64, m int) {
	lo := filterVec(fk, br, bi, spec, x0, x2, m) // the lines it did: 0..lo-1
	if lo == m {
		return
	}
	for k := 0; 2*k <= len(br)/m; k++ {
		filterLines(fk[8*k:8*k+8], br, bi, spec, x0, x2, m, k, lo)
	}
}

// makeFilter makes the filter of the kernels k0, k2 (weights at ±j) and
// scale s2 for the current DCT lengths: the spectra of the kernels along
// y, those along x scaled by -s2/(mx·my) (the DCT-III's factor), then
//
//   - f.kxp0, f.kxp2: the x spectra in the chunks' column order;
//   - f.fk: the factors at each pair of frequencies k and M-k, k <= M/2, 8
//     values from 8k: the y spectra at k (order 2, order 0) and at M-k
//     (the same), the conjugate twiddles e^(iπk/2M) and e^(iπ(M-k)/2M)
//     (real, imaginary).
func (f *fftConv) makeFilter(k0, k2 []float64, s2 float64) {
	my, mx, cols := f.my, f.mx, f.cols
	f.ky0, f.ky2 = grow(f.ky0, my), grow(f.ky2, my)
	f.kx0, f.kx2 = grow(f.kx0, cols), grow(f.kx2, cols)
	f.spectra(f.plan(2*my), k0, k2, 1, f.ky0, f.ky2)
	f.spectra(f.plan(2*mx), k0, k2, -s2/float64(mx*my), f.kx0[:mx], f.kx2[:mx])
	if cols > mx {
		f.kx0[mx], f.kx2[mx] = 0, 0 // pad column
	}
	f.kxp0, f.kxp2 = grow(f.kxp0, cols), grow(f.kxp2, cols)
	for c0 := 0; c0 < cols; c0 += 2 * fftChunk {
		m := min(fftChunk, (cols-c0)/2)
		for p := range m {
			c := c0 + 2*p
			f.kxp0[c0+p], f.kxp0[c0+m+p] = f.kx0[c], f.kx0[c+1]
			f.kxp2[c0+p], f.kxp2[c0+m+p] = f.kx2[c], f.kx2[c+1]
		}
	}
	M := my
	f.fk = grow(f.fk, 8*(M/2+1))
	for k := 0; 2*k <= M; k++ {
		kc := 0
		if k > 0 {
			kc = M - k
		}
		c := f.fk[8*k : 8*k+8]
		c[0], c[1], c[2], c[3] = f.ky2[k], f.ky0[k], f.ky2[kc], f.ky0[kc]
		if k == 0 {
			c[2], c[3] = 0, 0 // X'(M) = 0
		}
		c[4], c[5], c[6], c[7] = f.twyr[k], -f.twyi[k], f.twyr[kc], -f.twyi[kc]
	}
}

// filterLines writes the filter's output at k and M-k for the lines p in
// [lo, m); c are the factors at k (see makeFilter).
func filterLines(c, br, bi, spec, x0, x2 []float64, m, k, lo int) {
	M := len(br) / m
	kc := 0
	if k > 0 {
		kc = M - k
	}
	s, sc := spec[k*2*m:k*2*m+2*m], spec[kc*2*m:kc*2*m+2*m]
	dkr, dki := br[k*m:k*m+m], bi[k*m:k*m+m]
	dcr, dci := br[kc*m:kc*m+m], bi[kc*m:kc*m+m]
	x0, x2 = x0[:2*m], x2[:2*m]
	a, b, ac, bc := c[0], c[1], c[2], c[3]
	tr, ti, tcr, tci := c[4], c[5], c[6], c[7]
	for p := lo; p < m; p++ {
		q := m + p
		u1, u2 := s[p]*(a*x0[p]+b*x2[p]), s[q]*(a*x0[q]+b*x2[q])
		v1, v2 := sc[p]*(ac*x0[p]+bc*x2[p]), sc[q]*(ac*x0[q]+bc*x2[q])
		zr, zi := v1+u2, v2-u1
		dcr[p], dci[p] = tcr*zr-tci*zi, tcr*zi+tci*zr // k = 0: overwritten next
		zr, zi = u1+v2, u2-v1
		dkr[p], dki[p] = tr*zr-ti*zi, tr*zi+ti*zr
	}
}

// fftPlan is a mixed-radix (2, 3, 4, 5) Stockham complex FFT of length n,
// applied to m interleaved sequences (element i of sequence j at i*m+j),
// on separate real and imaginary float64 planes.
type fftPlan struct {
	n      int
	stages []fftStage
	simd   bool // the vector passes can run on this CPU
}

type fftStage struct {
	radix, sub int
	wr, wi     []float64 // forward twiddles w^(q*u), at q*(radix-1)+u-1
	// vw holds every twiddle as two 4-wide vectors (re, im), forward then
	// inverse, for the vector passes; nil without them.
	vw []float64
}

func (f *fftConv) plan(n int) *fftPlan {
	for _, p := range f.plans {
		if p.n == n {
			return p
		}
	}
	p := &fftPlan{n: n, simd: simdOK()}
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
		st := fftStage{radix: r, sub: sub, wr: make([]float64, m*(r-1)), wi: make([]float64, m*(r-1))}
		for q := range m {
			for u := 1; u < r; u++ {
				s, c := math.Sincos(-2 * math.Pi * float64(q*u) / float64(sub))
				st.wr[q*(r-1)+u-1], st.wi[q*(r-1)+u-1] = c, s
			}
		}
		if p.simd {
			k := len(st.wr)
			st.vw = make([]float64, 2*k*2*4)
			for d, sign := range []float64{1, -1} {
				for i := range k {
					for j, v := range []float64{st.wr[i], sign * st.wi[i]} {
						off := ((d*k+i)*2 + j) * 4
						for l := range 4 {
							st.vw[off+l] = v
						}
					}
				}
			}
		}
		p.stages = append(p.stages, st)
		sub = m
	}
	f.plans = append(f.plans, p)
	return p
}

// transform runs the FFT (inverse: conjugate twiddles, no 1/n) of the m
// sequences in (xr, xi), using (yr, yi) as scratch, and returns the pair
// that holds the result.
func (p *fftPlan) transform(xr, xi, yr, yi []float64, m int, inverse bool) (_, _ []float64) {
	n := p.n * m
	xr, xi, yr, yi = xr[:n], xi[:n], yr[:n], yi[:n]
	sign := 1.0
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
