//go:build cgo && amd64

package kernels

/*
#include <stdint.h>
#include <string.h>
#include <immintrin.h>

// pf_symmetric says whether c[0:n] reads the same both ways.
static int pf_symmetric(const float *c, int n) {
	for (int j = 0; j < n / 2; j++)
		if (c[j] != c[n - 1 - j])
			return 0;
	return 1;
}

// AVX2 and FMA: 8 lanes.
#define PF_W 8
#define PF_FN(f) f##_avx2
#define PF_TARGET __attribute__((target("avx2,fma")))
#define pf_v __m256
#define pf_load _mm256_loadu_ps
#define pf_store _mm256_storeu_ps
#define pf_bcast _mm256_broadcast_ss
#define pf_zero _mm256_setzero_ps
#define pf_add _mm256_add_ps
#define pf_mul _mm256_mul_ps
#define pf_fma _mm256_fmadd_ps
PF_TARGET static inline __m256 pf_widen_avx2(const uint8_t *s) {
	__m128i b;
	memcpy(&b, s, 8); // 8 bytes, not the 16 a vector load reads
	return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(b));
}
#define pf_widen pf_widen_avx2
PF_TARGET static inline void pf_store_n_avx2(float *p, int n, __m256 v) {
	__m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
	_mm256_maskstore_ps(p, m, v);
}
#define pf_store_n pf_store_n_avx2
PF_TARGET __attribute__((always_inline)) static inline void pf_transpose_avx2(__m256 *v) {
	__m256 t[8], u[8];
	_Pragma("GCC unroll 16") for (int i = 0; i < 8; i += 2) {
		t[i] = _mm256_unpacklo_ps(v[i], v[i + 1]);
		t[i + 1] = _mm256_unpackhi_ps(v[i], v[i + 1]);
	}
	_Pragma("GCC unroll 16") for (int i = 0; i < 8; i += 4) {
		u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
		u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
		u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
		u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
	}
	_Pragma("GCC unroll 16") for (int i = 0; i < 4; i++) {
		v[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
		v[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
	}
}
#define pf_transpose pf_transpose_avx2
#include "direct.h"

// AVX-512F: 16 lanes.
#define PF_W 16
#define PF_FN(f) f##_avx512
#define PF_TARGET __attribute__((target("avx512f")))
#define pf_v __m512
#define pf_load _mm512_loadu_ps
#define pf_store _mm512_storeu_ps
#define pf_bcast(p) _mm512_set1_ps(*(p))
#define pf_zero _mm512_setzero_ps
#define pf_add _mm512_add_ps
#define pf_mul _mm512_mul_ps
#define pf_fma _mm512_fmadd_ps
PF_TARGET static inline __m512 pf_widen_avx512(const uint8_t *s) {
	__m128i b;
	memcpy(&b, s, 16);
	return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(b));
}
#define pf_widen pf_widen_avx512
#define pf_store_n(p, n, v) _mm512_mask_storeu_ps(p, (__mmask16)((1u << (n)) - 1), v)
// Within each 128-bit lane first, as pf_transpose_avx2 does, then the
// lanes: u[4g+c] holds rows 4g to 4g+3 of columns c, c+4, c+8, c+12.
PF_TARGET __attribute__((always_inline)) static inline void pf_transpose_avx512(__m512 *v) {
	__m512 t[16], u[16];
	_Pragma("GCC unroll 16") for (int i = 0; i < 16; i += 2) {
		t[i] = _mm512_unpacklo_ps(v[i], v[i + 1]);
		t[i + 1] = _mm512_unpackhi_ps(v[i], v[i + 1]);
	}
	_Pragma("GCC unroll 16") for (int i = 0; i < 16; i += 4) {
		u[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44);
		u[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xEE);
		u[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44);
		u[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
	}
	_Pragma("GCC unroll 16") for (int c = 0; c < 4; c++) {
		__m512 a = _mm512_shuffle_f32x4(u[c], u[c + 4], 0x88), b = _mm512_shuffle_f32x4(u[c], u[c + 4], 0xDD);
		__m512 p = _mm512_shuffle_f32x4(u[c + 8], u[c + 12], 0x88), q = _mm512_shuffle_f32x4(u[c + 8], u[c + 12], 0xDD);
		v[c] = _mm512_shuffle_f32x4(a, p, 0x88);
		v[c + 8] = _mm512_shuffle_f32x4(a, p, 0xDD);
		v[c + 4] = _mm512_shuffle_f32x4(b, q, 0x88);
		v[c + 12] = _mm512_shuffle_f32x4(b, q, 0xDD);
	}
}
#define pf_transpose pf_transpose_avx512
#include "direct.h"

// pf_simd is the vector width pf_separable and pf_direct take: 16 with
// AVX-512F, 8 with AVX2 and FMA, or 0.
static int pf_simd(void) {
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx512f"))
		return 16;
	return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? 8 : 0;
}

// pf_separable convolves the image pix (rows of w bytes) by rc along x and
// cc down y (both reversed: tap j multiplies the input j places on) into
// the oh×ow dst, with vectors of simd lanes (pf_simd).
//
// Filtered row t (t < oh + kh - 1) is image row ym[t] extended along x by
// the column map (xm, ne = stride + kw - 1 entries, the run [r0, r1); see
// pf_fill), or zeros where ym[t] < 0. Output rows go batch (even) at a
// time, from a ring of the nr = kh + batch - 1 filtered rows they read,
// in strips of columns that stay in a core's L1 cache, two rows at a
// time. Filtered rows are stride wide (a multiple of simd, at least ow)
// and pitch apart in the ring. With tw, rows are filtered simd at a time
// (pf_xgroup; batch a multiple of simd), else one at a time. The
// scratch: ext (ne values), tw (NULL, or 2·simd·nep + stride values,
// 64-byte aligned, nep being ne rounded up to simd), ring (nr·pitch
// values), ro (nr row offsets).
static void pf_separable(int simd, const uint8_t *pix, int w, const int32_t *xm, int ne, int r0, int r1,
                         const int32_t *ym, const float *rc, int kw, const float *cc, int kh, int batch,
                         float *ext, float *tw, float *ring, int stride, int pitch, int32_t *ro, float *dst, int oh, int ow) {
	if (simd == 16)
		pf_separable_avx512(pix, w, xm, ne, r0, r1, ym, rc, kw, cc, kh, batch, ext, tw, ring, stride, pitch, ro, dst, oh, ow);
	else
		pf_separable_avx2(pix, w, xm, ne, r0, r1, ym, rc, kw, cc, kh, batch, ext, tw, ring, stride, pitch, ro, dst, oh, ow);
}

// pf_direct convolves the image pix (rows of w bytes) by the kh×kw kernel
// k (reversed in both axes: tap (i, j) multiplies ring row i of the
// output's kh at offset j) into the oh×ow dst, the plain sum over k's
// nonzero taps, two output rows at a time, with vectors of simd lanes
// (pf_simd). Row t (t < oh + kh - 1) of the ring is image row ym[t]
// extended along x as for pf_separable (ne = stride + kw - 1, stride a
// multiple of simd at least ow), or zeros where ym[t] < 0. The scratch:
// ring (kh + 1 rows pitch apart, pitch at least ne), scratch (kh + 1 +
// 3·(kh + 1)·kw), cf (4·(kh + 1)·kw).
static void pf_direct(int simd, const uint8_t *pix, int w, const int32_t *xm, int ne, int r0, int r1,
                      const int32_t *ym, const float *k, int kh, int kw, float *ring, int pitch, int32_t *scratch,
                      float *cf, float *dst, int oh, int ow) {
	if (simd == 16)
		pf_direct_avx512(pix, w, xm, ne, r0, r1, ym, k, kh, kw, ring, pitch, scratch, cf, dst, oh, ow);
	else
		pf_direct_avx2(pix, w, xm, ne, r0, r1, ym, k, kh, kw, ring, pitch, scratch, cf, dst, oh, ow);
}
*/
import "C"

