package kernels

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/pixelflight/pixelflight/kernels/fft"
)

// Method is how Convolve computes a convolution. All three give the same
// result within float32 rounding; they differ in cost.
type Method uint8

const (
	FFT       Method = iota // by transform: cost grows with the log of the image's size
	Separable               // a rank-1 kernel as two 1-D passes: kh + kw multiply-adds per pixel
	Direct                  // the plain sum: kh·kw multiply-adds per pixel
)

func (m Method) String() string {
	switch m {
	case FFT:
		return "fft"
	case Separable:
		return "separable"
	case Direct:
		return "direct"
	}
	return fmt.Sprintf("Method(%d)", m)
}

// Factor sets k's Col and Row when k is of rank one, so that Data[y·W+x]
// equals Col[y]·Row[x] within 1e-6 of k's largest magnitude (a float32
// kernel's own rounding is 6e-8 of each value), and returns k. A kernel
// of higher rank is returned as it is. Call it before k is shared.
func Factor(k *Kernel) *Kernel {
	if k.Col != nil || k.H < 1 || k.W < 1 || len(k.Data) != k.H*k.W {
		return k
	}
	p, peak := 0, 0.0
	for i, v := range k.Data {
		if a := math.Abs(float64(v)); a > peak {
			p, peak = i, a
		}
	}
	py, px := p/k.W, p%k.W
	col, row := make([]float64, k.H), make([]float64, k.W)
	for y := range k.H {
		col[y] = float64(k.Data[y*k.W+px])
	}
	for x := range k.W {
		if peak > 0 {
			row[x] = float64(k.Data[py*k.W+x]) / float64(k.Data[p])
		}
	}
	for y := range k.H {
		for x := range k.W {
			if math.Abs(float64(k.Data[y*k.W+x])-col[y]*row[x]) > 1e-6*peak {
				return k
			}
		}
	}
	k.Col, k.Row = make([]float32, k.H), make([]float32, k.W)
	for y, v := range col {
		k.Col[y] = float32(v)
	}
	for x, v := range row {
		k.Row[x] = float32(v)
	}
	return k
}

// separable says whether k has its factors (Separable's input).
func (k *Kernel) separable() bool { return len(k.Col) == k.H && len(k.Row) == k.W }

// Choose is the method Convolve takes for an h×w image and k in mode m
// with boundary b: the cheapest by a model of each method's time per
// output pixel (costModel, fitted per build and vector width:
// BENCHMARKS.md, "Convolution by the cheapest method"). Separable needs
// k's factors.
func Choose(h, w int, k *Kernel, m Mode, b Boundary) Method {
	return choose(costModel(), h, w, k, m, b)
}

// choose is Choose by the model c.
func choose(c methodCost, h, w int, k *Kernel, m Mode, b Boundary) Method {
	oh, ow, err := OutputSize(h, w, k, m)
	if err != nil || oh*ow == 0 {
		return FFT
	}
	taps := k.H * k.W
	if c.sparse {
		taps = k.nonzero()
	}
	best, cost := Direct, c.direct*float64(taps)+c.directRow
	if k.separable() {
		if s, _ := sepCost(c, k, oh); s < cost {
			best, cost = Separable, s
		}
	}
	nh := fftLength(h, k.H, oh, m, b)
	nw := fftLength(w, k.W, ow, m, b)
	area := float64(nh) * float64(nw)
	if f := c.fft * area / float64(oh*ow) * float64(bits.Len(uint(nh*nw))); f < cost {
		best = FFT
	}
	return best
}

// fftLength is the transform length along one axis (as newAxis lays it out).
func fftLength(size, k, out int, m Mode, b Boundary) int {
	lo := 0
	switch m {
	case Same:
		lo = (k - 1) / 2
	case Valid:
		lo = k - 1
	}
	need := out + k - 1
	if b == Zero {
		need = max(lo+out, size+k-1-lo)
	}
	return 2 * fft.NextFastLen((max(need, 2)+1)/2)
}

// sepCost is Separable's modelled time for k and oh output rows (ns per
// output pixel), and whether it goes by running sums: a box (Kernel.box)
// where they are cheaper than the taps.
func sepCost(c methodCost, k *Kernel, oh int) (cost float64, sums bool) {
	// The x pass runs over the rows the outputs read, ow wide.
	rows := float64(oh+k.H-1) / float64(oh)
	cost = c.sepX*float64(k.W)*rows + c.sepY*float64(k.H) + c.sepRow*rows
	if k.box() && c.box*rows < cost {
		return c.box * rows, true
	}
	return cost, false
}

// methodCost is the time model of Choose, in nanoseconds per output pixel:
// direct·taps + directRow for Direct (its nonzero taps where sparse);
// sepX·(taps along x) + sepY·(taps down y) + sepRow for Separable (box for
// a box by running sums, whatever its size); fft·(transform area / output
// area)·log2(area) for FFT.
type methodCost struct {
	direct, directRow, sepX, sepY, sepRow, box, fft float64
	sparse                                          bool
}

// costModel is the model for this build and CPU (modelFor).
func costModel() methodCost { return modelFor(vectorized(), cLanes()) }

// modelFor is the model for a build whose Go vector loops run (vec) or not
// and whose C loops have vectors of lanes (0: the Go loops). FFT and the
// running sums of boxes have two fits, AVX2 with FMA (vec) and scalar;
// Direct and Separable three, by the vector width of their C loops
// (AVX-512, AVX2) or the Go loops. The C loops' terms are
// measured times scaled by 1.3, the factor by which the FFT term
// overstates the FFT's time on 256² to 1920×1080 images, so that the
// methods' crossovers fall where measured (the FFT term was fitted
// against Go's vector loops for Direct, which overstated theirs alike).
// Direct's per-tap terms are then scaled by 0.8, the time its pairing of
// output rows saved on dense 7×7 and 9×9 kernels on 512², and its fixed
// terms set so that a sobel_x on 512² stays with the two passes, as
// measured on a Zen 4 EPYC at either width (0.068 ms against 0.083
// direct).
func modelFor(vec bool, lanes int) methodCost {
	c := methodCost{direct: 0.83, directRow: 4.5, sepX: 0.62, sepY: 0.62, sepRow: 1.5, box: 1.6, fft: 0.70}
	if vec {
		c.box, c.fft = 0.55, 0.145
	}
	switch lanes {
	case 16:
		c.direct, c.directRow, c.sepX, c.sepY, c.sepRow, c.sparse = 0.024, 0.08, 0.0175, 0.014, 0.12, true
	case 8:
		c.direct, c.directRow, c.sepX, c.sepY, c.sepRow, c.sparse = 0.030, 0.15, 0.027, 0.025, 0.17, true
	}
	return c
}

// nonzero is the number of k's nonzero taps.
func (k *Kernel) nonzero() int {
	n := 0
	for _, v := range k.Data {
		if v != 0 {
			n++
		}
	}
	return n
}
