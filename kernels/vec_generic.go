//go:build !goexperiment.simd || !amd64

package kernels

func mulSpectrum(tr, ti, sr, si []float32) { mulScalar(tr, ti, sr, si) }

func pairs(kr, ki, jr, ji, w []float32) { pairsScalar(kr, ki, jr, ji, w) }

func vectorized() bool { return false }

func copyBlock(dst []float32, ds int, src []float32, ss, rows, cols int) {
	copyBlockScalar(dst, ds, src, ss, rows, cols)
}

func transpose(dst []float32, ds int, src []float32, ss, rows, cols int) {
	transposeScalar(dst, ds, src, ss, rows, cols)
}

func widen(dst []float32, src []uint8) { widenScalar(dst, src) }

func boxRow(out, ext []float32, k int) { boxRowScalar(out, ext, k) }

func slide(dst, acc, in, out, scale []float32) { slideScalar(dst, acc, in, out, scale) }

// Stats is the min, max, mean and standard deviation (ddof 0) of v, sums
// in float64.
func Stats(v []float32) (lo, hi, mean, std float64) { return statsScalar(v) }
