package imageio

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// The decoders' outputs may differ by this much: their IDCTs round
// differently (measured: at most 1 on every image here).
const idctTol = 1

// needTurbo returns the libjpeg-turbo decoder or skips the test.
func needTurbo(t testing.TB) jpegGray {
	fast := turboGray()
	if fast == nil {
		t.Skip("libjpeg-turbo not loaded (no cgo, or no libturbojpeg.so.0): image/jpeg only")
	}
	return fast
}

func encodeJPEG(t testing.TB, m image.Image, quality int) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, m, &jpeg.Options{Quality: quality}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// photo is an opaque colour image with shading, sharp edges and mild
// noise: at quality 90 its JPEG takes 1.5 to 2 bits per pixel, like a photo.
func photo(w, h int, seed uint64) *image.RGBA {
	r := newRand(seed)
	m := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			fx, fy := float64(x), float64(y)
			v := 90 + 60*math.Sin(fx/41+fy/67) + 40*math.Cos(fx*fy/9000)
			if (x/53+y/37)%3 == 0 { // blocks with sharp edges
				v = 255 - v
			}
			n := func() uint8 { return uint8(min(max(v+float64(r.IntN(13))-6, 0), 255)) }
			m.SetRGBA(x, y, color.RGBA{n(), uint8(int(n()) * 3 / 4), uint8(255 - int(n())/2), 255})
		}
	}
	return m
}

// maxDiff is the largest per-pixel difference of two same-sized images.
func maxDiff(a, b []uint8) int {
	d := 0
	for i := range a {
		d = max(d, int(a[i])-int(b[i]), int(b[i])-int(a[i]))
	}
	return d
}

// The two decoders agree on image/jpeg's own files: gray and 4:2:0 colour,
// sizes that are and are not multiples of the 16x16 MCU.
func TestJPEGDecodersAgree(t *testing.T) {
	fast := needTurbo(t)
	for _, size := range [][2]int{{1, 1}, {7, 5}, {16, 16}, {37, 23}, {257, 131}} {
		w, h := size[0], size[1]
		for _, src := range []struct {
			name string
			img  image.Image
		}{
			{"gray", randomGray(w, h, 1)},
			{"smooth gray", gradientGray(w, h)},
			{"colour", opaque(randomNRGBA(w, h, 2))},
			{"smooth colour", opaque(gradient(w, h, 3))},
			{"photo", photo(w, h, 4)},
		} {
			for _, q := range []int{50, 90, 100} {
				t.Run(fmt.Sprintf("%s %dx%d q%d", src.name, w, h, q), func(t *testing.T) {
					b := encodeJPEG(t, src.img, q)
					var tj, g Gray
					if !fast(b, w, h, &tj) {
						t.Fatal("libjpeg-turbo left a clean file to image/jpeg")
					}
					if err := decodeGray(b, testLimit, &g, decoders{}); err != nil {
						t.Fatal(err)
					}
					checkGray(t, tj, w, h, g.Pix, idctTol)
				})
			}
		}
	}
}

// jpegRef is a file of testdata/jpeg (scripts/jpegref.py) with Pillow's
// results: y from im.draft("L") (libjpeg's gray output, nil for CMYK), l
// from convert("L").
type jpegRef struct {
	name string
	b    []byte
	w, h int
	y, l []uint8
}

