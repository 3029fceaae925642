package imageio

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"flag"
	"fmt"
	"image"
	"image/png"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// goInflate is a zinflate on compress/zlib: the fast path's own parts
// (chunks, unfilter, gray) then run in builds without cgo too.
func goInflate(dst, src []byte) bool {
	br := bytes.NewReader(src)
	r, err := zlib.NewReader(br)
	if err != nil {
		return false
	}
	if _, err := io.ReadFull(r, dst); err != nil {
		return false
	}
	n, err := r.Read(make([]byte, 1))
	return n == 0 && err == io.EOF && br.Len() == 0
}

// inflaters are the inflates to test the fast path with: compress/zlib,
// and libdeflate where it is loaded.
func inflaters() map[string]zinflate {
	m := map[string]zinflate{"zlib": goInflate}
	if in := pngInflate(); in != nil {
		m["libdeflate"] = in
	}
	return m
}

// pngSpec describes a PNG for rawPNG to write.
type pngSpec struct {
	w, h, colorType, depth int
	interlaced             bool
	filter                 int // 0..4, or -1: each row's filter in turn
	palette                int // PLTE entries (palette images; 0: none)
	trns                   int // tRNS bytes: palette entries, or 1 for gray/colour
	chunk                  int // IDAT chunk size; 0: one chunk
	seed                   uint64
}

func (s pngSpec) String() string {
	return fmt.Sprintf("%dx%d-ct%d-%dbit-i%v-f%d-p%d-t%d-c%d", s.w, s.h, s.colorType, s.depth, s.interlaced, s.filter, s.palette, s.trns, s.chunk)
}

// rawPNG writes a PNG of random samples as spec says, with its own
// filters (image/png's encoder chooses them itself and writes neither
// low-bit gray, gray+alpha, tRNS nor interlacing). Palette indices go up
// to 2^depth-1, past a shorter palette.
func rawPNG(s pngSpec) []byte {
	r := newRand(s.seed)
	f := pngFile{w: s.w, h: s.h, depth: s.depth, colorType: s.colorType, interlaced: s.interlaced}
	bpp := max(1, s.depth*f.channels()/8)
	var raw []byte
	row := 0
	for _, p := range f.passes() {
		n := f.rowBytes(p.w)
		prev := make([]byte, n)
		for range p.h {
			cur := make([]byte, n)
			for i := range cur {
				cur[i] = uint8(r.UintN(256))
			}
			if pad := n*8 - s.depth*f.channels()*p.w; pad > 0 {
				cur[n-1] &^= 1<<pad - 1 // encoders leave the padding bits zero
			}
			ft := s.filter
			switch ft {
			case -1:
				ft = row % 5
			case -2: // mostly Paeth, in runs of odd and even lengths
				ft = [...]int{0, 4, 4, 4, 1, 4, 4, 3, 4, 2, 4, 4}[row%12]
			}
			raw = append(raw, byte(ft))
			raw = append(raw, filterRow(byte(ft), cur, prev, bpp)...)
			prev = cur
			row++
		}
	}
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	zw.Write(raw)
	zw.Close()

	b := []byte(pngSignature)
	ihdr := binary.BigEndian.AppendUint32(nil, uint32(s.w))
	ihdr = binary.BigEndian.AppendUint32(ihdr, uint32(s.h))
	il := byte(0)
	if s.interlaced {
		il = 1
	}
	b = pngChunk(b, "IHDR", append(ihdr, byte(s.depth), byte(s.colorType), 0, 0, il))
	if s.palette > 0 {
		pal := make([]byte, 3*s.palette)
		for i := range pal {
			pal[i] = uint8(r.UintN(256))
		}
		b = pngChunk(b, "PLTE", pal)
	}
	switch {
	case s.trns > 0 && s.colorType == ctPalette:
		b = pngChunk(b, "tRNS", bytes.Repeat([]byte{7}, s.trns))
	case s.trns > 0 && s.colorType == ctGray:
		b = pngChunk(b, "tRNS", []byte{0, 1})
	case s.trns > 0:
		b = pngChunk(b, "tRNS", []byte{0, 1, 0, 2, 0, 3})
	}
	b = pngChunk(b, "tEXt", []byte("Comment\x00made by imageio tests"))
	data := z.Bytes()
	for len(data) > 0 {
		n := len(data)
		if s.chunk > 0 {
			n = min(n, s.chunk)
		}
		b = pngChunk(b, "IDAT", data[:n])
		data = data[n:]
	}
	return pngChunk(b, "IEND", nil)
}

