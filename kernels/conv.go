package kernels

import (
	"errors"
	"fmt"
	"math"
	"runtime"
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
	return withRun(axis{lo: lo, out: out, n: len(src), src: src})
}

// tileAxis is the axis of a tile of out outputs from output o0 on, in a
// transform of length n: the tile is convolved as mode Valid convolves
// its own input, the extended samples from full-convolution index
// lo+o0-k+1 (lo: the whole output's first, from Layout) on.
func tileAxis(size, k, lo, o0, out, n int, b Boundary, src []int32) axis {
	src = slices.Grow(src[:0], n)
	for i := range n {
		v := int32(-1)
		if m := lo + o0 - k + 1 + i; i >= out+k-1 {
		} else if b != Zero {
			v = int32(Extend(m, size, b))
		} else if m >= 0 && m < size {
			v = int32(m)
		}
		src = append(src, v)
	}
	return withRun(axis{lo: k - 1, out: out, n: n, src: src})
}

// withRun sets a's longest run of consecutive image indices.
func withRun(a axis) axis {
	src, n := a.src, a.n
	for i := 0; i < n; {
		j := i + 1
		for src[i] >= 0 && j < n && src[j] == src[j-1]+1 {
			j++
		}
		if j-i > a.run1-a.run0 && src[i] >= 0 {
			a.run0, a.run1 = i, j
		}
		i = j
	}
	return a
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
	src = slices.Grow(src[:0], n)
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
	buf     [2]plane // the 2D arrays
	strip   [2]plane // one strip of columns and the transforms' scratch

	// The direct methods' scratch (direct.go).
	ext, ring        []float32
	rowTaps, colTaps []float32
	rows             [][]float32
	coefs            [][]float32
	zero             []bool
	cMap             []int32   // the C loops' row maps, offsets and taps
	tw               []float32 // separableC's transposed rows
	lanes            int       // the C loops' vector width (cLanes), or 0 for the Go loops
}

// plane is a complex array held as real and imaginary parts.
type plane struct{ re, im []float32 }

// plan2 is a 2D real transform of nh×nw (both even).
type plan2 struct {
	nh, nw   int
	col, row *fft.Plan // lengths nh/2 and nw
	// Strip widths: columns transformed at a time down the packed rows
	// (colStrip) and along the transposed ones (rowStrip).
	colStrip, rowStrip int
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
	return &Convolver{plans: make(map[[2]int]*plan2), lanes: cLanes()}
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
	dst = f32(&dst, oh*ow)
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
	if err := c.fftTiled(dst, pix, h, w, k, mode, b, oh, ow, fftTiles(h, w, k, oh, ow, mode, b)); err != nil {
		return nil, 0, 0, err
	}
	return dst, oh, ow, nil
}

// fftTiled convolves by FFT as g says: in tiles, each transformed as
// mode Valid transforms its own input (a last tile that would run past
// the output moved back to end with it, recomputing what it overlaps), or
// whole.
func (c *Convolver) fftTiled(dst []float32, pix []uint8, h, w int, k *Kernel, mode Mode, b Boundary, oh, ow int, g fftGeometry) error {
	var rows, cols axis
	th, tw := g.th, g.tw
	rowLo, colLo := first(mode, k.H), first(mode, k.W)
	for ty := 0; ty < oh; ty += th {
		y0 := min(ty, oh-th)
		for tx := 0; tx < ow; tx += tw {
			x0 := min(tx, ow-tw)
			if g.tiled {
				rows = tileAxis(h, k.H, rowLo, y0, th, g.nh, b, c.rowSrc)
				cols = tileAxis(w, k.W, colLo, x0, tw, g.nw, b, c.colSrc)
			} else {
				rows = newAxis(h, k.H, oh, mode, b, c.rowSrc)
				cols = newAxis(w, k.W, ow, mode, b, c.colSrc)
			}
			c.rowSrc, c.colSrc = rows.src, cols.src
			p, err := c.plan(rows.n, cols.n)
			if err != nil {
				return err
			}
			spec, err := c.spectrum(p, k)
			if err != nil {
				return err
			}
			c.grow(p, tw)
			c.columnsForward(p, source{pix: pix, w: w, rows: &rows, cols: &cols})
			c.rowsConvolve(p, spec, cols, tw)
			c.columnsInverse(dst[y0*ow+x0:], ow, p, rows, th, tw)
		}
	}
	return nil
}

