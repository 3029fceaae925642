//go:build goexperiment.simd && amd64

package kernels

import "simd/archsimd"

type vec = archsimd.Float32x8

func load(s []float32) vec { return archsimd.LoadFloat32x8Slice(s) }

func mulSpectrum(tr, ti, sr, si []float32) {
	n8 := 0
	if archsimd.X86.AVX2() && archsimd.X86.FMA() {
		n8 = len(tr) &^ 7
		for i := 0; i < n8; i += 8 {
			a, b, c, d := load(tr[i:]), load(ti[i:]), load(sr[i:]), load(si[i:])
			a.Mul(c).Sub(b.Mul(d)).StoreSlice(tr[i:])
			b.MulAdd(c, a.Mul(d)).StoreSlice(ti[i:])
		}
		archsimd.ClearAVXUpperBits()
	}
	mulScalar(tr[n8:], ti[n8:], sr[n8:], si[n8:])
}

func pairs(kr, ki, jr, ji, w []float32) {
	n8 := 0
	if archsimd.X86.AVX2() && archsimd.X86.FMA() {
		n8 = len(kr) &^ 7
		// Twiddles come from memory: broadcasting a scalar float here would
		// mix SSE and AVX code, which some CPUs make very slow.
		ur, ui, vr, vi := load(w[0:]), load(w[8:]), load(w[16:]), load(w[24:])
		for x := 0; x < n8; x += 8 {
			ar, ai, br, bi := load(kr[x:]), load(ki[x:]), load(jr[x:]), load(ji[x:])
			dr, di := ar.Sub(br), ai.Add(bi)
			er, ei := ur.Mul(dr).Sub(ui.Mul(di)), ur.Mul(di).Add(ui.Mul(dr))
			gr, gi := vr.Mul(dr).Add(vi.Mul(di)), vr.Mul(di).Sub(vi.Mul(dr))
			ar.Add(br).Sub(ei).StoreSlice(kr[x:])
			ai.Sub(bi).Add(er).StoreSlice(ki[x:])
			br.Add(ar).Sub(gi).StoreSlice(jr[x:])
			bi.Sub(ai).Sub(gr).StoreSlice(ji[x:])
		}
		archsimd.ClearAVXUpperBits()
	}
	pairsScalar(kr[n8:], ki[n8:], jr[n8:], ji[n8:], w)
}