// filterRow is the PNG encoder's side of unfilter.
func filterRow(ft byte, cur, prev []byte, bpp int) []byte {
	out := make([]byte, len(cur))
	for i := range cur {
		var a, c int
		if i >= bpp {
			a, c = int(cur[i-bpp]), int(prev[i-bpp])
		}
		b := int(prev[i])
		var pred int
		switch ft {
		case 1:
			pred = a
		case 2:
			pred = b
		case 3:
			pred = (a + b) / 2
		case 4:
			pa, pb, pc := absInt(b-c), absInt(a-c), absInt(a+b-2*c)
			switch {
			case pa <= pb && pa <= pc:
				pred = a
			case pb <= pc:
				pred = b
			default:
				pred = c
			}
		}
		out[i] = cur[i] - uint8(pred)
	}
	return out
}

// pngSpecs is every colour type and bit depth image/png reads, with and
// without tRNS, palettes shorter than their indices, plain and interlaced.
func pngSpecs() []pngSpec {
	var specs []pngSpec
	depths := map[int][]int{ctGray: {1, 2, 4, 8, 16}, ctRGB: {8, 16}, ctPalette: {1, 2, 4, 8}, ctGrayAlpha: {8, 16}, ctRGBA: {8, 16}}
	seed := uint64(100)
	for _, ct := range []int{ctGray, ctRGB, ctPalette, ctGrayAlpha, ctRGBA} {
		for _, d := range depths[ct] {
			for _, il := range []bool{false, true} {
				for _, size := range [][2]int{{1, 1}, {3, 2}, {13, 11}, {33, 17}} {
					seed++
					s := pngSpec{w: size[0], h: size[1], colorType: ct, depth: d, interlaced: il, filter: -1, seed: seed}
					if ct == ctPalette {
						s.palette = min(1<<d, 1+int(seed%7)*40) // often short of 2^depth
					}
					specs = append(specs, s)
					if ct == ctGray || ct == ctRGB || ct == ctPalette {
						s.trns, s.seed = 1+int(seed%3)*100, seed+1000
						if ct == ctPalette {
							s.trns = min(s.trns, 256)
						}
						specs = append(specs, s)
					}
				}
			}
		}
	}
	// Each filter alone, on every filter distance; IDAT split in pieces.
	for ft := range 5 {
		for _, c := range [][2]int{{ctGray, 8}, {ctGrayAlpha, 8}, {ctRGB, 8}, {ctRGBA, 8}, {ctRGB, 16}, {ctRGBA, 16}, {ctGray, 1}} {
			seed++
			specs = append(specs, pngSpec{w: 29, h: 9, colorType: c[0], depth: c[1], filter: ft, chunk: 1 + int(seed%3)*50, seed: seed})
		}
	}
	// Paeth rows of one byte of filter distance (unfiltered in pairs, or
	// unfilterGroup at a time): every row, or runs of them among other
	// filters; one and two pixels wide, odd and even heights, interlaced
	// passes (of 270 rows: up to 135 rows a pass), gray and palettes below
	// 8 bits.
	for _, size := range [][2]int{{1, 7}, {2, 5}, {3, 4}, {40, 33}, {45, 270}} {
		for _, il := range []bool{false, true} {
			for _, c := range [][3]int{{ctGray, 8, 4}, {ctGray, 8, -2}, {ctGray, 1, -2}, {ctPalette, 4, -2}, {ctPalette, 8, 4}} {
				seed++
				s := pngSpec{w: size[0], h: size[1], colorType: c[0], depth: c[1], interlaced: il, filter: c[2], seed: seed}
				if c[0] == ctPalette {
					s.palette = 1 << c[1]
				}
				specs = append(specs, s)
			}
		}
	}
	return specs
}

