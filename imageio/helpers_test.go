package imageio

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"math/rand/v2"
	"testing"

	"golang.org/x/image/bmp"
	"golang.org/x/image/tiff"
)

// newRand is a seeded PCG source, so every run sees the same images.
func newRand(seed uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// gradient returns an opaque colour image: smooth gradients plus a little
// noise, so it compresses well and still exercises every channel.
func gradient(w, h int, seed uint64) *image.NRGBA {
	r := newRand(seed)
	m := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			m.SetNRGBA(x, y, color.NRGBA{
				R: uint8(x * 255 / max(w-1, 1)),
				G: uint8(y * 255 / max(h-1, 1)),
				B: uint8((x + y + r.IntN(8)) % 256),
				A: 255,
			})
		}
	}
	return m
}

// randomNRGBA has random colour and alpha in every pixel.
func randomNRGBA(w, h int, seed uint64) *image.NRGBA {
	r := newRand(seed)
	m := image.NewNRGBA(image.Rect(0, 0, w, h))
	for i := range m.Pix {
		m.Pix[i] = uint8(r.UintN(256))
	}
	return m
}

func randomGray(w, h int, seed uint64) *image.Gray {
	r := newRand(seed)
	m := image.NewGray(image.Rect(0, 0, w, h))
	for i := range m.Pix {
		m.Pix[i] = uint8(r.UintN(256))
	}
	return m
}

func randomGray16(w, h int, seed uint64) *image.Gray16 {
	r := newRand(seed)
	m := image.NewGray16(image.Rect(0, 0, w, h))
	for i := range m.Pix {
		m.Pix[i] = uint8(r.UintN(256))
	}
	return m
}

func randomNRGBA64(w, h int, seed uint64) *image.NRGBA64 {
	r := newRand(seed)
	m := image.NewNRGBA64(image.Rect(0, 0, w, h))
	for i := range m.Pix {
		m.Pix[i] = uint8(r.UintN(256))
	}
	return m
}

func randomPaletted(w, h int, seed uint64, n int) *image.Paletted {
	r := newRand(seed)
	pal := make(color.Palette, n)
	for i := range pal {
		pal[i] = color.RGBA{uint8(r.UintN(256)), uint8(r.UintN(256)), uint8(r.UintN(256)), 255}
	}
	m := image.NewPaletted(image.Rect(0, 0, w, h), pal)
	for i := range m.Pix {
		m.Pix[i] = uint8(r.IntN(n))
	}
	return m
}

// opaque drops alpha so formats without alpha round-trip exactly.
func opaque(m *image.NRGBA) *image.RGBA {
	o := image.NewRGBA(m.Rect)
	for i := 0; i < len(m.Pix); i += 4 {
		copy(o.Pix[i:i+3], m.Pix[i:i+3])
		o.Pix[i+3] = 255
	}
	return o
}

// wantGray is the reference: the rule applied through At, pixel by pixel,
// independent of the fast paths in gray.go.
func wantGray(m image.Image) []uint8 {
	b := m.Bounds()
	out := make([]uint8, 0, b.Dx()*b.Dy())
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			var v uint8
			switch c := m.At(x, y).(type) {
			case color.Gray:
				v = c.Y
			case color.Gray16:
				v = uint8(c.Y >> 8)
			case color.NRGBA:
				v = rule(c.R, c.G, c.B)
			case color.RGBA:
				v = rule(c.R, c.G, c.B)
			case color.NRGBA64:
				v = rule(uint8(c.R>>8), uint8(c.G>>8), uint8(c.B>>8))
			case color.RGBA64:
				v = rule(uint8(c.R>>8), uint8(c.G>>8), uint8(c.B>>8))
			default:
				panic(fmt.Sprintf("wantGray: unexpected colour type %T", c))
			}
			out = append(out, v)
		}
	}
	return out
}

// rule is Pillow's formula spelled out again, so that a slip in luma()
// cannot hide behind itself; TestRule pins it to hand-computed values.
func rule(r, g, b uint8) uint8 {
	return uint8((int(r)*19595 + int(g)*38470 + int(b)*7471 + 32768) / 65536)
}

func encode(t testing.TB, format string, m image.Image) []byte {
	t.Helper()
	var buf bytes.Buffer
	var err error
	switch format {
	case "png":
		err = png.Encode(&buf, m)
	case "jpeg":
		err = jpeg.Encode(&buf, m, &jpeg.Options{Quality: 100})
	case "gif":
		err = gif.Encode(&buf, m, nil)
	case "bmp":
		err = bmp.Encode(&buf, m)
	case "tiff":
		err = tiff.Encode(&buf, m, nil)
	case "tiff-deflate":
		err = tiff.Encode(&buf, m, &tiff.Options{Compression: tiff.Deflate})
	case "webp":
		return encodeWebPLossless(m.(*image.NRGBA), true)
	default:
		t.Fatalf("no encoder for %q", format)
	}
	if err != nil {
		t.Fatalf("encoding %s: %v", format, err)
	}
	return buf.Bytes()
}

