// The direct methods in C, for one vector width: direct_c.go includes this
// file once with PF_W 8 (AVX2 and FMA) and once with PF_W 16 (AVX-512F),
// each after defining the vector type and operations it uses (this file
// undefines them at its end):
//
//	pf_v, PF_FN(name), PF_TARGET, pf_load, pf_store, pf_bcast, pf_zero,
//	pf_add, pf_mul, pf_fma (a·b + c), pf_widen (PF_W bytes to floats),
//	pf_store_n (the first n lanes), pf_transpose (PF_W vectors, as the
//	rows of a square, into its columns).

// pf_fill widens row to float32 into ext[0:ne] by the column map xm (the
// image column each position holds, or -1 for a zero); over [r0, r1) the
// columns run on from xm[r0].
PF_TARGET static void PF_FN(pf_fill)(float *ext, const uint8_t *row, const int32_t *xm, int ne, int r0, int r1) {
	for (int u = 0; u < r0; u++)
		ext[u] = xm[u] < 0 ? 0.0f : (float)row[xm[u]];
	if (r1 > r0) {
		const uint8_t *s = row + xm[r0];
		float *d = ext + r0;
		int n = r1 - r0, i = 0;
		for (; i + PF_W <= n; i += PF_W)
			pf_store(d + i, pf_widen(s + i));
		for (; i < n; i++)
			d[i] = (float)s[i];
	}
	for (int u = r1; u < ne; u++)
		ext[u] = xm[u] < 0 ? 0.0f : (float)row[xm[u]];
}

// pf_taps: out[x] = Σ_j c[j]·ext[x+j] for x < n (a multiple of PF_W);
// ext holds n + taps - 1 values. A symmetric c (sym) adds the inputs of
// taps j and taps-1-j first.
PF_TARGET static void PF_FN(pf_taps)(float *out, const float *ext, int n, const float *c, int taps, int sym) {
	int x = 0, h = sym ? taps / 2 : 0;
	for (; x + 4 * PF_W <= n; x += 4 * PF_W) {
		const float *e = ext + x, *f = e + taps - 1;
		pf_v a0 = pf_zero(), a1 = a0, a2 = a0, a3 = a0;
		for (int j = 0; j < h; j++) {
			pf_v cj = pf_bcast(c + j);
			a0 = pf_fma(pf_add(pf_load(e + j), pf_load(f - j)), cj, a0);
			a1 = pf_fma(pf_add(pf_load(e + j + PF_W), pf_load(f - j + PF_W)), cj, a1);
			a2 = pf_fma(pf_add(pf_load(e + j + 2 * PF_W), pf_load(f - j + 2 * PF_W)), cj, a2);
			a3 = pf_fma(pf_add(pf_load(e + j + 3 * PF_W), pf_load(f - j + 3 * PF_W)), cj, a3);
		}
		// The middle tap of a symmetric c, or every tap of another.
		for (int j = h; j < taps - h; j++) {
			pf_v cj = pf_bcast(c + j);
			a0 = pf_fma(pf_load(e + j), cj, a0);
			a1 = pf_fma(pf_load(e + j + PF_W), cj, a1);
			a2 = pf_fma(pf_load(e + j + 2 * PF_W), cj, a2);
			a3 = pf_fma(pf_load(e + j + 3 * PF_W), cj, a3);
		}
		pf_store(out + x, a0);
		pf_store(out + x + PF_W, a1);
		pf_store(out + x + 2 * PF_W, a2);
		pf_store(out + x + 3 * PF_W, a3);
	}
	for (; x < n; x += PF_W) {
		pf_v a = pf_zero();
		for (int j = 0; j < taps; j++)
			a = pf_fma(pf_load(ext + x + j), pf_bcast(c + j), a);
		pf_store(out + x, a);
	}
}

