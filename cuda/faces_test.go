//go:build cgo

package cuda

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/pixelflight/pixelflight/cuda/gpukernels"
	"github.com/pixelflight/pixelflight/kernels/haar"
	"github.com/pixelflight/pixelflight/sched"
	"github.com/pixelflight/pixelflight/udf"
)

// The tilted integral from row prefix sums (pf_integral_rows, then
// pf_tilted_a and pf_tilted_b) against its definition, summed directly:
// tilt[y][x] = sum of pixels (c, r), r < y, |c-x+1| <= y-r-1, in int32.
func TestTiltedIntegralKernels(t *testing.T) {
	for _, sz := range [][2]int{{1, 1}, {1, 9}, {9, 1}, {7, 11}, {13, 5}} {
		const batch = 2
		h, w := sz[0], sz[1]
		r := rand.New(rand.NewPCG(uint64(h), uint64(w)))
		img := gpukernels.Alloc(batch * h * w)
		defer img.Free()
		for i := range img.Bytes() {
			img.Bytes()[i] = uint8(r.IntN(256))
		}
		plane := (h + 1) * (w + 1)
		sum, sq, tilt := gpukernels.Alloc(4*batch*plane), gpukernels.Alloc(4*batch*plane), gpukernels.Alloc(4*batch*plane)
		defer sum.Free()
		defer sq.Free()
		defer tilt.Free()
		launch := func(name string, threads int, args ...uint64) {
			t.Helper()
			if err := gpukernels.Launch(name, dim3{ceilDiv(threads, 64), 1, batch}, dim3{64, 1, 1}, args); err != nil {
				t.Fatal(err)
			}
		}
		launch("pf_integral_rows", h+1, img.Addr(), sum.Addr(), sq.Addr(), uint64(h), uint64(w))
		launch("pf_tilted_a", w+h+1, sum.Addr(), tilt.Addr(), uint64(h), uint64(w))
		launch("pf_tilted_b", w+h+1, sum.Addr(), tilt.Addr(), uint64(h), uint64(w))
		for b := range batch {
			pix := img.Bytes()[b*h*w:]
			for y := range h + 1 {
				for x := range w + 1 {
					var want int32
					for rr := range y {
						for c := range w {
							if d := c - x + 1; d <= y-rr-1 && -d <= y-rr-1 {
								want += int32(pix[rr*w+c])
							}
						}
					}
					i := b*plane + y*(w+1) + x
					if got := int32(binary.LittleEndian.Uint32(tilt.Bytes()[4*i:])); got != want {
						t.Fatalf("%dx%d image %d (y %d, x %d): tilted %d, want %d", h, w, b, y, x, got, want)
					}
				}
			}
		}
	}
}

// faceImages are the detect_faces conformance inputs: scikit-image's
// astronaut (RGB: the decoder's gray rule applies), the test frames of
// `make data` when they are there, and two synthetic images (noise, and
// a flat one the variance check rejects everywhere).
func faceImages(t *testing.T) (names []string, data [][]byte) {
	t.Helper()
	for _, p := range []string{"../.venv/lib/python3.11/site-packages/skimage/data/astronaut.png"} {
		if b, err := os.ReadFile(p); err == nil {
			names, data = append(names, filepath.Base(p)), append(data, b)
		}
	}
	for _, f := range []string{"astronaut_crop_head.png", "astronaut_scale70.png", "frame_00.png", "lfw_grid.png", "noface_coins.png"} {
		if b, err := os.ReadFile(filepath.Join("../build/images/faces", f)); err == nil {
			names, data = append(names, f), append(data, b)
		}
	}
	r := rand.New(rand.NewPCG(5, 6))
	for _, flat := range []bool{false, true} {
		img := image.NewGray(image.Rect(0, 0, 61, 47))
		for i := range img.Pix {
			img.Pix[i] = 128
			if !flat {
				img.Pix[i] = uint8(r.IntN(256))
			}
		}
		var buf bytes.Buffer
		if err := png.Encode(&buf, img); err != nil {
			t.Fatal(err)
		}
		names, data = append(names, map[bool]string{false: "noise", true: "flat"}[flat]), append(data, buf.Bytes())
	}
	if len(names) < 3 {
		t.Log("no astronaut.png (.venv) nor build/images/faces (make data): synthetic images only")
	}
	return names, data
}

