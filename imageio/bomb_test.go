package imageio

import (
	"bytes"
	"compress/lzw"
	"encoding/binary"
	"errors"
	"image"
	"runtime"
	"strings"
	"testing"
)

// allocatedBy is the bytes f allocates.
func allocatedBy(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// gifLZWBomb is a GIF of w x h whose one frame's LZW data inflates to mib
// MiB of index 0.
func gifLZWBomb(t testing.TB, w, h uint16, mib int) []byte {
	var data bytes.Buffer
	lw := lzw.NewWriter(&data, lzw.LSB, 2)
	zeros := make([]byte, 1<<20)
	for range mib {
		lw.Write(zeros)
	}
	lw.Close()
	b := []byte("GIF89a")
	b = binary.LittleEndian.AppendUint16(b, w)
	b = binary.LittleEndian.AppendUint16(b, h)
	b = append(b, 0x80, 0, 0, 0, 0, 0, 255, 255, 255) // 2-entry global palette
	b = append(b, 0x2c, 0, 0, 0, 0)
	b = binary.LittleEndian.AppendUint16(b, w)
	b = binary.LittleEndian.AppendUint16(b, h)
	b = append(b, 0, 2) // no local palette; LZW minimum code size 2
	for d := data.Bytes(); len(d) > 0; {
		n := min(len(d), 255)
		b = append(append(b, byte(n)), d[:n]...)
		d = d[n:]
	}
	return append(b, 0, 0x3b)
}

// webpVP8 is a RIFF/WEBP with a VP8 (lossy) key frame header of w x h and
// nothing after it.
func webpVP8(w, h uint16) []byte {
	frame := []byte{0x10, 0x02, 0x00, 0x9d, 0x01, 0x2a} // key frame, then the start code
	frame = binary.LittleEndian.AppendUint16(frame, w)
	frame = binary.LittleEndian.AppendUint16(frame, h)
	frame = append(frame, make([]byte, 8)...)
	b := append([]byte("VP8 "), binary.LittleEndian.AppendUint32(nil, uint32(len(frame)))...)
	b = append(b, frame...)
	return append(append([]byte("RIFF"), binary.LittleEndian.AppendUint32(nil, uint32(4+len(b)))...), append([]byte("WEBP"), b...)...)
}

// webpVP8L is a lossless WebP header of w x h (1..16384) and no data.
func webpVP8L(w, h int) []byte {
	b := []byte("RIFF\x00\x00\x00\x00WEBPVP8L\x05\x00\x00\x00\x2f")
	return binary.LittleEndian.AppendUint32(b, uint32(w-1)|uint32(h-1)<<14)
}

// TestBombs: headers claiming 100000x100000 or 0 or less, streams that
// inflate far beyond their header, JPEGs of hundreds of scans. Each is
// refused (or, a bomb whose header tells the truth, decoded within its
// header's size) and no case allocates more than 64 MiB: what they ask
// for is GiBs, or minutes of CPU.
func TestBombs(t *testing.T) {
	bm := encode(t, "bmp", opaque(gradient(4, 4, 50)))
	bmpSize := func(w, h int32) []byte {
		b := bytes.Clone(bm)
		binary.LittleEndian.PutUint32(b[18:], uint32(w))
		binary.LittleEndian.PutUint32(b[22:], uint32(h))
		return b
	}
	gf := encode(t, "gif", randomPaletted(4, 4, 51, 4))
	gifScreen := func(w, h uint16) []byte {
		b := bytes.Clone(gf)
		binary.LittleEndian.PutUint16(b[6:], w)
		binary.LittleEndian.PutUint16(b[8:], h)
		return b
	}
	// A 1x1 screen whose first frame says 65535x65535.
	gifFrame := bytes.Clone(gifScreen(1, 1))
	if i := bytes.IndexByte(gifFrame[13+3*4:], 0x2c); i >= 0 {
		binary.LittleEndian.PutUint16(gifFrame[13+3*4+i+5:], 65535)
		binary.LittleEndian.PutUint16(gifFrame[13+3*4+i+7:], 65535)
	} else {
		t.Fatal("no image descriptor")
	}
	jpg := encode(t, "jpeg", gradient(16, 16, 52))
	jpegSize := func(w, h int) []byte { return setJPEGSize(t, jpg, w, h) }
	over := "over the limit of 100000000"
	cases := []struct {
		name string
		b    []byte
		want error  // nil: decodes
		msg  string // in the error
	}{
		// Headers claiming too much: refused from the header.
		{"png 100000x100000", pngHeader(100000, 100000, 6), ErrTooLarge, "png header says 100000x100000 = 10000000000 pixels, " + over},
		{"png 100000x100000 over a 64 MiB zlib stream", pngWith(100000, 100000, 0, zlibZeros(64)), ErrTooLarge, "png header says 100000x100000"},
		{"png 2^31-1 square", pngHeader(1<<31-1, 1<<31-1, 0), ErrCorrupt, "dimension overflow"},
		{"gif screen 65535x65535", gifScreen(65535, 65535), ErrTooLarge, "gif header says 65535x65535 = 4294836225 pixels, " + over},
		{"gif frame 65535x65535 on a 1x1 screen", gifFrame, ErrCorrupt, "frame bounds larger than image bounds"},
		{"bmp 100000x100000", bmpSize(100000, 100000), ErrTooLarge, "bmp header says 100000x100000"},
		{"bmp 100000x100000 top-down", bmpSize(100000, -100000), ErrTooLarge, "bmp header says 100000x100000"},
		{"tiff 100000x100000", tiffGray(100000, 100000, 1, 1, []byte{0}), ErrTooLarge, "tiff header says 100000x100000"},
		{"tiff 2^32-1 wide", tiffGray(1<<32-1, 1, 1, 1, []byte{0}), ErrTooLarge, "tiff header says 4294967295x1"},
		{"webp VP8L 16384x16384", webpVP8L(16384, 16384), ErrTooLarge, "webp header says 16384x16384 = 268435456 pixels, " + over},
		{"webp VP8 16383x16383", webpVP8(16383, 16383), ErrTooLarge, "webp header says 16383x16383"},
		{"webp VP8X canvas of 2^24 square, small frame", func() []byte {
			lossless := encode(t, "webp", randomNRGBA(4, 4, 53))
			vp8x := append([]byte("VP8X\x0a\x00\x00\x00\x00\x00\x00\x00"), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)
			return append(append([]byte("RIFF\x00\x00\x00\x00WEBP"), vp8x...), lossless[12:]...)
		}(), ErrCorrupt, "webp frame is 4x4 but canvas is 16777216x16777216"},
		{"pgm 100000x100000", []byte("P5 100000 100000 255\n"), ErrTooLarge, "pnm header says 100000x100000"},
		{"ppm 999999999 square", []byte("P6 999999999 999999999 65535\n"), ErrTooLarge, "pnm header says 999999999x999999999"},
		{"pgm 10-digit size", []byte("P5 1000000000 1 255\n"), ErrCorrupt, "pnm number longer than 9 digits"},
		{"jpeg 65535x65535", jpegSize(65535, 65535), ErrTooLarge, "jpeg header says 65535x65535"},
		// Zero and negative sizes.
		{"png 0x5", pngHeader(0, 5, 0), ErrBadDims, "png header says 0x5"},
		{"png -1x-1", pngHeader(1<<32-1, 1<<32-1, 0), ErrBadDims, "png header says -1x-1"},
		{"gif 0x0", gifScreen(0, 0), ErrBadDims, "gif header says 0x0"},
		{"bmp 0x4", bmpSize(0, 4), ErrBadDims, ""},
		{"bmp -4x4", bmpSize(-4, 4), ErrCorrupt, ""},
		{"tiff 0x8", tiffGray(0, 8, 8, 1, []byte{0}), ErrBadDims, "tiff header says 0x8"},
		{"pgm 0x7", []byte("P5 0 7 255\n"), ErrBadDims, "pnm header says 0x7"},
		{"pgm -1x7", []byte("P5 -1 7 255\n"), ErrCorrupt, "pnm expected a number"},
		{"jpeg 64x0", jpegSize(64, 0), ErrBadDims, "jpeg header says 64x0"},
		{"webp VP8 0x16", webpVP8(0, 16), ErrBadDims, "webp header says 0x16"},
		// Lying data: the header is small, the data inflates far beyond it.
		{"png 64x64 inflating to 256 MiB", pngWith(64, 64, 0, zlibZeros(256)), ErrCorrupt, "too much pixel data"},
		{"png 4000x4000 of 1 KiB data", pngWith(4000, 4000, 0, zlibOf(make([]byte, 1<<10))), ErrTruncated, "png of 4000x4000 needs 16000000 bytes of samples"},
		{"png 64x64 of 1 KiB data", pngWith(64, 64, 0, zlibOf(make([]byte, 1<<10))), ErrCorrupt, "not enough pixel data"},
		{"gif 64x64 inflating to 64 MiB", gifLZWBomb(t, 64, 64, 64), ErrCorrupt, "too much image data"},
		{"tiff 64x64 Deflate strip of 2^32-1 rows inflating to 256 MiB", tiffGray(64, 64, 1<<32-1, 8, zlibZeros(256)), nil, ""},
		{"tiff 64x64 Deflate strip of 64 rows inflating to 256 MiB", tiffGray(64, 64, 64, 8, zlibZeros(256)), nil, ""},
		{"tiff 64x64 PackBits unpacking to 128 MiB", tiffGray(64, 64, 64, tiffPackBits, packBitsZeros(1<<20)), ErrCorrupt, "tiff PackBits block 0 unpacks to more than 32768 bytes"},
		{"tiff 64x64 PackBits of 2^32-1 rows unpacking to 128 MiB", tiffGray(64, 64, 1<<32-1, tiffPackBits, packBitsZeros(1<<20)), ErrCorrupt, "unpacks to more than 32768 bytes"},
		{"tiff 16x16 in a 65536x65536 tile", tiffTiled(16, 16, 65536, 65536, 8, zlibZeros(256)), ErrCorrupt, "tiff tiles of 65536x65536 cover 4294967296 pixels of a 16x16 image"},
		{"tiff 16x16 in a 2^31 tile", tiffTiled(16, 16, 1<<31, 16, 8, zlibZeros(1)), ErrCorrupt, "tiff tiles of 2147483648x16"},
		{"tiff 16x16 in a 1024x1024 tile inflating to 256 MiB", tiffTiled(16, 16, 1024, 1024, 8, zlibZeros(256)), nil, ""},
		// Scans: a pass over every block each, a few bytes each.
		{"jpeg 8192x8192 of 601 scans in 190 KB", progressiveJPEG(8192, 8192, 600), ErrCorrupt, "jpeg has more than 100 scans"},
		{"jpeg 64x64 of 101 scans", progressiveJPEG(64, 64, 100), ErrCorrupt, "jpeg has more than 100 scans"},
		{"jpeg 64x64 of 100 scans", progressiveJPEG(64, 64, 99), nil, ""},
		{"jpeg 8192x8192 of 101 scans, junk between them", func() []byte {
			b := progressiveJPEG(8192, 8192, 100)
			return bytes.ReplaceAll(b, []byte{0xff, 0xda}, []byte{'j', 'u', 'n', 'k', 0xff, 0xff, 0xda})
		}(), ErrCorrupt, "jpeg has more than 100 scans"},
		// Sequential scans count too: each codes every block in at least 2
		// bits, so its work is bounded by its bytes, but full scans of a
		// large image cost far more a byte than any photo.
		{"jpeg 64x64 sequential of 101 scans", sequentialJPEG(64, 64, 101), ErrCorrupt, "jpeg has more than 100 scans"},
		{"jpeg 64x64 sequential of 100 scans", sequentialJPEG(64, 64, 100), nil, ""},
		// Truncated lies within the limit that cost nothing to refuse.
		{"pgm 10000x10000, no raster", []byte("P5 10000 10000 255\n\x00"), ErrCorrupt, "pnm raster truncated: need 100000000 bytes, have 1"},
		{"plain ppm 5000x5000, one sample", []byte("P3 5000 5000 255\n7"), ErrCorrupt, "75000000 samples cannot fit in 1 bytes"},
	}
	// Every case with the fast paths, then JPEG and PNG cases with the Go
	// decoders alone where a fast path is loaded.
	type path struct {
		name, format string // format: the cases it runs, by name prefix
		fast         decoders
	}
	paths := []path{{"", "", decoders{jpeg: turboGray(), png: pngInflate()}}}
	if turboGray() != nil {
		paths = append(paths, path{" (image/jpeg)", "jpeg", decoders{png: pngInflate()}})
	}
	if pngInflate() != nil {
		paths = append(paths, path{" (image/png)", "png", decoders{jpeg: turboGray()}})
	}
	for _, c := range cases {
		for _, d := range paths {
			if !strings.HasPrefix(c.name, d.format) {
				continue
			}
			t.Run(c.name+d.name, func(t *testing.T) {
				g := Gray{W: 3, H: 1, Pix: []uint8{1, 2, 3}}
				var err error
				n := allocatedBy(func() { err = decodeGray(c.b, testLimit, &g, d.fast) })
				switch {
				case c.want == nil && err != nil:
					t.Fatalf("got %v, want a decode", err)
				case c.want != nil && (!errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg)):
					t.Fatalf("got %v, want %v with %q", err, c.want, c.msg)
				case c.want != nil && (g.W != 3 || g.H != 1 || len(g.Pix) != 3):
					t.Errorf("dst changed on error: %dx%d, %d pixels", g.W, g.H, len(g.Pix))
				}
				if n > 64<<20*allocScale {
					t.Errorf("allocated %d MiB, want < %d MiB", n>>20, 64*allocScale)
				}
				if c.want == ErrTooLarge && n > 1<<20 {
					t.Errorf("refused from its header, yet allocated %d KiB", n>>10)
				}
			})
		}
	}
}

