package blob

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// Params are blob_log's parameters (see doc.go).
type Params struct {
	MinSigma, MaxSigma float64
	NumSigma           int
	Threshold          float64
	Overlap            float64
	LogScale           bool
	ExcludeBorder      bool
}

// DefaultParams returns blob_log's defaults.
func DefaultParams() Params {
	return Params{MinSigma: 1, MaxSigma: 50, NumSigma: 10, Threshold: 0.2, Overlap: 0.5}
}

// MaxNumSigma is the largest NumSigma Validate accepts.
const MaxNumSigma = 100

// Validate reports the first parameter that is out of range.
func (p Params) Validate() error {
	switch {
	case !(p.MinSigma > 0) || math.IsInf(p.MinSigma, 0):
		return fmt.Errorf("min_sigma %v: want > 0 and finite", p.MinSigma)
	case math.IsNaN(p.MaxSigma) || math.IsInf(p.MaxSigma, 0):
		return fmt.Errorf("max_sigma %v: want finite", p.MaxSigma)
	case p.MaxSigma < p.MinSigma:
		return fmt.Errorf("max_sigma below min_sigma (%v < %v)", p.MaxSigma, p.MinSigma)
	case p.NumSigma < 1 || p.NumSigma > MaxNumSigma:
		return fmt.Errorf("num_sigma %d: want 1..%d", p.NumSigma, MaxNumSigma)
	case !(p.Threshold >= 0) || math.IsInf(p.Threshold, 0):
		return fmt.Errorf("threshold %v: want >= 0 and finite", p.Threshold)
	case !(p.Overlap >= 0 && p.Overlap <= 1):
		return fmt.Errorf("overlap %v: want in [0, 1]", p.Overlap)
	}
	return nil
}

// Blob is one detected blob: centre row Y, column X, and the sigma of the
// scale that detected it (radius is about sqrt(2)*Sigma).
type Blob struct{ Y, X, Sigma float32 }

// ErrSize reports pixel data that does not match h*w.
var ErrSize = errors.New("blob: bad image size")

// Peak is a scale-space local maximum: response V at row Y, column X of
// scale K.
type Peak struct {
	V       float64
	Y, X, K int32
}

// Detector holds scratch buffers reused between calls. It is not safe for
// concurrent use: give each worker goroutine its own.
type Detector struct {
	pix    []uint8      // the image of the current Detect (not kept after it)
	win    rowWindow    // the image rows (0..1) a direct scale reads
	layer  [3][]float64 // rolling LoG layers k-1, k, k+1 (index k%3)
	ext    []float64    // x-pass line buffers
	rows   [][]float64  // the rows one output row of a direct scale reads
	coef   []float64    // its kernels, for the vector sums (ySum, xSum)
	kern   []kernel     // 1D kernels per scale
	sigmas []float64
	rdir   int // the largest radius of this Detect's direct scales
	peaks  []Peak
	pr     pruner
	fft    fftConv
	// Mem is what the peaks and their pairs may take (Memory); Detect
	// uses it up.
	Mem Memory
}

// NewDetector returns a Detector with empty buffers; they grow on first use.
func NewDetector() *Detector { return &Detector{} }

// Detect finds blobs in an 8-bit grayscale image (row-major, h*w pixels),
// scaled to 0..1 as skimage's img_as_float does. Blobs come in blob_log's
// order (strongest response first).
func (d *Detector) Detect(pix []uint8, h, w int, p Params) ([]Blob, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("blob: %w", err)
	}
	if h < 1 || w < 1 || len(pix) != h*w {
		return nil, fmt.Errorf("%w: %d pixels for %dx%d", ErrSize, len(pix), h, w)
	}
	d.prepare(pix, h, w, p)
	defer d.release()
	ns := len(d.sigmas)
	uniform, first := true, 0.0
	for k := 0; k <= ns; k++ {
		if k < ns {
			cur := d.layer[k%3]
			d.log(cur, h, w, k)
			if k == 0 {
				first = cur[0]
			}
			if uniform {
				uniform = allEqual(cur, first)
			}
		}
		if k >= 1 {
			if err := d.findPeaks(h, w, k-1, ns, p); err != nil {
				return nil, err
			}
		}
	}
	if uniform && h*w*ns > 1 { // skimage: no peak in a constant cube, unless it is one value
		return []Blob{}, nil
	}
	SortPeaks(d.peaks)
	return d.pr.prune(d.peaks, d.sigmas, p, &d.Mem)
}

// SortPeaks puts peaks in peak_local_max's order: highest response first,
// ties in (row, column, scale) order.
func SortPeaks(peaks []Peak) {
	slices.SortFunc(peaks, func(a, b Peak) int {
		switch {
		case a.V > b.V:
			return -1
		case a.V < b.V:
			return 1
		case a.Y != b.Y:
			return int(a.Y - b.Y)
		case a.X != b.X:
			return int(a.X - b.X)
		}
		return int(a.K - b.K)
	})
}

// prepare sets up the buffers and the scales of one Detect.
func (d *Detector) prepare(pix []uint8, h, w int, p Params) {
	d.pix = pix
	d.sigmas = sigmaList(d.sigmas[:0], p)
	d.peaks = d.peaks[:0]
	rmax, rdir := radii(d.sigmas)
	d.fft.reset(rmax)
	d.rdir = rdir
	n := d.layerCap(h, w)
	for i := range d.layer {
		d.layer[i] = growCap(d.layer[i], h*w, n)
	}
}

