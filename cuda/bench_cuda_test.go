//go:build cuda && cgo

package cuda

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/pixelflight/pixelflight/sched"
	"github.com/pixelflight/pixelflight/udf"
)

// BenchmarkConvolve/cuda-512-{stats,f32,png}: 512×512 8-bit images as
// Spark image structs (raw pixels: nothing to decode) through the
// scheduler to the CUDA backend alone, 7×7 Gaussian (sigma 1), batches of
// 64, 2 lanes. Bytes are input pixels, so MB/s / 0.262 = images/s. NEVER
// RUN YET: it needs a GPU (go test -tags cuda -run '^$' -bench . ./cuda/).
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
	pix := make([]byte, side*side)
	for range rows {
		for i := range pix {
			pix[i] = byte(r.IntN(256))
		}
		bld.Append(true)
		bld.FieldBuilder(0).(*array.StringBuilder).Append("bench")
		bld.FieldBuilder(1).(*array.Int32Builder).Append(int32(side))
		bld.FieldBuilder(2).(*array.Int32Builder).Append(int32(side))
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