// fftGeometry is how an FFT convolution goes: in tiles of th×tw outputs
// by transforms of nh×nw, or (tiled false) over the whole output by the
// whole image's transform.
type fftGeometry struct {
	th, tw, nh, nw int
	tiled          bool
}

// fftTiles is an FFT convolution's geometry: the whole image while its
// transposed spectrum (nw×(nh/2+1) complex) fits tileBytes and all it
// holds maxFFTBytes; otherwise the tiles that fit both with the fewest
// transform operations in all, area·log2(area) summed over the tiles and
// tileCost a tile, or, where none fits (a kernel of hundreds of taps),
// the tiles that hold the fewest bytes. Tiles cost their overlap (k-1
// samples per axis) and any last tile's recomputed outputs, but their
// transforms stay in cache: on 1920×1080 with a 31×31 kernel, 8 tiles of
// 576×512 transforms took 6.4 ms where the whole 1152×1944 took 8.9
// (BENCHMARKS.md).
func fftTiles(h, w int, k *Kernel, oh, ow int, mode Mode, b Boundary) fftGeometry {
	nh, nw := fftLength(h, k.H, oh, mode, b), fftLength(w, k.W, ow, mode, b)
	if spectrumBytes(nh, nw) <= tileBytes && fftBytes(nh, nw, ow, fft.PlanBytes(nh/2), fft.PlanBytes(nw)) <= maxFFTBytes {
		return fftGeometry{oh, ow, nh, nw, false}
	}
	var g fftGeometry
	var hs, ws [maxTileLens]tileLen
	rowLens, colLens := tileLens(k.H, oh, true, &hs), tileLens(k.W, ow, false, &ws)
	best, fits := math.Inf(1), false
	for _, lh := range rowLens {
		for _, lw := range colLens {
			bytes := fftBytes(lh.n, lw.n, lw.out, lh.plan, lw.plan)
			area := float64(lh.tiles*lh.n) * float64(lw.tiles*lw.n)
			cost := area*(lh.log2+lw.log2) + tileCost*float64(lh.tiles*lw.tiles)
			if spectrumBytes(lh.n, lw.n) > tileBytes || bytes > maxFFTBytes {
				if fits {
					continue
				}
				cost = float64(bytes) // none fits yet: the fewest bytes
			} else if !fits {
				fits, best = true, math.Inf(1)
			}
			if cost < best {
				best, g = cost, fftGeometry{lh.out, lw.out, lh.n, lw.n, true}
			}
		}
	}
	return g
}

// tileBytes bounds a tile's transposed spectrum, about what stays in a
// core's cache (L2) beside the strips; maxFFTBytes all the transform holds
// (fftBytes: a thin image's long transform is mostly plans and strips);
// tileCost is a tile's own cost (its plan and spectrum found, its strips
// begun), in area·log2(area) units, and minTile the shortest transform a
// tile takes.
const (
	tileBytes   = 3 << 19
	maxFFTBytes = 7 << 20
	tileCost    = 1.2e5
	minTile     = 64
)

func spectrumBytes(nh, nw int) int { return 8 * nw * (nh/2 + 1) }

// tileLen is one axis of a tiling: transforms of length n, out outputs
// each, tiles of them.
type tileLen struct {
	n, out, tiles int
	log2          float64 // of n
	plan          int     // bytes of the axis' plan (fft.PlanBytes)
}

// maxTileLens bounds the tilings of one axis fftTiles weighs: the even
// lengths whose halves are fast, from 2k-1 up to the axis' length, about
// 200 for 100,000 samples.
const maxTileLens = 512

// tileLens lists an axis' tilings (nextTileLen's) in ls, rows (whose
// plan is half the length: pairs of rows go as one) or columns; where
// they would overflow it, the whole axis in one tile stays last.
func tileLens(k, out int, rows bool, ls *[maxTileLens]tileLen) []tileLen {
	n := 0
	for l, ok := nextTileLen(tileLen{}, k, out); ok; l, ok = nextTileLen(l, k, out) {
		l.log2 = math.Log2(float64(l.n))
		if l.plan = fft.PlanBytes(l.n); rows {
			l.plan = fft.PlanBytes(l.n / 2)
		}
		if n == len(ls) {
			n-- // keep the last: the whole axis
		}
		ls[n] = l
		n++
	}
	return ls[:n]
}