// checkPNGPaths decodes b through the fast path with every inflate and
// through image/png, and wants the fast path to take it (when take) and
// give image/png's pixels.
func checkPNGPaths(t *testing.T, name string, b []byte, take bool) {
	t.Helper()
	var want Gray
	if err := decodeGray(b, testLimit, &want, decoders{}); err != nil {
		t.Fatalf("%s: image/png: %v", name, err)
	}
	for iname, in := range inflaters() {
		var g Gray
		if !pngGray(b, want.W, want.H, &g, in) {
			if take {
				t.Errorf("%s: the fast path (%s) refused it", name, iname)
			}
			continue
		}
		if g.W != want.W || g.H != want.H || !bytes.Equal(g.Pix, want.Pix) {
			t.Errorf("%s (%s): %dx%d, %d of %d pixels differ from image/png's", name, iname, g.W, g.H, diffCount(g.Pix, want.Pix), len(want.Pix))
		}
	}
}

func absInt(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func diffCount(a, b []uint8) int {
	n := max(len(a), len(b)) - min(len(a), len(b))
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			n++
		}
	}
	return n
}

// The fast path gives image/png's pixels, gray by the package's rule, for
// every colour type, bit depth, filter, interlacing and palette.
func TestPNGFastMatchesGo(t *testing.T) {
	for _, s := range pngSpecs() {
		checkPNGPaths(t, s.String(), rawPNG(s), true)
	}
	// image/png's own files, at every compression level.
	imgs := map[string]image.Image{
		"photo": photo(61, 37, 1), "nrgba": randomNRGBA(17, 9, 2), "gray": randomGray(17, 9, 3),
		"gray16": randomGray16(17, 9, 4), "nrgba64": randomNRGBA64(17, 9, 5),
		"p2": randomPaletted(17, 9, 6, 2), "p16": randomPaletted(17, 9, 7, 16), "p256": randomPaletted(17, 9, 8, 256),
	}
	for name, m := range imgs {
		for _, lvl := range []png.CompressionLevel{png.DefaultCompression, png.NoCompression, png.BestSpeed, png.BestCompression} {
			var buf bytes.Buffer
			if err := (&png.Encoder{CompressionLevel: lvl}).Encode(&buf, m); err != nil {
				t.Fatal(err)
			}
			checkPNGPaths(t, fmt.Sprintf("%s-level%d", name, lvl), buf.Bytes(), true)
		}
	}
}

// unfilter inverts filterRow, the filters written out as the PNG
// specification states them, for every filter and filter distance, on
// rows full of ties between the Paeth candidates (few distinct values).
func TestUnfilter(t *testing.T) {
	r := newRand(5)
	for _, bpp := range []int{1, 2, 3, 4, 6, 8} {
		for _, n := range []int{bpp, 2 * bpp, 7 * bpp, 64*bpp + bpp} {
			for _, levels := range []uint{2, 3, 256} {
				prev, cur := make([]byte, n), make([]byte, n)
				for i := range n {
					prev[i], cur[i] = byte(r.UintN(levels)*(255/(levels-1))), byte(r.UintN(levels)*(255/(levels-1)))
				}
				for ft := range byte(5) {
					got := filterRow(ft, cur, prev, bpp)
					if !unfilter(ft, got, bytes.Clone(prev), bpp) || !bytes.Equal(got, cur) {
						t.Errorf("filter %d, bpp %d, %d bytes, %d levels: %d bytes differ", ft, bpp, n, levels, diffCount(got, cur))
					}
				}
			}
		}
	}
	if unfilter(5, make([]byte, 3), make([]byte, 3), 3) {
		t.Error("filter type 5 taken")
	}
}

// pngPart is one chunk of a PNG file, for tests that rearrange them.
type pngPart struct {
	typ  string
	data []byte
}

// splitPNG cuts a well-formed PNG into its chunks.
func splitPNG(t testing.TB, b []byte) []pngPart {
	t.Helper()
	var cs []pngPart
	for p := len(pngSignature); p < len(b); {
		n := int(binary.BigEndian.Uint32(b[p:]))
		cs = append(cs, pngPart{string(b[p+4 : p+8]), b[p+8 : p+8+n]})
		p += 12 + n
	}
	if len(cs) == 0 || cs[len(cs)-1].typ != "IEND" {
		t.Fatalf("not a whole PNG: %q", b)
	}
	return cs
}

