//go:build !goexperiment.simd || !amd64

package watershed

// The portable build runs the row loops of rows.go as they are.

func vectorized() bool { return false }

func colDown(row, prev []int32, pix []uint8, t, far int32, bm []uint64) {
	colDownScalar(row, prev, pix, t, far, bm)
}

func colUp(row, next []int32) { colUpScalar(row, next) }

func squares(dst, src []int32) { squaresScalar(dst, src) }

func rowMin(out, sq []int32, pad, limit int) bool { return rowMinScalar(out, sq, pad, limit) }

func max3(dst, a, b, c []int32) { max3Scalar(dst, a, b, c) }

func peaks3(list []peakCand, row, vm []int32, base int32) ([]peakCand, bool) {
	return peaks3Scalar(list, row, vm, base)
}

func stateRow(st, d []int32, hist []int32, top int32) { stateRowScalar(st, d, hist, top) }

func labelsRow(l, st []int32) { labelsRowScalar(l, st) }
