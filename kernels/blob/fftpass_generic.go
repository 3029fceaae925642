//go:build !goexperiment.simd || !amd64

package blob

// Without GOEXPERIMENT=simd, or off amd64, every loop that has a vector
// version in fftpass_simd.go runs its scalar one.

func simdOK() bool { return false }

func runStage(st *fftStage, xr, xi, yr, yi []float64, s int, sign float64, _ bool) {
	scalarStage(st, xr, xi, yr, yi, s, 0, sign)
}

// filterVec does none of the lines: the scalar filter does them all.
func filterVec(fk, br, bi, spec, x0, x2 []float64, m int) int { return 0 }

func ySum(a, b []float64, rows [][]float64, k0, k2, _ []float64) { ySumScalar(a, b, rows, k0, k2, 0) }

func xSum(out, a, b, k0, k2, _ []float64, s2 float64) { xSumScalar(out, a, b, k0, k2, s2, 0) }

// nextAbove returns the first x' in [x, end) with row[x'] > thr, or end.
func nextAbove(row []float64, x, end int, thr float64) int {
	for ; x < end && !(row[x] > thr); x++ {
	}
	return x
}

func dctPostCols(rr, ri []float64, m int, twr, twi, spec []float64) {
	dctPostColsScalar(rr, ri, m, twr, twi, spec, 0)
}

func interleave(dst, sr, si []float64) { interleaveScalar(dst, sr, si, 0) }

func packRows(br, bi, rows []float64, y0, h, m, cols int, twr, twi []float64) {
	packRowsScalar(br, bi, rows, y0, h, m, cols, twr, twi, 0)
}

func unpackRows(out, rr, ri []float64, y0, h, w, m, M int) {
	unpackRowsScalar(out, rr, ri, y0, h, w, m, M, 0)
}

func deinterleave(dr, di, src []float64) { deinterleaveScalar(dr, di, src, 0) }

func packImage(br, bi []float64, pix []uint8, y0, h, w, m, M int, line []float64) {
	packImageScalar(br, bi, pix, y0, h, w, m, M, line, 0)
}

func dctPostRows(rr, ri []float64, m int, twr, twi, rows []float64, y0, h, cols int) {
	dctPostRowsScalar(rr, ri, m, twr, twi, rows, y0, h, cols, 0)
}

func scaleRowVec(dst []float64, src []uint8) { scaleRowScalar(dst, src, 0) }