func joinPNG(cs []pngPart) []byte {
	b := []byte(pngSignature)
	for _, c := range cs {
		b = pngChunk(b, c.typ, c.data)
	}
	return b
}

// zlibOf compresses raw as one zlib stream.
func zlibOf(raw []byte) []byte {
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	zw.Write(raw)
	zw.Close()
	return z.Bytes()
}

// Files the fast path refuses go to image/png, whose error (message
// included) or pixels stand, whatever the inflate; files that image/png takes with chunks in unusual
// places are taken by the fast path too, to the same pixels.
func TestPNGFastRefuses(t *testing.T) {
	s := pngSpec{w: 13, h: 5, colorType: ctRGB, depth: 8, filter: -1, chunk: 40, seed: 9}
	good := rawPNG(s)
	cs := splitPNG(t, good)
	idat := func(c []pngPart) []byte {
		var d []byte
		for _, x := range c {
			if x.typ == "IDAT" {
				d = append(d, x.data...)
			}
		}
		return d
	}(cs)
	var raw bytes.Buffer
	r, err := zlib.NewReader(bytes.NewReader(idat))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(&raw, r)
	// edit returns good with its chunks changed by f.
	edit := func(f func([]pngPart) []pngPart) []byte {
		c := append([]pngPart(nil), cs...)
		return joinPNG(f(c))
	}
	// withIDAT replaces the IDAT chunks by one holding d.
	withIDAT := func(d []byte) []byte {
		return edit(func(c []pngPart) []pngPart {
			var out []pngPart
			for i, x := range c {
				switch {
				case x.typ != "IDAT":
					out = append(out, x)
				case c[i-1].typ != "IDAT":
					out = append(out, pngPart{"IDAT", d})
				}
			}
			return out
		})
	}
	last := len(cs) - 1
	badFilter := bytes.Clone(raw.Bytes())
	badFilter[1+13*3] = 5 // the second row's filter
	crc := bytes.Clone(good)
	crc[len(crc)-20]++ // in the last IDAT
	refused := map[string][]byte{
		"bad CRC":                     crc,
		"bad filter type":             withIDAT(zlibOf(badFilter)),
		"a row short":                 withIDAT(zlibOf(raw.Bytes()[:raw.Len()-40])),
		"a row too many":              withIDAT(zlibOf(append(bytes.Clone(raw.Bytes()), raw.Bytes()[:40]...))),
		"bytes after the zlib stream": withIDAT(append(bytes.Clone(idat), 1, 2, 3)),
		"bad Adler-32":                withIDAT(append(bytes.Clone(idat[:len(idat)-1]), idat[len(idat)-1]+1)),
		"no IEND":                     edit(func(c []pngPart) []pngPart { return c[:last] }),
		"IEND with data":              edit(func(c []pngPart) []pngPart { c[last].data = []byte{0}; return c }),
		"IDAT run broken by tEXt": edit(func(c []pngPart) []pngPart {
			return append(append(append([]pngPart{}, c[:4]...), pngPart{"tEXt", []byte("a\x00b")}), c[4:]...)
		}),
		"PLTE after IDAT": edit(func(c []pngPart) []pngPart { return append(c[:last], pngPart{"PLTE", make([]byte, 6)}, c[last]) }),
		"second IHDR":     edit(func(c []pngPart) []pngPart { return append(c[:1], c...) }),
		"tRNS of 5 bytes": edit(func(c []pngPart) []pngPart {
			return append(c[:1], append([]pngPart{{"tRNS", make([]byte, 5)}}, c[1:]...)...)
		}),
		"unknown chunk 2^31": edit(func(c []pngPart) []pngPart { return c }),
	}
	huge := bytes.Clone(good[:33])
	huge = binary.BigEndian.AppendUint32(huge, 1<<31)
	refused["unknown chunk 2^31"] = append(append(huge, "zzZz"...), good[33:]...)
	for _, cut := range []int{9, 33, 50, len(good) / 2, len(good) - 13, len(good) - 1} {
		refused[fmt.Sprintf("truncated at %d", cut)] = good[:cut]
	}
	for name, b := range refused {
		var want Gray
		errG := decodeGray(b, testLimit, &want, decoders{})
		for iname, in := range inflaters() {
			g := Gray{W: 1, H: 1, Pix: []uint8{7}}
			if pngGray(b, s.w, s.h, &g, in) {
				t.Errorf("%s: the fast path (%s) takes it; image/png says %v", name, iname, errG)
			}
			err := decodeGray(b, testLimit, &g, decoders{png: in})
			switch {
			case errG == nil && (err != nil || !bytes.Equal(g.Pix, want.Pix)): // image/png takes trailing bytes it has read ahead
				t.Errorf("%s (%s): %v, not image/png's pixels", name, iname, err)
			case errG != nil && (err == nil || err.Error() != errG.Error() || g.W != 1 || len(g.Pix) != 1):
				t.Errorf("%s (%s): %v, %dx%d; want image/png's %v and dst unchanged", name, iname, err, g.W, g.H, errG)
			}
		}
	}
	taken := map[string][]byte{
		"IDAT chunks of 0 bytes": edit(func(c []pngPart) []pngPart {
			return append(append(append([]pngPart{}, c[:3]...), pngPart{"IDAT", nil}), append(c[3:last], pngPart{"IDAT", nil}, c[last])...)
		}),
		"a stray IDAT after tEXt": edit(func(c []pngPart) []pngPart {
			return append(c[:last], pngPart{"tEXt", []byte("a\x00b")}, pngPart{"IDAT", []byte("junk")}, c[last])
		}),
		"bytes after IEND": append(bytes.Clone(good), "trailing"...),
	}
	for name, b := range taken {
		checkPNGPaths(t, name, b, true)
	}
}