// radii is the largest kernel radius of the scales (int(4σ+0.5), as
// kernels makes them), and the largest below fftMinRadius, of the scales
// that go by direct sums (0 for none).
func radii(sigmas []float64) (rmax, rdir int) {
	for _, s := range sigmas {
		r := int(4*s + 0.5)
		rmax = max(rmax, r)
		if r < fftMinRadius {
			rdir = max(rdir, r)
		}
	}
	return rmax, rdir
}

// layerCap is the capacity a response layer needs: h*w, or the h rows of
// the DCT width when a scale goes through the transform, which works in
// the layer it writes.
func (d *Detector) layerCap(h, w int) int {
	if !d.fft.use(h, w, d.fft.rmax) {
		return h * w
	}
	return h * d.fft.width(w)
}

// release drops the references to the image of the current Detect.
func (d *Detector) release() { d.pix, d.win.pix = nil, nil }

func grow(b []float64, n int) []float64 { return growCap(b, n, n) }

// growCap returns b resliced to n, or a new slice of length n with room
// for c (>= n) when b has less.
func growCap(b []float64, n, c int) []float64 {
	if cap(b) < c {
		return make([]float64, n, c)
	}
	return b[:n]
}

// rowWindow holds the image rows, scaled to 0..1 as img_as_float does (v
// times 1/255), that a direct scale reads: the last n rows asked for, row
// y in slot y%n. A y pass asks for the 2r+1 rows around each output row in
// turn (reflected at the edges: always a run of at most 2r+1 consecutive
// rows), so with n = min(h, 2r+1) none of the rows one output row needs
// pushes out another, and each row is converted about once per scale.
type rowWindow struct {
	pix  []uint8
	w, n int
	buf  []float64
	held []int // the row in each slot, -1 for none
}

// reset holds n rows of w, with room for c (>= n): the rows of the
// Detect's largest direct radius, so that the buffer is made once.
func (r *rowWindow) reset(pix []uint8, w, n, c int) {
	r.pix, r.w, r.n = pix, w, n
	r.buf = growCap(r.buf, n*w, c*w)
	if cap(r.held) < n {
		r.held = make([]int, n)
	}
	r.held = r.held[:n]
	for i := range r.held {
		r.held[i] = -1
	}
}

// row returns image row y.
func (r *rowWindow) row(y int) []float64 {
	s := y % r.n
	b := r.buf[s*r.w : s*r.w+r.w]
	if r.held[s] != y {
		scaleRow(b, r.pix[y*r.w:y*r.w+r.w])
		r.held[s] = y
	}
	return b
}

// inv255 is what img_as_float multiplies 8-bit pixels by.
const inv255 = 1.0 / 255

// scaleRow writes the pixels of src, scaled to 0..1, to dst.
func scaleRow(dst []float64, src []uint8) { scaleRowVec(dst[:len(src)], src) }

// scaleRowScalar is scaleRow from i = lo on.
func scaleRowScalar(dst []float64, src []uint8, lo int) {
	dst = dst[:len(src)]
	for i := lo; i < len(src); i++ {
		dst[i] = float64(src[i]) * inv255
	}
}

func allEqual(b []float64, v float64) bool {
	for _, x := range b {
		if x != v {
			return false
		}
	}
	return true
}

// sigmaList is np.linspace(min, max, num), or np.logspace of the log10s.
func sigmaList(dst []float64, p Params) []float64 {
	lo, hi := p.MinSigma, p.MaxSigma
	if p.LogScale {
		lo, hi = math.Log10(lo), math.Log10(hi)
	}
	n := p.NumSigma
	step := (hi - lo) / float64(n-1)
	for i := range n {
		v := lo
		if n > 1 {
			v = float64(i)*step + lo
			if i == n-1 {
				v = hi
			}
		}
		if p.LogScale {
			v = math.Pow(10, v)
		}
		dst = append(dst, v)
	}
	return dst
}

// findPeaks appends the 3x3x3 local maxima of layer k above the threshold.
// Neighbours outside the cube are ignored (maximum_filter mode 'nearest').
func (d *Detector) findPeaks(h, w, k, ns int, p Params) error {
	lo, hi := max(k-1, 0), min(k+1, ns-1)
	cur := d.layer[k%3]
	thr := p.Threshold
	b := 0
	if p.ExcludeBorder {
		b = 1
	}
	for y := b; y < h-b; y++ {
		y0, y1 := max(y-1, 0), min(y+1, h-1)
		row := cur[y*w : y*w+w]
		for x := b; x < w-b; x++ {
			if x = nextAbove(row, x, w-b, thr); x == w-b {
				break
			}
			v := row[x]
			// Layer k first: its rows are in cache and usually decide.
			x0, x1 := max(x-1, 0), min(x+1, w-1)
			if !isMax(cur, v, y0, y1, x0, x1, w) ||
				lo < k && !isMax(d.layer[lo%3], v, y0, y1, x0, x1, w) ||
				hi > k && !isMax(d.layer[hi%3], v, y0, y1, x0, x1, w) {
				continue
			}
			if n := len(d.peaks); n == cap(d.peaks) && !d.Mem.take(int64(2*n+1)*peakBytes) {
				return tooMany(n, 0, p.Threshold, d.Mem.Free)
			}
			d.peaks = append(d.peaks, Peak{v, int32(y), int32(x), int32(k)})
		}
	}
	return nil
}

// isMax reports whether no response of layer l in rows y0..y1, columns
// x0..x1 is above v.
func isMax(l []float64, v float64, y0, y1, x0, x1, w int) bool {
	for y := y0; y <= y1; y++ {
		for _, u := range l[y*w+x0 : y*w+x1+1] {
			if u > v {
				return false
			}
		}
	}
	return true
}
