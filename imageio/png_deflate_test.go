//go:build cgo

package imageio

import (
	"strings"
	"testing"
)

// Where libdeflate.so.0 cannot be opened, or lacks the functions, there
// is no inflate and PNGs decode with image/png.
func TestDeflateFallback(t *testing.T) {
	for soname, want := range map[string]string{
		"libdeflate-missing.so.0": "libdeflate-missing.so.0: cannot open shared object file",
		"libc.so.6":               "undefined symbol: libdeflate_alloc_decompressor",
	} {
		l, err := openDeflate(soname)
		if l != nil || err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("openDeflate(%q) = %v, %v; want an error with %q", soname, l, err, want)
		}
		if l.inflater() != nil {
			t.Fatalf("%s: an inflate without the library", soname)
		}
		b := rawPNG(pngSpec{w: 9, h: 4, colorType: ctRGB, depth: 8, filter: 4, seed: 3})
		var g, want Gray
		if err := decodeGray(b, testLimit, &g, decoders{png: l.inflater()}); err != nil {
			t.Fatal(err)
		}
		if err := decodeGray(b, testLimit, &want, decoders{}); err != nil {
			t.Fatal(err)
		}
		checkGray(t, g, 9, 4, want.Pix, 0)
	}
}
