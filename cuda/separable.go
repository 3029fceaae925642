package cuda

import (
	"math"

	"github.com/pixelflight/pixelflight/kernels"
)

// fft_convolve's method on the GPU. As on the CPU (kernels.Choose), a
// kernel of rank one (kernels.Kernel's Col and Row: gaussian, box,
// sobel_x, sobel_y, a matrix kernels.Factor factors) may run as two 1-D
// passes, pf_sep_rows and pf_sep_cols, instead of by cuFFT; kernels of
// higher rank always go to cuFFT (the GPU has no plain 2-D sum).

// sepMaxTaps is the longest kernel side the separable kernels take:
// PF_SEP_MAXK in gpukernels/kernels.cu.h, the size of their shared tiles
// (a longer one would be cut short: the host never sends one).
const sepMaxTaps = 64

// Threads per block of the separable passes and the outputs each thread
// computes (PF_SEP_* in gpukernels/kernels.cu.h; TestSeparableConstants
// keeps the two the same).
const (
	sepRowThreads = 128 // pf_sep_rows: PF_SEP_RX
	sepRowPer     = 4   // PF_SEP_RPER
	sepColX       = 32  // pf_sep_cols: PF_SEP_CX × PF_SEP_CY threads
	sepColY       = 8
	sepColPer     = 4 // PF_SEP_CPER
)

// fftMulAddsPerLog is the exchange rate of the GPU's cost model
// (gpuMethod): what cuFFT's forward and inverse transforms cost per point
// of the padded transform grid and per log2 of its size, in the
// multiply-adds of the separable passes. A real FFT of N points takes
// about 2.5·N·log2 N flops (half a complex one's 5·N·log2 N); the forward
// and the inverse make 5·N·log2 N flops, 2.5·N·log2 N multiply-adds of 2
// flops. The rate counts arithmetic only: it leaves out that the FFT path
// also packs, multiplies and crops the padded grid (some 50 bytes of
// device memory traffic per grid point against some 13 per pixel for the
// two passes), that the passes read their taps and tiles from shared
// memory, and the launches. So it is a first guess, leaning towards
// cuFFT, and AWAITS GPU FIGURES: BenchmarkConvolveMethod's separable and
// fft pairs (bench_cuda_test.go) give the time of each method for the
// same kernel and images; fit this rate (or replace the model) from them.
const fftMulAddsPerLog = 2.5

// gpuMethod is the method the GPU takes for kernel k on geometry g (whose
// axes are the FFT's): Separable when k has its factors, each side is at
// most sepMaxTaps, and the passes' multiply-adds,
//
//	kw·(oh+kh-1)·ow (the row pass, over every extended row the outputs
//	read) + kh·oh·ow (the column pass),
//
// are no more than fftMulAddsPerLog·N·log2 N for the N = nh·nw points of
// the padded transform grid; else FFT. At 512×512 (same, zero: a 525×525
// grid) that sends square kernels up to 23×23 to the passes (a 7×7
// Gaussian: 3.7 million multiply-adds against 12.5 million), and a 25×25
// to cuFFT; at 4096×4096, up to 29×29. TestGPUMethod holds these.
func gpuMethod(k *kernels.Kernel, g *geometry) kernels.Method {
	if sepWherever(k, g) != kernels.Separable {
		return kernels.FFT
	}
	oh, ow := float64(g.oh), float64(g.ow)
	sep := float64(k.W)*(oh+float64(k.H-1))*ow + float64(k.H)*oh*ow
	n := float64(g.rows.n) * float64(g.cols.n)
	if sep <= fftMulAddsPerLog*n*math.Log2(n) {
		return kernels.Separable
	}
	return kernels.FFT
}

// sepWherever is Separable for every kernel the passes take (its factors
// known, each side at most sepMaxTaps), else FFT; fftOnly is FFT always.
// Tests and benchmarks set them as a Backend's method, to run or time
// either method on any image.
func sepWherever(k *kernels.Kernel, _ *geometry) kernels.Method {
	if len(k.Col) != k.H || len(k.Row) != k.W || k.H > sepMaxTaps || k.W > sepMaxTaps {
		return kernels.FFT
	}
	return kernels.Separable
}

func fftOnly(*kernels.Kernel, *geometry) kernels.Method { return kernels.FFT }

// sepAxis lays out one dimension of the separable passes, as the CPU's
// Separable method does: out+k-1 extended positions, position u holding
// image index src[u] (-1: a zero), the first output at offset 0.
func sepAxis(size, k, out int, mode kernels.Mode, b kernels.Boundary) axis {
	first := 0 // the full-convolution index of the first output
	switch mode {
	case kernels.Same:
		first = (k - 1) / 2
	case kernels.Valid:
		first = k - 1
	}
	n := out + k - 1
	src := make([]int32, n)
	for u := range src {
		i := first - k + 1 + u
		switch {
		case i >= 0 && i < size:
			src[u] = int32(i)
		case b == kernels.Zero:
			src[u] = -1
		default:
			src[u] = int32(kernels.Extend(i, size, b))
		}
	}
	return axis{n: n, src: src}
}
