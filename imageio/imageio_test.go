package imageio

import (
	"bytes"
	"errors"
	"image"
	"image/color"
	"image/gif"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/image/tiff"
)

var testLimit = Limits{MaxPixels: 100_000_000}

func TestRule(t *testing.T) {
	// Hand-computed: (R*19595 + G*38470 + B*7471 + 32768) >> 16.
	cases := []struct {
		r, g, b, want uint8
	}{
		{255, 0, 0, 76},    // 5029493 >> 16
		{0, 255, 0, 150},   // 9842618 >> 16
		{0, 0, 255, 29},    // 1937873 >> 16
		{10, 200, 30, 124}, // 8146848 >> 16
		{255, 255, 255, 255},
		{0, 0, 0, 0},
		{128, 128, 128, 128},
	}
	for _, c := range cases {
		if got := luma(uint32(c.r), uint32(c.g), uint32(c.b)); got != c.want {
			t.Errorf("luma(%d,%d,%d) = %d, want %d", c.r, c.g, c.b, got, c.want)
		}
		if got := rule(c.r, c.g, c.b); got != c.want {
			t.Errorf("test rule(%d,%d,%d) = %d, want %d", c.r, c.g, c.b, got, c.want)
		}
	}
	// The same values through a real file: a 4x1 PNG, alpha ignored.
	m := image.NewNRGBA(image.Rect(0, 0, 4, 1))
	copy(m.Pix, []uint8{255, 0, 0, 255, 10, 200, 30, 255, 0, 255, 0, 0, 0, 0, 255, 7})
	var g Gray
	if err := DecodeGray(encode(t, "png", m), testLimit, &g); err != nil {
		t.Fatal(err)
	}
	if want := []uint8{76, 124, 150, 29}; !bytes.Equal(g.Pix, want) {
		t.Errorf("png pixels = %v, want %v", g.Pix, want)
	}
}

func TestRoundTrip(t *testing.T) {
	const w, h = 37, 23 // odd sizes catch stride mistakes
	type tc struct {
		name, format string
		img          image.Image
		channels     int
		tol          int // allowed difference per pixel (lossy formats)
	}
	grad := gradient(w, h, 1)
	cases := []tc{
		{"png gray", "png", randomGray(w, h, 2), 1, 0},
		{"png gray16", "png", randomGray16(w, h, 3), 1, 0},
		{"png rgb", "png", opaque(grad), 3, 0},
		{"png nrgba", "png", randomNRGBA(w, h, 4), 4, 0},
		{"png nrgba64", "png", randomNRGBA64(w, h, 5), 4, 0},
		{"png paletted", "png", randomPaletted(w, h, 6, 200), 3, 0},
		{"jpeg gray", "jpeg", gradientGray(w, h), 1, 3},
		{"jpeg colour", "jpeg", opaque(grad), 3, 3},
		{"gif", "gif", randomPaletted(w, h, 7, 256), 3, 0},
		{"bmp gray", "bmp", randomGray(w, h, 8), 3, 0},
		{"bmp rgb", "bmp", opaque(randomNRGBA(w, h, 9)), 3, 0},
		{"bmp nrgba", "bmp", randomNRGBA(w, h, 10), 3, 0}, // 32-bit, 40-byte header: alpha not declared
		{"bmp paletted", "bmp", randomPaletted(w, h, 11, 16), 3, 0},
		{"tiff gray", "tiff", randomGray(w, h, 12), 1, 0},
		{"tiff gray16", "tiff-deflate", randomGray16(w, h, 13), 1, 0},
		{"tiff rgb", "tiff", opaque(randomNRGBA(w, h, 14)), 4, 0}, // Go writes RGBA with an alpha sample
		{"tiff nrgba", "tiff-deflate", randomNRGBA(w, h, 15), 4, 0},
		{"tiff nrgba64", "tiff", randomNRGBA64(w, h, 16), 4, 0},
		{"tiff paletted", "tiff", randomPaletted(w, h, 17, 77), 3, 0},
		{"webp lossless", "webp", randomNRGBA(w, h, 18), 4, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := encode(t, c.format, c.img)
			format := strings.TrimSuffix(c.format, "-deflate")
			info, err := DecodeInfo(b)
			if err != nil {
				t.Fatal(err)
			}
			if want := (Info{format, w, h, c.channels}); info != want {
				t.Errorf("DecodeInfo = %+v, want %+v", info, want)
			}
			var g Gray
			if err := DecodeGray(b, testLimit, &g); err != nil {
				t.Fatal(err)
			}
			checkGray(t, g, w, h, wantGray(c.img), c.tol)
		})
	}
}

