//go:build cgo

package imageio

/*
#cgo CFLAGS: -I${SRCDIR}/../internal/dl
#cgo LDFLAGS: -ldl
#include "dl.h"
#include <stdlib.h>

// The libdeflate functions used (libdeflate 1.6 or newer), as libdeflate.h
// declares them, written out so that building needs no -dev package.
// Nothing is linked: ld_open fills them in with dlsym.
typedef struct {
	void *(*alloc)(void);
	int (*zlib_ex)(void *, const void *in, size_t in_nbytes, void *out, size_t out_nbytes_avail,
	               size_t *actual_in_nbytes_ret, size_t *actual_out_nbytes_ret);
	void (*free)(void *);
} ldlib;

// ld_open loads soname into lib. It returns 0, or -1 with dlerror's
// message in msg.
static int ld_open(const char *soname, ldlib *lib, char *msg, size_t n) {
	const char *const names[] = {"libdeflate_alloc_decompressor", "libdeflate_zlib_decompress_ex",
	                             "libdeflate_free_decompressor"};
	void *fns[3];
	if (dl_open(soname, names, fns, 3, msg, n) == NULL) {
		return -1;
	}
	lib->alloc = (void *(*)(void))fns[0];
	lib->zlib_ex = (int (*)(void *, const void *, size_t, void *, size_t, size_t *, size_t *))fns[1];
	lib->free = (void (*)(void *))fns[2];
	return 0;
}

// ld_inflate decompresses the zlib stream src into dst with a
// decompressor of its own. It returns 0 when the stream fills dst exactly
// (no actual_out_nbytes_ret: anything shorter is an error, anything longer
// LIBDEFLATE_INSUFFICIENT_SPACE), its Adler-32 holds, and it ends at the
// end of src.
static int ld_inflate(const ldlib *l, const unsigned char *src, size_t n, unsigned char *dst, size_t m) {
	void *d = l->alloc();
	if (d == NULL)
		return -1;
	size_t used = 0;
	int r = l->zlib_ex(d, src, n, dst, m, &used, NULL);
	l->free(d);
	return r == 0 && used == n ? 0 : -1;
}

// pf_paeth reverses the Paeth filter on a row of n bytes in place, prev
// being the unfiltered row above; bpp is 3 or 4. With SSE2 (every x86-64)
// it takes a pixel's channels together, as libpng's filter_sse2 does:
// 16-bit lanes, absolute values as max(x, -x), ties to a, then b.
#if defined(__SSE2__)
#include <immintrin.h>
#include <string.h>

// pf_load widens the k (3 or 4) bytes at p to 16-bit lanes. Where 4 bytes
// may be read (more4) it reads them at once: a value put together in
// memory from smaller stores would stall the load that reads it back.
static inline __m128i pf_load(const unsigned char *p, size_t k, int more4) {
	int v;
	if (more4 || k == 4)
		memcpy(&v, p, 4);
	else
		v = p[0] | p[1] << 8 | p[2] << 16;
	return _mm_unpacklo_epi8(_mm_cvtsi32_si128(v), _mm_setzero_si128());
}

static inline __m128i pf_abs(__m128i x) { return _mm_max_epi16(x, _mm_sub_epi16(_mm_setzero_si128(), x)); }

static inline __m128i pf_pick(__m128i m, __m128i t, __m128i e) {
	return _mm_or_si128(_mm_and_si128(m, t), _mm_andnot_si128(m, e));
}

static inline __attribute__((always_inline)) void pf_paeth_k(unsigned char *row, const unsigned char *prev, size_t n, size_t bpp) {
	__m128i a = _mm_setzero_si128(), b = a, c, d = a;
	for (size_t i = 0; i + bpp <= n; i += bpp) {
		c = b;
		b = pf_load(prev + i, bpp, i + 4 <= n);
		a = d;
		d = pf_load(row + i, bpp, i + 4 <= n);
		__m128i pa = _mm_sub_epi16(b, c), pb = _mm_sub_epi16(a, c);
		__m128i pc = pf_abs(_mm_add_epi16(pa, pb));
		pa = pf_abs(pa);
		pb = pf_abs(pb);
		__m128i least = _mm_min_epi16(pc, _mm_min_epi16(pa, pb));
		__m128i near = pf_pick(_mm_cmpeq_epi16(least, pa), a, pf_pick(_mm_cmpeq_epi16(least, pb), b, c));
		d = _mm_add_epi8(d, near); // the high bytes stay 0; the low ones wrap
		int v = _mm_cvtsi128_si32(_mm_packus_epi16(d, d));
		memcpy(row + i, &v, bpp);
	}
}

// The byte count a constant, so that memcpy becomes plain moves.
static void pf_paeth(unsigned char *row, const unsigned char *prev, size_t n, size_t bpp) {
	if (bpp == 3)
		pf_paeth_k(row, prev, n, 3);
	else
		pf_paeth_k(row, prev, n, 4);
}

// pf_unfilter32 reverses the filters of 32 rows of n bytes whose filter
// distance is bpp bytes (1 to 4: 8-bit gray or fewer bits a pixel, gray
// and alpha, RGB, RGBA), in place: row k is rows + k*stride, its filter
// type (0 to 4; the caller checked) at row[-1]; prev is the unfiltered row
// above row 0. Within a row each byte waits on its left neighbour (a
// chain about 8 cycles long), so the 32 rows go side by side instead, as
// a wavefront: at step t, lane k holds row k's byte t-k, whose neighbours
// above (row k-1's bytes t-k and t-k-bpp) lane k-1 made at the steps t-1
// and t-1-bpp, and its left one (t-k-bpp) lane k at t-bpp. Rows 0-15 go in the
// 16-bit lanes of one vector, 16-31 in another. Bytes are gathered from
// rows into steps, and back, 16 steps at a time: the 16 bytes of row k
// and of row 16+k (16 bytes behind) in one 256-bit vector, 16 of them
// transposed as two 16x16 byte blocks at once. Those loads and stores
// stay after the first row's filter byte but reach up to 15 bytes past
// the last row: the caller has 16 bytes there (stores put back what they
// read outside the rows). It returns 0, with nothing done, on a CPU
// without AVX2 or for another bpp.
#define PF_GROUP 32

// pf_t16x2 transposes the two 16x16 byte blocks in g (the 128-bit halves,
// apart): byte j of half h of g[k] goes to byte k of half h of g[j]
// (unpacks of 8, 16, 32 and 64 bits, which keep to their halves).
__attribute__((target("avx2"))) static inline void pf_t16x2(__m256i g[16]) {
	__m256i t[16], u[16];
	for (int i = 0; i < 8; i++) {
		t[i] = _mm256_unpacklo_epi8(g[2 * i], g[2 * i + 1]);
		t[i + 8] = _mm256_unpackhi_epi8(g[2 * i], g[2 * i + 1]);
	}
	// u[4c + i]: rows 4i to 4i+3 of columns 4c to 4c+3, a column each 32 bits
	for (int h = 0; h < 2; h++)
		for (int i = 0; i < 4; i++) {
			u[8 * h + i] = _mm256_unpacklo_epi16(t[8 * h + 2 * i], t[8 * h + 2 * i + 1]);
			u[8 * h + 4 + i] = _mm256_unpackhi_epi16(t[8 * h + 2 * i], t[8 * h + 2 * i + 1]);
		}
	for (int c = 0; c < 4; c++) {
		__m256i v0 = _mm256_unpacklo_epi32(u[4 * c], u[4 * c + 1]), v1 = _mm256_unpackhi_epi32(u[4 * c], u[4 * c + 1]);
		__m256i v2 = _mm256_unpacklo_epi32(u[4 * c + 2], u[4 * c + 3]), v3 = _mm256_unpackhi_epi32(u[4 * c + 2], u[4 * c + 3]);
		g[4 * c] = _mm256_unpacklo_epi64(v0, v2);
		g[4 * c + 1] = _mm256_unpackhi_epi64(v0, v2);
		g[4 * c + 2] = _mm256_unpacklo_epi64(v1, v3);
		g[4 * c + 3] = _mm256_unpackhi_epi64(v1, v3);
	}
}

// pf_edge is all ones in byte j where 0 <= x+j < n: x is a row's byte at
// byte 0 of a 16-byte load; pf_ones its windows.
static const unsigned char pf_ones[48] = {
    0,    0,    0,    0,    0,    0,    0,    0,    0,    0,    0,    0,    0,    0,    0,    0,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0,    0,    0,    0,    0,    0,    0,    0,    0,    0,    0,    0,    0,    0,    0,    0};

static inline __m128i pf_edge(long x, long n) {
	long lo = x < -16 ? -16 : x > 0 ? 0 : x, m = n - x; // bytes j >= -lo, and j < m, are in
	m = m < 0 ? 0 : m > 16 ? 16 : m;
	__m128i a = _mm_loadu_si128((const __m128i *)(pf_ones + 16 + lo));
	__m128i b = _mm_loadu_si128((const __m128i *)(pf_ones + 32 - m));
	return _mm_and_si128(a, b);
}

// pf_gather loads step vectors t0 to t0+15: g[j]'s low half byte k is row
// k's byte t0+j-k, its high half row 16+k's byte t0-16+j-k, zero outside
// the rows.
__attribute__((target("avx2"))) static inline void pf_gather(__m256i g[16], const unsigned char *rows, size_t stride, long n, long t0) {
	int inside = t0 >= PF_GROUP - 1 && t0 + 16 <= n;
	for (int k = 0; k < 16; k++) {
		const unsigned char *r0 = rows + ((long)(k * stride) + t0 - k), *r1 = rows + ((long)((16 + k) * stride) + t0 - 16 - k);
		__m128i a = _mm_loadu_si128((const __m128i *)r0), b = _mm_loadu_si128((const __m128i *)r1);
		if (!inside) {
			a = _mm_and_si128(a, pf_edge(t0 - k, n));
			b = _mm_and_si128(b, pf_edge(t0 - 16 - k, n));
		}
		g[k] = _mm256_set_m128i(b, a);
	}
	pf_t16x2(g);
}

// pf_scatter is pf_gather's reverse, for the bytes inside the rows.
__attribute__((target("avx2"))) static inline void pf_scatter(__m256i g[16], unsigned char *rows, size_t stride, long n, long t0) {
	int inside = t0 >= PF_GROUP - 1 && t0 + 16 <= n;
	pf_t16x2(g);
	for (int k = 0; k < 16; k++) {
		unsigned char *r0 = rows + ((long)(k * stride) + t0 - k), *r1 = rows + ((long)((16 + k) * stride) + t0 - 16 - k);
		__m128i a = _mm256_castsi256_si128(g[k]), b = _mm256_extracti128_si256(g[k], 1);
		if (!inside) {
			a = _mm_blendv_epi8(_mm_loadu_si128((const __m128i *)r0), a, pf_edge(t0 - k, n));
			b = _mm_blendv_epi8(_mm_loadu_si128((const __m128i *)r1), b, pf_edge(t0 - 16 - k, n));
		}
		_mm_storeu_si128((__m128i *)r0, a);
		_mm_storeu_si128((__m128i *)r1, b);
	}
}

// pf_pred is a row filter's prediction from a (left), b (above) and c
// (upper left), each lane's filter by the masks m (all ones where the
// lane's row has Sub, Up, Average, Paeth; None has none); paeth: every
// lane's is Paeth. Paeth's ties go to a, then b, as pf_paeth_k's.
__attribute__((target("avx2"))) static inline __m256i pf_pred(__m256i a, __m256i b, __m256i c, const __m256i m[4], int paeth) {
	__m256i pa = _mm256_sub_epi16(b, c), pb = _mm256_sub_epi16(a, c);
	__m256i pc = _mm256_abs_epi16(_mm256_add_epi16(pa, pb));
	pa = _mm256_abs_epi16(pa);
	pb = _mm256_abs_epi16(pb);
	__m256i least = _mm256_min_epi16(pc, _mm256_min_epi16(pa, pb));
	__m256i near = _mm256_blendv_epi8(_mm256_blendv_epi8(c, b, _mm256_cmpeq_epi16(least, pb)), a, _mm256_cmpeq_epi16(least, pa));
	if (paeth)
		return near;
	__m256i avg = _mm256_srli_epi16(_mm256_add_epi16(a, b), 1);
	return _mm256_or_si256(_mm256_or_si256(_mm256_and_si256(m[0], a), _mm256_and_si256(m[1], b)),
	                       _mm256_or_si256(_mm256_and_si256(m[2], avg), _mm256_and_si256(m[3], near)));
}

// pf_unfilter32_k for bpp (1 to 4) bytes of filter distance: a byte's
// left neighbour is the one bpp steps before in its lane, its upper left
// the byte above that one; the last bpp steps' outputs and bytes above
// stay in registers.
__attribute__((target("avx2"))) static inline __attribute__((always_inline)) void
pf_unfilter32_k(unsigned char *rows, size_t stride, long n, const unsigned char *prev, int paeth, int bpp) {
	short mk[4][PF_GROUP] = {{0}};
	for (int k = 0; k < PF_GROUP; k++) {
		int f = (rows - 1)[k * stride];
		if (f >= 1 && f <= 4)
			mk[f - 1][k] = -1;
	}
	__m256i mA[4], mB[4];
	for (int f = 0; f < 4; f++) {
		mA[f] = _mm256_loadu_si256((const __m256i *)&mk[f][0]);
		mB[f] = _mm256_loadu_si256((const __m256i *)&mk[f][16]);
	}
	const __m256i lo = _mm256_set1_epi16(0xff), zero = _mm256_setzero_si256();
	// oK, uK: the outputs and the bytes above them of step t-K; left of
	// byte 0, and above it, are zeros.
	__m256i o1A = zero, o2A = zero, o3A = zero, o4A = zero, o1B = zero, o2B = zero, o3B = zero, o4B = zero;
	__m256i u1A = zero, u2A = zero, u3A = zero, u4A = zero, u1B = zero, u2B = zero, u3B = zero, u4B = zero;
	for (long t0 = 0; t0 < n + PF_GROUP - 1; t0 += 16) {
		__m256i g[16];
		pf_gather(g, rows, stride, n, t0);
		for (int j = 0; j < 16; j++) {
			long t = t0 + j;
			// prev[t] in lane 7 of the low half: shifted into lane 0 below.
			__m128i above = _mm_slli_si128(_mm_cvtsi32_si128(t < n ? prev[t] : 0), 14);
			__m256i xA = _mm256_cvtepu8_epi16(_mm256_castsi256_si128(g[j])), xB = _mm256_cvtepu8_epi16(_mm256_extracti128_si256(g[j], 1));
			// Lanes up by one: lane 0 of A from prev, of B from A's lane 15.
			__m256i upA = _mm256_alignr_epi8(o1A, _mm256_permute2x128_si256(o1A, _mm256_castsi128_si256(above), 0x02), 14);
			__m256i upB = _mm256_alignr_epi8(o1B, _mm256_permute2x128_si256(o1A, o1B, 0x21), 14);
			__m256i aA = bpp == 1 ? o1A : bpp == 2 ? o2A : bpp == 3 ? o3A : o4A;
			__m256i aB = bpp == 1 ? o1B : bpp == 2 ? o2B : bpp == 3 ? o3B : o4B;
			__m256i cA = bpp == 1 ? u1A : bpp == 2 ? u2A : bpp == 3 ? u3A : u4A;
			__m256i cB = bpp == 1 ? u1B : bpp == 2 ? u2B : bpp == 3 ? u3B : u4B;
			__m256i outA = _mm256_and_si256(_mm256_add_epi16(xA, pf_pred(aA, upA, cA, mA, paeth)), lo);
			__m256i outB = _mm256_and_si256(_mm256_add_epi16(xB, pf_pred(aB, upB, cB, mB, paeth)), lo);
			o4A = o3A, o3A = o2A, o2A = o1A, o1A = outA;
			o4B = o3B, o3B = o2B, o2B = o1B, o1B = outB;
			u4A = u3A, u3A = u2A, u2A = u1A, u1A = upA;
			u4B = u3B, u3B = u2B, u2B = u1B, u1B = upB;
			g[j] = _mm256_permute4x64_epi64(_mm256_packus_epi16(outA, outB), 0xd8);
		}
		pf_scatter(g, rows, stride, n, t0);
	}
}

// All 32 rows Paeth (most rows of most photos) go without the masks.
__attribute__((target("avx2"))) static void pf_unfilter32_avx2(unsigned char *rows, size_t stride, long n, const unsigned char *prev, int bpp) {
	int paeth = 1;
	for (int k = 0; k < PF_GROUP; k++)
		paeth &= (rows - 1)[k * stride] == 4;
#define PF_BPP(b)                                            \
	case b:                                                  \
		if (paeth)                                           \
			pf_unfilter32_k(rows, stride, n, prev, 1, b);    \
		else                                                 \
			pf_unfilter32_k(rows, stride, n, prev, 0, b);    \
		break;
	switch (bpp) {
		PF_BPP(1)
		PF_BPP(2)
		PF_BPP(3)
		PF_BPP(4)
	}
#undef PF_BPP
}

static int pf_have_avx2(void) { return __builtin_cpu_supports("avx2"); }

// pf_rgb8 writes the gray of n 8-bit RGB (step 3) or RGBA (step 4)
// pixels at in to out by the package's rule, luma's
// (19595 R + 38470 G + 7471 B + 0x8000) >> 16 exactly, 8 pixels at a
// time: each half of a vector loads 4 pixels and shuffles their R, G and
// B bytes into 32-bit lanes. Loads reach 4 bytes past the last pixel for
// RGB, so the caller stops 2 pixels short of a row's end. It returns the
// pixels done (a multiple of 8; 0 without AVX2).
__attribute__((target("avx2"))) static size_t pf_rgb8_avx2(unsigned char *out, const unsigned char *in, size_t n, size_t step) {
	const __m256i kr = _mm256_set1_epi32(19595), kg = _mm256_set1_epi32(38470), kb = _mm256_set1_epi32(7471);
	const __m256i half = _mm256_set1_epi32(0x8000);
	__m256i sr, sg, sb;
	if (step == 3) {
		sr = _mm256_setr_epi8(0, -1, -1, -1, 3, -1, -1, -1, 6, -1, -1, -1, 9, -1, -1, -1, 0, -1, -1, -1, 3, -1, -1, -1, 6, -1, -1, -1, 9, -1, -1, -1);
	} else {
		sr = _mm256_setr_epi8(0, -1, -1, -1, 4, -1, -1, -1, 8, -1, -1, -1, 12, -1, -1, -1, 0, -1, -1, -1, 4, -1, -1, -1, 8, -1, -1, -1, 12, -1, -1, -1);
	}
	sg = _mm256_add_epi8(sr, _mm256_and_si256(_mm256_cmpgt_epi8(sr, _mm256_set1_epi8(-1)), _mm256_set1_epi8(1)));
	sb = _mm256_add_epi8(sg, _mm256_and_si256(_mm256_cmpgt_epi8(sg, _mm256_set1_epi8(-1)), _mm256_set1_epi8(1)));
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		const unsigned char *p = in + i * step;
		__m256i v = _mm256_set_m128i(_mm_loadu_si128((const __m128i *)(p + 4 * step)), _mm_loadu_si128((const __m128i *)p));
		__m256i y = _mm256_add_epi32(_mm256_mullo_epi32(_mm256_shuffle_epi8(v, sr), kr), half);
		y = _mm256_add_epi32(y, _mm256_mullo_epi32(_mm256_shuffle_epi8(v, sg), kg));
		y = _mm256_srli_epi32(_mm256_add_epi32(y, _mm256_mullo_epi32(_mm256_shuffle_epi8(v, sb), kb)), 16);
		__m128i w = _mm_packus_epi32(_mm256_castsi256_si128(y), _mm256_extracti128_si256(y, 1));
		_mm_storel_epi64((__m128i *)(out + i), _mm_packus_epi16(w, w));
	}
	return i;
}

static size_t pf_rgb8(unsigned char *out, const unsigned char *in, size_t n, size_t step) {
	if ((step != 3 && step != 4) || !pf_have_avx2())
		return 0;
	return pf_rgb8_avx2(out, in, n, step);
}

static int pf_unfilter32(unsigned char *rows, size_t stride, size_t n, const unsigned char *prev, size_t bpp) {
	if (bpp < 1 || bpp > 4 || !pf_have_avx2())
		return 0;
	pf_unfilter32_avx2(rows, stride, n, prev, bpp);
	return 1;
}
#else
static void pf_paeth(unsigned char *row, const unsigned char *prev, size_t n, size_t bpp) {
	for (size_t i = 0; i < n; i++) {
		int a = i >= bpp ? row[i - bpp] : 0, b = prev[i], c = i >= bpp ? prev[i - bpp] : 0;
		int pa = abs(b - c), pb = abs(a - c), pc = abs(a + b - 2 * c);
		row[i] += pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
	}
}
#endif
#ifndef PF_GROUP
#define PF_GROUP 32
static int pf_have_avx2(void) { return 0; }
static size_t pf_rgb8(unsigned char *out, const unsigned char *in, size_t n, size_t step) { return 0; }
static int pf_unfilter32(unsigned char *rows, size_t stride, size_t n, const unsigned char *prev, size_t bpp) { return 0; }
#endif
*/
import "C"

