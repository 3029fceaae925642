package haar

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"image"
	"image/draw"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unsafe"
)

type opencvRef struct {
	Resize []struct {
		W, H   int
		SHA256 string
	}
	Integral struct {
		W, H        int
		Sum, Tilted []int32
		Sq          []int64
	}
	Group []struct {
		Rects        [][4]int
		MinNeighbors int `json:"min_neighbors"`
		Out          [][5]int
	}
}

func loadRef(t *testing.T) opencvRef {
	t.Helper()
	b, err := os.ReadFile("testdata/opencv_ref.json")
	if err != nil {
		t.Fatal(err)
	}
	var r opencvRef
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// testImage is scripts/haarref.py's generated image.
func testImage(w, h int) []uint8 {
	pix := make([]uint8, w*h)
	for y := range h {
		for x := range w {
			pix[y*w+x] = uint8((x*x*3 + y*7 + x*y) % 251)
		}
	}
	return pix
}

func TestResizeMatchesOpenCV(t *testing.T) {
	ref := loadRef(t)
	src := testImage(97, 61)
	var z resizer
	for _, c := range ref.Resize {
		dst := make([]uint8, c.W*c.H)
		z.resize(src, 97, 61, dst, c.W, c.H)
		sum := sha256.Sum256(dst)
		if got := hex.EncodeToString(sum[:]); got != c.SHA256 {
			t.Errorf("97x61 -> %dx%d: differs from cv2.resize(INTER_LINEAR_EXACT)", c.W, c.H)
		}
	}
}

func TestIntegralsMatchOpenCV(t *testing.T) {
	ref := loadRef(t).Integral
	w, h := ref.W, ref.H
	stride := w + 1
	sum, tilt := make([]int32, stride*(h+1)), make([]int32, stride*(h+1))
	sq := make([]uint32, stride*(h+1))
	integrals(testImage(w, h), w, h, stride, sum, sq, tilt)
	for i := range sum {
		if sum[i] != ref.Sum[i] || tilt[i] != ref.Tilted[i] || int64(sq[i]) != ref.Sq[i] {
			t.Fatalf("at %d (y %d, x %d): sum %d sq %d tilted %d, cv2.integral3 %d %d %d",
				i, i/stride, i%stride, sum[i], sq[i], tilt[i], ref.Sum[i], ref.Sq[i], ref.Tilted[i])
		}
	}
}

func TestGroupMatchesOpenCV(t *testing.T) {
	for i, c := range loadRef(t).Group {
		var in []Face
		for _, r := range c.Rects {
			in = append(in, Face{X: r[0], Y: r[1], W: r[2], H: r[3]})
		}
		var got [][5]int
		for _, f := range group(in, c.MinNeighbors, 1<<20, 1<<20) {
			got = append(got, [5]int{f.X, f.Y, f.W, f.H, f.Neighbors})
		}
		slices.SortFunc(got, func(a, b [5]int) int { return slices.Compare(a[:], b[:]) })
		if !slices.Equal(got, c.Out) {
			t.Errorf("case %d (min_neighbors %d): got %v, cv2.groupRectangles %v", i, c.MinNeighbors, got, c.Out)
		}
	}
}

func TestParseOpenCVCascades(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(DebianDir, "*.xml"))
	if len(files) == 0 {
		t.Skip(DebianDir + " is empty: install Debian's opencv-data (make test does)")
	}
	for _, f := range files {
		r, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		c, err := Parse(r)
		r.Close()
		name := filepath.Base(f)
		if name == "haarcascade_licence_plate_rus_16stages.xml" {
			if err == nil || !strings.Contains(err.Error(), "old-format") {
				t.Errorf("%s: want the old-format error, got %v", name, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if name == "haarcascade_frontalface_default.xml" && (c.W != 24 || c.H != 24 || len(c.Stages) != 25 || c.Tilted || c.maxNodes != 1) {
			t.Errorf("%s: %dx%d, %d stages, tilted %v, max nodes %d", name, c.W, c.H, len(c.Stages), c.Tilted, c.maxNodes)
		}
	}
}

// tiny is a valid two-stage cascade; the bad fixtures below each break one
// thing in it.
const tiny = `<?xml version="1.0"?>
<opencv_storage>
<cascade type_id="opencv-cascade-classifier"><stageType>BOOST</stageType>
  <featureType>HAAR</featureType><height>4</height><width>4</width>
  <featureParams><maxCatCount>0</maxCatCount></featureParams>
  <stages>
    <_><stageThreshold>-1.</stageThreshold><weakClassifiers>
      <_><internalNodes>0 -1 0 0.5</internalNodes><leafValues>-1. 1.</leafValues></_></weakClassifiers></_>
    <_><stageThreshold>0.</stageThreshold><weakClassifiers>
      <_><internalNodes>1 0 1 0. -1 -2 0 0.1</internalNodes><leafValues>0.5 -0.5 1.</leafValues></_></weakClassifiers></_>
  </stages>
  <features>
    <_><rects><_>0 0 4 2 -1.</_><_>0 2 4 2 1.</_></rects></_>
    <_><rects><_>2 0 2 2 -1.</_><_>1 1 1 1 2.</_></rects><tilted>1</tilted></_>
  </features></cascade>
</opencv_storage>
`

func TestParseErrors(t *testing.T) {
	c, err := Parse(strings.NewReader(tiny))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Stages) != 2 || !c.Tilted || c.maxNodes != 2 || c.Stages[0].Threshold != -1-thresholdEps {
		t.Fatalf("tiny: %+v", c)
	}
	for _, tc := range []struct{ from, to, want string }{
		{"<opencv_storage>", "<storage>", "want <opencv_storage>"},
		{"HAAR", "LBP", "featureType"},
		{"<width>4", "<width>4000", "window"},
		{"0 -1 0 0.5", "0 -1 7 0.5", "feature 7"},
		{"0 -1 0 0.5", "0 -1 0", "want 4 per node"},
		{"-1. 1.</leafValues>", "-1.</leafValues>", "leafValues"},
		{"-1 -2 0 0.1", "1 -2 0 0.1", "child 1"},   // a loop
		{"-1 -2 0 0.1", "-9 -2 0 0.1", "child -9"}, // no such leaf
		{"0 2 4 2 1.", "0 3 4 2 1.", "outside"},
		{"2 0 2 2 -1.", "0 0 2 2 -1.", "outside"}, // tilted: the left corner leaves the window
		{"0 0 4 2 -1.", "0 0 0 2 -1.", "empty"},
		{"0 0 4 2 -1.", "0 0 4 2 nan", "bad number"},
		{"0 0 4 2 -1.", "0.5 0 4 2 -1.", "integers"},
		{"<maxCatCount>0", "<maxCatCount>256", "categorical"},
		{`type_id="opencv-cascade-classifier"`, `type_id="opencv-haar-classifier"`, "old-format"},
		{"</cascade>", "", "XML syntax"},
	} {
		bad := strings.Replace(tiny, tc.from, tc.to, 1)
		if _, err := Parse(strings.NewReader(bad)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q -> %q: got %v, want an error with %q", tc.from, tc.to, err, tc.want)
		}
	}
}

func TestLibrary(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "tiny.xml"), []byte(tiny), 0o644)
	os.WriteFile(filepath.Join(dir, "broken.xml"), []byte("<opencv_storage>"), 0o644)
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(dir, "old.xml"), []byte(strings.Replace(tiny, `type_id="opencv-cascade-classifier"`, `type_id="opencv-haar-classifier"`, 1)), 0o644)
	l, err := OpenLibrary(dir)
	if err != nil {
		t.Fatal(err)
	}
	// An old-format file is not offered (capabilities lists Names), and
	// asking for it says why.
	if got := l.Names(); !slices.Equal(got, []string{"broken", "tiny"}) {
		t.Errorf("names %v", got)
	}
	if _, err := l.Get("old"); err == nil || !strings.Contains(err.Error(), "old-format") {
		t.Errorf("Get(old): %v, want the old-format error", err)
	}
	c1, err := l.Get("tiny")
	if err != nil {
		t.Fatal(err)
	}
	if c2, _ := l.Get("tiny"); c2 != c1 {
		t.Error("a cascade is parsed once and kept")
	}
	for _, name := range []string{"broken", "notes", "../" + filepath.Base(dir) + "/tiny", filepath.Join(dir, "tiny.xml")} {
		if _, err := l.Get(name); err == nil {
			t.Errorf("Get(%q) succeeded", name)
		}
	}
	if _, err := OpenLibrary(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing directory must be an error")
	}
}