// The TIFF guard's copy with RowsPerStrip set to the height decodes to
// the same pixels as the file without it; strips of fewer rows and tiles
// of a sane size pass untouched.
func TestTIFFGuardKeepsPixels(t *testing.T) {
	m := randomGray(37, 23, 54)
	raw := bytes.Clone(m.Pix)
	want := Gray{W: 37, H: 23, Pix: raw}
	for _, rps := range []uint32{0, 23, 24, 1000, 1<<16 - 1, 1<<32 - 1} { // one strip
		b := tiffGray(37, 23, rps, 1, raw)
		var g Gray
		if err := DecodeGray(b, testLimit, &g); err != nil {
			t.Fatalf("RowsPerStrip %d: %v", rps, err)
		}
		checkGray(t, g, want.W, want.H, want.Pix, 0)
		out, err := tiffGuard(b, 37, 23)
		if err != nil || (rps <= 23) != (&out[0] == &b[0]) { // copied only to lower it
			t.Errorf("RowsPerStrip %d: copied %v, %v", rps, &out[0] != &b[0], err)
		}
	}
	// x/image/tiff's own encoder: one strip, RowsPerStrip the height.
	var g Gray
	if err := DecodeGray(encode(t, "tiff", m), testLimit, &g); err != nil {
		t.Fatal(err)
	}
	checkGray(t, g, 37, 23, raw, 0)
	// Tiles: 16x16 tiles of a 32x23 image (2x2 tiles, 32x32 covered).
	// (Not 37 wide: x/image/tiff v0.38 does not skip the padding columns
	// of the last column of 8-bit gray tiles, and shifts its rows.)
	m32 := randomGray(32, 23, 55)
	if err := DecodeGray(tiledGray(m32, 16, 16), testLimit, &g); err != nil {
		t.Fatalf("tiled: %v", err)
	}
	checkGray(t, g, 32, 23, m32.Pix, 0)
	// PackBits that unpacks to exactly the strip passes.
	pb := packBitsLiteral(raw)
	if err := DecodeGray(tiffGray(37, 23, 23, tiffPackBits, pb), testLimit, &g); err != nil {
		t.Fatalf("PackBits: %v", err)
	}
	checkGray(t, g, 37, 23, raw, 0)
}