import (
	"fmt"
	"sync"
	"unsafe"
)

// libdeflate is the libdeflate library, opened with dlopen. It is never
// changed or closed once opened; each inflate allocates its own
// decompressor (about 10 KB of C memory, freed at once).
type libdeflate struct{ lib C.ldlib }

// loadDeflate opens libdeflate.so.0 on first use; it returns nil, for
// image/png, when the library is missing. Once set, it is only read (the
// package's state: doc.go).
var loadDeflate = sync.OnceValue(func() *libdeflate {
	l, _ := openDeflate("libdeflate.so.0")
	return l
})

func openDeflate(soname string) (*libdeflate, error) {
	cs := C.CString(soname)
	defer C.free(unsafe.Pointer(cs))
	var l libdeflate
	var msg [512]C.char
	if C.ld_open(cs, &l.lib, &msg[0], C.size_t(len(msg))) != 0 {
		return nil, fmt.Errorf("imageio: %s", C.GoString(&msg[0]))
	}
	return &l, nil
}

// pngInflate is libdeflate's inflate, or nil when it is not loaded.
func pngInflate() zinflate { return loadDeflate().inflater() }

// inflater is l.inflate, or nil (image/png only) for a nil l.
func (l *libdeflate) inflater() zinflate {
	if l == nil {
		return nil
	}
	return l.inflate
}