// nextTileLen is the tiling of out outputs with a k-tap kernel after l
// (the first for l zero): transform lengths from the shortest that gives
// k outputs up, then the whole axis in one tile, the last (ok false after
// it).
func nextTileLen(l tileLen, k, out int) (_ tileLen, ok bool) {
	if l.tiles == 1 {
		return l, false
	}
	n := tileLength(max(2*k-1, minTile))
	if l.n > 0 {
		n = tileLength(l.n + 1)
	}
	if t := n - k + 1; t < out {
		return tileLen{n: n, out: t, tiles: (out + t - 1) / t}, true
	}
	return tileLen{n: tileLength(out + k - 1), out: out, tiles: 1}, true
}

// FFTBytes is what a Convolver holds, beyond the image and the output,
// while it convolves an h×w image with k by FFT (fftBytes, for the
// geometry fftTiles takes): at most maxFFTBytes but for kernels too large
// for any tile within it (hundreds of taps a side).
func FFTBytes(h, w int, k *Kernel, mode Mode, b Boundary) int64 {
	oh, ow, err := OutputSize(h, w, k, mode)
	if err != nil || oh*ow == 0 {
		return 0
	}
	g := fftTiles(h, w, k, oh, ow, mode, b)
	return int64(fftBytes(g.nh, g.nw, g.tw, fft.PlanBytes(g.nh/2), fft.PlanBytes(g.nw)))
}

// fftBytes is what an nh×nw transform with tw output columns holds: its
// planes and strips, the kernel's spectrum and the array it is computed
// from, the plans' twiddles (planH and planW, the split and merge's too)
// and the axes.
func fftBytes(nh, nw, tw, planH, planW int) int {
	cw := nh/2 + 1
	planes := 2 * 2 * 4 * max(nw*cw, cw*tw)
	strips := 2 * 2 * 4 * max(cw*stripWidth(cw, nh/2), nw*stripWidth(nw, nw))
	plans := planH + planW + 2*(nh/4+1)*32*4
	return planes + strips + spectrumBytes(nh, nw) + 8*(nh/2)*nw + plans + 4*(nh+nw)
}

// tileLength is the transform length for n extended samples: even, its
// half a fast length.
func tileLength(n int) int { return 2 * fft.NextFastLen((max(n, 2)+1)/2) }

// source is what columnsForward transforms: the image (pix, w) extended
// by the axes, or, where z is set, a packed (nh/2)×nw array.
type source struct {
	pix        []uint8
	w          int
	rows, cols *axis
	z          plane
}

// fill writes packed row r's columns x0..x0+len(dst) to dst: row r/2 of
// z, its real part for even r, or row r of the extended image.
func (src source) fill(dst []float32, r, x0, nw int) {
	if src.z.re != nil {
		from := src.z.re
		if r%2 == 1 {
			from = src.z.im
		}
		copy(dst, from[(r/2)*nw+x0:])
		return
	}
	y := src.rows.src[r]
	if y < 0 {
		clear(dst)
		return
	}
	row := src.pix[int(y)*src.w : int(y)*src.w+src.w]
	cols := src.cols
	mapped := func(lo, hi int) {
		for i := lo; i < hi; i++ {
			if x := cols.src[i]; x >= 0 {
				dst[i-x0] = float32(row[x])
			} else {
				dst[i-x0] = 0
			}
		}
	}
	x1 := x0 + len(dst)
	lo, hi := max(x0, cols.run0), min(x1, cols.run1)
	if lo >= hi {
		mapped(x0, x1)
		return
	}
	mapped(x0, lo)
	widen(dst[lo-x0:hi-x0], row[cols.src[lo]:][:hi-lo])
	mapped(hi, x1)
}

// touch reads a byte of every cache line the image rows' columns x0..x0+n
// (of the direct run) span before fill reads them: the reads do not
// depend on each other, so many are in flight at once, where fill's
// short runs down the image, each behind the last, stall on every line
// (widen was 16% of a 1920×1080 FFT convolution; BENCHMARKS.md).
func (src source) touch(x0, n int) {
	if src.z.re != nil {
		return
	}
	cols := src.cols
	lo, hi := max(x0, cols.run0), min(x0+n, cols.run1)
	if lo >= hi {
		return
	}
	a, b := int(cols.src[lo]), int(cols.src[hi-1])
	var sum uint8
	for _, y := range src.rows.src {
		if y >= 0 {
			row := src.pix[int(y)*src.w:][:b+1]
			for x := a; x <= b; x += 64 {
				sum += row[x]
			}
			sum += row[b]
		}
	}
	runtime.KeepAlive(sum)
}

