//go:build cuda && cgo

package cuda

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/pixelflight/pixelflight/imageio"
	"github.com/pixelflight/pixelflight/kernels"
	"github.com/pixelflight/pixelflight/sched"
	"github.com/pixelflight/pixelflight/udf"
)

// BenchmarkConvolve/cuda-512-{stats,f32,png}: 512×512 8-bit images as
// Spark image structs (raw pixels: nothing to decode) through the
// scheduler to the CUDA backend alone, 7×7 Gaussian (sigma 1), batches of
// 64, 2 lanes. Bytes are input pixels, so MB/s / 0.262 = images/s. The
// Gaussian goes to the separable passes (gpuMethod); BenchmarkConvolveMethod
// compares them with cuFFT. It needs a GPU (go test -tags cuda -run '^$'
// -bench . ./cuda/); figures before the separable passes: BENCHMARKS.md.
func BenchmarkConvolve(b *testing.B) {
	const side, rows = 512, 1024
	col := sparkColumn(b, side, rows)
	gpu, err := Open(Config{MaxBatch: 64, Lanes: 2})
	if err != nil {
		b.Fatalf("the GPU backend cannot start: %v", err)
	}
	defer gpu.Close()
	s := sched.New(sched.Config{Backends: []sched.Backend{gpu}})
	defer s.Close()
	reg := udf.NewRegistry(testLimits, nil)
	for _, out := range []string{"stats", "f32", "png"} {
		b.Run(fmt.Sprintf("cuda-%d-%s", side, out), func(b *testing.B) {
			task, err := reg.Prepare(udf.Command{Op: "fft_convolve", Params: json.RawMessage(`{"kernel":"gaussian","sigma":1,"output":"` + out + `"}`)})
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(side * side * rows)
			for b.Loop() {
				batch, err := s.Submit(context.Background(), task, col)
				if err != nil {
					b.Fatal(err)
				}
				<-batch.Done()
				_, errs, by := batch.Results()
				for _, e := range errs {
					if e != nil {
						b.Fatal(e)
					}
				}
				if by["cuda"] != rows {
					b.Fatalf("rows per backend %v", by)
				}
			}
		})
	}
}

// BenchmarkConvolveMethod/SIDE-kK-METHOD: fft_convolve's two methods on
// the GPU for the same separable kernel and images, to fit gpuMethod's
// cost model (fftMulAddsPerLog): SIDE 512 (512×512) and 1080 (1920×1080)
// random 8-bit images as Spark image structs, a K×K box (K 3 to 63: the
// passes take up to sepMaxTaps), same mode, zero boundary, stats output
// (so that little crosses back), batches of 32, 2 lanes, the CUDA backend
// alone; METHOD separable (the passes for every kernel: sepWherever) or
// fft (cuFFT: fftOnly). It also reports what gpuMethod would choose
// (chosen-sep: 1 or 0). Bytes are input pixels. NEVER RUN YET: it needs
// a GPU (go test -tags cuda -run '^$' -bench ConvolveMethod -benchtime 5x
// ./cuda/). Where the two times cross, per side, is the threshold's
// figure: separable should win below it and lose above it.
func BenchmarkConvolveMethod(b *testing.B) {
	gpu, err := Open(Config{MaxBatch: 32, Lanes: 2})
	if err != nil {
		b.Fatalf("the GPU backend cannot start: %v", err)
	}
	defer gpu.Close()
	s := sched.New(sched.Config{Backends: []sched.Backend{gpu}})
	defer s.Close()
	reg := udf.NewRegistry(testLimits, nil)
	for _, size := range []struct {
		name       string
		h, w, rows int
	}{{"512", 512, 512, 256}, {"1080", 1080, 1920, 64}} {
		col := sparkImages(b, size.h, size.w, size.rows)
		for _, k := range []int{3, 7, 13, 23, 31, 45, 63} {
			task, err := reg.Prepare(udf.Command{Op: "fft_convolve", Params: json.RawMessage(fmt.Sprintf(`{"kernel":"box","size":%d,"output":"stats"}`, k))})
			if err != nil {
				b.Fatal(err)
			}
			spec := task.Spec.(*udf.ConvolveSpec)
			g := &geometry{h: size.h, w: size.w, oh: size.h, ow: size.w,
				rows: newAxis(size.h, k, size.h, spec.Mode, spec.Boundary), cols: newAxis(size.w, k, size.w, spec.Mode, spec.Boundary)}
			chosen := 0.0
			if gpuMethod(spec.Kernel, g) == kernels.Separable {
				chosen = 1
			}
			for _, m := range []struct {
				name   string
				method func(*kernels.Kernel, *geometry) kernels.Method
			}{{"separable", sepWherever}, {"fft", fftOnly}} {
				b.Run(fmt.Sprintf("%s-k%d-%s", size.name, k, m.name), func(b *testing.B) {
					gpu.method = m.method // no batch is in flight between runs
					defer func() { gpu.method = gpuMethod }()
					b.SetBytes(int64(size.h * size.w * size.rows))
					for b.Loop() {
						batch, err := s.Submit(context.Background(), task, col)
						if err != nil {
							b.Fatal(err)
						}
						<-batch.Done()
						_, errs, by := batch.Results()
						for _, e := range errs {
							if e != nil {
								b.Fatal(e)
							}
						}
						if by["cuda"] != size.rows {
							b.Fatalf("rows per backend %v", by)
						}
					}
					b.ReportMetric(chosen, "chosen-sep")
				})
			}
		}
	}
}

