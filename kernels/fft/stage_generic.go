//go:build !goexperiment.simd || !amd64

package fft

func simdOK() bool { return false }

func runStage(st *stage, xr, xi, yr, yi []float32, s int, sign float32, _ bool) {
	scalarStage(st, xr, xi, yr, yi, s, 0, sign)
}
