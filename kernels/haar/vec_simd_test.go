//go:build goexperiment.simd && amd64

package haar

import (
	"math"
	"strings"
	"testing"
	"unsafe"
)

// TestVectorMatchesRun checks the vector path window by window against
// run and normalise: for 8 neighbouring windows at every position of
// every pyramid level (all of them, in the plain layout; the ones at even
// columns, in the split one) of the test images, norm8 gives each
// window's vnf bit for bit and whether it is scanned, and stage8, run
// stage after stage in all 8 lanes, rejects each window at the stage run
// does (or none, where it passes). Stumps (default), pairs (alt2, the
// 2-splits, a tilted one) and every stage reached.
func TestVectorMatchesRun(t *testing.T) {
	if !vectorized() {
		t.Skip("no AVX2")
	}
	tinyC, err := Parse(strings.NewReader(tiny))
	if err != nil {
		t.Fatal(err)
	}
	cascades := debianCascades(t, "haarcascade_frontalface_default", "haarcascade_frontalface_alt2",
		"haarcascade_lefteye_2splits", "haarcascade_righteye_2splits", "haarcascade_smile")
	cascades["tiny (tilted)"] = tinyC
	imgs := testImages(t)
	names := []string{"texture 160x120", "soft 160x120", "texture 97x61", "astronaut", "frame_00.png", "lfw_grid.png", "noface_coffee.png"}
	for cname, c := range cascades {
		exits := map[int]int{} // windows by run's result
		windows := 0
		for _, iname := range names {
			m := imgs[iname]
			if m == nil {
				continue
			}
			if testing.Short() && iname != "texture 160x120" && iname != "astronaut" {
				continue
			}
			w, h := m.Rect.Dx(), m.Rect.Dy()
			scales := c.scales(w, h, Params{ScaleFactor: 1.2})
			stride, rows := (scales[0].w+2)&^1, scales[0].h+1
			n := stride * rows
			sum, sq := make([]int32, 2*n+pad), make([]uint32, n+pad)
			small := make([]uint8, w*h)
			var rs resizer
			for li, s := range scales {
				img := small[:s.w*s.h]
				rs.resize(m.Pix, w, h, img, s.w, s.h)
				split := li%2 == 0 // both layouts at every size range
				g := compileLayout(c, stride, rows, split)
				var tilt []int32
				if c.Tilted {
					tilt = sum[n:]
				}
				integralsSplit(img, s.w, s.h, stride, g.half, sum, sq, tilt)
				ww, wh := max(s.w+1-c.W, 0), max(s.h+1-c.H, 0)
				step := 1
				if split {
					step = 2
				}
				nw := (ww-1)/step + 1
				for y := 0; y < wh; y++ {
					for k := 0; k < nw; k += 8 {
						p := int32(y*stride + k)
						vnf, ok := g.norm8(sum, sq, p)
						var lanes [8]float32
						vnf.Store(&lanes)
						wp := unsafe.Pointer(&sum[p])
						var want [8]int
						for i := range min(8, nw-k) {
							v, o := g.normalise(sum, sq, p+int32(i))
							if o != (ok>>i&1 == 1) || o && math.Float32bits(v) != math.Float32bits(lanes[i]) {
								t.Fatalf("%s on %s, level %d, window (%d,%d): norm8 %v %v, normalise %v %v",
									cname, iname, li, (k+i)*step, y, lanes[i], ok>>i&1, v, o)
							}
							if o {
								want[i] = g.run(unsafe.Add(wp, 4*i), v)
							}
						}
						live := ok
						if nw-k < 8 {
							live &= uint8(1)<<(nw-k) - 1
						}
						var got [8]int
						for i := range 8 {
							got[i] = 1
						}
						for si := 0; si < len(g.stages) && live != 0; si++ {
							fail := g.stage8(wp, si, vnf) & live
							for i := range 8 {
								if fail>>i&1 == 1 {
									got[i] = -si
								}
							}
							live &^= fail
						}
						for i := range min(8, nw-k) {
							if ok>>i&1 == 0 {
								continue
							}
							if got[i] != want[i] {
								t.Fatalf("%s on %s, level %d, window (%d,%d): stage8 %d, run %d", cname, iname, li, (k+i)*step, y, got[i], want[i])
							}
							exits[want[i]]++
							windows++
						}
					}
				}
			}
		}
		t.Logf("%s: %d windows, %d outcomes", cname, windows, len(exits))
		if len(exits) < min(len(c.Stages), 12) {
			t.Errorf("%s: windows end at %d stages only: %v", cname, len(exits), exits)
		}
	}
}