func TestDetectContract(t *testing.T) {
	c, err := Parse(strings.NewReader(tiny))
	if err != nil {
		t.Fatal(err)
	}
	d := NewDetector()
	for _, p := range []Params{{ScaleFactor: 1}, {ScaleFactor: 1.1, MinNeighbors: -1}, {ScaleFactor: 1.1, MinW: -1}} {
		if _, err := d.Detect(c, make([]uint8, 64), 8, 8, p); err == nil {
			t.Errorf("%+v accepted", p)
		}
	}
	if _, err := d.Detect(c, make([]uint8, 10), 8, 8, DefaultParams()); err == nil {
		t.Error("short pixel slice accepted")
	}
	// Smaller than the window, and a flat image (no variance): nothing.
	for _, wh := range [][2]int{{3, 3}, {64, 48}} {
		faces, err := d.Detect(c, make([]uint8, wh[0]*wh[1]), wh[0], wh[1], DefaultParams())
		if err != nil || len(faces) != 0 {
			t.Errorf("%v: %v %v", wh, faces, err)
		}
	}
	// Every size from 4 to 40 on a textured image: no panic, boxes inside.
	for n := 4; n <= 40; n++ {
		pix := testImage(n, n+3)
		faces, err := d.Detect(c, pix, n, n+3, Params{ScaleFactor: 1.1})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range faces {
			if f.X < 0 || f.Y < 0 || f.X+f.W > n || f.Y+f.H > n+3 {
				t.Fatalf("%dx%d: box %+v outside", n, n+3, f)
			}
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(tiny))
	f.Add([]byte("<opencv_storage><cascade><stages><_></_></stages></cascade></opencv_storage>"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Parse(strings.NewReader(string(b)))
		if err != nil {
			return
		}
		// Whatever parses must run without reading outside its buffers.
		d := NewDetector()
		w, h := c.W+5, c.H+3
		if _, err := d.Detect(c, testImage(w, h), w, h, Params{ScaleFactor: 1.5}); err != nil {
			t.Fatal(err)
		}
	})
}

// TestPairsAsTrees runs cascades of two-node trees laid out as pairs and
// as general trees at every window of every pyramid level of generated
// images (and of the astronaut, when the venv holds scikit-image's data),
// normalised as Detect does: each window is rejected at the same stage,
// or passes, either way.
func TestPairsAsTrees(t *testing.T) {
	tinyC, err := Parse(strings.NewReader(tiny))
	if err != nil {
		t.Fatal(err)
	}
	// tiny's tree of two has node 1 below its root's threshold; this one above.
	right, err := Parse(strings.NewReader(strings.Replace(tiny, "1 0 1 0. -1 -2 0 0.1", "0 1 1 0. -1 -2 0 0.1", 1)))
	if err != nil {
		t.Fatal(err)
	}
	cascades := map[string]*Cascade{"tiny": tinyC, "tiny, node 1 above": right}
	files, _ := filepath.Glob(filepath.Join(DebianDir, "*.xml"))
	for _, f := range files {
		r, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		if c, err := Parse(r); err == nil && c.maxNodes == 2 {
			cascades[filepath.Base(f)] = c
		}
		r.Close()
	}
	if len(files) > 0 && len(cascades) < 5 {
		t.Fatalf("%d cascades of two-node trees in %s, want alt2 and both 2-splits", len(cascades)-2, DebianDir)
	}
	// A texture, and soft blobs and edges (sinusoids under a disc).
	w, h := 160, 120
	soft := make([]uint8, w*h)
	for y := range h {
		for x := range w {
			v := 128 + 60*math.Sin(float64(x)/9)*math.Cos(float64(y)/13) + 30*math.Sin(float64(x+2*y)/5)
			if dx, dy := x-80, y-60; dx*dx+dy*dy < 900 {
				v -= 50
			}
			soft[y*w+x] = uint8(max(0, min(255, v)))
		}
	}
	imgs := []*image.Gray{{Pix: testImage(w, h), Stride: w, Rect: image.Rect(0, 0, w, h)},
		{Pix: soft, Stride: w, Rect: image.Rect(0, 0, w, h)}}
	if g := astronaut(t); g != nil {
		imgs = append(imgs, g)
	}
	for name, c := range cascades {
		trees := *c
		trees.maxNodes = 3      // the general layout
		stages := map[int]int{} // windows by run's result
		for _, m := range imgs {
			w, h := m.Rect.Dx(), m.Rect.Dy()
			scales := c.scales(w, h, Params{ScaleFactor: 1.25})
			stride, rows := scales[0].w+1, scales[0].h+1
			pp, tp := compile(c, stride, rows), compile(&trees, stride, rows)
			if pp.pairs == nil || tp.pairs != nil {
				t.Fatalf("%s: laid out as pairs %v and %v", name, pp.pairs != nil, tp.pairs != nil)
			}
			sum, sq := make([]int32, 2*stride*rows), make([]uint32, stride*rows)
			small := make([]uint8, w*h)
			var rs resizer
			for _, s := range scales {
				img := small[:s.w*s.h]
				rs.resize(m.Pix, w, h, img, s.w, s.h)
				var tilt []int32
				if c.Tilted {
					tilt = sum[stride*rows:]
				}
				integrals(img, s.w, s.h, stride, sum, sq, tilt)
				for y := 0; y+c.H <= s.h; y++ {
					for x := 0; x+c.W <= s.w; x++ {
						p := int32(y*stride + x)
						vnf, ok := pp.normalise(sum, sq, p)
						if !ok {
							continue
						}
						a, b := pp.run(unsafe.Pointer(&sum[p]), vnf), tp.run(unsafe.Pointer(&sum[p]), vnf)
						if a != b {
							t.Fatalf("%s on %dx%d, level %dx%d, window (%d,%d): %d as pairs, %d as trees", name, w, h, s.w, s.h, x, y, a, b)
						}
						stages[a]++
					}
				}
			}
		}
		if len(stages) < min(5, len(c.Stages)) {
			t.Errorf("%s: windows end at %d stages only: %v", name, len(stages), stages)
		}
	}
}

// astronaut is scikit-image's astronaut in gray, from the venv make
// builds; nil (after a log line) where there is none.
func astronaut(tb testing.TB) *image.Gray {
	photos, _ := filepath.Glob("../../.venv/lib/python3*/site-packages/skimage/data/astronaut.png")
	if len(photos) == 0 {
		tb.Log("no venv with scikit-image's astronaut.png (make venv)")
		return nil
	}
	f, err := os.Open(photos[0])
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	m, err := png.Decode(f)
	if err != nil {
		tb.Fatal(err)
	}
	g := image.NewGray(m.Bounds())
	draw.Draw(g, g.Rect, m, m.Bounds().Min, draw.Src)
	return g
}

// BenchmarkDetect times Detect with the default and alt2 cascades on the
// astronaut (512×512), OpenCV's default params:
// go test -run '^$' -bench Detect -benchtime 10x ./kernels/haar/
func BenchmarkDetect(b *testing.B) {
	g := astronaut(b)
	if g == nil {
		b.Skip()
	}
	for _, name := range []string{"haarcascade_frontalface_default", "haarcascade_frontalface_alt2"} {
		f, err := os.Open(filepath.Join(DebianDir, name+".xml"))
		if err != nil {
			b.Skip(err)
		}
		c, err := Parse(f)
		f.Close()
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			d := NewDetector()
			for b.Loop() {
				if _, err := d.Detect(c, g.Pix, g.Rect.Dx(), g.Rect.Dy(), DefaultParams()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
