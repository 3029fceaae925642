//go:build cgo

package cuda

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/pixelflight/pixelflight/kernels"
	"github.com/pixelflight/pixelflight/sched"
	"github.com/pixelflight/pixelflight/udf"
)

// The conformance suite: every fft_convolve case below, run through the
// scheduler on every backend this test binary has, each compared with a
// direct (spatial, float64) convolution written here:
//   - cpu: always;
//   - emu, emu-parts, emu-cpu: the CUDA backend's whole pipeline on the
//     emulated device (kernels.cu.h compiled for the CPU, DFTs for cuFFT),
//     with room for a whole batch, for 2 images at a time, and for none
//     (every image runs on the CPU inside the GPU lane); emu-unpinned
//     copying the pixels through its own pinned memory; emu-fft taking
//     cuFFT for the separable kernels too, which the others send to the
//     separable passes (TestSeparableConformance: those on odd shapes);
//   - cuda: the real GPU, in a binary built with -tags cuda. There a
//     missing or broken GPU FAILS the suite: it is never skipped, so a
//     green run under -tags cuda means the GPU path ran.

type backendUnderTest struct {
	name    string
	ranAs   string // the backend name its rows report
	backend sched.Backend
}

var testLimits = udf.DefaultLimits()

func backendsUnderTest(t *testing.T) []backendUnderTest {
	t.Helper()
	emuBackend := func(laneMemory int64) sched.Backend {
		return newEmu(t, Config{Lanes: 2, MaxBatch: 8, LaneMemory: laneMemory})
	}
	// A 23×31 image needs 19 KB (3×3 kernel) to 42 KB (19×19, full): the
	// 60 KB lane runs batches of 1 to 3 images.
	bs := []backendUnderTest{
		{"cpu", "cpu", sched.NewCPU(2)},
		{"emu", "cuda", emuBackend(64 << 20)},
		{"emu-parts", "cuda", emuBackend(60_000)},
		{"emu-cpu", "cpu", emuBackend(1)}, // every image declined
		{"emu-unpinned", "cuda", unpinned(emuBackend(64 << 20))},
		{"emu-fft", "cuda", fftBackend(emuBackend(64 << 20))}, // cuFFT for the separable kernels too
	}
	if Built {
		b, err := Open(Config{MaxBatch: 16})
		if err != nil {
			t.Fatalf("built with -tags cuda, but the GPU backend cannot start (a failure, not a skip: this suite must run on a GPU): %v", err)
		}
		t.Cleanup(func() { b.Close() })
		t.Logf("cuda backend on %s", b.Device())
		bs = append(bs, backendUnderTest{"cuda", "cuda", b})
	}
	return bs
}

// fftBackend is b taking cuFFT for every kernel (the cuFFT pipeline, as
// before the separable passes: gpuMethod).
func fftBackend(b sched.Backend) sched.Backend {
	b.(*Backend).method = fftOnly
	return b
}

// unpinned is b handing the decode stage no memory: its lanes copy every
// image through their own pinned buffer.
func unpinned(b sched.Backend) sched.Backend {
	b.(*Backend).pinned = sched.NewHostPool(nil, 0)
	return b
}

var convolveCases = []struct {
	name   string
	params string
}{
	{"gaussian-same-zero-f32", `{"kernel":"gaussian","sigma":1.5}`},
	{"box4-full-zero-f32", `{"kernel":"box","size":4,"mode":"full"}`},
	{"sobel-valid-zero-f32", `{"kernel":"sobel_x","mode":"valid"}`},
	{"laplacian-same-reflect-f32", `{"kernel":"laplacian","boundary":"reflect"}`},
	{"matrix-same-wrap-f32", `{"matrix":[[1,-2,0.5,3,-1],[0.25,4,-3,1,2]],"boundary":"wrap"}`},
	{"matrix-full-reflect-f32", `{"matrix":[[1,2],[3,-4],[0.5,1]],"mode":"full","boundary":"reflect"}`},
	{"sharpen-same-zero-png", `{"kernel":"sharpen","output":"png"}`},
	{"identity-same-zero-png", `{"matrix":[[1]],"output":"png"}`},
	{"sobel-same-reflect-png-abs", `{"kernel":"sobel_x","boundary":"reflect","output":"png","png_scale":"abs"}`},
	{"laplacian-full-zero-png-minmax", `{"kernel":"laplacian","mode":"full","output":"png","png_scale":"minmax"}`},
	{"gaussian-same-reflect-stats", `{"kernel":"gaussian","sigma":2,"boundary":"reflect","output":"stats"}`},
	{"sobel-y-valid-wrap-stats", `{"kernel":"sobel_y","mode":"valid","boundary":"wrap","output":"stats"}`},
	{"big-kernel-same-zero-f32", `{"kernel":"gaussian","sigma":4,"size":25}`},
	{"big-kernel-full-zero-png", `{"kernel":"box","size":19,"mode":"full","output":"png"}`},
	{"big-kernel-valid-zero-f32", `{"kernel":"box","size":19,"mode":"valid"}`}, // no output for the 16×16 rows: their error
}

