package kernels

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/pixelflight/pixelflight/kernels/fft"
)

// Mode selects the output size, as in scipy.signal.fftconvolve.
type Mode uint8

const (
	Same  Mode = iota // as large as the image, centred
	Full              // (H+kh-1)×(W+kw-1)
	Valid             // (H-kh+1)×(W-kw+1): only where the kernel lies inside the image
)

// Boundary says what the image holds outside its edges.
type Boundary uint8

const (
	Zero    Boundary = iota // zeros, as scipy.signal.fftconvolve
	Reflect                 // mirrored with the edge repeated (d c b a | a b c d | d c b a), as convolve2d's "symm"
	Wrap                    // periodic, as convolve2d's "wrap"
)

// ErrGeometry reports an image and kernel that have no output in the asked mode.
var ErrGeometry = errors.New("kernels: no output for this image and kernel")

// Kernel is a convolution kernel, row-major. It is applied as a convolution
// (flipped), not a correlation, as scipy does.
type Kernel struct {
	H, W int
	Data []float32
	// Col and Row, when set, are the factors of a rank-1 kernel:
	// Data[y·W+x] = Col[y]·Row[x] within float32 rounding. The named
	// kernels that are separable set them; Factor finds them in others.
	Col, Row []float32
}

// OutputSize is the size of the result for an h×w image.
func OutputSize(h, w int, k *Kernel, mode Mode) (oh, ow int, err error) {
	switch mode {
	case Same:
		return h, w, nil
	case Full:
		return h + k.H - 1, w + k.W - 1, nil
	case Valid:
		if k.H > h || k.W > w {
			return 0, 0, fmt.Errorf("%w: mode valid needs the kernel (%dx%d) no larger than the image (%dx%d)", ErrGeometry, k.W, k.H, w, h)
		}
		return h - k.H + 1, w - k.W + 1, nil
	}
	return 0, 0, fmt.Errorf("kernels: unknown mode %d", mode)
}

// axis is the geometry of one dimension: the output covers full-convolution
// indices [lo, lo+out), the transform has length n, and src maps each of the
// n transform positions to the image index it holds (-1 for zero).
type axis struct {
	lo, out, n int
	src        []int32
	run0, run1 int // src[run0:run1] counts up by one: copied as a block
}

func newAxis(size, k, out int, mode Mode, b Boundary, src []int32) axis {
	// even, for the real-input trick
	lo, src := Layout(size, k, out, mode, b, func(need int) int { return 2 * fft.NextFastLen((need+1)/2) }, src)
	n := len(src)
	ax := axis{lo: lo, out: out, n: n, src: src}
	for i := 0; i < n; {
		j := i + 1
		for src[i] >= 0 && j < n && src[j] == src[j-1]+1 {
			j++
		}
		if j-i > ax.run1-ax.run0 && src[i] >= 0 {
			ax.run0, ax.run1 = i, j
		}
		i = j
	}
	return ax
}

// Layout lays out one dimension of a convolution by transform: size
// image samples, a kernel of k taps, out outputs. It returns lo, the
// full-convolution index of the first output, and src, which maps each of
// the n = length(need) transform positions to the image index it holds
// (-1: zero), reusing src's storage. With the zero boundary the image lies
// at the start and n is long enough that the circular convolution does not
// wrap into the outputs; with reflect and wrap every extended sample the
// outputs read has its own position. The CPU and GPU backends share it,
// each with its own fast lengths.
func Layout(size, k, out int, mode Mode, b Boundary, length func(need int) int, src []int32) (lo int, _ []int32) {
	switch mode {
	case Same:
		lo = (k - 1) / 2
	case Valid:
		lo = k - 1
	}
	hi := lo + out - 1 // last full index wanted
	var need int
	if b == Zero {
		// Only the image is non-zero: no aliasing into [lo, hi] once n > hi
		// and n >= size+k-1-lo.
		need = max(hi+1, size+k-1-lo)
	} else {
		need = out + k - 1 // every extended sample in [lo-k+1, hi] distinct
	}
	n := length(max(need, 2))
	src = src[:0]
	for range n {
		src = append(src, -1)
	}
	if b == Zero {
		for i := range size {
			src[i] = int32(i)
		}
	} else {
		for m := lo - k + 1; m <= hi; m++ {
			src[mod(m, n)] = int32(Extend(m, size, b))
		}
	}
	return lo, src
}

// Extend maps an index outside [0, size) back into the image by the
// boundary rule (reflect: edge repeated; wrap: periodic).
func Extend(i, size int, b Boundary) int {
	if b == Wrap {
		return mod(i, size)
	}
	j := mod(i, 2*size)
	if j >= size {
		j = 2*size - 1 - j
	}
	return j
}

