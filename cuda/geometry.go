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
// out outputs. With the zero boundary the image lies at the start and
// the transform is long enough that the circular convolution does not wrap
// into the outputs; with reflect and wrap every extended sample the
// outputs read has its own position. n is 7-smooth (cuFFT's fast sizes).
func newAxis(size, k, out int, mode kernels.Mode, b kernels.Boundary) axis {
	lo := 0
	switch mode {
	case kernels.Same:
		lo = (k - 1) / 2
	case kernels.Valid:
		lo = k - 1
	}
	hi := lo + out - 1
	need := out + k - 1
	if b == kernels.Zero {
		need = max(hi+1, size+k-1-lo)
	}
	n := fastLen(max(need, 2))
	src := make([]int32, n)
	for i := range src {
		src[i] = -1
	}
	if b == kernels.Zero {
		for i := range size {
			src[i] = int32(i)
		}
	} else {
		for m := lo - k + 1; m <= hi; m++ {
			src[mod(m, n)] = int32(extend(m, size, b))
		}
	}
	return axis{n: n, off: mod(lo, n), src: src}
}

// extend maps an index outside [0, size) back into the image.
func extend(i, size int, b kernels.Boundary) int {
	if b == kernels.Wrap {
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

// geometry is one image shape's convolution with one kernel.
type geometry struct {
	h, w, oh, ow int
	rows, cols   axis
}

func (g *geometry) cw() int { return g.cols.n/2 + 1 }

// bytesPerImage estimates the device memory one image of a batch takes:
// its pixels, the real and complex arrays, the output, and as much again
// for cuFFT's work area.
func (g *geometry) bytesPerImage() int64 {
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