// pngHeader is a PNG signature plus a valid IHDR chunk and nothing else.
func pngHeader(w, h uint32, colorType byte) []byte {
	data := binary.BigEndian.AppendUint32(nil, w)
	data = binary.BigEndian.AppendUint32(data, h)
	data = append(data, 8, colorType, 0, 0, 0)
	b := []byte("\x89PNG\r\n\x1a\n")
	b = binary.BigEndian.AppendUint32(b, uint32(len(data)))
	chunk := append([]byte("IHDR"), data...)
	b = append(b, chunk...)
	return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(chunk))
}

// pnm writes a netpbm file. samples are raw values in 0..maxval, one per
// channel; plain selects P2/P3 text, otherwise P5/P6 binary.
func pnm(w, h, channels, maxval int, samples []int, plain bool) []byte {
	kind := map[[2]bool]string{{false, false}: "P5", {false, true}: "P6", {true, false}: "P2", {true, true}: "P3"}[[2]bool{plain, channels == 3}]
	b := fmt.Appendf(nil, "%s\n# made by imageio tests\n%d %d\n%d\n", kind, w, h, maxval)
	for i, v := range samples {
		switch {
		case plain:
			b = fmt.Appendf(b, "%d", v)
			if i%17 == 16 {
				b = append(b, '\n')
			} else {
				b = append(b, ' ')
			}
		case maxval > 255:
			b = binary.BigEndian.AppendUint16(b, uint16(v))
		default:
			b = append(b, uint8(v))
		}
	}
	return b
}

// bitWriter packs bits LSB first, as VP8L reads them.
type bitWriter struct {
	buf []byte
	acc uint64
	n   uint
}

func (w *bitWriter) write(v uint32, n uint) {
	w.acc |= uint64(v) << w.n
	w.n += n
	for w.n >= 8 {
		w.buf = append(w.buf, byte(w.acc))
		w.acc >>= 8
		w.n -= 8
	}
}

// code8 writes an 8-bit canonical Huffman code, most significant bit first.
func (w *bitWriter) code8(v uint8) {
	for i := 7; i >= 0; i-- {
		w.write(uint32(v>>i)&1, 1)
	}
}

// encodeWebPLossless writes m as a minimal lossless WebP (VP8L): no
// transforms, no colour cache, and a fixed 8-bit code for every literal,
// so each pixel costs 32 bits. Enough to exercise the decoder.
func encodeWebPLossless(m *image.NRGBA, alpha bool) []byte {
	w, h := m.Rect.Dx(), m.Rect.Dy()
	var bw bitWriter
	bw.write(0x2f, 8)
	bw.write(uint32(w-1), 14)
	bw.write(uint32(h-1), 14)
	if alpha {
		bw.write(1, 1)
	} else {
		bw.write(0, 1)
	}
	bw.write(0, 3) // version
	bw.write(0, 1) // no transform
	bw.write(0, 1) // no colour cache
	bw.write(0, 1) // no meta prefix codes
	fixed8 := func(alphabet int) {
		bw.write(0, 1)    // normal (not simple) code
		bw.write(12-4, 4) // 12 code-length-code lengths follow
		// In the order 17,18,0,1,2,3,4,5,16,6,7,8 only 0 and 8 get a 1-bit code.
		for _, sym := range []int{17, 18, 0, 1, 2, 3, 4, 5, 16, 6, 7, 8} {
			if sym == 0 || sym == 8 {
				bw.write(1, 3)
			} else {
				bw.write(0, 3)
			}
		}
		bw.write(0, 1) // no max_symbol
		for s := range alphabet {
			if s < 256 {
				bw.write(1, 1) // length 8
			} else {
				bw.write(0, 1) // length 0
			}
		}
	}
	fixed8(256 + 24) // green + length prefixes
	fixed8(256)      // red
	fixed8(256)      // blue
	fixed8(256)      // alpha
	bw.write(1, 1)   // distance: simple code,
	bw.write(0, 1)   // one symbol,
	bw.write(0, 1)   // 1-bit symbol,
	bw.write(0, 1)   // symbol 0
	for i := 0; i < len(m.Pix); i += 4 {
		p := m.Pix[i : i+4]
		bw.code8(p[1])
		bw.code8(p[0])
		bw.code8(p[2])
		bw.code8(p[3])
	}
	bw.write(0, 7) // flush
	data := bw.buf
	chunk := append([]byte("VP8L"), binary.LittleEndian.AppendUint32(nil, uint32(len(data)))...)
	chunk = append(chunk, data...)
	if len(data)%2 == 1 {
		chunk = append(chunk, 0)
	}
	out := append([]byte("RIFF"), binary.LittleEndian.AppendUint32(nil, uint32(4+len(chunk)))...)
	out = append(out, "WEBP"...)
	return append(out, chunk...)
}
