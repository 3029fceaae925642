// Package fft is the pure-Go fast Fourier transform behind the CPU backend's
// convolution.
//
// # What it does
//
// A Plan transforms along axis 0 of a row-major n×m array of complex64: the
// m columns are m independent sequences of length n, and every butterfly
// works on whole rows at once, so the inner loops run over m contiguous
// values. A 2D transform is two such passes with a transpose between them
// (package kernels does this); a single 1D transform is the case m = 1.
//
// # Lengths
//
// Lengths are products of 2, 3 and 5 (radix-4, -2, -3 and -5 Stockham
// passes, no bit reversal). NextFastLen rounds a length up to one.
//
// # Precision and allocation
//
// Data is float32; twiddles are computed in float64 and rounded once. A Plan
// allocates only when built; Transform uses the caller's scratch buffer and
// returns whichever of the two buffers holds the result. Plans are
// immutable and may be shared between goroutines.
package fft