import (
	"sync"
	"unsafe"
)

// cLanes is the vector width of separableC and directC on this CPU
// (pf_simd), 0 where they cannot run.
var cLanes = sync.OnceValue(func() int { return int(C.pf_simd()) })

// sepBatch is the output rows separableC takes at a time for kh taps down
// y: about a third as many, even, from 2 to 16. More rows a batch read
// each filtered row more times while it is in L1; fewer keep a small
// kernel's whole ring there.
func sepBatch(kh int) int { return min(16, 2*((kh+5)/6)) }

// sepTransposed is the fewest taps along x that go by pf_xgroup.
const sepTransposed = 16

// separableC is Separable in C with vectors of lanes (8 or 16, from
// cLanes): the x pass and the column pass as in separable, in one call.
func (c *Convolver) separableC(lanes int, dst []float32, pix []uint8, h, w int, k *Kernel, mode Mode, b Boundary, oh, ow int) []float32 {
	kh := k.H
	stride := (ow + lanes - 1) &^ (lanes - 1)
	xp := c.xPass(pix, h, w, k, mode, b, stride)
	batch := sepBatch(kh)
	// Long rows go PF_W at a time, transposed (pf_xgroup), in batches of
	// 16 rows, from a scratch aligned for vectors.
	var tw unsafe.Pointer
	if k.W >= sepTransposed {
		batch = 16
		nep := (len(xp.rm.m) + lanes - 1) &^ (lanes - 1)
		buf := f32(&c.tw, 2*lanes*nep+stride+16)
		off := int(uintptr(unsafe.Pointer(unsafe.SliceData(buf)))%64) / 4
		tw = unsafe.Pointer(&buf[(16-off)%16])
	}
	nt, nr := oh+kh-1, kh+batch-1
	if cap(c.cMap) < nt+nr {
		c.cMap = make([]int32, nt+nr)
	}
	ym, ro := c.cMap[:nt], c.cMap[nt:nt+nr]
	for t := range ym {
		ym[t] = int32(extIndex(xp.t0+t, h, b))
	}
	// Ring rows an odd number of cache lines apart, so that a strip of
	// them spreads over the cache's sets.
	pitch := (stride + 15) &^ 15
	pitch += 16 * (1 - pitch/16%2)
	ring := f32(&c.ring, nr*pitch)
	c.rowTaps = reversed(c.rowTaps, k.Row)
	c.colTaps = reversed(c.colTaps, k.Col)
	C.pf_separable(C.int(lanes), (*C.uint8_t)(unsafe.Pointer(unsafe.SliceData(pix))), C.int(w),
		(*C.int32_t)(unsafe.Pointer(unsafe.SliceData(xp.rm.m))), C.int(len(xp.rm.m)), C.int(xp.rm.r0), C.int(xp.rm.r1),
		(*C.int32_t)(unsafe.Pointer(unsafe.SliceData(ym))),
		(*C.float)(unsafe.SliceData(c.rowTaps)), C.int(k.W), (*C.float)(unsafe.SliceData(c.colTaps)), C.int(kh), C.int(batch),
		(*C.float)(unsafe.SliceData(xp.ext)), (*C.float)(tw), (*C.float)(unsafe.SliceData(ring)), C.int(stride), C.int(pitch),
		(*C.int32_t)(unsafe.Pointer(unsafe.SliceData(ro))), (*C.float)(unsafe.SliceData(dst)), C.int(oh), C.int(ow))
	return dst
}