// PNGDecoder names the PNG decoder in use: "libdeflate" (libdeflate's
// inflate, then the package's own unfilter and gray conversion) when
// libdeflate.so.0 could be opened, otherwise "go image/png".
func PNGDecoder() string {
	if loadDeflate() != nil {
		return libdeflateName
	}
	return goPNG
}

// paethRow reverses the Paeth filter in place: in C for 3 and 4 bytes
// per pixel (8-bit RGB and RGBA, most photos), paethN otherwise.
func paethRow(cur, prev []byte, bpp int) {
	if (bpp != 3 && bpp != 4) || len(cur) == 0 {
		paethN(cur, prev, bpp)
		return
	}
	prev = prev[:len(cur)]
	C.pf_paeth((*C.uchar)(unsafe.Pointer(&cur[0])), (*C.uchar)(unsafe.Pointer(&prev[0])), C.size_t(len(cur)), C.size_t(bpp))
}

// unfilterGroup is the number of rows unfilterRows takes at once.
const unfilterGroup = C.PF_GROUP

// haveAVX2 says whether this CPU has AVX2, for unfilterRows and
// grayRGB8. Once set, it is only read (the package's state: doc.go).
var haveAVX2 = sync.OnceValue(func() bool { return C.pf_have_avx2() != 0 })