func mod(a, n int) int {
	r := a % n
	if r < 0 {
		r += n
	}
	return r
}

// Convolver convolves images with kernels by FFT or directly (direct.go).
// It keeps transform plans, scratch buffers and kernel spectra between
// calls, so that in steady state a call allocates nothing. It is not safe for concurrent use: give each
// worker goroutine its own.
type Convolver struct {
	plans   map[[2]int]*plan2
	spectra []spectrum // most recently used first
	rowSrc  []int32
	colSrc  []int32
	buf     [2]plane

	// The direct methods' scratch (direct.go).
	ext, ring        []float32
	rowTaps, colTaps []float32
	rows             [][]float32
	coefs            [][]float32
	zero             []bool
}

// plane is a complex array held as real and imaginary parts.
type plane struct{ re, im []float32 }

// plan2 is a 2D real transform of nh×nw (both even).
type plan2 struct {
	nh, nw   int
	col, row *fft.Plan // lengths nh/2 and nw
	// Twiddles of the real-input split and merge for row pairs (k, nh/2-k):
	// u = -W^k, v = -W^j to split; u = W^-k, v = W^-j to merge; W = exp(-2πi/nh).
	split, merge [][]float32
}

type spectrum struct {
	k      *Kernel
	nh, nw int
	p      plane
}

const (
	maxCached       = 8        // plans and spectra
	maxSpectraBytes = 64 << 20 // spectra of big images: evicted beyond this
)

// NewConvolver returns a Convolver with empty caches.
func NewConvolver() *Convolver {
	return &Convolver{plans: make(map[[2]int]*plan2)}
}

// Convolve convolves the h×w 8-bit image pix with k and writes the oh×ow
// float32 result to dst, which is grown if it is too short, by the method
// Choose picks; it returns that method too. The kernel's spectrum is
// cached by the pointer k: do not change a Kernel once used.
func (c *Convolver) Convolve(dst []float32, pix []uint8, h, w int, k *Kernel, mode Mode, b Boundary) (out []float32, oh, ow int, m Method, err error) {
	m = Choose(h, w, k, mode, b)
	out, oh, ow, err = c.ConvolveBy(m, dst, pix, h, w, k, mode, b)
	return out, oh, ow, m, err
}

// ConvolveBy is Convolve by method m (Separable needs k's factors).
func (c *Convolver) ConvolveBy(m Method, dst []float32, pix []uint8, h, w int, k *Kernel, mode Mode, b Boundary) (out []float32, oh, ow int, err error) {
	if h < 1 || w < 1 || len(pix) < h*w {
		return nil, 0, 0, fmt.Errorf("%w: image %dx%d with %d pixels", ErrGeometry, w, h, len(pix))
	}
	if k.H < 1 || k.W < 1 || len(k.Data) != k.H*k.W {
		return nil, 0, 0, fmt.Errorf("%w: kernel %dx%d with %d values", ErrGeometry, k.W, k.H, len(k.Data))
	}
	if oh, ow, err = OutputSize(h, w, k, mode); err != nil {
		return nil, 0, 0, err
	}
	switch m {
	case Separable:
		if !k.separable() {
			return nil, 0, 0, fmt.Errorf("kernels: method separable: the %dx%d kernel has no factors", k.W, k.H)
		}
		return c.separable(dst, pix, h, w, k, mode, b, oh, ow), oh, ow, nil
	case Direct:
		return c.direct(dst, pix, h, w, k, mode, b, oh, ow), oh, ow, nil
	case FFT:
	default:
		return nil, 0, 0, fmt.Errorf("kernels: unknown method %d", m)
	}
	rows := newAxis(h, k.H, oh, mode, b, c.rowSrc)
	cols := newAxis(w, k.W, ow, mode, b, c.colSrc)
	c.rowSrc, c.colSrc = rows.src, cols.src
	p, err := c.plan(rows.n, cols.n)
	if err != nil {
		return nil, 0, 0, err
	}
	spec, err := c.spectrum(p, k)
	if err != nil {
		return nil, 0, 0, err
	}
	h2, cw := p.nh/2, p.nh/2+1
	c.grow(max(h2*p.nw, p.nw*cw, cw*ow))

	// Pack rows 2r and 2r+1 of the extended image as one complex row.
	a := c.buf[0]
	for r := range h2 {
		fillRow(a.re[r*p.nw:(r+1)*p.nw], pix, w, rows.src[2*r], &cols)
		fillRow(a.im[r*p.nw:(r+1)*p.nw], pix, w, rows.src[2*r+1], &cols)
	}
	t := c.forward(p, 0)
	mulSpectrum(t.re[:p.nw*cw], t.im[:p.nw*cw], spec.p.re, spec.p.im)
	c.inverse(p, t, cols, ow)
	return c.unpack(dst, p, rows, oh, ow), oh, ow, nil
}

