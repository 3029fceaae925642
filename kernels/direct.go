package kernels

import (
	"math"
	"slices"
)

// The direct methods: Separable (two 1-D passes) and Direct (the plain
// sum). Both work down the output from a ring of the rows the output rows
// read: each image row the outputs need is widened to float32 once,
// extended by the boundary rule along x (ext), and for Separable filtered
// along x into the ring. Their C (direct_c.go) pads rows to a multiple
// of its vectors (stride); the padding's outputs are dropped. Each writes
// dst, which ConvolveBy sized to oh·ow.

// first is the full-convolution index of the first output along an axis
// of a k-tap kernel.
func first(m Mode, k int) int {
	switch m {
	case Same:
		return (k - 1) / 2
	case Valid:
		return k - 1
	}
	return 0
}

// extIndex maps position i of the extended image along an axis of size to
// the image index it holds, or -1 for a zero.
func extIndex(i, size int, b Boundary) int {
	switch {
	case i >= 0 && i < size:
		return i
	case b == Zero:
		return -1
	}
	return Extend(i, size, b)
}

// rowMap maps n extended positions from start along a row of w pixels:
// the image's own run [r0, r1) (m[u] = start+u there) and m elsewhere.
type rowMap struct {
	m      []int32
	r0, r1 int
}

func newRowMap(m []int32, start, n, w int, b Boundary) rowMap {
	m = m[:0]
	for u := range n {
		m = append(m, int32(extIndex(start+u, w, b)))
	}
	r0, r1 := min(max(0, -start), n), min(n, max(0, w-start))
	return rowMap{m: m, r0: r0, r1: max(r0, r1)}
}

// fill widens row to float32 into ext by the map.
func (rm *rowMap) fill(ext []float32, row []uint8) {
	for u := range rm.r0 {
		ext[u] = pixel(row, rm.m[u])
	}
	if rm.r1 > rm.r0 {
		s := int(rm.m[rm.r0])
		widen(ext[rm.r0:rm.r1], row[s:s+rm.r1-rm.r0])
	}
	for u := rm.r1; u < len(rm.m); u++ {
		ext[u] = pixel(row, rm.m[u])
	}
}

func pixel(row []uint8, i int32) float32 {
	if i < 0 {
		return 0
	}
	return float32(row[i])
}

// f32 returns *buf resliced to n, grown if needed.
func f32(buf *[]float32, n int) []float32 {
	if cap(*buf) < n {
		*buf = make([]float32, n)
	}
	*buf = (*buf)[:n]
	return *buf
}

// xPass is the pass along x the separable methods share: row t of the
// image extended along y by the boundary rule (t0+t), widened to float32
// and extended along x (ext), then filtered into a row of the ring.
type xPass struct {
	pix      []uint8
	h, w, t0 int
	b        Boundary
	rm       rowMap
	ext      []float32
}

func (c *Convolver) xPass(pix []uint8, h, w int, k *Kernel, mode Mode, b Boundary, stride int) xPass {
	ne := stride + k.W - 1
	rm := newRowMap(c.colSrc, first(mode, k.W)-k.W+1, ne, w, b)
	c.colSrc = rm.m
	return xPass{pix: pix, h: h, w: w, t0: first(mode, k.H) - k.H + 1, b: b, rm: rm, ext: f32(&c.ext, ne)}
}

// filter writes row t into r by f (out from ext), or zeros where the
// boundary puts none.
func (p *xPass) filter(r []float32, t int, f func(out, ext []float32)) {
	y := extIndex(p.t0+t, p.h, p.b)
	if y < 0 {
		clear(r)
		return
	}
	p.rm.fill(p.ext, p.pix[y*p.w:(y+1)*p.w])
	f(r, p.ext)
}

// separable convolves by k.Col down and k.Row across: a box by running
// sums (boxSums) where they are cheaper, otherwise in C with vectors of
// c.lanes (separableC), or by the Go loops where c.lanes is 0.
func (c *Convolver) separable(dst []float32, pix []uint8, h, w int, k *Kernel, mode Mode, b Boundary, oh, ow int) []float32 {
	if _, sums := sepCost(costModel(), k, oh); sums {
		return c.boxSums(dst, pix, h, w, k, mode, b, oh, ow)
	}
	if c.lanes > 0 && (k.H+16)*(ow+32) <= math.MaxInt32 && oh+k.H <= math.MaxInt32 && w <= math.MaxInt32 { // C ints: ring offsets (nr·pitch), rows, columns
		return c.separableC(c.lanes, dst, pix, h, w, k, mode, b, oh, ow)
	}
	kh := k.H
	stride := ow
	xp := c.xPass(pix, h, w, k, mode, b, stride)
	// Output rows go in pairs, which read kh + 1 filtered rows.
	nr := kh + 1
	ring := f32(&c.ring, nr*stride)
	c.rowTaps = reversed(c.rowTaps, k.Row)
	c.colTaps = reversed(c.colTaps, k.Col)
	rowTaps := func(out, ext []float32) { taps(out, ext, c.rowTaps) }
	if cap(c.rows) < nr {
		c.rows = make([][]float32, nr)
	}
	rows := c.rows[:nr]
	t := 0 // the next filtered row
	for oy := 0; oy < oh; oy += 2 {
		pair := oy+1 < oh
		last := oy + kh - 1
		if pair {
			last++
		}
		for ; t <= last; t++ {
			xp.filter(ring[(t%nr)*stride:][:stride], t, rowTaps)
		}
		for i := range nr {
			rows[i] = ring[((oy+i)%nr)*stride:][:stride]
		}
		sumRows(dst[oy*ow:(oy+1)*ow], rows[:kh], c.colTaps)
		if pair {
			sumRows(dst[(oy+1)*ow:(oy+2)*ow], rows[1:], c.colTaps)
		}
	}
	return dst
}

