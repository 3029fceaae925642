//go:build cgo

package cuda

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"image"
	"image/png"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/pixelflight/pixelflight/cuda/gpukernels"
	"github.com/pixelflight/pixelflight/imageio"
	"github.com/pixelflight/pixelflight/kernels/blob"
	"github.com/pixelflight/pixelflight/sched"
	"github.com/pixelflight/pixelflight/udf"
)

const coinsPNG = "../.venv/lib/python3.11/site-packages/skimage/data/coins.png"

// spots is an h×w image of Gaussian spots (row, column, sigma, peak) on a
// dark ramp.
func spots(h, w int, s [][4]float64) []uint8 {
	pix := make([]uint8, h*w)
	for y := range h {
		for x := range w {
			v := 10 + 20*float64(x)/float64(w)
			for _, p := range s {
				dy, dx := float64(y)-p[0], float64(x)-p[1]
				v += p[3] * math.Exp(-(dy*dy+dx*dx)/(2*p[2]*p[2]))
			}
			pix[y*w+x] = uint8(min(v, 255))
		}
	}
	return pix
}

func encodePNG(t *testing.T, pix []uint8, h, w int) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, &image.Gray{Pix: pix, Stride: w, Rect: image.Rect(0, 0, w, h)}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// blobImages: scikit-image's coins (when the venv has it), generated
// spots, noise, a flat image, and a mirror-symmetric one (two equal
// spots: their responses tie exactly on the CPU).
func blobImages(t *testing.T) (names []string, data [][]byte) {
	t.Helper()
	if b, err := os.ReadFile(coinsPNG); err == nil {
		names, data = append(names, "coins"), append(data, b)
	} else {
		t.Logf("no %s (make venv): generated images only", coinsPNG)
	}
	add := func(name string, pix []uint8, h, w int) {
		names, data = append(names, name), append(data, encodePNG(t, pix, h, w))
	}
	add("spots", spots(90, 110, [][4]float64{{20, 25, 3, 150}, {60, 30, 8, 120}, {45, 80, 14, 90}, {80, 100, 2, 200}, {10, 95, 5, 60}}), 90, 110)
	r := rand.New(rand.NewPCG(7, 8))
	noise := make([]uint8, 37*29)
	for i := range noise {
		noise[i] = uint8(r.IntN(256))
	}
	add("noise", noise, 37, 29)
	flat := bytes.Repeat([]byte{200}, 20*24)
	add("flat", flat, 20, 24)
	add("symmetric", mirror(70, 100), 70, 100)
	return names, data
}

// mirror is 70×100 (h×w) with two equal spots of sigma 9, mirror images
// of each other about the middle column, on black.
func mirror(h, w int) []uint8 {
	pix := make([]uint8, h*w)
	for y := range h {
		for x := range w {
			v := 0.0
			for _, cx := range []float64{25, float64(w - 1 - 25)} {
				dy, dx := float64(y)-35, float64(x)-cx
				v += 180 * math.Exp(-(dy*dy+dx*dx)/(2*81))
			}
			pix[y*w+x] = uint8(math.Round(v))
		}
	}
	return pix
}

var blobCases = []struct{ name, params string }{
	{"default", `{}`}, // sigmas 1..50: mostly DCT scales on the CPU
	{"small-exact", `{"max_sigma":5,"num_sigma":5,"threshold":0.05}`}, // every scale summed directly
	{"log-border", `{"log_scale":true,"min_sigma":2,"max_sigma":30,"num_sigma":6,"threshold":0.1,"exclude_border":true}`},
	{"crowded", `{"min_sigma":1,"max_sigma":12,"num_sigma":12,"threshold":0.02,"overlap":0.9}`},
	{"zero-threshold", `{"max_sigma":8,"num_sigma":3,"threshold":0}`},
	{"one-scale", `{"min_sigma":3,"max_sigma":3,"num_sigma":1}`},
}

