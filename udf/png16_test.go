package udf

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"image"
	"image/png"
	"io"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/pixelflight/pixelflight/kernels/watershed"
)

// checkLabelsPNG decodes labelsPNG's image with image/png and its image
// data with compress/zlib (which checks the Adler-32), and compares both
// with the labels.
func checkLabelsPNG(t testing.TB, labels []int32, w, h int) {
	t.Helper()
	b := labelsPNG(labels, w, h)
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%dx%d: %v", w, h, err)
	}
	g, ok := img.(*image.Gray16)
	if !ok || g.Rect.Dx() != w || g.Rect.Dy() != h {
		t.Fatalf("%dx%d: decoded %T %v", w, h, img, img.Bounds())
	}
	for i, l := range labels {
		if got := g.Gray16At(i%w, i/w).Y; int32(got) != l {
			t.Fatalf("%dx%d: pixel %d = %d, want %d", w, h, i, got, l)
		}
	}
	// The image data: the IDAT chunks' data, one zlib stream.
	var idat []byte
	for p := 8; p < len(b); {
		n := int(binary.BigEndian.Uint32(b[p:]))
		if string(b[p+4:p+8]) == "IDAT" {
			idat = append(idat, b[p+8:p+8+n]...)
		}
		p += 12 + n
	}
	zr, err := zlib.NewReader(bytes.NewReader(idat))
	if err != nil {
		t.Fatalf("%dx%d: %v", w, h, err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("%dx%d: image data: %v", w, h, err)
	}
	if len(raw) != (1+2*w)*h {
		t.Fatalf("%dx%d: %d bytes of image data, want %d", w, h, len(raw), (1+2*w)*h)
	}
}

func TestLabelsPNGDecodes(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, wh := range [][2]int{{1, 1}, {1, 7}, {9, 1}, {33, 17}, {256, 100}} {
		w, h := wh[0], wh[1]
		labels := make([]int32, w*h)
		for i := range labels {
			switch r.IntN(4) {
			case 0:
				labels[i] = int32(r.IntN(65536))
			case 1:
				labels[i] = 65535
			default:
				if i > 0 {
					labels[i] = labels[i-1]
				}
			}
		}
		checkLabelsPNG(t, labels, w, h)
	}
}

// TestLabelsPNGRuns covers runs around a copy's 3 and 258 bytes, runs of
// a byte other than zero across rows (label 0x0101 in a 1-wide image:
// 1 1 1 ...), and runs long enough for the Adler-32's sums to wrap.
func TestLabelsPNGRuns(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 127, 128, 129, 130, 131, 256, 257, 258, 259, 300, 1000} {
		for _, l := range []int32{0, 1, 0x0101, 255, 256, 65535} {
			labels := make([]int32, n)
			for i := range labels {
				labels[i] = l
			}
			checkLabelsPNG(t, labels, n, 1)
			checkLabelsPNG(t, labels, 1, n)
			labels[n/2] = l ^ 0x0100
			checkLabelsPNG(t, labels, n, 1)
		}
	}
	wide := make([]int32, 100_000*3)
	for i := range wide {
		wide[i] = 0x0101
	}
	checkLabelsPNG(t, wide, 100_000, 3)
	checkLabelsPNG(t, wide, 1, len(wide))
	for i := range wide {
		wide[i] = int32(i / 77_777)
	}
	checkLabelsPNG(t, wide, 100_000, 3)
}

// FuzzLabelsPNG: any labels, any width, decode to themselves.
func FuzzLabelsPNG(f *testing.F) {
	f.Add([]byte{0, 1, 0, 1, 1, 1, 255, 255}, uint8(2))
	f.Add(bytes.Repeat([]byte{1, 1}, 600), uint8(7))
	f.Fuzz(func(t *testing.T, data []byte, wb uint8) {
		w := int(wb)%64 + 1
		h := len(data) / 2 / w
		if h == 0 {
			return
		}
		labels := make([]int32, w*h)
		for i := range labels {
			labels[i] = int32(binary.BigEndian.Uint16(data[2*i:]))
		}
		checkLabelsPNG(t, labels, w, h)
	})
}

// BenchmarkLabelsPNG encodes the labels of scripts/bench.py's watershed
// image (kernels/watershed's testdata) and of 52 horizontal bands.
func BenchmarkLabelsPNG(b *testing.B) {
	z, err := os.ReadFile("../kernels/watershed/testdata/bench_discs_512.zlib")
	if err != nil {
		b.Fatal(err)
	}
	zr, err := zlib.NewReader(bytes.NewReader(z))
	if err != nil {
		b.Fatal(err)
	}
	pix, err := io.ReadAll(zr)
	if err != nil {
		b.Fatal(err)
	}
	discs, n, err := watershed.NewSegmenter().Segment(pix, 512, 512, watershed.DefaultParams(), nil)
	if err != nil {
		b.Fatal(err)
	}
	bands := make([]int32, 512*512)
	for i := range bands {
		bands[i] = int32(i / 5000)
	}
	for _, c := range []struct {
		name   string
		labels []int32
	}{{"discs", discs}, {"bands", bands}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(4 * int64(len(c.labels)))
			var out []byte
			for b.Loop() {
				out = labelsPNG(c.labels, 512, 512)
			}
			b.ReportMetric(float64(len(out)), "png-bytes")
		})
	}
	b.Logf("discs: %d segments", n)
}
