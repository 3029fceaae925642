package kernels

import "math"

// Gaussian is a size×size kernel exp(-(x²+y²)/(2σ²)), centred, normalised to
// sum 1. The centre of an even size lies between pixels.
func Gaussian(sigma float64, size int) *Kernel {
	k := &Kernel{H: size, W: size, Data: make([]float32, size*size)}
	c := float64(size-1) / 2
	g := make([]float64, size)
	var sum float64
	for i := range g {
		d := float64(i) - c
		g[i] = math.Exp(-d * d / (2 * sigma * sigma))
		sum += g[i]
	}
	k.Col = make([]float32, size)
	for y := range size {
		k.Col[y] = float32(g[y] / sum)
		for x := range size {
			k.Data[y*size+x] = float32(g[y] * g[x] / (sum * sum))
		}
	}
	k.Row = k.Col
	return k
}

// Box is a size×size mean filter.
func Box(size int) *Kernel {
	k := &Kernel{H: size, W: size, Data: make([]float32, size*size)}
	for i := range k.Data {
		k.Data[i] = float32(1 / float64(size*size))
	}
	k.Col = make([]float32, size)
	for i := range k.Col {
		k.Col[i] = float32(1 / float64(size))
	}
	k.Row = k.Col
	return k
}

// The fixed 3×3 kernels are convolution kernels (flipped when applied):
// SobelX gives a positive response where brightness grows to the right,
// SobelY where it grows downwards.

func fixed3(v ...float32) *Kernel { return &Kernel{H: 3, W: 3, Data: v} }

// Laplacian is the 4-neighbour Laplacian.
func Laplacian() *Kernel { return fixed3(0, 1, 0, 1, -4, 1, 0, 1, 0) }

// SobelX is the horizontal-gradient Sobel kernel: [1 2 1]ᵀ·[1 0 -1].
func SobelX() *Kernel {
	k := fixed3(1, 0, -1, 2, 0, -2, 1, 0, -1)
	k.Col, k.Row = []float32{1, 2, 1}, []float32{1, 0, -1}
	return k
}

// SobelY is the vertical-gradient Sobel kernel: [1 0 -1]ᵀ·[1 2 1].
func SobelY() *Kernel {
	k := fixed3(1, 2, 1, 0, 0, 0, -1, -2, -1)
	k.Col, k.Row = []float32{1, 0, -1}, []float32{1, 2, 1}
	return k
}

// Sharpen is the 5-point sharpening kernel.
func Sharpen() *Kernel { return fixed3(0, -1, 0, -1, 5, -1, 0, -1, 0) }
