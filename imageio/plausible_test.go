package imageio

import (
	"bytes"
	"encoding/binary"
	"errors"
	"image"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// bmpSized is the BMP of m with its header's size set to w x h.
func bmpSized(t *testing.T, m image.Image, w, h int32) []byte {
	b := encode(t, "bmp", m)
	binary.LittleEndian.PutUint32(b[18:], uint32(w))
	binary.LittleEndian.PutUint32(b[22:], uint32(h))
	return b
}

// webpVP8First is a RIFF/WEBP whose VP8 key frame of w x h declares a
// first partition of first bytes and is followed by data.
func webpVP8First(w, h uint16, first uint32, data []byte) []byte {
	tag := first<<5 | 1<<4 // key frame (bit 0 clear), version 0, shown
	frame := []byte{byte(tag), byte(tag >> 8), byte(tag >> 16), 0x9d, 0x01, 0x2a}
	frame = binary.LittleEndian.AppendUint16(frame, w)
	frame = binary.LittleEndian.AppendUint16(frame, h)
	frame = append(frame, data...)
	b := append([]byte("VP8 "), binary.LittleEndian.AppendUint32(nil, uint32(len(frame)))...)
	b = append(b, frame...)
	if len(frame)&1 == 1 {
		b = append(b, 0)
	}
	return append(append([]byte("RIFF"), binary.LittleEndian.AppendUint32(nil, uint32(4+len(b)))...), append([]byte("WEBP"), b...)...)
}

// tiffCCITT is a 1-bit TIFF of w x h in one strip of data, compressed
// with CCITT group 3 or 4 (compression 3 or 4).
func tiffCCITT(w, h uint32, compression uint16, data []byte) []byte {
	return tiffFile([]tiffEntry{
		{256, 4, w}, {257, 4, h}, {258, 3, 1}, {259, 3, uint32(compression)}, {262, 3, 0},
		{273, 4, 0}, {277, 3, 1}, {278, 4, h}, {279, 4, uint32(len(data))},
	}, data)
}

// TestTruncated: headers of 10000x10000 (testLimit's 100 megapixels)
// over a few bytes, in every format and variant with a bound, are refused
// with ErrTruncated from a look at the file alone: nothing near the
// hundreds of MiB a decoder would allocate for them first.
func TestTruncated(t *testing.T) {
	const w, h = 10000, 10000
	cases := []struct {
		name string
		b    []byte
		msg  string
	}{
		{"png gray", pngWith(w, h, 0, zlibZeros(1)), "png of 10000x10000 needs 100000000 bytes of samples, but its 1045 bytes of image data inflate to at most 1082536"},
		{"png RGBA, no IDAT", pngChunk(pngHeader(w, h, 6), "IEND", nil), "its 0 bytes of image data"},
		{"bmp 24-bit", bmpSized(t, opaque(gradient(4, 4, 60)), w, h), "bmp of 10000x10000 at 24 bits needs 300000000 bytes of pixels from offset 54, file holds 48"},
		{"bmp 32-bit", bmpSized(t, randomNRGBA(4, 4, 61), w, -h), "bmp of 10000x10000 at 32 bits needs 400000000 bytes"},
		{"bmp 8-bit palette", bmpSized(t, randomPaletted(4, 4, 62, 16), w, h), "at 8 bits needs 100000000 bytes"},
		{"bmp 1-bit", func() []byte {
			b := readCorpus(t, filepath.Join("testdata", "fuzz", "FuzzDecodeGray", "pillow-bmp-1bit"))
			binary.LittleEndian.PutUint32(b[18:], w)
			binary.LittleEndian.PutUint32(b[22:], h)
			return b
		}(), "at 1 bits needs 12520000 bytes"},
		{"tiff uncompressed", tiffGray(w, h, h, 1, []byte{1, 2, 3}), "tiff of 10000x10000 at 8 bits needs 100000000 bytes of samples, but its 1 blocks (compression 1) hold 3 bytes"},
		{"tiff strip past the end", tiffFile([]tiffEntry{
			{256, 4, w}, {257, 4, h}, {258, 3, 8}, {259, 3, 1}, {262, 3, 1},
			{273, 4, 0}, {277, 3, 1}, {278, 4, h}, {279, 4, w * h},
		}, []byte{1, 2, 3}), "tiff block 0 of 100000000 bytes at offset 8 ends past the file's"},
		{"tiff rows per strip", tiffGray(w, h, 1, 1, []byte{1, 2, 3}), ""}, // "inconsistent header": no allocation
		{"tiff Deflate", tiffGray(w, h, h, 8, zlibZeros(1)), "hold 1045 bytes, which decode to at most 1082536"},
		{"tiff LZW", tiffGray(w, h, h, 5, []byte{0x80, 0, 0x20}), "(compression 5) hold 3 bytes, which decode to at most 8193"},
		{"tiff PackBits", tiffGray(w, h, h, tiffPackBits, packBitsZeros(64)), "hold 8192 bytes, which decode to at most 8192"},
		{"tiff CCITT group 4", tiffCCITT(w, h, 4, bytes.Repeat([]byte{0xff}, 1000)), "tiff CCITT image of 10000 rows needs at least 1250 bytes, file holds 1000"},
		{"tiff CCITT group 3", tiffCCITT(w, h, 3, []byte{0, 1}), "needs at least 1250 bytes, file holds 2"},
		{"tiff tiled", tiffTiled(w, h, 256, 256, 1, []byte{1, 2, 3}), ""}, // too few tile offsets: no allocation
		{"tiff JPEG compression", tiffGray(w, h, h, 7, []byte{0xff, 0xd8}), "tiff compression 7 is not supported"},
		{"gif", gifLZWBomb(t, w, h, 0), "gif frame of 10000x10000 needs at least 36617 bytes of LZW data, file holds 4"},
		{"webp VP8 first partition past the end", webpVP8(w, h), "webp VP8 first partition of 16 bytes, file holds 8"},
		{"webp VP8 first partition too short", webpVP8First(w, h, 100, make([]byte, 200)), "webp VP8 frame of 10000x10000 (390625 macroblocks) needs a first partition of at least 78124 bytes, has 100"},
		{"pgm", []byte("P5 10000 10000 255\n\x00\x01"), "pnm raster truncated: need 100000000 bytes, have 2"},
		{"ppm 16-bit", []byte("P6 10000 10000 65535\n\x00\x01"), "need 600000000 bytes, have 2"},
		{"plain pgm", []byte("P2 10000 10000 255\n1 2 3"), "100000000 samples cannot fit in 5 bytes"},
		{"plain ppm", []byte("P3 10000 10000 255\n1 2 3"), "300000000 samples cannot fit in 5 bytes"},
	}
	paths := []struct {
		name string
		fast decoders
	}{{"", decoders{jpeg: turboGray(), png: pngInflate()}}, {" (go decoders)", decoders{}}}
	for _, c := range cases {
		for _, d := range paths {
			t.Run(c.name+d.name, func(t *testing.T) {
				g := Gray{W: 3, H: 1, Pix: []uint8{1, 2, 3}}
				var err error
				n := allocatedBy(func() { err = decodeGray(c.b, testLimit, &g, d.fast) })
				want := ErrTruncated
				if c.msg == "" || strings.Contains(c.msg, "not supported") {
					want = ErrCorrupt
				}
				if !errors.Is(err, want) || !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), c.msg) {
					t.Fatalf("got %v, want %v with %q", err, want, c.msg)
				}
				if g.W != 3 || g.H != 1 || len(g.Pix) != 3 {
					t.Errorf("dst changed on error: %dx%d, %d pixels", g.W, g.H, len(g.Pix))
				}
				if n > 1<<20 {
					t.Errorf("allocated %d KiB for a %dx%d claim, want < 1 MiB", n>>10, w, h)
				}
			})
		}
	}
}