// TestBlobsConformance: detect_blobs on the emulated device gives the CPU
// backend's rows exactly: with room for whole batches, for two images at
// a time, and for none (every image on the CPU inside the lane).
func TestBlobsConformance(t *testing.T) {
	names, data := blobImages(t)
	rows := append(append([][]byte{}, data...), data[len(data)-2], []byte("\x89PNG\r\n\x1a\nnot really"), nil)
	rowNames := append(append([]string{}, names...), names[len(names)-2], "undecodable", "null")
	col := binaryColumn(t, rows)
	reg := udf.NewRegistry(testLimits, nil)
	cpu := sched.NewCPU(2)
	emu := func(laneMemory int64) *Backend {
		return newEmu(t, Config{Lanes: 2, MaxBatch: 4, LaneMemory: laneMemory})
	}
	type gpuUnderTest struct {
		name string
		b    *Backend
	}
	gpus := []gpuUnderTest{{"emu", emu(256 << 20)}, {"emu-parts", emu(2 * blobBytesPerImage(303, 384))}, {"emu-cpu", emu(1)}}
	if Built {
		b, err := Open(Config{MaxBatch: 16})
		if err != nil {
			t.Fatalf("built with -tags cuda, but the GPU backend cannot start (a failure, not a skip): %v", err)
		}
		t.Cleanup(func() { b.Close() })
		gpus = append(gpus, gpuUnderTest{"cuda", b})
	}
	decodable := len(rows) - 2
	for _, c := range blobCases {
		t.Run(c.name, func(t *testing.T) {
			task, err := reg.Prepare(udf.Command{Op: "detect_blobs", Params: json.RawMessage(c.params)})
			if err != nil {
				t.Fatal(err)
			}
			want, _ := runOn(t, cpu, task, col)
			for _, g := range gpus {
				if !g.b.Accepts(task) {
					t.Fatalf("%s does not accept it", g.name)
				}
				before := g.b.CPURows()
				got, byBackend := runOn(t, g.b, task, col)
				redone := g.b.CPURows() - before
				if byBackend["cuda"]+byBackend["decode"] != col.Len()-int(redone) || byBackend["cpu"] != int(redone) {
					t.Fatalf("%s: rows per backend %v, %d declined: want the rest of %d on cuda", g.name, byBackend, redone, col.Len())
				}
				compareRecords(t, got, want, func(i int) string { return g.name + ", " + rowNames[i] })
				if g.name != "emu-cpu" && redone >= int64(decodable) {
					t.Errorf("%s: all %d decodable rows were redone on the CPU: the GPU path decided nothing", g.name, redone)
				}
				lst := got.Column(0).(*array.List)
				total := 0
				for i := range col.Len() {
					s, e := lst.ValueOffsets(i)
					total += int(e - s)
				}
				t.Logf("%s: %d blobs in %d rows, as the CPU's; %d of %d images redone on the CPU", g.name, total, col.Len(), redone, decodable)
			}
		})
	}
}

// TestBlobsUnsureGoesToCPU: where two peaks tie on the CPU at scales it
// filters in the DCT domain, the GPU cannot tell their order and redoes
// the image on the CPU; coins and the spots it decides itself.
func TestBlobsUnsureGoesToCPU(t *testing.T) {
	reg := udf.NewRegistry(testLimits, nil)
	task, err := reg.Prepare(udf.Command{Op: "detect_blobs", Params: json.RawMessage(`{"min_sigma":6,"max_sigma":20,"num_sigma":5}`)})
	if err != nil {
		t.Fatal(err)
	}
	b := newEmu(t, Config{Lanes: 1, MaxBatch: 4, LaneMemory: 256 << 20})
	sym := encodePNG(t, mirror(70, 100), 70, 100)
	one := encodePNG(t, spots(70, 100, [][4]float64{{35, 25, 9, 180}, {35, 74, 9, 150}}), 70, 100)
	for _, c := range []struct {
		name   string
		img    []byte
		redone int64
	}{{"symmetric", sym, 1}, {"unequal", one, 0}} {
		col := binaryColumn(t, [][]byte{c.img})
		want, _ := runOn(t, sched.NewCPU(1), task, col)
		before := b.CPURows()
		got, _ := runOn(t, b, task, col)
		compareRecords(t, got, want, func(int) string { return c.name })
		if n := b.CPURows() - before; n != c.redone {
			t.Errorf("%s: %d rows redone on the CPU, want %d", c.name, n, c.redone)
		}
		if lst := got.Column(0).(*array.List); lst.Len() != 1 || func() bool { s, e := lst.ValueOffsets(0); return e-s < 2 }() {
			t.Errorf("%s: want both spots found: %v", c.name, got.Column(0))
		}
	}
}