// pf_cols: o0[x] = Σ_i c[i]·row(i)[x] over i < n and, where o1 is not
// NULL, o1[x] = Σ_i c[i]·row(i+1)[x], for x0 <= x < x1: each row loaded
// once for both. Row i is ring + ro[i] and holds x1 rounded up to PF_W
// values; x0 is a multiple of PF_W.
PF_TARGET static void PF_FN(pf_cols)(float *o0, float *o1, const float *ring, const int32_t *ro, const float *c, int n,
                                     int x0, int x1) {
	int x = x0;
	if (o1 != NULL) {
		for (; x + 4 * PF_W <= x1; x += 4 * PF_W) {
			pf_v c0 = pf_bcast(c);
			const float *p = ring + ro[0] + x;
			pf_v a0 = pf_mul(pf_load(p), c0), a1 = pf_mul(pf_load(p + PF_W), c0),
			     a2 = pf_mul(pf_load(p + 2 * PF_W), c0), a3 = pf_mul(pf_load(p + 3 * PF_W), c0);
			pf_v b0 = pf_zero(), b1 = b0, b2 = b0, b3 = b0;
			for (int i = 1; i < n; i++) {
				pf_v ci = pf_bcast(c + i), d = pf_bcast(c + i - 1);
				p = ring + ro[i] + x;
				pf_v v0 = pf_load(p), v1 = pf_load(p + PF_W), v2 = pf_load(p + 2 * PF_W), v3 = pf_load(p + 3 * PF_W);
				a0 = pf_fma(v0, ci, a0);
				b0 = pf_fma(v0, d, b0);
				a1 = pf_fma(v1, ci, a1);
				b1 = pf_fma(v1, d, b1);
				a2 = pf_fma(v2, ci, a2);
				b2 = pf_fma(v2, d, b2);
				a3 = pf_fma(v3, ci, a3);
				b3 = pf_fma(v3, d, b3);
			}
			pf_v d = pf_bcast(c + n - 1);
			p = ring + ro[n] + x;
			b0 = pf_fma(pf_load(p), d, b0);
			b1 = pf_fma(pf_load(p + PF_W), d, b1);
			b2 = pf_fma(pf_load(p + 2 * PF_W), d, b2);
			b3 = pf_fma(pf_load(p + 3 * PF_W), d, b3);
			pf_store(o0 + x, a0);
			pf_store(o0 + x + PF_W, a1);
			pf_store(o0 + x + 2 * PF_W, a2);
			pf_store(o0 + x + 3 * PF_W, a3);
			pf_store(o1 + x, b0);
			pf_store(o1 + x + PF_W, b1);
			pf_store(o1 + x + 2 * PF_W, b2);
			pf_store(o1 + x + 3 * PF_W, b3);
		}
	}
	for (; x < x1; x += PF_W) {
		pf_v a = pf_zero(), b = a;
		for (int i = 0; i < n; i++) {
			pf_v ci = pf_bcast(c + i);
			a = pf_fma(pf_load(ring + ro[i] + x), ci, a);
			if (o1 != NULL)
				b = pf_fma(pf_load(ring + ro[i + 1] + x), ci, b);
		}
		int m = x1 - x < PF_W ? x1 - x : PF_W;
		pf_store_n(o0 + x, m, a);
		if (o1 != NULL)
			pf_store_n(o1 + x, m, b);
	}
}

// pf_sum8 writes 8 vectors to o, o[i·PF_W ...] = Σ_q c[q]·(the vector
// at base + (q + i)·PF_W) over q < n, in 8 accumulators.
PF_TARGET __attribute__((always_inline)) static inline void PF_FN(pf_sum8)(float *o, const float *base,
                                                                             const float *c, int n) {
	pf_v a[8];
	_Pragma("GCC unroll 8") for (int i = 0; i < 8; i++)
		a[i] = pf_zero();
	for (int q = 0; q < n; q++) {
		pf_v cq = pf_bcast(c + q);
		const float *p = base + q * PF_W;
		_Pragma("GCC unroll 8") for (int i = 0; i < 8; i++)
			a[i] = pf_fma(pf_load(p + i * PF_W), cq, a[i]);
	}
	_Pragma("GCC unroll 8") for (int i = 0; i < 8; i++)
		pf_store(o + i * PF_W, a[i]);
}

// pf_xgroup filters the g (at most PF_W) image rows ym[0:g] along x into
// the rows dr[0:g] at once, for a long c, without unaligned loads: the
// rows widened side by side (e: PF_W rows of nep, ne rounded up to PF_W),
// transposed so that each column is a vector (tt: nep vectors), filtered
// as whole vectors (output column x = Σ_j c[j]·column x+j), transposed
// back. dr[g:PF_W] point at a scratch row; see pf_fill for the rest.
PF_TARGET static void PF_FN(pf_xgroup)(float *const *dr, const uint8_t *pix, int w, const int32_t *ym, int g,
                                       const int32_t *xm, int ne, int r0, int r1, const float *c, int taps, float *e,
                                       float *tt, int stride) {
	int nep = (ne + PF_W - 1) & ~(PF_W - 1);
	for (int r = 0; r < PF_W; r++) {
		float *er = e + (size_t)r * nep;
		if (r < g && ym[r] >= 0)
			PF_FN(pf_fill)(er, pix + (size_t)ym[r] * w, xm, ne, r0, r1);
		else
			memset(er, 0, sizeof(float) * ne);
		memset(er + ne, 0, sizeof(float) * (nep - ne));
	}
	for (int u = 0; u < nep; u += PF_W) {
		pf_v v[PF_W];
		_Pragma("GCC unroll 16") for (int r = 0; r < PF_W; r++)
			v[r] = pf_load(e + (size_t)r * nep + u);
		pf_transpose(v);
		_Pragma("GCC unroll 16") for (int i = 0; i < PF_W; i++)
			pf_store(tt + (size_t)(u + i) * PF_W, v[i]);
	}
	float *ot = e; // the filtered columns: stride vectors, in e's place
	for (int x = 0; x < stride; x += 8)
		PF_FN(pf_sum8)(ot + (size_t)x * PF_W, tt + (size_t)x * PF_W, c, taps);
	for (int u = 0; u < stride; u += PF_W) {
		pf_v v[PF_W];
		_Pragma("GCC unroll 16") for (int i = 0; i < PF_W; i++)
			v[i] = pf_load(ot + (size_t)(u + i) * PF_W);
		pf_transpose(v);
		_Pragma("GCC unroll 16") for (int r = 0; r < PF_W; r++)
			pf_store(dr[r] + u, v[r]);
	}
}

