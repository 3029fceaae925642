package blob

import (
	"errors"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestMemory: coins at threshold 0 (4,907 peaks, 4.45 million pairs)
// asks Memory.Grow for what its peaks and pairs take, in steps, and fails
// with ErrTooMany, naming them, when Grow refuses; given what it asks
// for, it finds the blobs it finds with no limit.
func TestMemory(t *testing.T) {
	var coins refCase
	for _, c := range loadRef(t) {
		if c.Name == "coins" {
			coins = c
		}
	}
	pix := coins.pix(t)
	p := DefaultParams()
	p.Threshold = 0
	want, err := NewDetector().Detect(pix, coins.H, coins.W, p)
	if err != nil {
		t.Fatal(err)
	}

	d := NewDetector()
	var asked []int64
	d.Mem = Memory{Free: 1 << 20, Grow: func(n int64) bool { asked = append(asked, n); return true }}
	got, err := d.Detect(pix, coins.H, coins.W, p)
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("with Grow saying yes: %d blobs, %v; want the %d of no limit", len(got), err, len(want))
	}
	if need := int64(len(d.peaks))*peakBytes + int64(len(d.pr.pr))*pairBytes; d.Mem.Free < need || len(asked) > 40 {
		t.Errorf("took %d bytes in %d steps for %d peaks and %d pairs (%d bytes)", d.Mem.Free, len(asked), len(d.peaks), len(d.pr.pr), need)
	}

	for _, limit := range []int64{0, 100 << 20} { // refused at the peaks, at the pairs
		have := int64(1 << 10)
		d.Mem = Memory{Free: have, Grow: func(n int64) bool {
			if have+n > limit {
				return false
			}
			have += n
			return true
		}}
		_, err = d.Detect(pix, coins.H, coins.W, p)
		if !errors.Is(err, ErrTooMany) || !strings.Contains(err.Error(), "above threshold 0") ||
			(limit > 0) != strings.Contains(err.Error(), "overlapping pairs") {
			t.Errorf("limit %d: %v; want ErrTooMany naming the peaks (and the pairs when it stopped there)", limit, err)
		}
	}

	// Refused a step, it asks for just what it needs.
	var small []int64
	d.Mem = Memory{Free: 200 << 20, Grow: func(n int64) bool { small = append(small, n); return n < 100<<20 }}
	if _, err := d.Detect(pix, coins.H, coins.W, p); err != nil || len(small) < 2 {
		t.Errorf("with 200 MiB and only small steps given: %v, asked %v", err, small)
	}

	// The default threshold stays within what comes with the call.
	d.Mem = Memory{Free: 4 * int64(len(pix)), Grow: func(int64) bool { t.Error("asked for more at threshold 0.2"); return false }}
	if _, err := d.Detect(pix, coins.H, coins.W, DefaultParams()); err != nil {
		t.Error(err)
	}
}

// TestScaleSpaceBytes: what a fresh Detector allocates for one Detect
// (runtime.MemStats' TotalAlloc, no peaks above the threshold) is within
// ScaleSpaceBytes and one more float64 layer, and not under half of it,
// for square, small and thin images, where the transform's lengths reach
// the largest radius past the image, by the transform and by direct sums
// alone.
func TestScaleSpaceBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, sz := range [][2]int{{303, 384}, {97, 89}, {7, 20000}, {20000, 7}, {1, 20000}, {64, 3000}, {40, 40}} {
		h, w := sz[0], sz[1]
		pix := make([]uint8, h*w)
		for i := range pix {
			pix[i] = uint8(rng.IntN(256))
		}
		small := Params{MinSigma: 1, MaxSigma: 5, NumSigma: 5, Overlap: 0.5}
		for _, p := range []Params{DefaultParams(), small} {
			p.Threshold = 1e9
			d := NewDetector()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			if _, err := d.Detect(pix, h, w, p); err != nil {
				t.Fatal(err)
			}
			runtime.ReadMemStats(&after)
			got, model := int64(after.TotalAlloc-before.TotalAlloc), ScaleSpaceBytes(h, w, p)
			if got > model+8*int64(h*w)+64<<10 || got < model/2 {
				t.Errorf("%dx%d, max_sigma %g: Detect allocated %d bytes, ScaleSpaceBytes %d", w, h, p.MaxSigma, got, model)
			}
		}
	}
}