// Files as compressible as their format allows decode: the bounds are
// lower bounds, at or near the best ratio (exactly at it for BMP, PNM,
// PackBits and CCITT group 4), and a byte less is refused where the bound
// is exact.
func TestHonestBigImages(t *testing.T) {
	const w, h = 4096, 4096
	// Group 4: a white row coded in one bit (V0 against the white row above).
	g4 := bytes.Repeat([]byte{0xff}, 1024)
	bmp := encode(t, "bmp", opaque(gradient(1001, 999, 64)))
	cases := []struct {
		name     string
		b        []byte
		w, h     int
		truncate []byte // the file a byte short, refused as truncated; nil where the bound is not exact
	}{
		{"png Deflate of zeros", pngWith(4000, 4000, 0, zlibOf(make([]byte, 4000*4001))), 4000, 4000, nil},
		{"bmp 24-bit", bmp, 1001, 999, bmp[:len(bmp)-1]},
		{"tiff Deflate of zeros", tiffGray(w, h, h, 8, zlibZeros(16)), w, h, nil},
		{"tiff PackBits of zeros", tiffGray(w, h, h, tiffPackBits, packBitsZeros(w*h/128)), w, h, tiffGray(w, h, h, tiffPackBits, packBitsZeros(w*h/128-1))},
		{"tiff CCITT group 4, white", tiffCCITT(1024, 8192, 4, g4), 1024, 8192, tiffCCITT(1024, 8192, 4, g4[1:])},
		{"gif LZW of zeros", gifLZWBomb(t, w, h, 16), w, h, nil},
		{"pgm", append([]byte("P5 4096 4096 255\n"), make([]byte, w*h)...), w, h, []byte("P5 4096 4096 255\n" + string(make([]byte, w*h-1)))},
		{"plain pgm", append([]byte("P2 4096 4096 255\n"), bytes.Repeat([]byte("0 "), w*h)[:2*w*h-1]...), w, h, append([]byte("P2 4096 4096 255\n"), bytes.Repeat([]byte("0 "), w*h)[:2*w*h-2]...)},
	}
	// testdata/flat: flat 1024x1024 images as Pillow 12 compresses them
	// (Image.new(mode, (1024, 1024), colour).save(...)): lossy WebP
	// (quality 75) of RGB, TIFF with LZW of L, CCITT group 3 and 4 of 1.
	files, err := filepath.Glob(filepath.Join("testdata", "flat", "*"))
	if err != nil || len(files) != 4 {
		t.Fatalf("testdata/flat: %d files, %v", len(files), err)
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, struct {
			name     string
			b        []byte
			w, h     int
			truncate []byte
		}{name, b, 1024, 1024, nil})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var g Gray
			if err := DecodeGray(c.b, testLimit, &g); err != nil || g.W != c.w || g.H != c.h {
				t.Fatalf("got %dx%d, %v; want %dx%d", g.W, g.H, err, c.w, c.h)
			}
			if c.truncate == nil {
				return
			}
			if err := DecodeGray(c.truncate, testLimit, &g); !errors.Is(err, ErrTruncated) {
				t.Errorf("a byte short: got %v, want ErrTruncated", err)
			}
			// The decoder refuses it too, after allocating.
			format, _ := Sniff(c.truncate)
			if format != "pnm" {
				if _, err := decodeImage(format, c.truncate); err == nil {
					t.Errorf("a byte short: the %s decoder takes it", format)
				}
			}
		})
	}
}

