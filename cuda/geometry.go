package cuda

import "github.com/pixelflight/pixelflight/kernels"

// axis is the geometry of one dimension of a convolution on the GPU, as
// kernels' CPU convolver lays it out: the transform has length n, src maps
// each transform position to the image index it holds (-1: zero), and the
// output's first value lies at position off.
type axis struct {
	n, off int
	src    []int32
}

// newAxis lays out a dimension of size pixels for a kernel of k taps and
// out outputs exactly as the CPU convolver does (kernels.Layout), with a
// 7-smooth length (cuFFT's fast sizes).
func newAxis(size, k, out int, mode kernels.Mode, b kernels.Boundary) axis {
	lo, src := kernels.Layout(size, k, out, mode, b, fastLen, nil)
	n := len(src)
	return axis{n: n, off: ((lo % n) + n) % n, src: src}
}

// fastLen is the least 2^a·3^b·5^c·7^d at least n.
func fastLen(n int) int {
	best := 1
	for best < n {
		best *= 2
	}
	for p7 := 1; p7 < best; p7 *= 7 {
		for p5 := p7; p5 < best; p5 *= 5 {
			for p3 := p5; p3 < best; p3 *= 3 {
				p := p3
				for p < n {
					p *= 2
				}
				best = min(best, p)
			}
		}
	}
	return best
}

// geometry is one image shape's convolution with one kernel, by method:
// for FFT, rows and cols are the transform's axes (newAxis); for
// Separable, the extended rows and columns the passes read (sepAxis).
type geometry struct {
	h, w, oh, ow int
	method       kernels.Method
	rows, cols   axis
}

func (g *geometry) cw() int { return g.cols.n/2 + 1 }

// bytesPerImage estimates the device memory one image of a batch takes.
// FFT: its pixels, the real and complex arrays, the output, and as much
// again for cuFFT's work area. Separable: its pixels, the row pass's
// output (rows.n × ow float32), the column pass's and the output.
func (g *geometry) bytesPerImage() int64 {
	if g.method == kernels.Separable {
		return int64(g.h*g.w) + int64(g.rows.n)*int64(g.ow)*4 + 2*int64(g.oh*g.ow)*4
	}
	real := int64(g.rows.n) * int64(g.cols.n) * 4
	cplx := int64(g.rows.n) * int64(g.cw()) * 8
	return int64(g.h*g.w) + 2*(real+cplx) + int64(g.oh*g.ow)*4
}

// foldKernel lays k out on the nh×nw transform grid, taps beyond it
// folded back (the circular sum is the same: the image is zero wherever
// they would alias), as the CPU convolver does.
func foldKernel(k *kernels.Kernel, nh, nw int) []float32 {
	out := make([]float32, nh*nw)
	for y := range k.H {
		row := out[(y%nh)*nw:]
		for x, v := range k.Data[y*k.W : (y+1)*k.W] {
			row[x%nw] += v
		}
	}
	return out
}