func gradientGray(w, h int) *image.Gray {
	m := image.NewGray(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			m.Pix[y*w+x] = uint8((x*5 + y*3) % 256)
		}
	}
	return m
}

func checkGray(t *testing.T, g Gray, w, h int, want []uint8, tol int) {
	t.Helper()
	if g.W != w || g.H != h || len(g.Pix) != w*h {
		t.Fatalf("got %dx%d with %d pixels, want %dx%d", g.W, g.H, len(g.Pix), w, h)
	}
	bad := 0
	for i := range want {
		if d := int(g.Pix[i]) - int(want[i]); d > tol || d < -tol {
			if bad < 5 {
				t.Errorf("pixel (%d,%d) = %d, want %d (tolerance %d)", i%w, i/w, g.Pix[i], want[i], tol)
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d pixels off", bad, len(want))
	}
}

func TestPNM(t *testing.T) {
	const w, h = 5, 3
	r := newRand(20)
	sample := func(n, maxval int) []int {
		s := make([]int, n)
		for i := range s {
			s[i] = r.IntN(maxval + 1)
		}
		s[0], s[n-1] = 0, maxval // ends of the range
		return s
	}
	scale := func(v, maxval int) uint8 { return uint8((v*255 + maxval/2) / maxval) }
	for _, c := range []struct {
		channels, maxval int
		plain            bool
	}{
		{1, 255, false}, {1, 15, false}, {1, 1000, false}, {1, 65535, false},
		{3, 255, false}, {3, 65535, false}, {3, 7, false},
		{1, 255, true}, {1, 15, true}, {3, 255, true}, {3, 65535, true},
	} {
		s := sample(w*h*c.channels, c.maxval)
		want := make([]uint8, w*h)
		for i := range want {
			if c.channels == 1 {
				want[i] = scale(s[i], c.maxval)
			} else {
				want[i] = rule(scale(s[3*i], c.maxval), scale(s[3*i+1], c.maxval), scale(s[3*i+2], c.maxval))
			}
		}
		b := pnm(w, h, c.channels, c.maxval, s, c.plain)
		info, err := DecodeInfo(b)
		if err != nil || info != (Info{"pnm", w, h, c.channels}) {
			t.Errorf("%s: DecodeInfo = %+v, %v", b[:2], info, err)
		}
		var g Gray
		if err := DecodeGray(b, testLimit, &g); err != nil {
			t.Errorf("%s maxval %d: %v", b[:2], c.maxval, err)
			continue
		}
		checkGray(t, g, w, h, want, 0)
	}
	// Known values: maxval 15 maps 15 to 255 and 7 to 119 ((7*255+7)/15).
	var g Gray
	if err := DecodeGray([]byte("P2 3 1 15 0 7 15"), testLimit, &g); err != nil || !bytes.Equal(g.Pix, []uint8{0, 119, 255}) {
		t.Errorf("P2 maxval 15: %v %v", g.Pix, err)
	}
	// 16-bit big-endian: 0x1234 of 65535 scales to 18.
	if err := DecodeGray([]byte("P5 1 1 65535\n\x12\x34"), testLimit, &g); err != nil || g.Pix[0] != 18 {
		t.Errorf("P5 16-bit: %v %v", g.Pix, err)
	}
	for _, bad := range []string{
		"P5 2 2 255\n\x01\x02\x03", // truncated raster
		"P5 1 1 0\n\x00",           // maxval 0
		"P5 1 1 65536\n\x00\x00",   // maxval too big
		"P2 2 1 10 3 11",           // sample over maxval
		"P2 2 1 10 3 x",            // not a number
		"P5 1 1 255",               // no whitespace after maxval
		"P6 1 1 255\n\x01\x02",     // truncated rgb
		"P5 1 1 12345678901 \x00",  // number too long
		"P3 1 1 255 1 2",           // missing sample
	} {
		if err := DecodeGray([]byte(bad), testLimit, &g); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%q: got %v, want ErrCorrupt", bad, err)
		}
	}
}

func TestOversizedHeader(t *testing.T) {
	for _, c := range []struct {
		name     string
		b        []byte
		channels int
	}{
		{"png", pngHeader(60000, 60000, 2), 3},
		{"pnm", []byte("P5 60000 60000 255\n"), 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			info, err := DecodeInfo(c.b)
			if err != nil || info != (Info{c.name, 60000, 60000, c.channels}) {
				t.Fatalf("DecodeInfo = %+v, %v", info, err)
			}
			var g Gray
			err = DecodeGray(c.b, testLimit, &g)
			if !errors.Is(err, ErrTooLarge) {
				t.Fatalf("got %v, want ErrTooLarge", err)
			}
			want := c.name + " header says 60000x60000 = 3600000000 pixels, over the limit of 100000000"
			if !strings.Contains(err.Error(), want) {
				t.Errorf("message %q lacks %q", err, want)
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for range 10 {
				_ = DecodeGray(c.b, testLimit, &g)
			}
			runtime.ReadMemStats(&after)
			if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
				t.Errorf("10 refusals allocated %d bytes, want < 1 MiB", n)
			}
			if g.Pix != nil || g.W != 0 {
				t.Errorf("dst changed on error: %dx%d", g.W, g.H)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	valid := map[string][]byte{
		"png":  encode(t, "png", gradient(64, 64, 30)),
		"jpeg": encode(t, "jpeg", gradient(64, 64, 31)),
		"gif":  encode(t, "gif", randomPaletted(64, 64, 32, 64)),
		"bmp":  encode(t, "bmp", opaque(gradient(64, 64, 33))),
		"tiff": encode(t, "tiff", opaque(gradient(64, 64, 34))),
		"webp": encode(t, "webp", gradient(64, 64, 35)),
	}
	cases := []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, ErrEmpty},
		{"empty slice", []byte{}, ErrEmpty},
		{"garbage", []byte("hello, this is not an image"), ErrUnknownFormat},
		{"pbm is not supported", []byte("P4 1 1\n\x00"), ErrUnknownFormat},
		{"png magic then garbage", append([]byte("\x89PNG\r\n\x1a\n"), "garbage garbage garbage"...), ErrCorrupt},
		{"png bad crc", func() []byte { b := pngHeader(10, 10, 2); b[len(b)-1]++; return b }(), ErrCorrupt},
		{"png header only", pngHeader(10, 10, 2), ErrCorrupt},
		{"png zero width", pngHeader(0, 10, 2), ErrBadDims},
		{"png zero height", pngHeader(10, 0, 0), ErrBadDims},
		{"pnm zero width", []byte("P5 0 5 255\n"), ErrBadDims},
		{"pnm zero height", []byte("P6 5 0 255\n"), ErrBadDims},
		{"gif zero screen", gifZeroScreen(t), ErrBadDims},
		{"bmp zero width", bmpZeroWidth(t), ErrBadDims},
		{"webp magic only", []byte("RIFF\x04\x00\x00\x00WEBP"), ErrCorrupt},
	}
	for format, b := range valid {
		cases = append(cases,
			struct {
				name string
				b    []byte
				want error
			}{format + " cut in half", b[:len(b)/2], ErrCorrupt})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var g Gray
			err := DecodeGray(c.b, testLimit, &g)
			if !errors.Is(err, c.want) {
				t.Fatalf("DecodeGray: got %v, want %v", err, c.want)
			}
			if _, err := DecodeInfo(c.b); c.want != ErrCorrupt && !errors.Is(err, c.want) {
				t.Errorf("DecodeInfo: got %v, want %v", err, c.want)
			}
		})
	}
	// Every valid seed decodes, and is sniffed as its format.
	for format, b := range valid {
		if f, err := Sniff(b); f != format || err != nil {
			t.Errorf("Sniff(%s) = %q, %v", format, f, err)
		}
		var g Gray
		if err := DecodeGray(b, testLimit, &g); err != nil {
			t.Errorf("%s: %v", format, err)
		}
		// One pixel short of the limit is refused, exactly at it is not.
		if err := DecodeGray(b, Limits{MaxPixels: 64*64 - 1}, &g); !errors.Is(err, ErrTooLarge) {
			t.Errorf("%s at limit-1: %v", format, err)
		}
		if err := DecodeGray(b, Limits{MaxPixels: 64 * 64}, &g); err != nil {
			t.Errorf("%s at limit: %v", format, err)
		}
		if err := DecodeGray(b, Limits{}, &g); !errors.Is(err, ErrTooLarge) {
			t.Errorf("%s with zero Limits: %v", format, err)
		}
	}
}