// tiledGray stores m in tw x th uncompressed tiles.
func tiledGray(m *image.Gray, tw, th int) []byte {
	w, h := m.Rect.Dx(), m.Rect.Dy()
	across, down := (w+tw-1)/tw, (h+th-1)/th
	var data []byte
	for ty := range down {
		for tx := range across {
			for y := range th {
				for x := range tw {
					v := uint8(0)
					if px, py := tx*tw+x, ty*th+y; px < w && py < h {
						v = m.GrayAt(px, py).Y
					}
					data = append(data, v)
				}
			}
		}
	}
	n := across * down
	// Offsets and counts are arrays: write them after the data.
	b := []byte("II*\x00")
	dataAt := 8
	arrays := dataAt + len(data)
	ifd := arrays + 8*n
	b = binary.LittleEndian.AppendUint32(b, uint32(ifd))
	b = append(b, data...)
	for i := range n {
		b = binary.LittleEndian.AppendUint32(b, uint32(dataAt+i*tw*th))
	}
	for range n {
		b = binary.LittleEndian.AppendUint32(b, uint32(tw*th))
	}
	entries := []struct {
		tag, typ   uint16
		count, val uint32
	}{
		{256, 4, 1, uint32(w)}, {257, 4, 1, uint32(h)}, {258, 3, 1, 8}, {259, 3, 1, 1}, {262, 3, 1, 1}, {277, 3, 1, 1},
		{322, 4, 1, uint32(tw)}, {323, 4, 1, uint32(th)}, {324, 4, uint32(n), uint32(arrays)}, {325, 4, uint32(n), uint32(arrays + 4*n)},
	}
	b = binary.LittleEndian.AppendUint16(b, uint16(len(entries)))
	for _, e := range entries {
		b = binary.LittleEndian.AppendUint16(b, e.tag)
		b = binary.LittleEndian.AppendUint16(b, e.typ)
		b = binary.LittleEndian.AppendUint32(b, e.count)
		if e.typ == 3 {
			b = binary.LittleEndian.AppendUint16(b, uint16(e.val))
			b = append(b, 0, 0)
		} else {
			b = binary.LittleEndian.AppendUint32(b, e.val)
		}
	}
	return binary.LittleEndian.AppendUint32(b, 0)
}

