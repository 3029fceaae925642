package blob

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"
)

// refFile is written by scripts/blobref.py (skimage.feature.blob_log).
const refFile = "testdata/blob_log_ref.json"

type refParams struct {
	MinSigma      float64 `json:"min_sigma"`
	MaxSigma      float64 `json:"max_sigma"`
	NumSigma      int     `json:"num_sigma"`
	Threshold     float64 `json:"threshold"`
	Overlap       float64 `json:"overlap"`
	LogScale      bool    `json:"log_scale"`
	ExcludeBorder bool    `json:"exclude_border"`
}

func (r refParams) params() Params { return Params(r) }

type refCase struct {
	Name   string      `json:"name"`
	H      int         `json:"h"`
	W      int         `json:"w"`
	Pixels string      `json:"pixels"`
	Known  [][]float64 `json:"known"`
	Runs   []struct {
		Params refParams    `json:"params"`
		Blobs  [][3]float64 `json:"blobs"`
	} `json:"runs"`
}

func loadRef(t testing.TB) []refCase {
	t.Helper()
	raw, err := os.ReadFile(refFile)
	if err != nil {
		t.Fatalf("read %s (make it with scripts/blobref.py): %v", refFile, err)
	}
	var ref struct{ Cases []refCase }
	if err := json.Unmarshal(raw, &ref); err != nil {
		t.Fatalf("parse %s: %v", refFile, err)
	}
	return ref.Cases
}

func (c refCase) pix(t testing.TB) []uint8 {
	b, err := base64.StdEncoding.DecodeString(c.Pixels)
	if err != nil || len(b) != c.H*c.W {
		t.Fatalf("%s: bad pixels (%d bytes, err %v)", c.Name, len(b), err)
	}
	return b
}

// sigmaClose: within one step of the sigma grid (linear or log10).
func sigmaClose(p Params, a, b float64) bool {
	if p.NumSigma < 2 {
		return math.Abs(a-b) <= 1e-6*b
	}
	if p.LogScale {
		step := (math.Log10(p.MaxSigma) - math.Log10(p.MinSigma)) / float64(p.NumSigma-1)
		return math.Abs(math.Log10(a)-math.Log10(b)) <= step+1e-9
	}
	return math.Abs(a-b) <= (p.MaxSigma-p.MinSigma)/float64(p.NumSigma-1)+1e-9
}

// compare matches each reference blob to an unused one of ours within 1 px
// and one sigma step; it returns matched, exact (same y, x, sigma and same
// position in the list) and extra (ours unmatched) counts.
func compare(p Params, ref [][3]float64, got []Blob) (matched, exact, extra int) {
	used := make([]bool, len(got))
	for i, r := range ref {
		if i < len(got) && float64(got[i].Y) == r[0] && float64(got[i].X) == r[1] &&
			math.Abs(float64(got[i].Sigma)-r[2]) <= 1e-5*r[2] {
			exact++
		}
		for j, g := range got {
			if !used[j] && math.Abs(float64(g.Y)-r[0]) <= 1 && math.Abs(float64(g.X)-r[1]) <= 1 &&
				sigmaClose(p, float64(g.Sigma), r[2]) {
				used[j] = true
				matched++
				break
			}
		}
	}
	for _, u := range used {
		if !u {
			extra++
		}
	}
	return matched, exact, extra
}

func TestMatchesSkimage(t *testing.T) {
	d := NewDetector()
	for _, c := range loadRef(t) {
		pix := c.pix(t)
		for _, run := range c.Runs {
			p := run.Params.params()
			got, err := d.Detect(pix, c.H, c.W, p)
			if err != nil {
				t.Fatalf("%s: %v", c.Name, err)
			}
			m, ex, extra := compare(p, run.Blobs, got)
			n := len(run.Blobs)
			pm, pe := 100.0, 0.0
			if n > 0 {
				pm, pe = 100*float64(m)/float64(n), 100*float64(extra)/float64(n)
			}
			t.Logf("%-6s %+v: skimage %d, ours %d, matched %.1f%%, exact (same order) %d/%d, extra %.1f%%",
				c.Name, p, n, len(got), pm, ex, n, pe)
			if pm < 95 || pe > 5 {
				t.Errorf("%s %+v: matched %.1f%% (want >= 95), extra %.1f%% (want <= 5)", c.Name, p, pm, pe)
			}
		}
	}
}