func gifZeroScreen(t *testing.T) []byte {
	b := encode(t, "gif", randomPaletted(1, 1, 40, 2))
	b[6], b[7], b[8], b[9] = 0, 0, 0, 0 // logical screen 0x0
	return b
}

func bmpZeroWidth(t *testing.T) []byte {
	b := encode(t, "bmp", opaque(gradient(4, 4, 41)))
	b[18], b[19], b[20], b[21] = 0, 0, 0, 0
	return b
}

// A GIF frame smaller than its logical screen lands at its offset; the
// rest is 0.
func TestGIFSubFrame(t *testing.T) {
	frame := randomPaletted(3, 2, 50, 4)
	frame.Rect = image.Rect(2, 1, 5, 3)
	var buf bytes.Buffer
	err := gif.EncodeAll(&buf, &gif.GIF{
		Image:  []*image.Paletted{frame},
		Delay:  []int{0},
		Config: image.Config{ColorModel: frame.Palette, Width: 6, Height: 4},
	})
	if err != nil {
		t.Fatal(err)
	}
	var g Gray
	if err := DecodeGray(buf.Bytes(), testLimit, &g); err != nil {
		t.Fatal(err)
	}
	// Outside the frame: palette index 0's colour, as Pillow fills it.
	bg := color.NRGBAModel.Convert(frame.Palette[0]).(color.NRGBA)
	want := bytes.Repeat([]uint8{rule(bg.R, bg.G, bg.B)}, 6*4)
	fw := wantGray(frame)
	for y := range 2 {
		copy(want[(y+1)*6+2:], fw[y*3:y*3+3])
	}
	checkGray(t, g, 6, 4, want, 0)
}