// packBitsLiteral is src as PackBits literal runs.
func packBitsLiteral(src []byte) []byte {
	var out []byte
	for len(src) > 0 {
		n := min(len(src), 128)
		out = append(append(out, byte(n-1)), src[:n]...)
		src = src[n:]
	}
	return out
}

// Lies within the limit: a header of 4000x4000 (16 megapixels, under a
// 16-megapixel limit) over a few bytes of data. Where the format bounds
// the pixels a byte can code (checkData), the lie is refused from a look
// at the file, before any pixel is allocated. JPEG and lossless WebP are
// not checked so: their decoders allocate their image before they find
// the data missing, so these are refused at the cost of the size they
// claim, never more: 8 bytes a pixel (16-bit RGBA) plus the gray result.
func TestLiesWithinLimit(t *testing.T) {
	const w, h = 4000, 4000
	lim := Limits{MaxPixels: w * h}
	bm := encode(t, "bmp", opaque(gradient(4, 4, 55)))
	binary.LittleEndian.PutUint32(bm[18:], w)
	binary.LittleEndian.PutUint32(bm[22:], h)
	for _, c := range []struct {
		name    string
		b       []byte
		checked bool // refused by checkData
	}{
		{"png RGBA", pngWith(w, h, 6, zlibZeros(1)), true},
		{"bmp", bm, true},
		{"tiff", tiffGray(w, h, h, 1, []byte{1, 2, 3}), true},
		{"tiff Deflate", tiffGray(w, h, h, 8, zlibZeros(1)), true},
		{"jpeg", setJPEGSize(t, encode(t, "jpeg", image.NewGray(image.Rect(0, 0, 16, 16))), w, h), false},
		{"webp lossless", webpVP8L(w, h), false},
		{"webp lossy", webpVP8(w, h), true},
		{"gif", gifLZWBomb(t, w, h, 0), true},
		{"pgm", []byte("P5 4000 4000 255\n\x00"), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var g Gray
			var err error
			n := allocatedBy(func() { err = DecodeGray(c.b, lim, &g) })
			if !errors.Is(err, ErrCorrupt) || c.checked != errors.Is(err, ErrTruncated) {
				t.Fatalf("got %v, want ErrCorrupt (ErrTruncated: %v)", err, c.checked)
			}
			if c.checked && n > 1<<20 {
				t.Errorf("allocated %d KiB, want < 1 MiB", n>>10)
			}
			if n > 9*w*h+1<<20 {
				t.Errorf("allocated %d MiB for a %dx%d claim, want at most 9 bytes a pixel", n>>20, w, h)
			}
			t.Logf("%d KiB", n>>10)
		})
	}
}