// testInputs are 5 23×31 images, 3 16×16, one corrupt and one null row.
func testInputs(t *testing.T, seed uint64) (*udf.Column, [][]uint8, [][2]int) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 7))
	bld := array.NewBinaryBuilder(memory.DefaultAllocator, arrow.BinaryTypes.Binary)
	defer bld.Release()
	var pix [][]uint8
	var dims [][2]int
	add := func(h, w int) {
		img := image.NewGray(image.Rect(0, 0, w, h))
		for i := range img.Pix {
			img.Pix[i] = uint8(r.IntN(256))
		}
		var buf bytes.Buffer
		if err := png.Encode(&buf, img); err != nil {
			t.Fatal(err)
		}
		bld.Append(buf.Bytes())
		pix = append(pix, img.Pix)
		dims = append(dims, [2]int{h, w})
	}
	for i := range 8 {
		if i < 5 {
			add(23, 31)
		} else {
			add(16, 16)
		}
	}
	bld.Append([]byte("\x89PNG\r\n\x1a\nnot really"))
	pix, dims = append(pix, nil), append(dims, [2]int{})
	bld.AppendNull()
	pix, dims = append(pix, nil), append(dims, [2]int{})
	arr := bld.NewArray()
	t.Cleanup(arr.Release)
	col, err := udf.NewColumn(arr)
	if err != nil {
		t.Fatal(err)
	}
	return col, pix, dims
}

// reference is the direct convolution of one image, in float64.
func reference(pix []uint8, h, w int, s udf.ConvolveSpec) (out []float64, oh, ow int, err error) {
	k := s.Kernel
	if oh, ow, err = kernels.OutputSize(h, w, k, s.Mode); err != nil {
		return nil, 0, 0, err
	}
	loY, loX := 0, 0
	switch s.Mode {
	case kernels.Same:
		loY, loX = (k.H-1)/2, (k.W-1)/2
	case kernels.Valid:
		loY, loX = k.H-1, k.W-1
	}
	at := func(y, x int) float64 {
		if y < 0 || y >= h || x < 0 || x >= w {
			if s.Boundary == kernels.Zero {
				return 0
			}
			y, x = kernels.Extend(y, h, s.Boundary), kernels.Extend(x, w, s.Boundary)
		}
		return float64(pix[y*w+x])
	}
	out = make([]float64, oh*ow)
	for y := range oh {
		for x := range ow {
			var sum float64
			for i := range k.H {
				for j := range k.W {
					sum += float64(k.Data[i*k.W+j]) * at(y+loY-i, x+loX-j)
				}
			}
			out[y*ow+x] = sum
		}
	}
	return out, oh, ow, nil
}

func TestConformance(t *testing.T) {
	reg := udf.NewRegistry(testLimits, nil)
	col, pix, dims := testInputs(t, 1)
	for _, bt := range backendsUnderTest(t) {
		s := schedFor(bt.backend)
		t.Cleanup(s.Close)
		for _, c := range convolveCases {
			t.Run(bt.name+"/"+c.name, func(t *testing.T) {
				task, err := reg.Prepare(udf.Command{Op: "fft_convolve", Params: json.RawMessage(c.params)})
				if err != nil {
					t.Fatal(err)
				}
				spec := *task.Spec.(*udf.ConvolveSpec)
				rec, byBackend := runSched(t, s, task, col)
				good := rec.Column(int(rec.NumCols()) - 1).NullN() // rows without an error
				if byBackend[bt.ranAs] < good {
					t.Fatalf("rows per backend %v: want the %d good rows on %s", byBackend, good, bt.ranAs)
				}
				for i := range col.Len() {
					checkRow(t, rec, i, pix[i], dims[i], spec)
				}
			})
		}
		// The emulated lanes copied from the memory the decode stage
		// decoded into, or (emu-unpinned) through their own.
		if b, ok := bt.backend.(*Backend); ok {
			if made := b.pinned.Made(); (made > 0) != (bt.name != "emu-unpinned") {
				t.Errorf("%s: %d bytes of pinned memory handed to the decode stage", bt.name, made)
			}
		}
	}
}