// pf_separable: see direct_c.go.
PF_TARGET static void PF_FN(pf_separable)(const uint8_t *pix, int w, const int32_t *xm, int ne, int r0, int r1,
                                          const int32_t *ym, const float *rc, int kw, const float *cc, int kh,
                                          int batch, float *ext, float *tw, float *ring, int stride, int pitch,
                                          int32_t *ro, float *dst, int oh, int ow) {
	int nr = kh + batch - 1, sym = pf_symmetric(rc, kw), t = 0;
	int nep = (ne + PF_W - 1) & ~(PF_W - 1);
	// Strips of columns whose nr rows fit in 32 KiB.
	int strip = (8192 / nr) & ~(4 * PF_W - 1);
	if (strip < 4 * PF_W)
		strip = 4 * PF_W;
	for (int oy = 0; oy < oh; oy += batch) {
		int nb = oh - oy < batch ? oh - oy : batch, need = oy + nb + kh - 1;
		while (tw != NULL && t < need) {
			int g = need - t < PF_W ? need - t : PF_W;
			float *dr[PF_W];
			for (int r = 0; r < PF_W; r++)
				dr[r] = r < g ? ring + (size_t)((t + r) % nr) * pitch : tw + (size_t)2 * PF_W * nep;
			PF_FN(pf_xgroup)(dr, pix, w, ym + t, g, xm, ne, r0, r1, rc, kw, tw, tw + (size_t)PF_W * nep, stride);
			t += g;
		}
		for (; t < need; t++) {
			float *r = ring + (size_t)(t % nr) * pitch;
			if (ym[t] < 0) {
				memset(r, 0, sizeof(float) * stride);
				continue;
			}
			PF_FN(pf_fill)(ext, pix + (size_t)ym[t] * w, xm, ne, r0, r1);
			PF_FN(pf_taps)(r, ext, stride, rc, kw, sym);
		}
		for (int i = 0; i < nb + kh - 1; i++)
			ro[i] = ((oy + i) % nr) * pitch;
		for (int x = 0; x < ow; x += strip) {
			int x1 = ow - x < strip ? ow : x + strip;
			for (int p = 0; p < nb; p += 2)
				PF_FN(pf_cols)(dst + (size_t)(oy + p) * ow, p + 1 < nb ? dst + (size_t)(oy + p + 1) * ow : NULL, ring,
				               ro + p, cc, kh, x, x1);
		}
	}
}

// pf_sum2 writes output rows o0 and o1 over columns [0, ow) of the ring
// at base: o0 = Σ the terms in t0 and t2, o1 = Σ those in t1 and t2,
// each a list of n offsets into base and its coefficients (t2: c for o0,
// then d for o1). A term of t2 is loaded once for both rows; o1 may be
// NULL (t1 and t2 then empty).
struct PF_FN(pf_terms) {
	const int32_t *off;
	const float *c, *d;
	int n;
};