// reversed returns v reversed in dst's memory: tap j of the result
// multiplies the input j places on.
func reversed(dst, v []float32) []float32 {
	dst = append(dst[:0], v...)
	slices.Reverse(dst)
	return dst
}

// box says whether k is a box of at most boxMaxTaps: every tap of each
// factor the same, so that its passes go by running sums (boxSums).
func (k *Kernel) box() bool {
	if !k.separable() || k.H*k.W > boxMaxTaps {
		return false
	}
	for _, f := range [][]float32{k.Col, k.Row} {
		for _, v := range f {
			if v != f[0] {
				return false
			}
		}
	}
	return true
}

// boxMaxTaps bounds a box's taps (181 a side) so that every running sum
// of 8-bit pixels, up to (kh+1)·kw·255 ≤ 2·kh·kw·255, is an integer
// float32 holds exactly (2^24).
const boxMaxTaps = 1 << 24 / 255 / 2

// boxSums is separable for a box: along x each row's running sum (the
// window's sum, then one pixel in and one out per step), down y the
// running sum of those rows (one row in and one out per output row), all
// of them integers held exactly, times the box's value once at the end:
// about the same time whatever the box's size.
func (c *Convolver) boxSums(dst []float32, pix []uint8, h, w int, k *Kernel, mode Mode, b Boundary, oh, ow int) []float32 {
	kh, kw := k.H, k.W
	stride := (ow + 7) &^ 7
	xp := c.xPass(pix, h, w, k, mode, b, stride)
	// The ring holds the kh row sums an output row reads and the one that
	// leaves as the next comes in; then the running sum down y.
	nr := kh + 1
	ring := f32(&c.ring, (nr+1)*stride)
	acc := ring[nr*stride:]
	clear(acc)
	// The scale as a vector from memory (a broadcast scalar would mix SSE
	// and AVX code).
	var scale [8]float32
	for i := range scale {
		scale[i] = float32(float64(k.Col[0]) * float64(k.Row[0]))
	}
	sums := func(out, ext []float32) { boxRow(out, ext, kw) }
	rowSum := func(t int) []float32 {
		r := ring[(t%nr)*stride:][:stride]
		xp.filter(r, t, sums)
		return r
	}
	for t := range kh - 1 {
		slide(nil, acc, rowSum(t), nil, nil)
	}
	for oy := range oh {
		// Row oy+kh-1 in, oy-1 (none for the first) out.
		var out []float32
		if oy > 0 {
			out = ring[((oy-1)%nr)*stride:][:stride]
		}
		slide(dst[oy*ow:(oy+1)*ow], acc, rowSum(oy+kh-1), out, scale[:])
	}
	return dst
}

// boxRowScalar: out[x] = Σ_{j<k} ext[x+j] for ext of integers (boxSums').
func boxRowScalar(out, ext []float32, k int) {
	ext = ext[:len(out)+k-1]
	var s int32
	for _, v := range ext[:k] {
		s += int32(v)
	}
	out[0] = float32(s)
	in, gone := ext[k:], ext[:len(out)-1]
	for x := range gone {
		s += int32(in[x]) - int32(gone[x])
		out[x+1] = float32(s)
	}
}

// slideScalar: acc += in - out (out nil: nothing leaves), then dst =
// acc·scale[0] (dst no longer than acc; scale holds the value 8 times).
func slideScalar(dst, acc, in, out, scale []float32) {
	if out == nil {
		for i, v := range in[:len(acc)] {
			acc[i] += v
		}
	} else {
		out = out[:len(acc)]
		for i, v := range in[:len(acc)] {
			acc[i] += v - out[i]
		}
	}
	for i := range dst {
		dst[i] = acc[i] * scale[0]
	}
}

