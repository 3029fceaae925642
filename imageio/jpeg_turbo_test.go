//go:build cgo

package imageio

import (
	"strings"
	"testing"
)

// Where libturbojpeg.so.0 cannot be opened, or lacks the functions, the
// decoder is nil and JPEGs decode with image/jpeg.
func TestTurboFallback(t *testing.T) {
	for soname, want := range map[string]string{
		"libturbojpeg-missing.so.0": "libturbojpeg-missing.so.0: cannot open shared object file",
		"libc.so.6":                 "undefined symbol: tjInitDecompress",
	} {
		tj, err := openTurbo(soname)
		if tj != nil || err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("openTurbo(%q) = %v, %v; want an error with %q", soname, tj, err, want)
		}
		if tj.decoder() != nil {
			t.Fatalf("%s: a decoder without the library", soname)
		}
		b := encodeJPEG(t, photo(37, 23, 8), 90)
		var g, want Gray
		if err := decodeGray(b, testLimit, &g, decoders{jpeg: tj.decoder()}); err != nil {
			t.Fatal(err)
		}
		if err := decodeGray(b, testLimit, &want, decoders{}); err != nil {
			t.Fatal(err)
		}
		checkGray(t, g, 37, 23, want.Pix, 0)
	}
}
