package udf

import (
	"bytes"
	"image"
	"image/png"
	"math/rand/v2"
	"testing"
)

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
		b, err := labelsPNG(labels, w, h)
		if err != nil {
			t.Fatal(err)
		}
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
	}
}

func BenchmarkLabelsPNG(b *testing.B) {
	labels := make([]int32, 512*512)
	for i := range labels {
		labels[i] = int32(i / 5000)
	}
	for b.Loop() {
		if _, err := labelsPNG(labels, 512, 512); err != nil {
			b.Fatal(err)
		}
	}
}
