package haar

import (
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

// testImages are generated images (a texture, soft blobs and edges) and,
// where the checkout has them, build/images/faces' photos and frames and
// scikit-image's astronaut, in gray.
func testImages(tb testing.TB) map[string]*image.Gray {
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
	out := map[string]*image.Gray{
		"texture 160x120": {Pix: testImage(w, h), Stride: w, Rect: image.Rect(0, 0, w, h)},
		"soft 160x120":    {Pix: soft, Stride: w, Rect: image.Rect(0, 0, w, h)},
		"texture 97x61":   {Pix: testImage(97, 61), Stride: 97, Rect: image.Rect(0, 0, 97, 61)},
	}
	files, _ := filepath.Glob("../../build/images/faces/*.png")
	if len(files) == 0 {
		tb.Log("no build/images/faces (make data)")
	}
	for _, f := range files {
		r, err := os.Open(f)
		if err != nil {
			tb.Fatal(err)
		}
		m, err := png.Decode(r)
		r.Close()
		if err != nil {
			tb.Fatal(err)
		}
		g := image.NewGray(image.Rect(0, 0, m.Bounds().Dx(), m.Bounds().Dy()))
		draw.Draw(g, g.Rect, m, m.Bounds().Min, draw.Src)
		out[filepath.Base(f)] = g
	}
	if g := astronaut(tb); g != nil {
		out["astronaut"] = g
	}
	return out
}

// debianCascades parses the named cascades of DebianDir; it skips the test
// where there are none.
func debianCascades(tb testing.TB, names ...string) map[string]*Cascade {
	out := map[string]*Cascade{}
	for _, n := range names {
		f, err := os.Open(filepath.Join(DebianDir, n+".xml"))
		if err != nil {
			tb.Skip(DebianDir + " is empty: install Debian's opencv-data (make test does)")
		}
		c, err := Parse(f)
		f.Close()
		if err != nil {
			tb.Fatal(err)
		}
		out[n] = c
	}
	return out
}

// rawReference is Detect's raw detections as the scalar scan found them
// before the split layout and the vector scan: plain integral images
// (stride w+1), every window through run.
func rawReference(c *Cascade, pix []uint8, w, h int, p Params) []Face {
	scales := c.scales(w, h, p)
	if len(scales) == 0 {
		return nil
	}
	stride, rows := scales[0].w+1, scales[0].h+1
	g := compile(c, stride, rows)
	n := stride * rows
	sum, sq := make([]int32, 2*n), make([]uint32, n)
	small := make([]uint8, scales[0].w*scales[0].h)
	var rs resizer
	var out []Face
	for _, s := range scales {
		img := small[:s.w*s.h]
		rs.resize(pix, w, h, img, s.w, s.h)
		var tilt []int32
		if c.Tilted {
			tilt = sum[n:]
		}
		integrals(img, s.w, s.h, stride, sum, sq, tilt)
		ww, wh := max(s.w+1-c.W, 0), max(s.h+1-c.H, 0)
		for y := 0; y < wh; y += s.step {
			for x := 0; x < ww; x += s.step {
				p := int32(y*stride + x)
				vnf, ok := g.normalise(sum, sq, p)
				if !ok {
					continue
				}
				r := g.run(unsafe.Pointer(&sum[p]), vnf)
				if r > 0 {
					out = append(out, Face{X: roundEven(float64(float32(x) * s.f)), Y: roundEven(float64(float32(y) * s.f)), W: s.winW, H: s.winH})
				}
				if r == 0 {
					x += s.step
				}
			}
		}
	}
	return out
}

// TestDetectMatchesReference runs Detect (the split layout for levels
// scanned every 2 pixels and, in the SIMD build, the vector scan) and the
// plain scalar scan over the test images with stump, pair, tree and tilted
// cascades: the raw detections must be the same, in the same order.
func TestDetectMatchesReference(t *testing.T) {
	tinyC, err := Parse(strings.NewReader(tiny))
	if err != nil {
		t.Fatal(err)
	}
	imgs := testImages(t)
	type run struct {
		c      *Cascade
		p      Params
		photos bool // also the photos, not only the generated images
	}
	runs := map[string]run{"tiny (tilted pairs)": {tinyC, Params{ScaleFactor: 1.1}, false}}
	full := !testing.Short()
	for name, c := range debianCascades(t, "haarcascade_frontalface_default", "haarcascade_frontalface_alt2",
		"haarcascade_eye_tree_eyeglasses", "haarcascade_lefteye_2splits", "haarcascade_frontalface_alt_tree",
		"haarcascade_upperbody", "haarcascade_smile") {
		runs[name] = run{c, Params{ScaleFactor: 1.1}, full && strings.Contains(name, "frontalface_") && !strings.Contains(name, "tree")}
		runs[name+" 1.25"] = run{c, Params{ScaleFactor: 1.25}, false} // the photos at 1.1 only: seconds each
	}
	d := NewDetector()
	for name, r := range runs {
		total := 0
		for iname, m := range imgs {
			if !r.photos && !strings.HasPrefix(iname, "texture") && !strings.HasPrefix(iname, "soft") && iname != "astronaut_crop_tight.png" {
				continue
			}
			w, h := m.Rect.Dx(), m.Rect.Dy()
			want := rawReference(r.c, m.Pix, w, h, r.p)
			if _, err := d.Detect(r.c, m.Pix, w, h, r.p); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(d.cands, want) {
				t.Errorf("%s on %s: %d raw detections, the scalar reference %d (vector scan %v)", name, iname, len(d.cands), len(want), vectorized())
			}
			total += len(want)
		}
		t.Logf("%s: %d raw detections", name, total)
	}
}

// TestIntegralsSplit checks the split layout against the plain one.
func TestIntegralsSplit(t *testing.T) {
	for _, wh := range [][2]int{{1, 1}, {2, 3}, {7, 5}, {8, 9}, {97, 61}} {
		w, h := wh[0], wh[1]
		img := testImage(w, h)
		stride := (w + 2) &^ 1
		n := stride * (h + 1)
		sum, sq, tilt := make([]int32, n), make([]uint32, n), make([]int32, n)
		integrals(img, w, h, stride, sum, sq, tilt)
		ssum, ssq, stilt := make([]int32, n), make([]uint32, n), make([]int32, n)
		for i := range ssum { // stale values must not leak in
			ssum[i], ssq[i], stilt[i] = -7, 7, -7
		}
		integralsSplit(img, w, h, stride, stride/2, ssum, ssq, stilt)
		for y := 0; y <= h; y++ {
			for x := 0; x <= w; x++ {
				i, j := y*stride+x, y*stride+col(x, stride/2)
				if sum[i] != ssum[j] || sq[i] != ssq[j] || tilt[i] != stilt[j] {
					t.Fatalf("%dx%d at (%d,%d): split %d %d %d, plain %d %d %d", w, h, x, y, ssum[j], ssq[j], stilt[j], sum[i], sq[i], tilt[i])
				}
			}
		}
	}
}
