package watershed

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	if err := DefaultParams().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	for _, c := range []struct {
		p    Params
		want string
	}{
		{Params{Threshold: -2, MinDistance: 5}, "threshold -2: want 0 to 255"},
		{Params{Threshold: 256, MinDistance: 5}, "threshold 256: want 0 to 255"},
		{Params{Threshold: 10, MinDistance: 0}, "min_distance 0: want at least 1"},
	} {
		err := c.p.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want %q", c.p, err, c.want)
		}
		if _, _, err := NewSegmenter().Segment(make([]uint8, 4), 2, 2, c.p, nil); err == nil {
			t.Errorf("%+v: Segment accepted invalid params", c.p)
		}
	}
	s := NewSegmenter()
	if _, _, err := s.Segment(make([]uint8, 5), 2, 2, DefaultParams(), nil); err == nil || !strings.Contains(err.Error(), "want 4") {
		t.Errorf("short pixels: %v", err)
	}
	if _, _, err := s.Segment(nil, 0, 3, DefaultParams(), nil); err == nil {
		t.Error("0x3 image accepted")
	}
	if _, _, err := s.Segment(nil, 40000, 2, DefaultParams(), nil); err == nil {
		t.Error("40000x2 image accepted")
	}
}

func TestSmallAndDegenerate(t *testing.T) {
	s := NewSegmenter()
	check := func(name string, pix []uint8, h, w int, p Params, wantSeg int) []int32 {
		t.Helper()
		labels, seg, err := s.Segment(pix, h, w, p, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(labels) != h*w {
			t.Fatalf("%s: %d labels for %d pixels", name, len(labels), h*w)
		}
		if seg != wantSeg {
			t.Errorf("%s: %d segments, want %d", name, seg, wantSeg)
		}
		for _, l := range labels {
			if l < 0 || int(l) > seg {
				t.Fatalf("%s: label %d outside 0..%d", name, l, seg)
			}
		}
		return labels
	}
	// 1x1: Otsu of a constant image is its value, so nothing is foreground.
	check("1x1", []uint8{200}, 1, 1, DefaultParams(), 0)
	check("1x1 t=0", []uint8{200}, 1, 1, Params{Threshold: 0, MinDistance: 1}, 0)

	// All background.
	zero := make([]uint8, 64*64)
	for _, l := range check("all-background", zero, 64, 64, DefaultParams(), 0) {
		if l != 0 {
			t.Fatal("all-background: non-zero label")
		}
	}
	// All foreground (threshold below every pixel). scipy measures distances
	// from the virtual point (-1, 0); the only peak is the largest distance
	// inside the border-trimmed box, and it floods everything. skimage's
	// pipeline gives the same: 1 segment, 2000 labelled pixels.
	full := make([]uint8, 40*50)
	for i := range full {
		full[i] = 100
	}
	for _, l := range check("all-foreground", full, 40, 50, Params{Threshold: 10, MinDistance: 5}, 1) {
		if l != 1 {
			t.Fatal("all-foreground: pixel not in segment 1")
		}
	}
	if got := s.d2[0]; got != 1 {
		t.Errorf("all-foreground: d2[0] = %d, want 1 (scipy's virtual point)", got)
	}

	// Two overlapping squares on black: two segments, every foreground
	// pixel labelled.
	const n = 60
	pix := make([]uint8, n*n)
	for y := 10; y < 30; y++ {
		for x := 10; x < 30; x++ {
			pix[y*n+x] = 200
		}
	}
	for y := 22; y < 50; y++ {
		for x := 24; x < 52; x++ {
			pix[y*n+x] = 200
		}
	}
	labels := check("two squares", pix, n, n, DefaultParams(), 2)
	for i, v := range pix {
		if (v > 0) != (labels[i] > 0) {
			t.Fatalf("two squares: pixel %d value %d label %d", i, v, labels[i])
		}
	}
	// The labels slice is reused when it has room.
	buf := make([]int32, n*n+10)
	out, _, _ := s.Segment(pix, n, n, DefaultParams(), buf)
	if &out[0] != &buf[0] || len(out) != n*n {
		t.Error("labels buffer not reused")
	}
}

func TestOtsuSmall(t *testing.T) {
	for _, c := range []struct {
		pix  []uint8
		want int
	}{
		{[]uint8{7, 7, 7}, 7},
		{[]uint8{0, 255}, 0},
		{[]uint8{10, 10, 10, 200, 200}, 10},
	} {
		if got := otsu(c.pix); got != c.want {
			t.Errorf("otsu(%v) = %d, want %d", c.pix, got, c.want)
		}
	}
}

// TestPathsAgree checks the fast paths against the general ones on
// generated images: peaks tested one by one against the separable maximum
// filter, the bucket flood (tied markers in separate components included)
// against the exact heap.
func TestPathsAgree(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	for n := range 40 {
		h, w := 16+r.IntN(120), 16+r.IntN(120)
		pix := make([]uint8, h*w)
		for range 1 + r.IntN(25) {
			cy, cx, rad := r.IntN(h), r.IntN(w), 1+r.IntN(20)
			square := n%3 == 0
			for y := max(cy-rad, 0); y < min(cy+rad+1, h); y++ {
				for x := max(cx-rad, 0); x < min(cx+rad+1, w); x++ {
					if square || (y-cy)*(y-cy)+(x-cx)*(x-cx) < rad*rad {
						pix[y*w+x] = 200
					}
				}
			}
		}
		for _, md := range []int{1, 2, 3, 5, 9} {
			p := Params{Threshold: 100, MinDistance: md}
			fast, general := NewSegmenter(), NewSegmenter()
			general.forceHeap, general.forceMaxFilter = true, true
			a, na, err := fast.Segment(pix, h, w, p, nil)
			if err != nil {
				t.Fatal(err)
			}
			b, nb, err := general.Segment(pix, h, w, p, nil)
			if err != nil {
				t.Fatal(err)
			}
			if na != nb || !slices.Equal(fast.peakIdx, general.peakIdx) || !slices.Equal(a, b) {
				t.Fatalf("image %d (%dx%d) min_distance %d: fast and general paths differ", n, h, w, md)
			}
		}
	}
}