// grow makes the 2D arrays and the strip buffers big enough for plan p
// and ow output columns (buffers come back from the transforms resliced
// to what they used; their capacity is what counts).
func (c *Convolver) grow(p *plan2, ow int) {
	cw := p.nh/2 + 1
	growPlanes(c.buf[:], max(p.nw*cw, cw*ow))
	growPlanes(c.strip[:], max(cw*p.colStrip, p.nw*p.rowStrip))
}

func growPlanes(ps []plane, n int) {
	for i, b := range ps {
		if cap(b.re) >= n {
			ps[i] = plane{b.re[:cap(b.re)], b.im[:cap(b.im)]}
		} else {
			ps[i] = plane{make([]float32, n), make([]float32, n)}
		}
	}
}

// The 2D transform works on strips of columns narrow enough for a strip
// and the transform's scratch to stay in cache, and keeps the arrays
// between its passes by strips, each strip's values contiguous, so that
// the next pass reads a strip as one block: the transposed spectrum,
// nw×(nh/2+1), in c.buf[1] by strips of rowStrip of its columns (strip
// k0.. at nw·k0, nw×width); the output's columns, (nh/2+1)×ow, in
// c.buf[0] by strips of colStrip (strip x0.. at (nh/2+1)·x0, (nh/2+1)×width).
//
// stripWidth is the strip width for a transform of length n whose planes
// hold rows values a column (n, or n/2+1 for the split spectrum): four
// planes of rows×width float32 in about 512 KiB, a multiple of 8 from 8
// to 64, and an odd one where 8 divides n: for all but one of such
// lengths measured (200 to 4000), the even width 8 more took longer a
// column, up to 2.3× (BENCHMARKS.md).
func stripWidth(rows, n int) int {
	w := min(64, max(8, (512<<10)/(16*rows)&^7))
	if n%8 == 0 && w%16 == 0 {
		w -= 8
	}
	return w
}

// columnsForward transforms the packed (nh/2)×nw rows of src down their
// columns, a strip of colStrip at a time, splits them into the real-input
// spectrum's nh/2+1 rows and writes that transposed to c.buf[1], by
// strips. Values are twice the true spectrum.
func (c *Convolver) columnsForward(p *plan2, src source) {
	h2, cw, nw := p.nh/2, p.nh/2+1, p.nw
	t := c.buf[1]
	for x0 := 0; x0 < nw; x0 += p.colStrip {
		n := min(p.colStrip, nw-x0)
		s, o := c.strip[0], c.strip[1]
		src.touch(x0, n)
		for r := range h2 {
			src.fill(s.re[r*n:(r+1)*n], 2*r, x0, nw)
			src.fill(s.im[r*n:(r+1)*n], 2*r+1, x0, nw)
		}
		zr, zi := p.col.Transform(s.re, s.im, o.re, o.im, n, false)
		zr, zi = zr[:cw*n], zi[:cw*n] // one more row for X[h2]; the strips have room
		// Split the half-length transform into the real-input spectrum, in
		// place: X[k] = (Z[k] + conj Z[j]) - i·W^k·(Z[k] - conj Z[j]),
		// j = h2-k, where Z[h2] is Z[0] (copied to the extra row h2 first).
		copy(zr[h2*n:], zr[:n])
		copy(zi[h2*n:], zi[:n])
		for k := 0; k <= h2/2; k++ {
			j := h2 - k
			pairs(zr[k*n:(k+1)*n], zi[k*n:(k+1)*n], zr[j*n:(j+1)*n], zi[j*n:(j+1)*n], p.split[k])
		}
		for k0 := 0; k0 < cw; k0 += p.rowStrip {
			m := min(p.rowStrip, cw-k0)
			at := nw*k0 + x0*m
			transpose(t.re[at:], m, zr[k0*n:], n, m, n)
			transpose(t.im[at:], m, zi[k0*n:], n, m, n)
		}
	}
}

