//go:build !goexperiment.simd || !amd64

package kernels

func mulSpectrum(tr, ti, sr, si []float32) { mulScalar(tr, ti, sr, si) }

func pairs(kr, ki, jr, ji, w []float32) { pairsScalar(kr, ki, jr, ji, w) }