// FuzzDecodePNG runs the fast path (with libdeflate where it is loaded,
// compress/zlib elsewhere) and image/png on every input, prefixed with the
// PNG signature when it lacks it: both accept it, to the same pixels, or
// both refuse it with image/png's error.
func FuzzDecodePNG(f *testing.F) {
	in := pngInflate()
	if in == nil {
		in = goInflate
	}
	for i, s := range []pngSpec{
		{w: 7, h: 5, colorType: ctRGB, depth: 8, filter: -1},
		{w: 6, h: 3, colorType: ctRGBA, depth: 8, filter: 4, chunk: 20},
		{w: 9, h: 9, colorType: ctPalette, depth: 4, palette: 5, trns: 3, interlaced: true, filter: -1},
		{w: 5, h: 4, colorType: ctGray, depth: 1, trns: 1, filter: -1},
		{w: 3, h: 3, colorType: ctGrayAlpha, depth: 16, interlaced: true, filter: -1},
		{w: 4, h: 2, colorType: ctRGB, depth: 16, trns: 1, filter: 3},
	} {
		s.seed = uint64(200 + i)
		b := rawPNG(s)
		f.Add(b)
		f.Add(b[:len(b)*2/3])
	}
	f.Add(encode(f, "png", photo(16, 8, 3)))
	f.Add(encode(f, "png", randomGray16(5, 5, 4)))
	sig := []byte(pngSignature)
	f.Fuzz(func(t *testing.T, b []byte) {
		if !bytes.HasPrefix(b, sig) {
			b = append(sig[:8:8], b...)
		}
		var g, want Gray
		errF := decodeGray(b, fuzzLimit, &g, decoders{png: in})
		errG := decodeGray(b, fuzzLimit, &want, decoders{})
		switch {
		case errF == nil && errG != nil:
			t.Fatalf("the fast path decodes it, image/png says %v", errG)
		case errF != nil && (errG == nil || errF.Error() != errG.Error()):
			t.Fatalf("fast path: %v\nimage/png: %v", errF, errG)
		case errF != nil:
			checkSentinel(t, errF)
		case g.W != want.W || g.H != want.H || !bytes.Equal(g.Pix, want.Pix):
			t.Fatalf("%dx%d, %d of %d pixels differ from image/png's", g.W, g.H, diffCount(g.Pix, want.Pix), len(want.Pix))
		}
	})
}