func binaryColumn(t *testing.T, rows [][]byte) *udf.Column {
	t.Helper()
	bld := array.NewBinaryBuilder(memory.DefaultAllocator, arrow.BinaryTypes.Binary)
	defer bld.Release()
	for _, r := range rows {
		if r == nil {
			bld.AppendNull()
		} else {
			bld.Append(r)
		}
	}
	arr := bld.NewBinaryArray()
	t.Cleanup(arr.Release)
	col, err := udf.NewColumn(arr)
	if err != nil {
		t.Fatal(err)
	}
	return col
}

// runOn runs task over col on backend alone and returns the result
// record and the rows per backend.
func runOn(t *testing.T, backend sched.Backend, task *udf.Task, col *udf.Column) (arrow.RecordBatch, map[string]int) {
	t.Helper()
	s := schedFor(backend)
	defer s.Close()
	return runSched(t, s, task, col)
}

// schedFor is a scheduler of backend alone, with a CPU lane behind a GPU
// backend that takes only the rows it declines.
func schedFor(backend sched.Backend) *sched.Scheduler {
	bs := []sched.Backend{backend}
	if backend.Name() != "cpu" {
		bs = []sched.Backend{fallbackCPU{sched.NewCPU(1)}, backend}
	}
	return sched.New(sched.Config{Backends: bs})
}

// fallbackCPU is a CPU backend that runs only the rows given back to it.
type fallbackCPU struct{ *sched.CPU }

func (fallbackCPU) Accepts(*udf.Task) bool { return false }

// runSched runs task over col on s and returns the result record and the
// rows per backend.
func runSched(t *testing.T, s *sched.Scheduler, task *udf.Task, col *udf.Column) (arrow.RecordBatch, map[string]int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	batch, err := s.Submit(ctx, task, col)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-batch.Done():
	case <-ctx.Done():
		t.Fatal("timed out")
	}
	rows, errs, byBackend := batch.Results()
	res, err := task.Build(rows, errs, false, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(res.Records[0].Release)
	return res.Records[0], byBackend
}

