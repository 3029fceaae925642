package imageio

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// fuzzLimit keeps fuzzed decodes small.
var fuzzLimit = Limits{MaxPixels: 1 << 20}

var sentinels = []error{ErrEmpty, ErrUnknownFormat, ErrTooLarge, ErrCorrupt, ErrTruncated, ErrBadDims, ErrBadStruct}

func checkSentinel(t *testing.T, err error) {
	t.Helper()
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return
		}
	}
	t.Fatalf("error wraps no package error value: %v", err)
}

func FuzzDecodeGray(f *testing.F) {
	const w, h = 7, 5
	seeds := [][]byte{
		encode(f, "png", randomNRGBA(w, h, 1)),
		encode(f, "png", randomGray16(w, h, 2)),
		encode(f, "png", randomPaletted(w, h, 3, 16)),
		encode(f, "jpeg", gradient(w, h, 4)),
		encode(f, "jpeg", randomGray(w, h, 5)),
		encode(f, "gif", randomPaletted(w, h, 6, 8)),
		encode(f, "bmp", opaque(gradient(w, h, 7))),
		encode(f, "bmp", randomPaletted(w, h, 8, 4)),
		encode(f, "tiff", randomNRGBA(w, h, 9)),
		encode(f, "tiff-deflate", randomGray(w, h, 10)),
		encode(f, "webp", randomNRGBA(w, h, 11)),
		pnm(w, h, 1, 255, make([]int, w*h), false),
		pnm(2, 2, 3, 65535, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 65535}, false),
		pnm(2, 1, 3, 15, []int{0, 1, 2, 3, 4, 15}, true),
		pngHeader(60000, 60000, 2),
		pngHeader(0, 1, 0),
		[]byte("P5 60000 60000 255\n"),
		[]byte("P2 2 2 3 0 1 2 4"),
		[]byte("RIFF\x10\x00\x00\x00WEBPVP8X\x0a\x00\x00\x00"),
		[]byte("GIF89a"),
		[]byte("II*\x00\x08\x00\x00\x00"),
		[]byte("BM"),
		{0xff, 0xd8, 0xff},
		nil,
	}
	// Pillow's JPEGs: progressive, 4:2:2 and 4:4:4, restart markers, RGB, CMYK.
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
		if len(s) > 2 {
			f.Add(s[:len(s)/2]) // truncated
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var g Gray
		var err error
		checkAlloc(t, b, err, allocatedBy(func() { err = DecodeGray(b, fuzzLimit, &g) }))
		if err != nil {
			checkSentinel(t, err)
			// A JPEG error is image/jpeg's own, with or without libjpeg-turbo.
			if format, _ := Sniff(b); format == "jpeg" {
				var alone Gray
				if goErr := decodeGray(b, fuzzLimit, &alone, decoders{}); fmt.Sprint(goErr) != err.Error() {
					t.Fatalf("error %q, but image/jpeg alone says %v", err, goErr)
				}
			}
			if g.Pix != nil || g.W != 0 || g.H != 0 {
				t.Fatalf("dst changed on error %v", err)
			}
			return
		}
		if g.W <= 0 || g.H <= 0 || len(g.Pix) != g.W*g.H || int64(g.W*g.H) > fuzzLimit.MaxPixels {
			t.Fatalf("bad result: %dx%d with %d pixels", g.W, g.H, len(g.Pix))
		}
		info, err := DecodeInfo(b)
		if err != nil || info.W != g.W || info.H != g.H {
			t.Fatalf("DecodeInfo = %+v, %v after decoding %dx%d", info, err, g.W, g.H)
		}
		// Decoding again into the used dst reuses it and gives the same pixels.
		before := string(g.Pix)
		if err := DecodeGray(b, fuzzLimit, &g); err != nil || string(g.Pix) != before {
			t.Fatalf("second decode differs: %v", err)
		}
	})
}

// checkAlloc: DecodeGray(b), which returned err, allocated n bytes. A
// file refused from its header or as too short for it (checkData)
// allocates at most a small multiple of its size (x/image/tiff reads an
// IFD's arrays into 8-byte values; tiffGuard may copy b); a file that
// passed those checks at most a multiple of its size plus a multiple of
// its header's pixels (the decoder's image, at most 8 bytes a pixel, TIFF
// tiles covering up to 4 times the image, growing buffers doubling). And
// a file refused as truncated is one the Go decoder refuses too: the
// checks are lower bounds, never stricter than the decoders.
func checkAlloc(t *testing.T, b []byte, err error, n uint64) {
	t.Helper()
	size := uint64(len(b))
	for _, e := range []error{ErrEmpty, ErrUnknownFormat, ErrBadDims, ErrTooLarge, ErrTruncated} {
		if errors.Is(err, e) {
			if n > (16*size+256<<10)*allocScale {
				t.Fatalf("refused (%v), yet allocated %d KiB for %d bytes", err, n>>10, size)
			}
			if format, _ := Sniff(b); e == ErrTruncated && format != "pnm" {
				if derr := safely(format, func() error { _, err := decodeImage(format, b); return err }); derr == nil {
					t.Fatalf("refused (%v), yet the %s decoder takes it", err, format)
				}
			}
			return
		}
	}
	info, ierr := DecodeInfo(b)
	if ierr != nil { // refused from the header
		return
	}
	pixels := uint64(info.W) * uint64(info.H)
	if n > (64*pixels+64*size+16<<20)*allocScale {
		t.Fatalf("%dx%d %s of %d bytes allocated %d KiB (%v)", info.W, info.H, info.Format, size, n>>10, err)
	}
}

func FuzzSparkImage(f *testing.F) {
	f.Add(int32(2), int32(3), int32(3), int32(16), make([]byte, 18))
	f.Add(int32(1), int32(1), int32(4), int32(24), []byte{1, 2, 3, 4})
	f.Add(int32(2), int32(2), int32(1), int32(0), []byte{1, 2, 3, 4})
	f.Add(int32(0), int32(2), int32(1), int32(0), []byte{})
	f.Add(int32(1<<30), int32(1<<30), int32(4), int32(24), []byte{})
	f.Add(int32(-1), int32(-1), int32(-1), int32(-1), []byte{1})
	f.Fuzz(func(t *testing.T, h, w, c, mode int32, data []byte) {
		var g Gray
		err := SparkImageGray(h, w, c, mode, data, fuzzLimit, &g)
		// SparkImageInfo agrees, but for the pixel limit.
		info, ierr := SparkImageInfo(h, w, c, mode, data)
		if err != nil && !errors.Is(err, ErrTooLarge) && (ierr == nil || ierr.Error() != err.Error()) || err == nil && (ierr != nil || info.W != int(w) || info.H != int(h)) {
			t.Fatalf("h=%d w=%d c=%d mode=%d: gray %v, info %+v %v", h, w, c, mode, err, info, ierr)
		}
		if err != nil {
			checkSentinel(t, err)
			return
		}
		if g.W != int(w) || g.H != int(h) || len(g.Pix) != g.W*g.H || int64(len(g.Pix)) > fuzzLimit.MaxPixels {
			t.Fatalf("bad result %dx%d with %d pixels for h=%d w=%d", g.W, g.H, len(g.Pix), h, w)
		}
		if len(data) != len(g.Pix)*int(c) {
			t.Fatalf("accepted %d bytes for %dx%dx%d", len(data), h, w, c)
		}
	})
}