// BenchmarkBlobs/cuda-512: detect_blobs with blob_log's defaults (10
// scales, sigma 1 to 50) on 512×512 8-bit images, batches of 16, 2
// lanes, the CUDA backend alone; it reports the rows the lanes redid on
// the CPU. NEVER RUN YET: it needs a GPU.
func BenchmarkBlobs(b *testing.B) {
	const side, rows = 512, 128
	col := sparkColumn(b, side, rows)
	gpu, err := Open(Config{MaxBatch: 16, Lanes: 2})
	if err != nil {
		b.Fatalf("the GPU backend cannot start: %v", err)
	}
	defer gpu.Close()
	s := sched.New(sched.Config{Backends: []sched.Backend{gpu}})
	defer s.Close()
	task, err := udf.NewRegistry(testLimits, nil).Prepare(udf.Command{Op: "detect_blobs", Params: json.RawMessage(`{}`)})
	if err != nil {
		b.Fatal(err)
	}
	b.Run(fmt.Sprintf("cuda-%d", side), func(b *testing.B) {
		b.SetBytes(side * side * rows)
		before := gpu.CPURows()
		for b.Loop() {
			batch, err := s.Submit(context.Background(), task, col)
			if err != nil {
				b.Fatal(err)
			}
			<-batch.Done()
			if _, _, by := batch.Results(); by["cuda"] != rows {
				b.Fatalf("rows per backend %v", by)
			}
		}
		b.ReportMetric(float64(gpu.CPURows()-before)/float64(b.N*rows), "cpu-redone/row")
	})
}

// sparkColumn is rows random side×side gray images as Spark's image struct.
func sparkColumn(b *testing.B, side, rows int) *udf.Column {
	return sparkImages(b, side, side, rows)
}

