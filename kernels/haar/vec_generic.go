//go:build !goexperiment.simd || !amd64

package haar

// scanVec is the vector scan of vec_simd.go; the portable build has none.
func (d *Detector) scanVec(g *program, s scale, ww, wh int) bool { return false }

func vectorized() bool { return false }