// The transparent palette entry keeps its colour (Go's decoder would make
// it black; Pillow does not).
func TestGIFTransparent(t *testing.T) {
	m := randomPaletted(8, 8, 55, 4)
	m.Palette[2] = color.RGBA{} // Go's encoder writes index 2 as transparent
	var buf bytes.Buffer
	if err := gif.Encode(&buf, m, nil); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	if b[10]&0x80 == 0 {
		t.Fatal("expected a global colour table")
	}
	copy(b[13+3*2:], []byte{200, 100, 50}) // the colour stored for index 2
	m.Palette[2] = color.RGBA{200, 100, 50, 255}
	var g Gray
	if err := DecodeGray(b, testLimit, &g); err != nil {
		t.Fatal(err)
	}
	checkGray(t, g, 8, 8, wantGray(m), 0)
	if !bytes.Contains(b, []byte{0x21, 0xf9, 4}) || g.Pix[bytes.IndexByte(m.Pix, 2)] != rule(200, 100, 50) {
		t.Errorf("transparent pixel not tested or wrong")
	}
}

func TestWebP(t *testing.T) {
	m := randomNRGBA(9, 7, 60)
	b := encodeWebPLossless(m, false)
	if f, err := Sniff(b); f != "webp" || err != nil {
		t.Fatalf("Sniff = %q, %v", f, err)
	}
	info, err := DecodeInfo(b)
	if err != nil || info != (Info{"webp", 9, 7, 3}) {
		t.Errorf("DecodeInfo without alpha = %+v, %v", info, err)
	}
	var g Gray
	for _, n := range []int{len(b) - 1, len(b) / 2, 30, 21, 13} {
		if err := DecodeGray(b[:n], testLimit, &g); !errors.Is(err, ErrCorrupt) {
			t.Errorf("truncated to %d bytes: %v, want ErrCorrupt", n, err)
		}
	}
	// A VP8X canvas of 1x1 must not let a bigger VP8L frame through.
	vp8x := []byte("VP8X\x0a\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00")
	body := append(vp8x, b[12:]...)
	lied := append([]byte("RIFF\x00\x00\x00\x00WEBP"), body...)
	if err := DecodeGray(lied, testLimit, &g); !errors.Is(err, ErrCorrupt) {
		t.Errorf("canvas/frame mismatch: %v, want ErrCorrupt", err)
	}
}

