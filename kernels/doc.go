// Package kernels holds the image kernels of the CPU backend: convolution
// (Convolver) and the named convolution kernels.
//
// # Convolution
//
// Convolver.Convolve convolves an 8-bit grayscale image with a Kernel and
// writes float32 results. Its output equals scipy.signal.fftconvolve on the
// same image in mode Same (default), Full or Valid with the Zero boundary,
// and scipy.signal.convolve2d with boundary "symm" (our Reflect) or "wrap"
// (Wrap). Tests hold it to |ours - scipy| <= 1e-4·(1 + max|scipy|), by
// every method.
//
// # Three methods, the cheapest taken
//
// Choose picks, for the image's size and the kernel, the cheapest of
// Separable (a rank-1 kernel, whose factors Kernel.Col and Row the named
// kernels carry and Factor finds in others, as two 1-D passes), Direct
// (the plain sum over the taps) and FFT, by a model of each one's time
// per output pixel (methodCost) fitted to this package's benchmarks for
// each build and vector width. Both direct methods (direct.go) work down
// the output from a ring of the rows it reads (for Separable, filtered
// along x), each image row widened and extended by the boundary once.
//
// Both run in C (direct_c.go, direct.h) with AVX-512, or AVX2 and FMA,
// whichever the CPU has (cLanes). Separable: output rows a batch at a
// time, the column pass over strips of columns whose ring rows stay in L1
// (rows an odd number of cache lines apart, so that they spread over its
// sets), two output rows per load; the row pass 16 or 8 image rows at
// once for long kernels, transposed so that every load is a whole aligned
// vector, or row by row with mirrored taps added first for short ones.
// Direct: the sum over the kernel's nonzero taps only (a laplacian's 5 of
// 9), two output rows at a time, each input vector loaded once for both
// rows' taps on it, 4 vectors of each row in 8 accumulators. Where
// there is no cgo, or the CPU has neither, or an image is too large for
// C's ints, the Go loops in direct.go run. A box (every tap of each
// factor the same) goes by Separable as running sums where the model
// finds them cheaper: exact integer sums along each row and down the
// columns, times the box's value once, at the same cost for any size.
//
// # How the FFT is fast
//
// The image is padded only as far as the mode needs to avoid circular
// aliasing, to even lengths whose halves are 2^a·3^b·5^c. Pairs of image
// rows are packed as one complex row, so the real 2D transform costs one
// half-length complex transform down the columns (package fft, vectorised
// across columns), a split into the real-input spectrum, a transpose (8×8
// blocks in registers), and a transform along the other axis. Every pass
// works on a strip of columns narrow enough for the strip and the
// transform's scratch to stay in cache, and writes the next pass's input
// strip by strip, each strip contiguous: the image is widened into a strip,
// transformed, split and transposed out; a strip of the transposed
// spectrum is transformed, multiplied by the kernel's, transformed back and
// transposed out; a strip of the output's columns is merged, transformed
// back and unpacked into the output rows. An image whose transposed
// spectrum would outgrow a core's cache, or whose transform would hold more
// than 7 MiB (a thin image's long plans and strips), is convolved in tiles
// (overlap-save: each tile's transform covers its outputs and the k-1
// samples they read beyond), sized by fftTiles for the fewest transform
// operations among those that fit; FFTBytes is what it holds. The kernel's spectrum is computed once per transform size, kept
// in that strip order and cached (up to 8 per Convolver), and the inverse only computes the rows and columns of the
// output. Plans, spectra and buffers live in the Convolver: one per worker
// goroutine, no allocation per image in steady state.
//
// # Builds
//
// Built with GOEXPERIMENT=simd on amd64 (the Makefile does), the
// element-wise loops here, the box sums and the FFT passes run 8 wide with
// AVX2 and FMA when the CPU has them (vec_simd.go); otherwise the scalar
// code runs (vec_generic.go). The C of Separable and Direct needs cgo on
// amd64 (direct_c.go; direct_noc.go without). The portable build (no SIMD, no cgo) runs only Go
// scalar loops. Every build is tested against the same references, and
// TestMethodsAgree runs Separable and Direct by the Go loops and by each
// vector width the CPU has. That width (cLanes) is asked of the CPU once, the
// package's only state; a Convolver takes it when made.
package kernels