// fillRow writes row y of the extended image, mapped by the columns' axis.
func fillRow(dst []float32, pix []uint8, w int, y int32, cols *axis) {
	if y < 0 {
		clear(dst)
		return
	}
	row := pix[int(y)*w : int(y)*w+w]
	mapped := func(lo, hi int) {
		for i := lo; i < hi; i++ {
			if x := cols.src[i]; x >= 0 {
				dst[i] = float32(row[x])
			} else {
				dst[i] = 0
			}
		}
	}
	mapped(0, cols.run0)
	run := dst[cols.run0:cols.run1]
	src := row[cols.src[cols.run0]:][:len(run)]
	for i, v := range src {
		run[i] = float32(v)
	}
	mapped(cols.run1, len(dst))
}

// grow makes both buffers at least n long (buffers come back from the
// transforms resliced to what they used; their capacity is what counts).
func (c *Convolver) grow(n int) {
	for i := range c.buf {
		if b := c.buf[i]; cap(b.re) >= n {
			c.buf[i] = plane{b.re[:cap(b.re)], b.im[:cap(b.im)]}
		} else {
			c.buf[i] = plane{make([]float32, n), make([]float32, n)}
		}
	}
}

// other is the buffer that does not hold p.
func (c *Convolver) other(p plane) plane {
	if &p.re[0] == &c.buf[0].re[0] {
		return c.buf[1]
	}
	return c.buf[0]
}

// forward transforms the packed (nh/2)×nw array in c.buf[src] to the
// spectrum, laid out transposed as nw×(nh/2+1), and returns the plane that
// holds it. Values are twice the true spectrum.
func (c *Convolver) forward(p *plan2, src int) plane {
	h2, cw, nw := p.nh/2, p.nh/2+1, p.nw
	in := c.buf[src]
	zr, zi := p.col.Transform(in.re, in.im, c.other(in).re, c.other(in).im, nw, false)
	z := plane{zr[:cw*nw], zi[:cw*nw]} // one more row for X[h2]; grow made room
	// Split the half-length transform into the real-input spectrum, in
	// place: X[k] = (Z[k] + conj Z[j]) - i·W^k·(Z[k] - conj Z[j]), j = h2-k,
	// where Z[h2] is Z[0] (copied to the extra row h2 first).
	row := func(k int) ([]float32, []float32) { return z.re[k*nw : (k+1)*nw], z.im[k*nw : (k+1)*nw] }
	copy(z.re[h2*nw:], z.re[:nw])
	copy(z.im[h2*nw:], z.im[:nw])
	for k := 0; k <= h2/2; k++ {
		j := h2 - k
		kr, ki := row(k)
		jr, ji := row(j)
		pairs(kr, ki, jr, ji, p.split[k])
	}
	t := c.other(z)
	transpose(t.re, cw, z.re, nw, cw, nw)
	transpose(t.im, cw, z.im, nw, cw, nw)
	tr, ti := p.row.Transform(t.re, t.im, z.re, z.im, cw, false)
	return plane{tr, ti}
}

// inverse undoes forward for the columns the output needs: it leaves the
// (nh/2)×ow packed rows of the result in c.buf[0] for unpack.
func (c *Convolver) inverse(p *plan2, t plane, cols axis, ow int) {
	h2, cw, nw := p.nh/2, p.nh/2+1, p.nw
	t.re, t.im = p.row.Transform(t.re, t.im, c.other(t).re, c.other(t).im, cw, true)
	b := c.other(t)
	// Gather output columns cols.lo.. (modulo nw) back to row layout.
	lo := mod(cols.lo, nw)
	for x := 0; x < ow; {
		r := mod(lo+x, nw)
		n := min(ow-x, nw-r)
		transpose(b.re[x:], ow, t.re[r*cw:], cw, n, cw)
		transpose(b.im[x:], ow, t.im[r*cw:], cw, n, cw)
		x += n
	}
	// Merge into the half-length spectrum:
	// Z[k] = (Y[k] + conj Y[j]) + i·W^-k·(Y[k] - conj Y[j]), j = h2-k.
	// Row h2 is only read: Z[h2] is not needed.
	for k := 0; k <= h2/2; k++ {
		j := h2 - k
		kr, ki := b.re[k*ow:(k+1)*ow], b.im[k*ow:(k+1)*ow]
		jr, ji := b.re[j*ow:(j+1)*ow], b.im[j*ow:(j+1)*ow]
		pairs(kr, ki, jr, ji, p.merge[k])
	}
	zr, zi := p.col.Transform(b.re, b.im, t.re, t.im, ow, true)
	c.buf[0], c.buf[1] = plane{zr, zi}, c.other(plane{zr, zi})
}