// checkRow compares row i of rec with the reference: f32 values within
// 1e-4·(1+max|ref|), png pixels equal to the rounded reference, stats
// within 1e-4·(1+max|ref|); a row without pixels or without an output
// must be an error.
func checkRow(t *testing.T, rec arrow.RecordBatch, i int, pix []uint8, dim [2]int, s udf.ConvolveSpec) {
	t.Helper()
	errCol := rec.Column(int(rec.NumCols()) - 1).(*array.String)
	var want []float64
	var oh, ow int
	var refErr error
	if pix != nil {
		want, oh, ow, refErr = reference(pix, dim[0], dim[1], s)
	}
	if pix == nil || refErr != nil {
		if errCol.IsNull(i) {
			t.Errorf("row %d: want an error, got a result", i)
		}
		return
	}
	if !errCol.IsNull(i) {
		t.Errorf("row %d: error %q", i, errCol.Value(i))
		return
	}
	peak := 0.0
	for _, v := range want {
		peak = max(peak, math.Abs(v))
	}
	tol := 1e-4 * (1 + peak)
	switch s.Output {
	case udf.OutputF32, udf.OutputPNG:
		if h, w := rec.Column(0).(*array.Int32).Value(i), rec.Column(1).(*array.Int32).Value(i); int(h) != oh || int(w) != ow {
			t.Fatalf("row %d: %dx%d, want %dx%d", i, w, h, ow, oh)
		}
		data := rec.Column(2).(*array.Binary).Value(i)
		if s.Output == udf.OutputF32 {
			if len(data) != 4*oh*ow {
				t.Fatalf("row %d: %d bytes, want %d", i, len(data), 4*oh*ow)
			}
			for j, v := range want {
				got := float64(math.Float32frombits(uint32(data[4*j]) | uint32(data[4*j+1])<<8 | uint32(data[4*j+2])<<16 | uint32(data[4*j+3])<<24))
				if math.Abs(got-v) > tol {
					t.Fatalf("row %d pixel %d (y %d, x %d): %g, want %g (±%g)", i, j, j/ow, j%ow, got, v, tol)
				}
			}
			return
		}
		img, err := png.Decode(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("row %d: %v", i, err)
		}
		g, ok := img.(*image.Gray)
		if !ok || g.Rect.Dx() != ow || g.Rect.Dy() != oh {
			t.Fatalf("row %d: png %T %v, want %dx%d gray", i, img, img.Bounds(), ow, oh)
		}
		lo, hi := slices.Min(want), slices.Max(want)
		for y := range oh {
			for x := range ow {
				// Exact, but within 1 where the value is near a .5 tie
				// (FFT rounding may fall either side of it).
				v := want[y*ow+x]
				switch s.PNGScale {
				case udf.ScaleAbs:
					v = math.Abs(v)
				case udf.ScaleMinMax:
					v = (v - lo) * 255 / (hi - lo)
				}
				v = min(max(v, 0), 255)
				got, ref := float64(g.Pix[y*g.Stride+x]), math.Round(v)
				slack := 0.0
				if math.Abs(v-math.Floor(v)-0.5) < 1e-3*(1+peak) {
					slack = 1
				}
				if math.Abs(got-ref) > slack {
					t.Fatalf("row %d png (y %d, x %d): %g, want %g", i, y, x, got, ref)
				}
			}
		}
	case udf.OutputStats:
		lo, hi, sum := math.Inf(1), math.Inf(-1), 0.0
		for _, v := range want {
			lo, hi, sum = min(lo, v), max(hi, v), sum+v
		}
		mean := sum / float64(len(want))
		var ss float64
		for _, v := range want {
			ss += (v - mean) * (v - mean)
		}
		ref := []float64{lo, hi, mean, math.Sqrt(ss / float64(len(want)))}
		for c, name := range []string{"min", "max", "mean", "std"} {
			got := rec.Column(c).(*array.Float64).Value(i)
			if math.Abs(got-ref[c]) > tol {
				t.Errorf("row %d %s: %g, want %g (±%g)", i, name, got, ref[c], tol)
			}
		}
	default:
		t.Fatalf("output %d", s.Output)
	}
}