// directC is Direct in C with vectors of lanes (8 or 16, from cLanes):
// the plain sum over the kernel's nonzero taps (pf_direct).
func (c *Convolver) directC(lanes int, dst []float32, pix []uint8, h, w int, k *Kernel, mode Mode, b Boundary, oh, ow int) []float32 {
	kh, kw := k.H, k.W
	stride := (ow + lanes - 1) &^ (lanes - 1)
	ne := stride + kw - 1
	rm := newRowMap(c.colSrc, first(mode, kw)-kw+1, ne, w, b)
	c.colSrc = rm.m
	nt, nq := oh+kh-1, (kh+1)*kw
	if n := nt + kh + 1 + 3*nq; cap(c.cMap) < n {
		c.cMap = make([]int32, n)
	}
	ym, scratch := c.cMap[:nt], c.cMap[nt:nt+kh+1+3*nq]
	t0 := first(mode, kh) - kh + 1
	for t := range ym {
		ym[t] = int32(extIndex(t0+t, h, b))
	}
	pitch := (ne + 15) &^ 15 // rows an odd number of cache lines apart, as in separableC
	pitch += 16 * (1 - pitch/16%2)
	ring := f32(&c.ring, (kh+1)*pitch)
	c.rowTaps = reversed(c.rowTaps, k.Data)
	cf := f32(&c.colTaps, 4*nq)
	C.pf_direct(C.int(lanes), (*C.uint8_t)(unsafe.Pointer(unsafe.SliceData(pix))), C.int(w),
		(*C.int32_t)(unsafe.Pointer(unsafe.SliceData(rm.m))), C.int(ne), C.int(rm.r0), C.int(rm.r1),
		(*C.int32_t)(unsafe.Pointer(unsafe.SliceData(ym))), (*C.float)(unsafe.SliceData(c.rowTaps)), C.int(kh), C.int(kw),
		(*C.float)(unsafe.SliceData(ring)), C.int(pitch), (*C.int32_t)(unsafe.Pointer(unsafe.SliceData(scratch))),
		(*C.float)(unsafe.SliceData(cf)), (*C.float)(unsafe.SliceData(dst)), C.int(oh), C.int(ow))
	return dst
}
