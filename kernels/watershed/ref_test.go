package watershed

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"os"
	"slices"
	"testing"
)

// refFile is written by scripts/watershedref.py.
const refFile = "testdata/watershed_ref.json"

type refImage struct {
	H, W   int
	Pixels string
}

type refCase struct {
	Name          string
	Image         string
	H, W          int
	Threshold     int
	MinDistance   int `json:"min_distance"`
	Otsu          int
	UsedThreshold int `json:"used_threshold"`
	Segments      int
	Dist2         string
	Peaks         string
	Labels        string
}

type refDoc struct {
	PythonMS float64 `json:"python_ms_discs_512"`
	Images   map[string]refImage
	Cases    []refCase
}

func loadRef(tb testing.TB) refDoc {
	tb.Helper()
	b, err := os.ReadFile(refFile)
	if err != nil {
		tb.Fatalf("read %s (regenerate with scripts/watershedref.py): %v", refFile, err)
	}
	var doc refDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		tb.Fatalf("parse %s: %v", refFile, err)
	}
	return doc
}

// unpack decodes base64 + zlib.
func unpack(tb testing.TB, s string) []byte {
	tb.Helper()
	z, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		tb.Fatalf("base64: %v", err)
	}
	return inflate(tb, z)
}

// inflate decodes zlib.
func inflate(tb testing.TB, z []byte) []byte {
	tb.Helper()
	r, err := zlib.NewReader(bytes.NewReader(z))
	if err != nil {
		tb.Fatalf("zlib: %v", err)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		tb.Fatalf("zlib: %v", err)
	}
	return b
}

func unpackInt32(tb testing.TB, s string) []int32 {
	b := unpack(tb, s)
	out := make([]int32, len(b)/4)
	for i := range out {
		out[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

// agreement maps each of our labels to the reference label it overlaps
// most and returns the fraction of pixels on which the mapped labels agree
// (background must match background).
func agreement(got, want []int32) float64 {
	overlap := map[[2]int32]int{}
	for i := range got {
		overlap[[2]int32{got[i], want[i]}]++
	}
	best := map[int32]int32{0: 0}
	bestN := map[int32]int{}
	for k, n := range overlap {
		if k[0] == 0 {
			continue
		}
		if n > bestN[k[0]] || (n == bestN[k[0]] && k[1] < best[k[0]]) {
			best[k[0]], bestN[k[0]] = k[1], n
		}
	}
	agree := 0
	for i := range got {
		if best[got[i]] == want[i] {
			agree++
		}
	}
	return float64(agree) / float64(len(got))
}

func TestReference(t *testing.T) {
	doc := loadRef(t)
	s := NewSegmenter()
	for _, c := range doc.Cases {
		t.Run(c.Name, func(t *testing.T) {
			im := doc.Images[c.Image]
			pix := unpack(t, im.Pixels)
			if im.H != c.H || im.W != c.W || len(pix) != c.H*c.W {
				t.Fatalf("image %s: %dx%d with %d pixels, case says %dx%d", c.Image, im.H, im.W, len(pix), c.H, c.W)
			}
			if got := otsu(pix); got != c.Otsu {
				t.Errorf("otsu = %d, skimage %d", got, c.Otsu)
			}
			p := Params{Threshold: c.Threshold, MinDistance: c.MinDistance}
			labels, segments, err := s.Segment(pix, c.H, c.W, p, nil)
			if err != nil {
				t.Fatal(err)
			}
			if c.Dist2 != "" {
				want := unpackInt32(t, c.Dist2)
				worst := 0.0
				for i, d2 := range want {
					worst = max(worst, math.Abs(math.Sqrt(float64(s.d2[i]))-math.Sqrt(float64(d2))))
				}
				if worst > 1e-9 {
					t.Errorf("EDT differs from scipy by up to %g", worst)
				}
			}
			wantPeaks := unpackInt32(t, c.Peaks)
			samePeaks := len(wantPeaks) == len(s.peakIdx)
			for i := 0; samePeaks && i < len(wantPeaks); i++ {
				samePeaks = wantPeaks[i] == s.peakIdx[i]
			}
			want := unpackInt32(t, c.Labels)
			exact := 0
			for i := range want {
				if want[i] == labels[i] {
					exact++
				}
			}
			agree := agreement(labels, want)
			tied := false
			seen := map[int32]bool{}
			for _, i := range s.peakIdx {
				tied = tied || seen[s.d2[i]]
				seen[s.d2[i]] = true
			}
			t.Logf("%dx%d threshold=%d min_distance=%d: segments %d (skimage %d), peaks identical %v, labels agree %.4f%% after relabelling, %.4f%% as numbered; tied markers %v",
				c.H, c.W, c.Threshold, c.MinDistance, segments, c.Segments, samePeaks,
				100*agree, 100*float64(exact)/float64(len(want)), tied)
			// The exact-heap flood and the maximum-filter peaks must give
			// the same labels.
			hs := NewSegmenter()
			hs.forceHeap, hs.forceMaxFilter = true, true
			hl, _, err := hs.Segment(pix, c.H, c.W, p, nil)
			if err != nil {
				t.Fatal(err)
			}
			if a := agreement(hl, want); a != agree {
				t.Errorf("heap flood agrees %.4f%%, bucket flood %.4f%%", 100*a, 100*agree)
			}
			if !slices.Equal(hs.peakIdx, s.peakIdx) {
				t.Error("peaks through the maximum filter differ")
			}
			if segments != c.Segments {
				t.Errorf("segments = %d, skimage %d", segments, c.Segments)
			}
			if agree < 0.99 {
				t.Errorf("labels agree on %.4f%% of pixels, want >= 99%%", 100*agree)
			}
		})
	}
}