// Lossy WebP YCbCr goes through libwebp's limited-range conversion.
func TestWebPYUV(t *testing.T) {
	// 4:2:0 chroma: x 0-1 use the first Cb/Cr sample, x 2-3 the second.
	m := image.NewYCbCr(image.Rect(0, 0, 4, 2), image.YCbCrSubsampleRatio420)
	copy(m.Y, []uint8{16, 235, 100, 100, 126, 0, 100, 100})
	m.Cb[0], m.Cr[0] = 128, 128 // neutral: only Y matters
	m.Cb[1], m.Cr[1] = 90, 240  // strong red
	got := make([]uint8, 8)
	toGray(m, true, 0, 4, got)
	// Neutral: Y 16 -> 0, 235 -> 255, 126 -> 128 (1.164*110).
	// Y=100, Cb=90, Cr=240 by libwebp's fixed point: y' = 100*19077>>8 = 7451,
	// R = 7451 + 24514 - 14234 -> clipped 255, G = (7451 - 2256 - 12487 + 8708)>>6 = 22,
	// B = (7451 + 11619 - 17685)>>6 = 21; the rule gives 6032724>>16 = 92.
	if want := []uint8{0, 255, 92, 92, 128, 0, 92, 92}; !bytes.Equal(got, want) {
		t.Errorf("webp YUV gray = %v, want %v", got, want)
	}
	// JPEG YCbCr keeps the Y plane.
	toGray(m, false, 0, 4, got)
	if !bytes.Equal(got, m.Y) {
		t.Errorf("jpeg YCbCr gray = %v, want Y plane %v", got, m.Y)
	}
}

func TestReuse(t *testing.T) {
	b := pnm(16, 16, 1, 255, make([]int, 256), false)
	g := Gray{Pix: make([]uint8, 0, 1024)}
	p := &g.Pix[:1][0]
	if err := DecodeGray(b, testLimit, &g); err != nil {
		t.Fatal(err)
	}
	if &g.Pix[0] != p || len(g.Pix) != 256 {
		t.Errorf("dst.Pix was not reused")
	}
	if n := testing.AllocsPerRun(20, func() { _ = DecodeGray(b, testLimit, &g) }); n != 0 {
		t.Errorf("P5 decode into a big enough dst allocates %v times, want 0", n)
	}
	png := encode(t, "png", randomGray(16, 16, 70))
	if err := DecodeGray(png, testLimit, &g); err != nil || &g.Pix[0] != p {
		t.Errorf("png gray into a big dst: reused=%v err=%v", &g.Pix[0] == p, err)
	}
	// Too small a dst: the decoder's own gray buffer is taken over.
	small := Gray{}
	if err := DecodeGray(png, testLimit, &small); err != nil || len(small.Pix) != 256 {
		t.Errorf("png gray into empty dst: %v", err)
	}
}