// TestBlobResponses runs pf_blob_y and pf_blob_x alone and compares every
// response with package blob's: scales it sums directly must agree bit
// for bit, the DCT scales within blobTol (the test requires 1000 times
// less, and logs the largest difference).
func TestBlobResponses(t *testing.T) {
	names, data := blobImages(t)
	for _, params := range []string{`{}`, `{"log_scale":true,"min_sigma":0.5,"max_sigma":64,"num_sigma":8}`} {
		task, err := udf.NewRegistry(testLimits, nil).Prepare(udf.Command{Op: "detect_blobs", Params: json.RawMessage(params)})
		if err != nil {
			t.Fatal(err)
		}
		p := task.Spec.(*udf.BlobsSpec).Params
		for i, name := range names {
			var g imageio.Gray
			if err := imageio.DecodeGray(data[i], imageio.Limits{MaxPixels: 1 << 24}, &g); err != nil {
				t.Fatal(err)
			}
			h, w := g.H, g.W
			want, err := blob.NewDetector().Responses(g.Pix[:h*w], h, w, p)
			if err != nil {
				t.Fatal(err)
			}
			pix := gpukernels.Alloc(h * w)
			copy(pix.Bytes(), g.Pix)
			a, bb, out := gpukernels.Alloc(8*h*w), gpukernels.Alloc(8*h*w), gpukernels.Alloc(8*h*w)
			worst := 0.0
			for k, sc := range blob.Scales(p) {
				r := len(sc.K0) - 1
				taps := gpukernels.Alloc(16 * (r + 1))
				for j := range r + 1 {
					binary.LittleEndian.PutUint64(taps.Bytes()[8*j:], math.Float64bits(sc.K0[j]))
					binary.LittleEndian.PutUint64(taps.Bytes()[8*(r+1+j):], math.Float64bits(sc.K2[j]))
				}
				grid, block := dim3{ceilDiv(w, 64), h, 1}, dim3{64, 1, 1}
				k0, k2 := taps.Addr(), taps.Addr()+uint64(8*(r+1))
				if err := gpukernels.Launch("pf_blob_y", grid, block, []uint64{pix.Addr(), a.Addr(), bb.Addr(), k0, k2, uint64(h), uint64(w), uint64(r)}); err != nil {
					t.Fatal(err)
				}
				if err := gpukernels.Launch("pf_blob_x", grid, block, []uint64{a.Addr(), bb.Addr(), out.Addr(), k0, k2, uint64(h), uint64(w), uint64(r), math.Float64bits(sc.Sigma * sc.Sigma)}); err != nil {
					t.Fatal(err)
				}
				taps.Free()
				for j := range h * w {
					got := math.Float64frombits(binary.LittleEndian.Uint64(out.Bytes()[8*j:]))
					d := math.Abs(got - want[k][j])
					switch {
					case sc.Exact && d != 0:
						t.Fatalf("%s %s: sigma %g (summed directly): response %d is %v, the CPU's %v", name, params, sc.Sigma, j, got, want[k][j])
					case d > blobTol/1000:
						t.Fatalf("%s %s: sigma %g: response %d is %v, the CPU's %v: %g apart", name, params, sc.Sigma, j, got, want[k][j], d)
					}
					worst = max(worst, d)
				}
			}
			pix.Free()
			a.Free()
			bb.Free()
			out.Free()
			t.Logf("%s (%dx%d) %s: largest |GPU - CPU| %.3g", name, h, w, params, worst)
		}
	}
}