// rowsConvolve takes the transposed spectrum in c.buf[1] a strip at a
// time through the transform along its columns, the product with the
// kernel's spectrum and the inverse, and writes the output's columns
// (cols.lo.. modulo nw) back to row layout in c.buf[0], by strips.
func (c *Convolver) rowsConvolve(p *plan2, spec *spectrum, cols axis, ow int) {
	cw, nw := p.nh/2+1, p.nw
	t, b := c.buf[1], c.buf[0]
	lo := mod(cols.lo, nw)
	for k0 := 0; k0 < cw; k0 += p.rowStrip {
		n := min(p.rowStrip, cw-k0)
		blk := plane{t.re[nw*k0 : nw*(k0+n)], t.im[nw*k0 : nw*(k0+n)]}
		s := c.strip[0]
		tr, ti := p.row.Transform(blk.re, blk.im, s.re, s.im, n, false)
		mulSpectrum(tr, ti, spec.p.re[nw*k0:nw*(k0+n)], spec.p.im[nw*k0:nw*(k0+n)])
		if &tr[0] == &s.re[0] {
			s = blk
		}
		tr, ti = p.row.Transform(tr, ti, s.re, s.im, n, true)
		for x := 0; x < ow; {
			r := mod(lo+x, nw)
			x0 := x - x%p.colStrip // the output's strip that holds column x
			w := min(p.colStrip, ow-x0)
			m := min(ow-x, nw-r, x0+w-x)
			at := cw*x0 + k0*w + x - x0
			transpose(b.re[at:], w, tr[r*n:], n, m, n)
			transpose(b.im[at:], w, ti[r*n:], n, m, n)
			x += m
		}
	}
}

// columnsInverse merges each strip of the (nh/2+1)×ow rows in c.buf[0]
// into the half-length spectrum, Z[k] = (Y[k] + conj Y[j]) + i·W^-k·(Y[k]
// - conj Y[j]), j = h2-k, transforms it back down its columns, and
// unpacks the oh×ow output into dst, its rows ds apart.
func (c *Convolver) columnsInverse(dst []float32, ds int, p *plan2, rows axis, oh, ow int) {
	h2, cw := p.nh/2, p.nh/2+1
	b := c.buf[0]
	for x0 := 0; x0 < ow; x0 += p.colStrip {
		n := min(p.colStrip, ow-x0)
		br, bi := b.re[cw*x0:cw*(x0+n)], b.im[cw*x0:cw*(x0+n)]
		for k := 0; k <= h2/2; k++ { // row h2 is only read
			j := h2 - k
			pairs(br[k*n:(k+1)*n], bi[k*n:(k+1)*n], br[j*n:(j+1)*n], bi[j*n:(j+1)*n], p.merge[k])
		}
		s := c.strip[0]
		zr, zi := p.col.Transform(br, bi, s.re, s.im, n, true)
		// Output row y is packed row rho/2, rho = lo+y modulo nh, in the
		// real part for even rho: rows of one parity step by 2 in y and by
		// 1 in the strip, up to where rho wraps.
		for par, src := range [2][]float32{zr, zi} {
			for y := mod(par-rows.lo, 2); y < oh; {
				rho := mod(rows.lo+y, p.nh)
				m := min((oh-y+1)/2, (p.nh-rho+1)/2)
				copyBlock(dst[y*ds+x0:], 2*ds, src[(rho/2)*n:], n, m, n)
				y += 2 * m
			}
		}
	}
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
	p := &plan2{nh: nh, nw: nw, col: col, row: row, colStrip: stripWidth(nh/2+1, nh/2), rowStrip: stripWidth(nw, nw)}
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
	c.grow(p, 0)
	z := plane{make([]float32, h2*p.nw), make([]float32, h2*p.nw)}
	// Taps beyond the transform size fold onto it: the circular sum is the
	// same, since the image is zero wherever they would alias.
	for y := range k.H {
		r := y % p.nh
		dst := z.re
		if r%2 == 1 {
			dst = z.im
		}
		row := dst[(r/2)*p.nw : (r/2+1)*p.nw]
		for x, v := range k.Data[y*k.W : (y+1)*k.W] {
			row[x%p.nw] += v
		}
	}
	c.columnsForward(p, source{z: z})
	// Kept as rowsConvolve reads it: by strips of rowStrip columns of the
	// transposed spectrum, each nw×width.
	s := spectrum{k: k, nh: p.nh, nw: p.nw, p: plane{make([]float32, p.nw*cw), make([]float32, p.nw*cw)}}
	scale := float32(1 / (4 * float64(p.nh) * float64(p.nw)))
	t := c.buf[1]
	for k0 := 0; k0 < cw; k0 += p.rowStrip {
		n := min(p.rowStrip, cw-k0)
		tr, ti := p.row.Transform(t.re[p.nw*k0:], t.im[p.nw*k0:], c.strip[0].re, c.strip[0].im, n, false)
		sr, si := s.p.re[p.nw*k0:p.nw*(k0+n)], s.p.im[p.nw*k0:p.nw*(k0+n)]
		for i := range sr {
			sr[i], si[i] = tr[i]*scale, ti[i]*scale
		}
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