// The generic At path agrees with the fast paths.
func TestGenericPath(t *testing.T) {
	src := randomNRGBA(13, 5, 80)
	var g Gray
	g.Pix = make([]uint8, 13*5)
	toGray(wrapped{src}, false, 0, 13, g.Pix)
	checkGray(t, Gray{13, 5, g.Pix}, 13, 5, wantGray(src), 0)
}

type wrapped struct{ image.Image }

func BenchmarkDecodeGray(b *testing.B) {
	src := gradient(512, 512, 100)
	for _, format := range []string{"png", "jpeg", "gif", "bmp", "tiff", "tiff-deflate", "webp", "pnm"} {
		var data []byte
		switch format {
		case "webp":
			data = encode(b, format, src)
		case "pnm":
			samples := make([]int, 3*512*512)
			for i := range samples {
				samples[i] = int(src.Pix[i/3*4+i%3])
			}
			data = pnm(512, 512, 3, 255, samples, false)
		default:
			data = encode(b, format, opaque(src))
		}
		b.Run(format+"-512", func(b *testing.B) {
			var g Gray
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if err := DecodeGray(data, testLimit, &g); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// DecodeGrayInfo, given the header DecodeInfo read, decodes as DecodeGray
// does, limits included, in every format.
func TestDecodeGrayInfo(t *testing.T) {
	m := gradient(37, 23, 5)
	for _, format := range []string{"png", "jpeg", "gif", "bmp", "tiff"} {
		b := encode(t, format, m)
		info, err := DecodeInfo(b)
		if err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		var got, want Gray
		if err := DecodeGray(b, testLimit, &want); err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		if err := DecodeGrayInfo(b, info, testLimit, &got); err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		checkGray(t, got, 37, 23, want.Pix, 0)
		if err := DecodeGrayInfo(b, info, Limits{MaxPixels: 37*23 - 1}, &got); !errors.Is(err, ErrTooLarge) {
			t.Errorf("%s over the limit: %v, want ErrTooLarge", format, err)
		}
		// Another file's header is not taken for this one's.
		other := Info{Format: "pnm", W: 40, H: 30, Channels: 1}
		if err := DecodeGrayInfo(b, other, testLimit, &got); err != nil {
			t.Fatalf("%s with a pnm header: %v", format, err)
		}
		checkGray(t, got, 37, 23, want.Pix, 0)
	}
}

// A TIFF with associated (premultiplied) alpha, as Go's encoder writes an
// *image.RGBA: gray from the colour with the alpha divided out, as Pillow
// reads the file (want: Pillow 12's convert("L") of these bytes).
func TestTIFFPremultiplied(t *testing.T) {
	m := image.NewRGBA(image.Rect(0, 0, 3, 2))
	alpha := []uint8{255, 128, 64, 0, 1, 200}
	rgb := [][3]uint8{{200, 100, 50}, {200, 100, 50}, {200, 100, 50}, {200, 100, 50}, {255, 255, 255}, {10, 250, 90}}
	for i, a := range alpha {
		m.Set(i%3, i/3, color.NRGBA{rgb[i][0], rgb[i][1], rgb[i][2], a})
	}
	var buf bytes.Buffer
	if err := tiff.Encode(&buf, m, nil); err != nil {
		t.Fatal(err)
	}
	var g Gray
	if err := DecodeGray(buf.Bytes(), testLimit, &g); err != nil {
		t.Fatal(err)
	}
	checkGray(t, g, 3, 2, []uint8{124, 123, 123, 0, 255, 159}, 0)
}