// The VP8 bound holds for x/image/vp8's boolean decoder: reading a bit of
// probability 145 or 142, either way, narrows its range by at least the
// bits vp8MacroblocksPerByte assumes, from every range it can be in.
func TestVP8BitCost(t *testing.T) {
	// cost is the least information a decision of prob takes, in 1/1000
	// bits, over the normalized ranges 128..255 (rangeM1 127..254).
	cost := func(prob uint32) float64 {
		least := 99.0
		for r := uint32(128); r <= 255; r++ {
			split := (r-1)*prob>>8 + 1
			for _, left := range []uint32{split, r - split} {
				least = min(least, math.Log2(float64(r)/float64(left)))
			}
		}
		return least
	}
	perMB := cost(145) + cost(142)
	if perMB < 8.0/vp8MacroblocksPerByte {
		t.Errorf("a macroblock takes at least %.4f bits, under the %.4f that %d a byte assumes", perMB, 8.0/vp8MacroblocksPerByte, vp8MacroblocksPerByte)
	}
	t.Logf("%.4f bits a macroblock at least", perMB)
}

// BenchmarkCheckData is the cost of the checks on valid 512x512 files,
// next to BenchmarkDecodeGray's decodes of them (milliseconds).
func BenchmarkCheckData(b *testing.B) {
	src := gradient(512, 512, 100)
	for _, format := range []string{"png", "gif", "bmp", "tiff", "tiff-deflate", "webp"} {
		var data []byte
		if format == "webp" {
			data = encode(b, format, src)
		} else {
			data = encode(b, format, opaque(src))
		}
		info, err := DecodeInfo(data)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(format, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var err error
				if info.Format == "tiff" {
					_, err = tiffGuard(data, info.W, info.H)
				} else {
					err = checkData(info.Format, data, info.W, info.H)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
