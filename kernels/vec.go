package kernels

// The element-wise loops of the 2D transform. vec_simd.go runs them 8 wide
// where the build and the CPU allow; these are the scalar versions, also
// used for the tails.

// mulScalar multiplies (tr, ti) by (sr, si) in place.
func mulScalar(tr, ti, sr, si []float32) {
	ti, sr, si = ti[:len(tr)], sr[:len(tr)], si[:len(tr)]
	for i := range tr {
		a, b := tr[i], ti[i]
		tr[i], ti[i] = a*sr[i]-b*si[i], a*si[i]+b*sr[i]
	}
}

// pairsScalar turns rows A = (kr, ki) and B = (jr, ji) in place into
//
//	A' = (A + conj B) + i·u·(A - conj B)
//	B' = (B + conj A) + i·v·(B - conj A)
//
// where u = w[0] + i·w[8] and v = w[16] + i·w[24] (w holds each as 8
// copies, for the vector loads). With u = -W^k this splits a half-length
// transform of packed real rows into the real-input spectrum; with u =
// W^-k it merges it back. For k = j both pairs are the same slices.
func pairsScalar(kr, ki, jr, ji []float32, w []float32) {
	ur, ui, vr, vi := w[0], w[8], w[16], w[24]
	ki, jr, ji = ki[:len(kr)], jr[:len(kr)], ji[:len(kr)]
	for x := range kr {
		ar, ai, br, bi := kr[x], ki[x], jr[x], ji[x]
		dr, di := ar-br, ai+bi // A - conj B
		er, ei := ur*dr-ui*di, ur*di+ui*dr
		gr, gi := vr*dr+vi*di, vr*di-vi*dr // v·(B - conj A) = v·(-dr, di) = (-gr, gi)
		kr[x], ki[x] = ar+br-ei, ai-bi+er
		jr[x], ji[x] = br+ar-gi, bi-ai-gr
	}
}

// pairTwiddles returns the 32-value w of pairsScalar for rows k and j.
func pairTwiddles(ur, ui, vr, vi float32) []float32 {
	w := make([]float32, 32)
	for i, v := range [4]float32{ur, ui, vr, vi} {
		for l := range 8 {
			w[8*i+l] = v
		}
	}
	return w
}

// transposeScalar writes dst[c*ds + r] = src[r*ss + c] for r < rows,
// c < cols, in tiles that stay in cache.
func transposeScalar(dst []float32, ds int, src []float32, ss, rows, cols int) {
	const tile = 32
	for r0 := 0; r0 < rows; r0 += tile {
		r1 := min(r0+tile, rows)
		for c0 := 0; c0 < cols; c0 += tile {
			c1 := min(c0+tile, cols)
			for c := c0; c < c1; c++ {
				out := dst[c*ds+r0 : c*ds+r1]
				for i := range out {
					out[i] = src[(r0+i)*ss+c]
				}
			}
		}
	}
}

// copyBlockScalar copies rows×cols values: dst[r*ds + i] = src[r*ss + i].
func copyBlockScalar(dst []float32, ds int, src []float32, ss, rows, cols int) {
	for r := range rows {
		copy(dst[r*ds:r*ds+cols], src[r*ss:r*ss+cols])
	}
}