PF_TARGET __attribute__((always_inline)) static inline void PF_FN(pf_sum2)(float *o0, float *o1, const float *base,
                                                                             struct PF_FN(pf_terms) t0,
                                                                             struct PF_FN(pf_terms) t1,
                                                                             struct PF_FN(pf_terms) t2, int ow) {
	int x = 0;
	for (; x + 4 * PF_W <= ow; x += 4 * PF_W) {
		pf_v a[4], b[4];
		_Pragma("GCC unroll 4") for (int i = 0; i < 4; i++)
			a[i] = b[i] = pf_zero();
		for (int q = 0; q < t2.n; q++) {
			pf_v c = pf_bcast(t2.c + q), d = pf_bcast(t2.d + q);
			const float *p = base + t2.off[q] + x;
			_Pragma("GCC unroll 4") for (int i = 0; i < 4; i++) {
				pf_v v = pf_load(p + i * PF_W);
				a[i] = pf_fma(v, c, a[i]);
				b[i] = pf_fma(v, d, b[i]);
			}
		}
		for (int q = 0; q < t0.n; q++) {
			pf_v c = pf_bcast(t0.c + q);
			const float *p = base + t0.off[q] + x;
			_Pragma("GCC unroll 4") for (int i = 0; i < 4; i++)
				a[i] = pf_fma(pf_load(p + i * PF_W), c, a[i]);
		}
		for (int q = 0; q < t1.n; q++) {
			pf_v d = pf_bcast(t1.c + q);
			const float *p = base + t1.off[q] + x;
			_Pragma("GCC unroll 4") for (int i = 0; i < 4; i++)
				b[i] = pf_fma(pf_load(p + i * PF_W), d, b[i]);
		}
		_Pragma("GCC unroll 4") for (int i = 0; i < 4; i++) {
			pf_store(o0 + x + i * PF_W, a[i]);
			if (o1 != NULL)
				pf_store(o1 + x + i * PF_W, b[i]);
		}
	}
	for (; x < ow; x += PF_W) {
		pf_v a = pf_zero(), b = a;
		for (int q = 0; q < t2.n; q++) {
			pf_v v = pf_load(base + t2.off[q] + x);
			a = pf_fma(v, pf_bcast(t2.c + q), a);
			b = pf_fma(v, pf_bcast(t2.d + q), b);
		}
		for (int q = 0; q < t0.n; q++)
			a = pf_fma(pf_load(base + t0.off[q] + x), pf_bcast(t0.c + q), a);
		for (int q = 0; q < t1.n; q++)
			b = pf_fma(pf_load(base + t1.off[q] + x), pf_bcast(t1.c + q), b);
		int m = ow - x < PF_W ? ow - x : PF_W;
		pf_store_n(o0 + x, m, a);
		if (o1 != NULL)
			pf_store_n(o1 + x, m, b);
	}
}

// pf_direct: see direct_c.go.
PF_TARGET static void PF_FN(pf_direct)(const uint8_t *pix, int w, const int32_t *xm, int ne, int r0, int r1,
                                       const int32_t *ym, const float *k, int kh, int kw, float *ring, int pitch,
                                       int32_t *scratch, float *cf, float *dst, int oh, int ow) {
	// The ring holds the kh + 1 rows of two output rows; a term is a ring
	// row's vector at one offset, loaded once for both rows where both
	// have a nonzero tap on it (t2), else for the one that has (t0, t1).
	int nr = kh + 1, nq = nr * kw;
	int32_t *zero = scratch, *o0 = zero + nr, *o1 = o0 + nq, *o2 = o1 + nq;
	float *c0 = cf, *c1 = c0 + nq, *c2 = c1 + nq, *d2 = c2 + nq;
	int t = 0; // the next ring row to fill
	for (int oy = 0; oy < oh; oy += 2) {
		int pair = oy + 1 < oh;
		for (; t < oy + kh + pair; t++) {
			float *r = ring + (size_t)(t % nr) * pitch;
			zero[t % nr] = ym[t] < 0;
			if (ym[t] >= 0)
				PF_FN(pf_fill)(r, pix + (size_t)ym[t] * w, xm, ne, r0, r1);
		}
		struct PF_FN(pf_terms) t0 = {o0, c0, NULL, 0}, t1 = {o1, c1, NULL, 0}, t2 = {o2, c2, d2, 0};
		// Ring row oy + i meets tap row i of output row oy and tap row
		// i - 1 of output row oy + 1.
		for (int i = 0; i < kh + pair; i++) {
			int s = (oy + i) % nr;
			if (zero[s])
				continue;
			for (int j = 0; j < kw; j++) {
				float a = i < kh ? k[i * kw + j] : 0.0f, b = pair && i > 0 ? k[(i - 1) * kw + j] : 0.0f;
				int off = s * pitch + j;
				if (a != 0.0f && b != 0.0f) {
					o2[t2.n] = off;
					c2[t2.n] = a;
					d2[t2.n++] = b;
				} else if (a != 0.0f) {
					o0[t0.n] = off;
					c0[t0.n++] = a;
				} else if (b != 0.0f) {
					o1[t1.n] = off;
					c1[t1.n++] = b;
				}
			}
		}
		float *out = dst + (size_t)oy * ow;
		PF_FN(pf_sum2)(out, pair ? out + ow : NULL, ring, t0, t1, t2, ow);
	}
}

// What the includer defined for this width.
#undef PF_W
#undef PF_FN
#undef PF_TARGET
#undef pf_v
#undef pf_load
#undef pf_store
#undef pf_bcast
#undef pf_zero
#undef pf_add
#undef pf_mul
#undef pf_fma
#undef pf_widen
#undef pf_store_n
#undef pf_transpose
