package imageio

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// FuzzDecodeJPEG runs both JPEG decoders, libjpeg-turbo (through dlopen)
// and image/jpeg, on every input, prefixed with a JPEG SOI marker when it
// lacks one so that mutations stay on this path:
//   - what image/jpeg decodes, the libjpeg-turbo path decodes too, to the
//     same size (the header's);
//   - where the libjpeg-turbo path fails, it fails with image/jpeg's
//     error, message included;
//   - neither panics, nor (libjpeg-turbo being C) crashes the process;
//   - JPEGLuma and JPEGProgressive do not panic.
//
// FuzzDecodeGray checks the same errors, but only on inputs it happens to
// keep JPEG, and never compares what both decode.
func FuzzDecodeJPEG(f *testing.F) {
	fast := needTurbo(f)
	seeds := [][]byte{
		encode(f, "jpeg", gradient(16, 16, 90)),
		encode(f, "jpeg", randomGray(9, 7, 91)),
		encode(f, "jpeg", randomNRGBA(17, 9, 92)),
		encodeJPEG(f, photo(40, 24, 93), 50),
		progressiveJPEG(24, 16, 3),
		progressiveJPEG(8, 8, 100),
		{0xff, 0xd8, 0xff},
	}
	files, err := filepath.Glob("testdata/jpeg/*.jpg")
	if err != nil || len(files) == 0 {
		f.Fatalf("no testdata/jpeg/*.jpg: %v", err)
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, b)
	}
	for _, s := range seeds {
		f.Add(s)
		f.Add(s[:len(s)*2/3])
	}
	soi := []byte{0xff, 0xd8, 0xff}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !bytes.HasPrefix(b, soi) {
			b = append(soi[:3:3], b...)
		}
		_, _ = JPEGLuma(b), JPEGProgressive(b) // the device path's readers: no panic
		var tj, g Gray
		errT := decodeGray(b, fuzzLimit, &tj, decoders{jpeg: fast})
		errG := decodeGray(b, fuzzLimit, &g, decoders{})
		switch {
		case errG == nil && errT != nil:
			t.Fatalf("image/jpeg decodes it, the libjpeg-turbo path fails: %v", errT)
		case errT != nil && errT.Error() != errG.Error():
			t.Fatalf("libjpeg-turbo path: %v\nimage/jpeg path: %v", errT, errG)
		case errT != nil:
			checkSentinel(t, errT)
			return
		}
		info, err := DecodeInfo(b)
		if err != nil || tj.W != info.W || tj.H != info.H || len(tj.Pix) != tj.W*tj.H {
			t.Fatalf("libjpeg-turbo path: %dx%d, %d pixels for a header of %+v (%v)", tj.W, tj.H, len(tj.Pix), info, err)
		}
		if errG == nil && (g.W != tj.W || g.H != tj.H) {
			t.Fatalf("sizes differ: %dx%d and %dx%d", tj.W, tj.H, g.W, g.H)
		}
	})
}