func jpegRefs(t testing.TB) []jpegRef {
	t.Helper()
	files, err := filepath.Glob("testdata/jpeg/*.jpg")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/jpeg/*.jpg (scripts/jpegref.py): %v", err)
	}
	var refs []jpegRef
	for _, f := range files {
		r := jpegRef{name: strings.TrimSuffix(filepath.Base(f), ".jpg")}
		if r.b, err = os.ReadFile(f); err != nil {
			t.Fatal(err)
		}
		l := readGrayPNG(t, strings.TrimSuffix(f, "jpg")+"l.png")
		r.w, r.h, r.l = l.Rect.Dx(), l.Rect.Dy(), l.Pix
		if !strings.HasSuffix(r.name, "-cmyk") {
			r.y = readGrayPNG(t, strings.TrimSuffix(f, "jpg")+"y.png").Pix
		}
		refs = append(refs, r)
	}
	return refs
}

func readGrayPNG(t testing.TB, name string) *image.Gray {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	m, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	g, ok := m.(*image.Gray)
	if !ok || g.Stride != g.Rect.Dx() {
		t.Fatalf("%s: want 8-bit gray, got %T", name, m)
	}
	return g
}

// Against Pillow (libjpeg-turbo 3.1 inside): libjpeg-turbo's gray output
// equals Pillow's draft("L") exactly, image/jpeg's is within idctTol.
// convert("L") decodes to RGB first, where saturated colours clip: both
// differ from it by up to 11 on these files. CMYK goes to image/jpeg on
// both paths, within 1 of convert("L").
func TestJPEGPillow(t *testing.T) {
	fast := turboGray()
	for _, r := range jpegRefs(t) {
		t.Run(r.name, func(t *testing.T) {
			var g Gray
			if err := decodeGray(r.b, testLimit, &g, decoders{}); err != nil {
				t.Fatal(err)
			}
			lTol := 11
			if r.y == nil {
				lTol = 1
			} else {
				checkGray(t, g, r.w, r.h, r.y, idctTol)
			}
			checkGray(t, g, r.w, r.h, r.l, lTol)
			if fast == nil {
				return
			}
			var tj Gray
			if done := fast(r.b, r.w, r.h, &tj); done != (r.y != nil) {
				t.Fatalf("libjpeg-turbo decoded it: %v, want %v", done, r.y != nil)
			}
			if r.y != nil {
				checkGray(t, tj, r.w, r.h, r.y, 0)
				checkGray(t, tj, r.w, r.h, r.l, lTol)
			}
		})
	}
}

// setJPEGSize rewrites the size in b's first SOF marker.
func setJPEGSize(t *testing.T, b []byte, w, h int) []byte {
	t.Helper()
	b = bytes.Clone(b)
	for i := 2; i+9 < len(b); i += 2 + (int(b[i+2])<<8 | int(b[i+3])) {
		if b[i] != 0xff {
			t.Fatalf("no marker at %d", i)
		}
		if m := b[i+1]; m == 0xc0 || m == 0xc1 || m == 0xc2 {
			b[i+5], b[i+6], b[i+7], b[i+8] = byte(h>>8), byte(h), byte(w>>8), byte(w)
			return b
		}
	}
	t.Fatal("no SOF marker")
	return nil
}

// Every file gets the same verdict and error message from both paths:
// libjpeg-turbo leaves whatever it fails or warns on to image/jpeg.
func TestJPEGErrorsBothPaths(t *testing.T) {
	fast := needTurbo(t)
	ok := encodeJPEG(t, photo(64, 48, 5), 90)
	extra := append(bytes.Clone(ok[:len(ok)-2]), "junk\xff\xd9"...) // libjpeg warns, image/jpeg accepts
	huge := setJPEGSize(t, ok, 60000, 60000)
	cases := []struct {
		name string
		b    []byte
		want error // nil: decodes
	}{
		{"valid", ok, nil},
		{"extraneous bytes before EOI", extra, nil},
		{"no EOI", ok[:len(ok)-2], ErrCorrupt},
		{"cut in half", ok[:len(ok)/2], ErrCorrupt},
		{"cut after the header", ok[:bytes.Index(ok, []byte{0xff, 0xda})+14], ErrCorrupt},
		{"SOI then garbage", []byte("\xff\xd8\xffgarbage garbage"), ErrCorrupt},
		{"SOI only", []byte{0xff, 0xd8, 0xff}, ErrCorrupt},
		{"zero height", setJPEGSize(t, ok, 64, 0), ErrBadDims},
		{"zero width", setJPEGSize(t, ok, 0, 48), ErrBadDims},
		{"60000x60000", huge, ErrTooLarge},
		{"larger than the data", setJPEGSize(t, ok, 640, 480), ErrCorrupt},
		{"smaller than the data", setJPEGSize(t, ok, 16, 16), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var tj, g Gray
			errT := decodeGray(c.b, testLimit, &tj, decoders{jpeg: fast})
			errG := decodeGray(c.b, testLimit, &g, decoders{})
			if !errors.Is(errG, c.want) || c.want == nil && errG != nil {
				t.Fatalf("image/jpeg: got %v, want %v", errG, c.want)
			}
			if fmt.Sprint(errT) != fmt.Sprint(errG) {
				t.Fatalf("libjpeg-turbo path: %v\nimage/jpeg path: %v", errT, errG)
			}
			if errT == nil && (tj.W != g.W || tj.H != g.H || maxDiff(tj.Pix, g.Pix) > idctTol) {
				t.Errorf("pixels differ by %d", maxDiff(tj.Pix, g.Pix))
			}
		})
	}
	// Refused from the header, before pixel memory: 10 refusals stay far
	// below the 3.6 GB that 60000x60000 would take.
	var g Gray
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 10 {
		_ = decodeGray(huge, testLimit, &g, decoders{jpeg: fast})
	}
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Errorf("10 refusals allocated %d bytes, want < 1 MiB", n)
	}
}

// Damaged files (bits flipped, bytes inserted, cut short): whatever
// image/jpeg accepts, the libjpeg-turbo path accepts too, and where that
// path fails, it fails with image/jpeg's error. libjpeg-turbo decodes a
// few damaged files that image/jpeg refuses (mostly progressive ones).
func TestJPEGDamaged(t *testing.T) {
	fast := needTurbo(t)
	r := newRand(90)
	for _, ref := range jpegRefs(t) {
		onlyTurbo := 0
		for i := range 300 {
			b := bytes.Clone(ref.b)
			switch p := r.IntN(len(b)); i % 3 {
			case 0:
				b[p] ^= 1 << r.IntN(8)
			case 1:
				b = append(b[:p:p], append([]byte{byte(r.UintN(256))}, ref.b[p:]...)...)
			case 2:
				b = b[:p]
			}
			var tj, g Gray
			errT := decodeGray(b, testLimit, &tj, decoders{jpeg: fast})
			errG := decodeGray(b, testLimit, &g, decoders{})
			switch {
			case errT == nil && errG != nil:
				onlyTurbo++
			case fmt.Sprint(errT) != fmt.Sprint(errG):
				t.Fatalf("%s, damage %d: libjpeg-turbo path: %v\nimage/jpeg path: %v", ref.name, i, errT, errG)
			}
		}
		t.Logf("%s: %d of 300 damaged files decoded by libjpeg-turbo only", ref.name, onlyTurbo)
	}
}

func TestJPEGReuse(t *testing.T) {
	fast := needTurbo(t)
	b := encodeJPEG(t, photo(16, 16, 6), 90)
	g := Gray{Pix: make([]uint8, 0, 1024)}
	p := &g.Pix[:1][0]
	if err := decodeGray(b, testLimit, &g, decoders{jpeg: fast}); err != nil || &g.Pix[0] != p || len(g.Pix) != 256 {
		t.Fatalf("dst.Pix not reused: %v", err)
	}
	// A failed decode leaves W, H and len(Pix) alone.
	small := Gray{W: 1, H: 1, Pix: []uint8{7}}
	if err := decodeGray(b[:len(b)/2], testLimit, &small, decoders{jpeg: fast}); err == nil || small.W != 1 || small.H != 1 || len(small.Pix) != 1 {
		t.Errorf("after an error: %dx%d, %d pixels, err %v", small.W, small.H, len(small.Pix), err)
	}
}

// Concurrent decodes (a TurboJPEG handle each) give the same pixels.
func TestJPEGConcurrent(t *testing.T) {
	fast := needTurbo(t)
	refs := jpegRefs(t)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Go(func() {
			var g Gray
			for k := range 50 {
				r := refs[(i+k)%len(refs)]
				if r.y == nil {
					continue
				}
				if err := decodeGray(r.b, testLimit, &g, decoders{jpeg: fast}); err != nil || !bytes.Equal(g.Pix, r.y) {
					errs <- fmt.Errorf("%s: %v, or pixels differ", r.name, err)
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

func TestJPEGDecoderName(t *testing.T) {
	name := JPEGDecoder()
	if turboGray() == nil {
		if name != "go image/jpeg" {
			t.Errorf("JPEGDecoder() = %q without libjpeg-turbo", name)
		}
		return
	}
	if !strings.HasPrefix(name, "libjpeg-turbo ") || !strings.HasSuffix(name, ".x") {
		t.Errorf("JPEGDecoder() = %q", name)
	}
}

var jpegBenchOut = flag.String("jpegbench.out", "", "BenchmarkDecodeJPEG writes its JPEGs to this directory (scripts/jpegbench.py)")

// BenchmarkDecodeJPEG compares the decoders on photo-like colour JPEGs
// (quality 90, 4:2:0, image/jpeg's encoder), through DecodeGray's path.
// Throughput counts the compressed bytes.
func BenchmarkDecodeJPEG(b *testing.B) {
	for _, size := range [][2]int{{512, 512}, {1920, 1080}} {
		data := encodeJPEG(b, photo(size[0], size[1], 7), 90)
		label := fmt.Sprintf("%dx%d", size[0], size[1])
		if size[0] == size[1] {
			label = fmt.Sprint(size[0])
		}
		if *jpegBenchOut != "" {
			if err := os.WriteFile(filepath.Join(*jpegBenchOut, label+".jpg"), data, 0o644); err != nil {
				b.Fatal(err)
			}
		}
		for _, d := range []struct {
			name string
			fast jpegGray
		}{{"turbo", turboGray()}, {"go", nil}} {
			b.Run(d.name+"-"+label, func(b *testing.B) {
				if d.name == "turbo" {
					needTurbo(b)
				}
				var g Gray
				b.SetBytes(int64(len(data)))
				b.ReportAllocs()
				for b.Loop() {
					if err := decodeGray(data, testLimit, &g, decoders{jpeg: d.fast}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