// direct convolves by the plain sum over k's taps. Rows of zeros (the
// zero boundary above and below the image) are skipped.
func (c *Convolver) direct(dst []float32, pix []uint8, h, w int, k *Kernel, mode Mode, b Boundary, oh, ow int) []float32 {
	if c.lanes > 0 && (k.H+1)*(ow+k.W+48) <= math.MaxInt32 && 4*(k.H+1)*k.W <= math.MaxInt32 && oh+k.H <= math.MaxInt32 && w <= math.MaxInt32 { // C ints: ring offsets ((kh+1)·pitch), terms, rows, columns
		return c.directC(c.lanes, dst, pix, h, w, k, mode, b, oh, ow)
	}
	kh, kw := k.H, k.W
	stride := ow
	ne := stride + kw - 1
	rm := newRowMap(c.colSrc, first(mode, kw)-kw+1, ne, w, b)
	c.colSrc = rm.m
	ring := f32(&c.ring, kh*ne)
	// Tap (i, j) multiplies ring row i of the output's kh at offset j:
	// the kernel reversed in both axes, row by row.
	c.rowTaps = reversed(c.rowTaps, k.Data)
	if cap(c.rows) < kh {
		c.rows = make([][]float32, kh)
	}
	rows, coef := c.rows[:0], c.coefs[:0]
	zero := c.zeroRows(kh)
	t0 := first(mode, kh) - kh + 1
	for t := range oh + kh - 1 {
		y := extIndex(t0+t, h, b)
		zero[t%kh] = y < 0
		if y >= 0 {
			rm.fill(ring[(t%kh)*ne:][:ne], pix[y*w:(y+1)*w])
		}
		oy := t - kh + 1
		if oy < 0 {
			continue
		}
		rows, coef = rows[:0], coef[:0]
		for i := range kh {
			if r := (oy + i) % kh; !zero[r] {
				rows = append(rows, ring[r*ne:][:ne])
				coef = append(coef, c.rowTaps[i*kw:][:kw])
			}
		}
		out := dst[oy*ow : (oy+1)*ow]
		if len(rows) == 0 {
			clear(out)
			continue
		}
		sumTaps(out, rows, coef)
	}
	c.coefs = coef[:0]
	return dst
}

func (c *Convolver) zeroRows(n int) []bool {
	if cap(c.zero) < n {
		c.zero = make([]bool, n)
	}
	return c.zero[:n]
}

// The Go loops of the direct methods; direct_c.go has the C ones.

// taps: out[x] = Σ_j coef[j]·ext[x+j].
func taps(out, ext, coef []float32) {
	for x := range out {
		var s float32
		for j, c := range coef {
			s += c * ext[x+j]
		}
		out[x] = s
	}
}

// sumRows: out[x] = Σ_i coef[i]·rows[i][x].
func sumRows(out []float32, rows [][]float32, coef []float32) {
	for x := range out {
		var s float32
		for i, r := range rows {
			s += coef[i] * r[x]
		}
		out[x] = s
	}
}

// sumTaps: out[x] = Σ_i Σ_j coef[i][j]·rows[i][x+j].
func sumTaps(out []float32, rows [][]float32, coef [][]float32) {
	for x := range out {
		var s float32
		for i, r := range rows {
			for j, c := range coef[i] {
				s += c * r[x+j]
			}
		}
		out[x] = s
	}
}

func widenScalar(dst []float32, src []uint8) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] = float32(v)
	}
}

// statsScalar is Stats in four interleaved sums (not one chain of
// dependent adds).
func statsScalar(v []float32) (lo, hi, mean, std float64) {
	if len(v) == 0 {
		return math.Inf(1), math.Inf(-1), math.NaN(), math.NaN()
	}
	lo, hi = math.Inf(1), math.Inf(-1)
	var s [4]float64
	n4 := len(v) &^ 3
	// Comparisons, not min and max, which also order NaNs and zeros'
	// signs: convolution outputs are finite.
	for i := 0; i < n4; i += 4 {
		for k, x := range v[i : i+4] {
			f := float64(x)
			if f < lo {
				lo = f
			}
			if f > hi {
				hi = f
			}
			s[k] += f
		}
	}
	for _, x := range v[n4:] {
		f := float64(x)
		if f < lo {
			lo = f
		}
		if f > hi {
			hi = f
		}
		s[0] += f
	}
	mean = (s[0] + s[1] + s[2] + s[3]) / float64(len(v))
	s = [4]float64{}
	for i := 0; i < n4; i += 4 {
		for k, x := range v[i : i+4] {
			d := float64(x) - mean
			s[k] += d * d
		}
	}
	for _, x := range v[n4:] {
		d := float64(x) - mean
		s[0] += d * d
	}
	return lo, hi, mean, math.Sqrt((s[0] + s[1] + s[2] + s[3]) / float64(len(v)))
}
