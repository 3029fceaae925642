//go:build cgo

package cuda

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pixelflight/pixelflight/kernels"
	"github.com/pixelflight/pixelflight/sched"
	"github.com/pixelflight/pixelflight/udf"
)

// The separable passes (pf_sep_rows, pf_sep_cols) against the direct
// float64 reference (reference, which scipy's fftconvolve and convolve2d
// give: udf's fftconvolve_ref.json checks the CPU against them), for
// every mode and boundary, on images of odd shapes, with kernels larger
// than the image; through the scheduler, as TestConformance.

// sepShapes are the images of TestSeparableConformance, h×w: 37×53
// twice (a batch of two: grid z); 512×512 with the kernels marked big
// only (an emulated 512×512 takes a while).
var sepShapes = [][2]int{{1, 1}, {3, 100}, {100, 3}, {37, 53}, {37, 53}}

const sepBig = 512

// sepKernels are separable kernels: odd and even sides, symmetric and not,
// a single row, and larger than the 1×1, 3×100 and 100×3 images.
var sepKernels = []struct {
	name, params string
	big          bool // the 512×512 image too
}{
	{"gaussian7", `"kernel":"gaussian","sigma":1`, true}, // 7×7
	{"box4", `"kernel":"box","size":4`, false},
	{"sobel_x", `"kernel":"sobel_x"`, false},
	{"matrix3x5", `"matrix":[[2,1,0,-1,3],[-4,-2,0,2,-6],[1,0.5,0,-0.5,1.5]]`, true}, // [1,-2,0.5]ᵀ·[2,1,0,-1,3]
	{"row1x9", `"matrix":[[1,-1,2,0.5,3,-2,0.25,1,-3]]`, false},
}

// sepInputs is one PNG row per shape, random pixels.
func sepInputs(t *testing.T, seed uint64, shapes [][2]int) (*udf.Column, [][]uint8, [][2]int) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 11))
	bld := array.NewBinaryBuilder(memory.DefaultAllocator, arrow.BinaryTypes.Binary)
	defer bld.Release()
	var pix [][]uint8
	for _, d := range shapes {
		img := image.NewGray(image.Rect(0, 0, d[1], d[0]))
		for i := range img.Pix {
			img.Pix[i] = uint8(r.IntN(256))
		}
		var buf bytes.Buffer
		if err := png.Encode(&buf, img); err != nil {
			t.Fatal(err)
		}
		bld.Append(buf.Bytes())
		pix = append(pix, img.Pix)
	}
	arr := bld.NewArray()
	t.Cleanup(arr.Release)
	col, err := udf.NewColumn(arr)
	if err != nil {
		t.Fatal(err)
	}
	return col, pix, shapes
}

// methodRows reads pixelflight_method_rows_total{backend, op="fft_convolve"}
// from reg, by method.
func methodRows(t *testing.T, reg *prometheus.Registry, backend string) map[string]int {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, mf := range mfs {
		if mf.GetName() != "pixelflight_method_rows_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			if l["backend"] == backend && l["op"] == "fft_convolve" {
				out[l["method"]] += int(m.GetCounter().GetValue())
			}
		}
	}
	return out
}