// Accepts takes the ops it runs; watershed, echo and info stay on the CPU.
func TestAcceptsOps(t *testing.T) {
	reg := udf.NewRegistry(testLimits, nil)
	b, err := newBackend(newEmuDevice(1<<30), Config{Lanes: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, c := range []struct {
		op, params string
		want       bool
	}{
		{"fft_convolve", `{}`, true},
		{"fft_convolve", `{"kernel":"box","mode":"valid","boundary":"wrap","output":"stats"}`, true},
		{"detect_blobs", `{}`, true},
		{"detect_blobs", `{"log_scale":true,"exclude_border":true,"num_sigma":3,"max_sigma":64}`, true},
		{"watershed", `{}`, false},
		{"echo", `{}`, false},
		{"info", `{}`, false},
	} {
		task, err := reg.Prepare(udf.Command{Op: c.op, Params: json.RawMessage(c.params)})
		if err != nil {
			t.Fatal(err)
		}
		if got := b.Accepts(task); got != c.want {
			t.Errorf("Accepts(%s %s) = %v, want %v", c.op, c.params, got, c.want)
		}
	}
	// A task made without a registry has no spec.
	for _, op := range []string{"fft_convolve", "detect_blobs"} {
		if b.Accepts(&udf.Task{Op: op}) {
			t.Errorf("Accepts an %s task without a spec", op)
		}
	}
}

// faultyScheduler is a scheduler over a CPU lane and the emulated GPU
// (one lane, batches of up to 16) whose device fails at op. The CPU lane
// holds its first row until the GPU has failed, so that the GPU gets a
// batch.
func faultyScheduler(t *testing.T, op string) *sched.Scheduler {
	t.Helper()
	dev := newEmuDevice(1 << 30)
	dev.fail = func(o string) error {
		if o == op {
			return fmt.Errorf("%s: %w", o, errInjected)
		}
		return nil
	}
	gpu, err := newBackend(dev, Config{Lanes: 1, MaxBatch: 16})
	if err != nil {
		t.Fatal(err)
	}
	failed := make(chan struct{})
	cpu := &gatedCPU{CPU: sched.NewCPU(1), gate: failed}
	s := sched.New(sched.Config{Backends: []sched.Backend{cpu, &watchedBackend{Backend: gpu, failed: failed}}})
	t.Cleanup(func() {
		s.Close()
		gpu.Close()
	})
	return s
}

// A device error fails the batch; the scheduler takes the backend out of
// service and the CPU redoes the rows: every row comes back right, from
// the CPU, and the backend reports the fault. The Laplacian goes to cuFFT,
// the Gaussian to the separable passes.
func TestDeviceFaultFallsBackToCPU(t *testing.T) {
	params := map[string]string{"fft": `{"kernel":"laplacian"}`, "separable": `{"kernel":"gaussian","sigma":1}`}
	for _, c := range []struct{ op, method string }{
		{"launch pf_mul", "fft"}, {"fft forward", "fft"}, {"download", "fft"}, {"alloc", "fft"},
		{"launch pf_sep_rows", "separable"}, {"launch pf_sep_cols", "separable"}, {"download", "separable"},
	} {
		op := c.op
		t.Run(c.method+"/"+op, func(t *testing.T) {
			s := faultyScheduler(t, op)
			reg := udf.NewRegistry(testLimits, nil)
			task, err := reg.Prepare(udf.Command{Op: "fft_convolve", Params: json.RawMessage(params[c.method])})
			if err != nil {
				t.Fatal(err)
			}
			spec := *task.Spec.(*udf.ConvolveSpec)
			col, pix, dims := testInputs(t, 2)
			rec, byBackend := runSched(t, s, task, col)
			// The GPU may finish a batch of only undecodable rows itself.
			if byBackend["cpu"] < 8 {
				t.Errorf("rows per backend %v: want every image on the cpu", byBackend)
			}
			for i := range col.Len() {
				checkRow(t, rec, i, pix[i], dims[i], spec)
			}
			st := s.Backends()
			if st[1].Name != "cuda" || st[1].Healthy || st[1].Fault == "" {
				t.Errorf("backend status %+v: want cuda out of service with its fault", st[1])
			}
		})
	}
}

// watchedBackend closes failed when its backend's Run fails.
type watchedBackend struct {
	sched.Backend
	failed chan struct{}
}

func (w *watchedBackend) Run(ctx context.Context, lane int, items []*sched.Item) error {
	err := w.Backend.Run(ctx, lane, items)
	if err != nil {
		close(w.failed)
	}
	return err
}

// gatedCPU runs nothing until gate closes.
type gatedCPU struct {
	*sched.CPU
	gate chan struct{}
}

func (g *gatedCPU) Run(ctx context.Context, lane int, items []*sched.Item) error {
	select {
	case <-g.gate:
	case <-time.After(30 * time.Second):
	}
	return g.CPU.Run(ctx, lane, items)
}