// TestFacesConformance: detect_faces on the emulated device gives the CPU
// backend's rows exactly (boxes, neighbour counts, annotated PNGs, errors)
// for OpenCV's cascades (stumps, trees, tilted features) and parameters,
// including min_neighbors 0, where every raw detection comes back.
func TestFacesConformance(t *testing.T) {
	lib, err := haar.OpenLibrary(haar.DebianDir)
	if err != nil || len(lib.Names()) == 0 {
		t.Skipf("no OpenCV cascades in %s (Debian's opencv-data): %v", haar.DebianDir, err)
	}
	names, data := faceImages(t)
	// Every image, the synthetic ones twice (a batch of one shape holds
	// several), an undecodable row and a null one.
	var rows [][]byte
	var rowNames []string
	for i := range data {
		rows, rowNames = append(rows, data[i]), append(rowNames, names[i])
		if names[i] == "noise" || names[i] == "flat" {
			rows, rowNames = append(rows, data[i]), append(rowNames, names[i])
		}
	}
	rows = append(rows, []byte("\x89PNG\r\n\x1a\nnot really"), nil)
	rowNames = append(rowNames, "undecodable", "null")
	col := binaryColumn(t, rows)
	small := binaryColumn(t, rows[len(rows)-6:])
	reg := udf.NewRegistry(testLimits, lib)
	cpu := sched.NewCPU(2)
	emu := func(laneMemory int64) sched.Backend {
		return newEmu(t, Config{Lanes: 2, MaxBatch: 4, LaneMemory: laneMemory})
	}
	gpus := []backendUnderTest{{"emu", "cuda", emu(256 << 20)}}
	if Built {
		b, err := Open(Config{MaxBatch: 16})
		if err != nil {
			t.Fatalf("built with -tags cuda, but the GPU backend cannot start (a failure, not a skip): %v", err)
		}
		t.Cleanup(func() { b.Close() })
		gpus = append(gpus, backendUnderTest{"cuda", "cuda", b})
	}
	for _, c := range []struct{ name, params string }{
		{"default", `{}`},
		{"default-raw", `{"min_neighbors":0}`},
		{"alt2-trees", `{"cascade":"haarcascade_frontalface_alt2","scale_factor":1.2}`},
		{"alt-tree-annotate", `{"cascade":"haarcascade_frontalface_alt_tree","min_neighbors":1,"annotate":true}`},
		{"eyeglasses-tilted-raw", `{"cascade":"haarcascade_eye_tree_eyeglasses","min_neighbors":0,"scale_factor":1.3,"min_size":[40,40]}`},
		{"upperbody-tilted", `{"cascade":"haarcascade_upperbody","scale_factor":1.25,"min_size":[60,120],"max_size":300}`},
		{"sizes", `{"scale_factor":1.05,"min_size":[60,50],"max_size":[200,220],"min_neighbors":2}`},
		{"none-fits", `{"min_size":5000}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			task, err := reg.Prepare(udf.Command{Op: "detect_faces", Params: json.RawMessage(c.params)})
			if err != nil {
				t.Fatal(err)
			}
			want, _ := runOn(t, cpu, task, col)
			for _, g := range gpus {
				if !g.backend.Accepts(task) {
					t.Fatalf("%s does not accept it", g.name)
				}
				got, byBackend := runOn(t, g.backend, task, col)
				if byBackend[g.ranAs]+byBackend["decode"] != col.Len() {
					t.Fatalf("%s: rows per backend %v: want all %d on %s", g.name, byBackend, col.Len(), g.ranAs)
				}
				compareRecords(t, got, want, func(i int) string { return g.name + ", " + rowNames[i] })
				raw := got.Column(0).(*array.List)
				total := 0
				for i := range col.Len() {
					s, e := raw.ValueOffsets(i)
					total += int(e - s)
				}
				t.Logf("%s: %d faces in %d rows, as the CPU's", g.name, total, col.Len())
			}
		})
	}
	// Lanes too small for an image (every image declined, for the CPU)
	// and lanes for one image at a time.
	task, err := reg.Prepare(udf.Command{Op: "detect_faces", Params: json.RawMessage(`{"min_neighbors":0,"scale_factor":1.05}`)})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := runOn(t, cpu, task, small)
	for _, laneMemory := range []int64{1, 200_000} {
		got, byBackend := runOn(t, emu(laneMemory), task, small)
		if ranAs := map[int64]string{1: "cpu", 200_000: "cuda"}[laneMemory]; byBackend[ranAs]+byBackend["decode"] != small.Len() {
			t.Fatalf("lane memory %d: rows per backend %v", laneMemory, byBackend)
		}
		compareRecords(t, got, want, func(i int) string { return rowNames[len(rowNames)-6+i] })
	}
}

// compareRecords fails unless every column of got equals want's, naming
// the first row that differs.
func compareRecords(t *testing.T, got, want arrow.RecordBatch, name func(int) string) {
	t.Helper()
	if got.NumCols() != want.NumCols() || got.NumRows() != want.NumRows() {
		t.Fatalf("%d×%d result, want %d×%d", got.NumRows(), got.NumCols(), want.NumRows(), want.NumCols())
	}
	for c := range int(want.NumCols()) {
		g, w := got.Column(c), want.Column(c)
		for i := range int(want.NumRows()) {
			if !array.SliceEqual(g, int64(i), int64(i+1), w, int64(i), int64(i+1)) {
				show := func(a arrow.Array) string {
					s := array.NewSlice(a, int64(i), int64(i+1))
					defer s.Release()
					str := fmt.Sprint(s)
					if len(str) > 400 {
						str = str[:400] + "..."
					}
					return str
				}
				t.Fatalf("column %s row %d (%s):\n got  %s\n want %s", want.ColumnName(c), i, name(i), show(g), show(w))
			}
		}
	}
}

// Accepts takes detect_faces only with a cascade library, and only for a
// cascade it has.
func TestAcceptsFaces(t *testing.T) {
	lib, err := haar.OpenLibrary(haar.DebianDir)
	if err != nil || len(lib.Names()) == 0 {
		t.Skipf("no OpenCV cascades in %s: %v", haar.DebianDir, err)
	}
	task, err := udf.NewRegistry(testLimits, lib).Prepare(udf.Command{Op: "detect_faces", Params: json.RawMessage(`{"annotate":true}`)})
	if err != nil {
		t.Fatal(err)
	}
	b, err := newBackend(newEmuDevice(1<<30), Config{Lanes: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if !b.Accepts(task) {
		t.Error("does not accept detect_faces")
	}
}
