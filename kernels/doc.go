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
// per output pixel fitted to BenchmarkMethods with AVX2 and in the scalar
// build. The direct methods (direct.go) work down the output a row at a
// time from a ring of the rows it reads, each image row widened and
// extended by the boundary once; their inner loops run 32 outputs at a
// time in four AVX2 accumulators, loading through pointers whose bounds
// are checked once per call. A box (every tap of each factor the same)
// goes by Separable as running sums where the model finds them cheaper
// (from 5 taps a side with AVX2): exact integer sums along each row and
// down the columns, times the box's value once, at the same cost for any
// size.
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
// element-wise loops here and the FFT passes run 8 wide with AVX2 and FMA
// when the CPU has them (vec_simd.go); otherwise the scalar code runs
// (vec_generic.go). Both builds are tested against the same references.
package kernels