// FuzzBlobs: detect_blobs on the emulated device against the CPU backend
// for small images and parameters drawn from the input (scales summed
// directly and in the DCT domain, log scales, borders, thresholds down
// to 0, images of few gray levels where responses tie). Any difference in
// the rows fails.
func FuzzBlobs(f *testing.F) {
	f.Add([]byte{9, 13, 3, 8, 40, 50, 0, 128, 1, 2, 3, 200, 5, 90})
	f.Add([]byte{21, 21, 5, 0, 255, 10, 7, 30, 0, 255, 0, 255})
	f.Add([]byte{1, 0, 1, 30, 0, 0, 4, 255, 77})
	f.Add(bytes.Repeat([]byte{200, 17}, 40))
	reg := udf.NewRegistry(testLimits, nil)
	gpu := newEmu(f, Config{Lanes: 1, MaxBatch: 4, LaneMemory: 64 << 20})
	cpu := sched.NewCPU(1)
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) < 9 {
			return
		}
		h, w := 1+int(in[0])%24, 1+int(in[1])%24
		minS := 0.5 + float64(in[3])/16
		params, _ := json.Marshal(map[string]any{
			"num_sigma":      1 + int(in[2])%6,
			"min_sigma":      minS,
			"max_sigma":      minS + float64(in[4])/8, // radii up to 4*(16+32)
			"threshold":      float64(in[5]) / 255 * 0.3,
			"log_scale":      in[6]&1 != 0,
			"exclude_border": in[6]&2 != 0,
			"overlap":        float64(in[7]) / 255,
		})
		pix := make([]uint8, h*w)
		for i := range pix {
			pix[i] = in[8+i%(len(in)-8)]
			if in[6]&4 != 0 {
				pix[i] &= 0xc0 // four gray levels: plateaus and ties
			}
		}
		task, err := reg.Prepare(udf.Command{Op: "detect_blobs", Params: params})
		if err != nil {
			t.Fatal(err)
		}
		col := binaryColumn(t, [][]byte{encodePNG(t, pix, h, w), encodePNG(t, pix, h, w)})
		want, _ := runOn(t, cpu, task, col)
		got, _ := runOn(t, gpu, task, col)
		compareRecords(t, got, want, func(int) string { return string(params) })
	})
}

// A device error in the blob pipeline fails the batch: the CPU redoes
// it, and the rows are the CPU's.
func TestBlobsFaultFallsBackToCPU(t *testing.T) {
	for _, op := range []string{"launch pf_blob_x", "launch pf_blob_peaks", "download"} {
		t.Run(op, func(t *testing.T) {
			s := faultyScheduler(t, op)
			task, err := udf.NewRegistry(testLimits, nil).Prepare(udf.Command{Op: "detect_blobs", Params: json.RawMessage(`{"max_sigma":10,"num_sigma":4}`)})
			if err != nil {
				t.Fatal(err)
			}
			img := encodePNG(t, spots(40, 50, [][4]float64{{20, 25, 3, 150}}), 40, 50)
			col := binaryColumn(t, [][]byte{img, img, img, img})
			want, _ := runOn(t, sched.NewCPU(1), task, col)
			got, byBackend := runSched(t, s, task, col)
			if byBackend["cpu"] != col.Len() {
				t.Errorf("rows per backend %v: want every image on the cpu", byBackend)
			}
			compareRecords(t, got, want, func(int) string { return op })
			if st := s.Backends(); st[1].Healthy || !strings.Contains(st[1].Fault, op) {
				t.Errorf("backend status %+v: want cuda out of service with its fault", st[1])
			}
		})
	}
}