// unpack reads the output rows out of the packed inverse.
func (c *Convolver) unpack(dst []float32, p *plan2, rows axis, oh, ow int) []float32 {
	if cap(dst) < oh*ow {
		dst = make([]float32, oh*ow)
	}
	dst = dst[:oh*ow]
	z := c.buf[0]
	for y := range oh {
		rho := mod(rows.lo+y, p.nh)
		src := z.re
		if rho%2 == 1 {
			src = z.im
		}
		copy(dst[y*ow:(y+1)*ow], src[(rho/2)*ow:(rho/2+1)*ow])
	}
	return dst
}

func (c *Convolver) plan(nh, nw int) (*plan2, error) {
	if p, ok := c.plans[[2]int{nh, nw}]; ok {
		return p, nil
	}
	col, err := fft.NewPlan(nh / 2)
	if err != nil {
		return nil, err
	}
	row, err := fft.NewPlan(nw)
	if err != nil {
		return nil, err
	}
	p := &plan2{nh: nh, nw: nw, col: col, row: row}
	w := func(k int) (float32, float32) {
		s, c := math.Sincos(-2 * math.Pi * float64(k) / float64(nh))
		return float32(c), float32(s)
	}
	for k := 0; k <= nh/4; k++ {
		kr, ki := w(k)
		jr, ji := w(nh/2 - k)
		p.split = append(p.split, pairTwiddles(-kr, -ki, -jr, -ji))
		p.merge = append(p.merge, pairTwiddles(kr, -ki, jr, -ji))
	}
	if len(c.plans) >= maxCached {
		clear(c.plans)
	}
	c.plans[[2]int{nh, nw}] = p
	return p, nil
}

// spectrum returns k's transform for plan p, scaled so that the inverse
// comes out normalised.
func (c *Convolver) spectrum(p *plan2, k *Kernel) (*spectrum, error) {
	for i := range c.spectra {
		// Equal kernels of different calls (streams) share a spectrum.
		if s := c.spectra[i]; s.nh == p.nh && s.nw == p.nw && (s.k == k || s.k.H == k.H && s.k.W == k.W && slices.Equal(s.k.Data, k.Data)) {
			copy(c.spectra[1:i+1], c.spectra[:i])
			c.spectra[0] = s
			return &c.spectra[0], nil
		}
	}
	h2, cw := p.nh/2, p.nh/2+1
	c.grow(max(h2*p.nw, p.nw*cw))
	a := c.buf[0]
	clear(a.re[:h2*p.nw])
	clear(a.im[:h2*p.nw])
	// Taps beyond the transform size fold onto it: the circular sum is the
	// same, since the image is zero wherever they would alias.
	for y := range k.H {
		r := y % p.nh
		dst := a.re
		if r%2 == 1 {
			dst = a.im
		}
		row := dst[(r/2)*p.nw : (r/2+1)*p.nw]
		for x, v := range k.Data[y*k.W : (y+1)*k.W] {
			row[x%p.nw] += v
		}
	}
	t := c.forward(p, 0)
	s := spectrum{k: k, nh: p.nh, nw: p.nw, p: plane{make([]float32, p.nw*cw), make([]float32, p.nw*cw)}}
	scale := float32(1 / (4 * float64(p.nh) * float64(p.nw)))
	for i := range s.p.re {
		s.p.re[i], s.p.im[i] = t.re[i]*scale, t.im[i]*scale
	}
	if len(c.spectra) < maxCached {
		c.spectra = append(c.spectra, spectrum{})
	}
	copy(c.spectra[1:], c.spectra[:len(c.spectra)-1])
	c.spectra[0] = s
	// Least recently used first out, beyond the byte cap (the newest stays).
	total := 0
	for i, sp := range c.spectra {
		total += 8 * len(sp.p.re)
		if i > 0 && total > maxSpectraBytes {
			clear(c.spectra[i:])
			c.spectra = c.spectra[:i]
			break
		}
	}
	return &c.spectra[0], nil
}