// Spark structs that lie: every claim is checked against the others
// before a pixel is allocated, however large the claim.
func TestSparkLies(t *testing.T) {
	for _, c := range []struct {
		name          string
		h, w, c, mode int32
		data          []byte
		want          error
		msg           string
	}{
		{"2^31-1 square, 4 bytes", 1<<31 - 1, 1<<31 - 1, 4, 24, []byte{1, 2, 3, 4}, ErrTooLarge, "spark struct says 2147483647x2147483647 = 4611686014132420609 pixels"},
		{"10000x10000x3 claimed, 18 bytes sent", 10000, 10000, 3, 16, make([]byte, 18), ErrBadStruct, "len(data) is 18, want 10000*10000*3 = 300000000"},
		{"height and width swapped", 3, 2, 3, 16, make([]byte, 17), ErrBadStruct, "want 3*2*3 = 18"},
		{"nChannels 4, mode CV_8UC3", 2, 3, 4, 16, make([]byte, 24), ErrBadStruct, "nChannels 4 does not match mode 16 (3 channels)"},
		{"mode CV_16UC1", 2, 3, 1, 2, make([]byte, 12), ErrBadStruct, "mode 2 is not CV_8UC1"},
		{"negative mode", 2, 3, 1, -1, make([]byte, 6), ErrBadStruct, "mode -1"},
		{"height -2^31", -1 << 31, 3, 1, 0, nil, ErrBadDims, "spark struct says 3x-2147483648"},
		{"width 0", 5, 0, 1, 0, nil, ErrBadDims, "spark struct says 0x5"},
	} {
		g := Gray{W: 1, H: 1, Pix: []uint8{9}}
		var err error
		n := allocatedBy(func() { err = SparkImageGray(c.h, c.w, c.c, c.mode, c.data, testLimit, &g) })
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: got %v, want %v with %q", c.name, err, c.want, c.msg)
		}
		if n > 4<<10 || g.W != 1 || len(g.Pix) != 1 {
			t.Errorf("%s: %d bytes allocated, dst %dx%d", c.name, n, g.W, g.H)
		}
	}
}