func TestSeparableConformance(t *testing.T) {
	emu := func(laneMemory int64, method func(*kernels.Kernel, *geometry) kernels.Method) *Backend {
		b := newEmu(t, Config{Lanes: 2, MaxBatch: 8, LaneMemory: laneMemory})
		b.method = method
		return b
	}
	type backend struct {
		name    string
		b       sched.Backend
		ranAs   string
		allSep  bool // every good row by the separable passes
		someSep bool // some
	}
	bs := []backend{
		{name: "cpu", b: sched.NewCPU(2), ranAs: "cpu"},
		{name: "emu", b: emu(64<<20, gpuMethod), ranAs: "cuda", someSep: true},
		{name: "emu-sep", b: emu(64<<20, sepWherever), ranAs: "cuda", allSep: true},
	}
	if Built {
		gpu, err := Open(Config{MaxBatch: 16})
		if err != nil {
			t.Fatalf("built with -tags cuda, but the GPU backend cannot start (a failure, not a skip): %v", err)
		}
		t.Cleanup(func() { gpu.Close() })
		gpuSep, err := Open(Config{MaxBatch: 16})
		if err != nil {
			t.Fatalf("the GPU backend cannot start: %v", err)
		}
		t.Cleanup(func() { gpuSep.Close() })
		gpuSep.method = sepWherever
		bs = append(bs, backend{name: "cuda", b: gpu, ranAs: "cuda", someSep: true},
			backend{name: "cuda-sep", b: gpuSep, ranAs: "cuda", allSep: true})
	}
	udfReg := udf.NewRegistry(testLimits, nil)
	small, smallPix, smallDims := sepInputs(t, 5, sepShapes)
	all, allPix, allDims := sepInputs(t, 5, append(slices.Clip(sepShapes), [2]int{sepBig, sepBig}))
	for _, bt := range bs {
		reg := prometheus.NewRegistry()
		backends := []sched.Backend{bt.b}
		if bt.ranAs != "cpu" {
			backends = []sched.Backend{fallbackCPU{sched.NewCPU(1)}, bt.b}
		}
		s := sched.New(sched.Config{Backends: backends, Metrics: sched.NewMetrics(reg)})
		t.Cleanup(s.Close)
		good := 0
		for _, k := range sepKernels {
			for _, mode := range []string{"same", "full", "valid"} {
				for _, bound := range []string{"zero", "reflect", "wrap"} {
					out := "f32"
					switch {
					case bound == "reflect" && mode == "same":
						out = "stats"
					case bound == "wrap" && mode != "valid":
						out = "png"
					}
					name := fmt.Sprintf("%s/%s/%s-%s-%s", bt.name, k.name, mode, bound, out)
					params := fmt.Sprintf(`{%s,"mode":%q,"boundary":%q,"output":%q}`, k.params, mode, bound, out)
					col, pix, dims := small, smallPix, smallDims
					if k.big {
						col, pix, dims = all, allPix, allDims
					}
					t.Run(name, func(t *testing.T) {
						task, err := udfReg.Prepare(udf.Command{Op: "fft_convolve", Params: json.RawMessage(params)})
						if err != nil {
							t.Fatal(err)
						}
						spec := *task.Spec.(*udf.ConvolveSpec)
						if len(spec.Kernel.Col) != spec.Kernel.H || len(spec.Kernel.Row) != spec.Kernel.W {
							t.Fatalf("%s: the kernel has no factors", params)
						}
						rec, byBackend := runSched(t, s, task, col)
						n := rec.Column(int(rec.NumCols()) - 1).NullN()
						if byBackend[bt.ranAs] < n {
							t.Fatalf("rows per backend %v: want the %d good rows on %s", byBackend, n, bt.ranAs)
						}
						good += n
						for i := range col.Len() {
							checkRow(t, rec, i, pix[i], dims[i], spec)
						}
					})
				}
			}
		}
		if bt.ranAs == "cpu" {
			continue
		}
		by := methodRows(t, reg, "cuda")
		switch {
		case by["separable"]+by["fft"] != good:
			t.Errorf("%s: methods %v, want %d rows", bt.name, by, good)
		case bt.allSep && by["separable"] != good:
			t.Errorf("%s: methods %v, want every one of the %d rows separable", bt.name, by, good)
		case bt.someSep && (by["separable"] == 0 || by["fft"] == 0):
			t.Errorf("%s: methods %v, want both (the cost model sends some of these to cuFFT)", bt.name, by)
		}
		t.Logf("%s: rows by method %v", bt.name, by)
	}
}

// TestGPUMethod: the cost model's choices (gpuMethod's doc).
func TestGPUMethod(t *testing.T) {
	ones := func(h, w int) *kernels.Kernel { // rank one: Factor finds it
		k := &kernels.Kernel{H: h, W: w, Data: make([]float32, h*w)}
		for i := range k.Data {
			k.Data[i] = 1
		}
		return kernels.Factor(k)
	}
	for _, c := range []struct {
		name string
		h, w int
		k    *kernels.Kernel
		mode kernels.Mode
		b    kernels.Boundary
		want kernels.Method
	}{
		{"512 gaussian 7x7", 512, 512, kernels.Gaussian(1, 7), kernels.Same, kernels.Zero, kernels.Separable},
		{"512 box 23x23", 512, 512, kernels.Box(23), kernels.Same, kernels.Zero, kernels.Separable},
		{"512 box 25x25", 512, 512, kernels.Box(25), kernels.Same, kernels.Zero, kernels.FFT},
		{"512 laplacian", 512, 512, kernels.Laplacian(), kernels.Same, kernels.Zero, kernels.FFT},
		{"512 sharpen reflect", 512, 512, kernels.Sharpen(), kernels.Same, kernels.Reflect, kernels.FFT},
		{"1080p sobel wrap", 1080, 1920, kernels.SobelX(), kernels.Same, kernels.Wrap, kernels.Separable},
		{"4096 box 29", 4096, 4096, kernels.Box(29), kernels.Same, kernels.Zero, kernels.Separable},
		{"4096 box 31", 4096, 4096, kernels.Box(31), kernels.Same, kernels.Zero, kernels.FFT},
		{"1x1 gaussian 7 same", 1, 1, kernels.Gaussian(1, 7), kernels.Same, kernels.Zero, kernels.Separable},
		{"1x1 gaussian 7 full", 1, 1, kernels.Gaussian(1, 7), kernels.Full, kernels.Zero, kernels.FFT},
		{"16k row 1x64", 16384, 16384, ones(1, 64), kernels.Same, kernels.Zero, kernels.Separable},
		{"16k row 1x65: over sepMaxTaps", 16384, 16384, ones(1, 65), kernels.Same, kernels.Zero, kernels.FFT},
	} {
		oh, ow, err := kernels.OutputSize(c.h, c.w, c.k, c.mode)
		if err != nil {
			t.Fatal(err)
		}
		g := &geometry{h: c.h, w: c.w, oh: oh, ow: ow,
			rows: newAxis(c.h, c.k.H, oh, c.mode, c.b), cols: newAxis(c.w, c.k.W, ow, c.mode, c.b)}
		if got := gpuMethod(c.k, g); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
