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
#include <emmintrin.h>
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
#else
static void pf_paeth(unsigned char *row, const unsigned char *prev, size_t n, size_t bpp) {
	for (size_t i = 0; i < n; i++) {
		int a = i >= bpp ? row[i - bpp] : 0, b = prev[i], c = i >= bpp ? prev[i - bpp] : 0;
		int pa = abs(b - c), pb = abs(a - c), pc = abs(a + b - 2 * c);
		row[i] += pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
	}
}
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
// image/png, when the library is missing. This once-set, then read-only,
// value is, with loadTurbo, the package's only state.
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

func (l *libdeflate) inflate(dst, src []byte) bool {
	if len(src) == 0 || len(dst) == 0 {
		return false
	}
	return C.ld_inflate(&l.lib, (*C.uchar)(unsafe.Pointer(&src[0])), C.size_t(len(src)),
		(*C.uchar)(unsafe.Pointer(&dst[0])), C.size_t(len(dst))) == 0
}