func TestKnownCentres(t *testing.T) {
	d := NewDetector()
	for _, c := range loadRef(t) {
		if !strings.HasPrefix(c.Name, "gen") {
			continue
		}
		p := DefaultParams()
		p.MinSigma, p.MaxSigma, p.NumSigma, p.Threshold = 1, 12, 23, 0.1
		got, err := d.Detect(c.pix(t), c.H, c.W, p)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range c.Known {
			found := false
			for _, g := range got {
				if math.Abs(float64(g.Y)-k[0]) <= 1 && math.Abs(float64(g.X)-k[1]) <= 1 &&
					math.Abs(float64(g.Sigma)-k[2]) <= 1 {
					found = true
					break
				}
			}
			if !found {
				t.Errorf("%s: blob at (%v, %v) sigma %.2f not found in %v", c.Name, k[0], k[1], k[2], got)
			}
		}
		if len(got) != len(c.Known) {
			t.Errorf("%s: %d blobs, want %d", c.Name, len(got), len(c.Known))
		}
	}
}

func TestValidate(t *testing.T) {
	mod := func(f func(*Params)) Params { p := DefaultParams(); f(&p); return p }
	for _, tc := range []struct {
		p    Params
		want string // "" = valid
	}{
		{DefaultParams(), ""},
		{mod(func(p *Params) { p.MinSigma = 0 }), "min_sigma 0: want > 0"},
		{mod(func(p *Params) { p.MinSigma = math.NaN() }), "min_sigma NaN"},
		{mod(func(p *Params) { p.MaxSigma = 0.5 }), "max_sigma below min_sigma"},
		{mod(func(p *Params) { p.MaxSigma = math.Inf(1) }), "max_sigma +Inf"},
		{mod(func(p *Params) { p.NumSigma = 0 }), "num_sigma 0: want 1..100"},
		{mod(func(p *Params) { p.NumSigma = 101 }), "num_sigma 101"},
		{mod(func(p *Params) { p.Threshold = -0.1 }), "threshold -0.1: want >= 0"},
		{mod(func(p *Params) { p.Threshold = math.NaN() }), "threshold NaN"},
		{mod(func(p *Params) { p.Overlap = 1.5 }), "overlap 1.5: want in [0, 1]"},
		{mod(func(p *Params) { p.MaxSigma, p.NumSigma = 1, 1 }), ""},
	} {
		err := tc.p.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: unexpected error %v", tc.p, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v: error %v, want %q", tc.p, err, tc.want)
		}
	}
	if _, err := NewDetector().Detect(make([]uint8, 5), 2, 3, DefaultParams()); err == nil {
		t.Error("Detect: want a size error for 5 pixels as 2x3")
	}
}

func TestEdgeCases(t *testing.T) {
	d := NewDetector()
	p := DefaultParams()
	p.Threshold = 0
	for _, sz := range [][2]int{{1, 1}, {1, 7}, {3, 2}} {
		if _, err := d.Detect(make([]uint8, sz[0]*sz[1]), sz[0], sz[1], p); err != nil {
			t.Errorf("%v: %v", sz, err)
		}
	}
	got, _ := d.Detect(make([]uint8, 100), 10, 10, p)
	if len(got) != 0 {
		t.Errorf("constant image: %d blobs, want 0", len(got))
	}
	// One pixel at one sigma: a cube of one value has its peak where it
	// passes the threshold (skimage's blob_log gives [[0, 0, 0.5]] for 200
	// at threshold 0.02, nothing for 0).
	one := Params{MinSigma: 0.5, MaxSigma: 0.5, NumSigma: 1, Threshold: 0.02, Overlap: 0.5}
	for _, c := range []struct {
		v    uint8
		want int
	}{{200, 1}, {0, 0}} {
		got, err := d.Detect([]uint8{c.v}, 1, 1, one)
		if err != nil || len(got) != c.want || c.want == 1 && got[0] != (Blob{Y: 0, X: 0, Sigma: 0.5}) {
			t.Errorf("1x1 of %d at one sigma: %v, %v; want %d blob(s) (0, 0, 0.5)", c.v, got, err, c.want)
		}
	}
}

func BenchmarkDetect(b *testing.B) {
	for _, c := range loadRef(b) {
		if c.Name != "coins" {
			continue
		}
		pix := c.pix(b)
		d := NewDetector()
		b.Run(c.Name, func(b *testing.B) {
			b.SetBytes(int64(len(pix)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := d.Detect(pix, c.H, c.W, DefaultParams()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