// Concurrent decodes (a libdeflate decompressor each) give the same pixels.
func TestPNGConcurrent(t *testing.T) {
	in := pngInflate()
	if in == nil {
		t.Skip("libdeflate not loaded (no cgo, or no libdeflate.so.0): image/png only")
	}
	type ref struct{ b, gray []byte }
	var refs []ref
	for _, s := range pngSpecs()[:40] {
		b := rawPNG(s)
		var g Gray
		if err := decodeGray(b, testLimit, &g, decoders{}); err != nil {
			t.Fatal(err)
		}
		refs = append(refs, ref{b, g.Pix})
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Go(func() {
			var g Gray
			for k := range 100 {
				r := refs[(i+k)%len(refs)]
				if err := decodeGray(r.b, testLimit, &g, decoders{png: in}); err != nil || !bytes.Equal(g.Pix, r.gray) {
					errs <- fmt.Errorf("file %d: %v, or pixels differ", (i+k)%len(refs), err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestPNGDecoderName(t *testing.T) {
	want := "go image/png"
	if pngInflate() != nil {
		want = "libdeflate"
	}
	if got := PNGDecoder(); got != want {
		t.Errorf("PNGDecoder() = %q, want %q", got, want)
	}
}

var pngBenchDir = flag.String("pngbench.dir", "", "BenchmarkDecodePNG writes its PNGs to this directory and also decodes the other *.png files there (scripts/pngbench.py)")

// BenchmarkDecodePNG compares the fast path (libdeflate) with image/png
// on photo-like colour PNGs (image/png's encoder, default level), and on
// the other PNGs in -pngbench.dir, through DecodeGray's path. Throughput
// counts the compressed bytes; cpu-ms/op is the process's CPU time per
// decode (GC included), steadier than ns/op on a shared machine.
func BenchmarkDecodePNG(b *testing.B) {
	files := map[string][]byte{}
	for _, size := range [][2]int{{512, 512}, {1920, 1080}} {
		var buf bytes.Buffer
		if err := png.Encode(&buf, photo(size[0], size[1], 7)); err != nil {
			b.Fatal(err)
		}
		label := fmt.Sprint(min(size[0], size[1]))
		files[label] = buf.Bytes()
		if *pngBenchDir != "" {
			if err := os.WriteFile(filepath.Join(*pngBenchDir, label+".png"), buf.Bytes(), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	if *pngBenchDir != "" {
		names, _ := filepath.Glob(filepath.Join(*pngBenchDir, "*.png"))
		for _, name := range names {
			label := strings.TrimSuffix(filepath.Base(name), ".png")
			if files[label] != nil {
				continue
			}
			data, err := os.ReadFile(name)
			if err != nil {
				b.Fatal(err)
			}
			files[label] = data
		}
	}
	for label, data := range files {
		for _, d := range []struct {
			name string
			fast decoders
		}{{"fast", decoders{png: pngInflate()}}, {"go", decoders{}}} {
			b.Run(d.name+"-"+label, func(b *testing.B) {
				if d.name == "fast" && d.fast.png == nil {
					b.Skip("libdeflate not loaded (no cgo, or no libdeflate.so.0): image/png only")
				}
				var g Gray
				b.SetBytes(int64(len(data)))
				b.ReportAllocs()
				cpu := cpuTime()
				for b.Loop() {
					if err := decodeGray(data, testLimit, &g, d.fast); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(cpuTime()-cpu)/1e6/float64(b.N), "cpu-ms/op")
			})
		}
	}
}

// TestUnfilterRows: rows unfiltered unfilterGroup at a time
// (unfilterRows, where the CPU has it) or one or two at a time, whichever
// gray takes, give what unfilter gives row by row, for filter distances
// of 1 to 4 bytes and over, widths around the 16-byte steps and the
// group's 31-byte lag, heights around the group, all-Paeth groups, groups
// of every filter, and groups with too few costly rows to go together;
// the padding after the data is left as it was.
func TestUnfilterRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	mixes := map[string][]byte{"paeth": {4}, "all": {0, 1, 2, 3, 4}, "costly": {1, 3, 4}, "cheap": {0, 2, 2, 4}}
	layouts := [][2]int{{ctGray, 8}, {ctGrayAlpha, 8}, {ctRGB, 8}, {ctRGBA, 8}, {ctGray, 16}, {ctRGB, 16}}
	for _, l := range layouts {
		for _, w := range []int{1, 2, 15, 16, 17, 31, 32, 33, 47, 48, 100, 513} {
			for _, h := range []int{1, 31, 32, 33, 64, 97} {
				for _, mix := range slices.Sorted(maps.Keys(mixes)) {
					f := pngFile{w: w, h: h, depth: l[1], colorType: l[0]}
					n, bpp := f.rowBytes(w), max(1, l[1]*f.channels()/8)
					name := fmt.Sprintf("ct%d %d-bit %dx%d %s", l[0], l[1], w, h, mix)
					fs := mixes[mix]
					raw := make([]byte, h*(1+n))
					for i := range raw {
						raw[i] = byte(rng.Uint32())
					}
					for y := range h {
						raw[y*(1+n)] = fs[rng.IntN(len(fs))]
					}
					// The reference: unfilter, row by row.
					want, prev := bytes.Clone(raw), make([]byte, n)
					for y := range h {
						cur := want[y*(1+n)+1:][:n]
						unfilter(want[y*(1+n)], cur, prev, bpp)
						prev = cur
					}
					padded := make([]byte, len(raw)+rawPad)
					for i := range padded {
						padded[i] = byte(rng.Uint32())
					}
					copy(padded, raw)
					pad := bytes.Clone(padded[len(raw):])
					if !f.gray(padded, make([]byte, w*h)) {
						t.Fatalf("%s: gray failed", name)
					}
					// gray unfilters in place.
					for y := range h {
						got, r := padded[y*(1+n)+1:][:n], want[y*(1+n)+1:][:n]
						if !bytes.Equal(got, r) {
							t.Fatalf("%s: row %d (filter %d): %d of %d bytes differ", name, y, want[y*(1+n)], diffCount(got, r), n)
						}
					}
					if !bytes.Equal(pad, padded[len(raw):]) {
						t.Fatalf("%s: the padding changed", name)
					}
				}
			}
		}
	}
}

// TestGrayRGB8: the vector gray conversion of 8-bit RGB and RGBA rows
// gives rgb8's bytes, for lengths around its 8-pixel steps and the
// largest sums.
func TestGrayRGB8(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	for _, step := range []int{3, 4} {
		for n := range 70 {
			in := make([]byte, step*n)
			for i := range in {
				in[i] = byte(rng.Uint32())
			}
			if n == 69 {
				for i := range in {
					in[i] = 255 // the largest sums
				}
			}
			want, got := make([]byte, n), make([]byte, n)
			rgb8(want, in, step)
			grayRGB8(got, in, step)
			if !bytes.Equal(got, want) {
				t.Fatalf("step %d, %d pixels: %d differ", step, n, diffCount(got, want))
			}
		}
	}
}

// BenchmarkUnfilterGray is the unfilter and gray conversion alone, on
// 512×512 8-bit gray rows of random bytes, every row of one filter type
// ("paeth", "sub"...) or each of a random one ("mixed").
func BenchmarkUnfilterGray(b *testing.B) {
	const w, h = 512, 512
	rng := rand.New(rand.NewPCG(5, 6))
	for _, name := range []string{"none", "sub", "up", "avg", "paeth", "mixed"} {
		raw := make([]byte, h*(1+w))
		for i := range raw {
			raw[i] = byte(rng.Uint32())
		}
		for y := range h {
			f := byte(rng.IntN(5))
			if name != "mixed" {
				f = byte(slices.Index([]string{"none", "sub", "up", "avg", "paeth"}, name))
			}
			raw[y*(1+w)] = f
		}
		f := pngFile{w: w, h: h, depth: 8, colorType: ctGray}
		work, dst := make([]byte, len(raw)+rawPad), make([]byte, w*h)
		b.Run(name, func(b *testing.B) {
			b.SetBytes(w * h)
			for b.Loop() {
				copy(work, raw)
				if !f.gray(work, dst) {
					b.Fatal("gray failed")
				}
			}
		})
	}
}