// sparkImages is rows random h×w gray images as Spark's image struct.
func sparkImages(b *testing.B, h, w, rows int) *udf.Column {
	r := rand.New(rand.NewPCG(1, 2))
	mem := memory.DefaultAllocator
	st := arrow.StructOf(
		arrow.Field{Name: "origin", Type: arrow.BinaryTypes.String},
		arrow.Field{Name: "height", Type: arrow.PrimitiveTypes.Int32},
		arrow.Field{Name: "width", Type: arrow.PrimitiveTypes.Int32},
		arrow.Field{Name: "nChannels", Type: arrow.PrimitiveTypes.Int32},
		arrow.Field{Name: "mode", Type: arrow.PrimitiveTypes.Int32},
		arrow.Field{Name: "data", Type: arrow.BinaryTypes.Binary},
	)
	bld := array.NewStructBuilder(mem, st)
	defer bld.Release()
	pix := make([]byte, h*w)
	for range rows {
		for i := range pix {
			pix[i] = byte(r.IntN(256))
		}
		bld.Append(true)
		bld.FieldBuilder(0).(*array.StringBuilder).Append("bench")
		bld.FieldBuilder(1).(*array.Int32Builder).Append(int32(h))
		bld.FieldBuilder(2).(*array.Int32Builder).Append(int32(w))
		bld.FieldBuilder(3).(*array.Int32Builder).Append(1)
		bld.FieldBuilder(4).(*array.Int32Builder).Append(0) // CV_8UC1
		bld.FieldBuilder(5).(*array.BinaryBuilder).Append(pix)
	}
	arr := bld.NewArray()
	b.Cleanup(arr.Release)
	col, err := udf.NewColumn(arr)
	if err != nil {
		b.Fatal(err)
	}
	return col
}

// BenchmarkNVJPEG/lanes-L-batch-B: the GPU's JPEG decoder alone, 512²
// photos (build/images/photo512/jpg) to luma in device memory, L lanes
// decoding at once, each with its own decoder and stream, B images per
// nvjpegDecodeBatched. It reports images/s: what the device can decode,
// against which the scheduler's decode split is measured. Needs a GPU.
func BenchmarkNVJPEG(b *testing.B) {
	files, _ := filepath.Glob("../build/images/photo512/jpg/*.jpg")
	var jpegs [][]byte
	for _, f := range files {
		d, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		if imageio.JPEGLuma(d) {
			jpegs = append(jpegs, d)
		}
	}
	if len(jpegs) == 0 {
		b.Fatal("no 512² photos: make data")
	}
	// One backend for every case: opening one costs seconds, and b.Run calls
	// its function several times while it sizes b.N.
	gpu, err := Open(Config{Lanes: 8})
	if err != nil {
		b.Fatalf("the GPU backend cannot start: %v", err)
	}
	defer gpu.Close()
	for _, lanes := range []int{1, 2, 4, 8} {
		for _, batch := range []int{16, 64} {
			b.Run(fmt.Sprintf("lanes-%d-batch-%d", lanes, batch), func(b *testing.B) {
				var in [][]byte
				for i := range batch {
					in = append(in, jpegs[i%len(jpegs)])
				}
				const side = 512
				b.ResetTimer()
				start := time.Now()
				var wg sync.WaitGroup
				errs := make([]error, lanes)
				for k := range lanes {
					wg.Add(1)
					go func() {
						defer wg.Done()
						errs[k] = decodeLoop(gpu.lanes[k], in, side, b.N)
					}()
				}
				wg.Wait()
				if err := errors.Join(errs...); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(b.N*lanes*batch)/time.Since(start).Seconds(), "images/s")
			})
		}
	}
}

// decodeLoop decodes in n times on lane l, each image to a side² plane.
func decodeLoop(l *lane, in [][]byte, side, n int) error {
	unbind, err := l.s.bind()
	if err != nil {
		return err
	}
	defer unbind()
	dec, err := l.s.jpegDecoder()
	if err != nil || dec == nil {
		return fmt.Errorf("lane decoder: %v", err)
	}
	defer dec.close()
	p, err := l.s.alloc(len(in) * side * side)
	if err != nil {
		return err
	}
	defer l.s.free(p)
	dst, pitch := make([]devPtr, len(in)), make([]int, len(in))
	for j := range in {
		dst[j], pitch[j] = p+devPtr(j*side*side), side
	}
	for range n {
		if err := dec.decode(in, dst, pitch); err != nil {
			return err
		}
	}
	return nil
}