// unfilterRows reverses the filters of the unfilterGroup rows at the
// start of raw (each its filter type, 0 to 4, then n bytes), whose filter
// distance is bpp bytes, in place, prev being the unfiltered row above;
// false, with nothing done, for a bpp over 4, or without AVX2 (or on
// other CPUs than x86-64).
// raw lies within gray's padded data: pf_unfilter32 reaches up to 15
// bytes past the group's rows.
func unfilterRows(raw []byte, n int, prev []byte, bpp int) bool {
	if n == 0 || len(raw) < unfilterGroup*(n+1) || cap(raw) < unfilterGroup*(n+1)+rawPad-1 || len(prev) < n {
		return false
	}
	return C.pf_unfilter32((*C.uchar)(unsafe.Pointer(&raw[1])), C.size_t(n+1), C.size_t(n), (*C.uchar)(unsafe.Pointer(&prev[0])), C.size_t(bpp)) != 0
}

// grayRGB8 is rgb8, 8 pixels at a time in C with AVX2 (haveAVX2)
// for RGB (step 3) and RGBA (step 4), the rest in Go.
func grayRGB8(out, in []uint8, step int) {
	n := len(out)
	if step == 3 {
		n = min(n, len(in)/3-2) // pf_rgb8 reads 4 bytes past its pixels
	}
	done := 0
	if n >= 8 && (step == 3 || step == 4) && len(in) >= step*n && haveAVX2() {
		done = int(C.pf_rgb8((*C.uchar)(unsafe.Pointer(&out[0])), (*C.uchar)(unsafe.Pointer(&in[0])), C.size_t(n), C.size_t(step)))
	}
	rgb8(out[done:], in[step*done:], step)
}

func (l *libdeflate) inflate(dst, src []byte) bool {
	if len(src) == 0 || len(dst) == 0 {
		return false
	}
	return C.ld_inflate(&l.lib, (*C.uchar)(unsafe.Pointer(&src[0])), C.size_t(len(src)),
		(*C.uchar)(unsafe.Pointer(&dst[0])), C.size_t(len(dst))) == 0
}
