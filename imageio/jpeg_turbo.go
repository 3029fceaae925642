//go:build cgo

package imageio

/*
#cgo CFLAGS: -I${SRCDIR}/../internal/dl
#cgo LDFLAGS: -ldl
#include "dl.h"
#include <stdlib.h>

// The TurboJPEG API functions used, as turbojpeg.h of libjpeg-turbo 2.1
// declares them, written out so that building needs no -dev package.
// Nothing is linked: tj_open fills them in with dlsym.
typedef void *tjhandle;
enum { TJPF_GRAY = 6, TJCS_CMYK = 3, TJCS_YCCK = 4, TJFLAG_STOPONWARNING = 8192 };

typedef struct {
	tjhandle (*initDecompress)(void);
	int (*decompressHeader3)(tjhandle, const unsigned char *, unsigned long,
	                         int *width, int *height, int *subsamp, int *colorspace);
	int (*decompress2)(tjhandle, const unsigned char *, unsigned long,
	                   unsigned char *dst, int width, int pitch, int height,
	                   int pixelFormat, int flags);
	int (*destroy)(tjhandle);
	int major; // 2 or 3: the newest TurboJPEG API the library has
} tjlib;

// tj_open loads soname into lib. It returns 0, or -1 with dlerror's
// message in msg. tjGetErrorCode is not called, only required: it marks
// TurboJPEG 2.0, the first whose TJFLAG_STOPONWARNING makes decoding stop
// and fail at a warning.
static int tj_open(const char *soname, tjlib *lib, char *msg, size_t n) {
	const char *const names[] = {"tjInitDecompress", "tjDecompressHeader3", "tjDecompress2", "tjDestroy",
	                             "tjGetErrorCode"};
	void *fns[5];
	void *h = dl_open(soname, names, fns, 5, msg, n);
	if (h == NULL) {
		return -1;
	}
	lib->initDecompress = (tjhandle (*)(void))fns[0];
	lib->decompressHeader3 = (int (*)(tjhandle, const unsigned char *, unsigned long, int *, int *, int *, int *))fns[1];
	lib->decompress2 = (int (*)(tjhandle, const unsigned char *, unsigned long, unsigned char *, int, int, int, int, int))fns[2];
	lib->destroy = (int (*)(tjhandle))fns[3];
	lib->major = dlsym(h, "tj3Init") ? 3 : 2;
	return 0;
}

// tj_gray decodes b, whose header image/jpeg read as width x height, to
// 8-bit gray with no row padding, stopping at the first warning, in one
// call from Go. It returns 0 on success, or -1 when libjpeg-turbo reads
// another size, a CMYK or YCCK file, or fails.
static int tj_gray(const tjlib *l, const unsigned char *b, unsigned long n,
                   unsigned char *dst, int width, int height) {
	tjhandle h = l->initDecompress();
	if (h == NULL) {
		return -1;
	}
	int w, ht, subsamp, cs, rc = -1;
	if (l->decompressHeader3(h, b, n, &w, &ht, &subsamp, &cs) == 0 && w == width && ht == height &&
	    cs != TJCS_CMYK && cs != TJCS_YCCK) {
		rc = l->decompress2(h, b, n, dst, width, width, height, TJPF_GRAY, TJFLAG_STOPONWARNING) == 0 ? 0 : -1;
	}
	l->destroy(h);
	return rc;
}
*/
import "C"

import (
	"fmt"
	"sync"
	"unsafe"
)

// turbo is libjpeg-turbo's TurboJPEG library, opened with dlopen. It is
// never changed or closed once opened, so goroutines share it freely;
// each decode makes its own TurboJPEG handle (handles are not thread-safe).
type turbo struct {
	lib  C.tjlib
	name string
}

// loadTurbo opens libturbojpeg.so.0 on first use; it returns nil, for
// image/jpeg, when the library is missing or older than libjpeg-turbo 2.0.
// Once set, it is only read (the package's state: doc.go).
var loadTurbo = sync.OnceValue(func() *turbo {
	t, _ := openTurbo("libturbojpeg.so.0")
	return t
})

func openTurbo(soname string) (*turbo, error) {
	cs := C.CString(soname)
	defer C.free(unsafe.Pointer(cs))
	var t turbo
	var msg [512]C.char
	if C.tj_open(cs, &t.lib, &msg[0], C.size_t(len(msg))) != 0 {
		return nil, fmt.Errorf("imageio: %s", C.GoString(&msg[0]))
	}
	t.name = fmt.Sprintf("libjpeg-turbo %d.x", t.lib.major)
	return &t, nil
}

// turboGray is the libjpeg-turbo decoder, or nil when it is not loaded.
func turboGray() jpegGray { return loadTurbo().decoder() }

// decoder is t.gray, or nil (image/jpeg only) for a nil t.
func (t *turbo) decoder() jpegGray {
	if t == nil {
		return nil
	}
	return t.gray
}

// JPEGDecoder names the JPEG decoder in use: "libjpeg-turbo 2.x" or
// "libjpeg-turbo 3.x" when libturbojpeg.so.0 could be opened, otherwise
// "go image/jpeg".
func JPEGDecoder() string {
	if t := loadTurbo(); t != nil {
		return t.name
	}
	return goJPEG
}

// gray decodes b, whose header image/jpeg read as w x h, into dst: the
// Y plane of colour files (TJPF_GRAY). Whenever libjpeg-turbo cannot do
// that cleanly it returns false, leaving the file to image/jpeg, whose
// verdict and error message are then those of a machine without the
// library: when libjpeg-turbo reads the header differently or not at all;
// for CMYK and YCCK (libjpeg has no conversion from them to gray); and
// when it fails or even warns (truncated data, extraneous bytes).
func (t *turbo) gray(b []byte, w, h int, dst *Gray) bool {
	buf := grow(dst.Pix, w*h)
	if C.tj_gray(&t.lib, (*C.uchar)(unsafe.Pointer(&b[0])), C.ulong(len(b)), (*C.uchar)(&buf[0]), C.int(w), C.int(h)) != 0 {
		return false
	}
	dst.W, dst.H, dst.Pix = w, h, buf
	return true
}
