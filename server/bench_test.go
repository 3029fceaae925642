package server

import (
	"fmt"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// BenchmarkExchange is the cost per image of the transport and the queue
// around a small kernel: fft_convolve stats of a 128×128 PNG, sent by one
// stream in batches of 256 rows, or by 16 streams one row at a time.
func BenchmarkExchange(b *testing.B) {
	for _, c := range []struct{ streams, rows int }{{1, 256}, {16, 1}} {
		b.Run(fmt.Sprintf("streams-%d-rows-%d", c.streams, c.rows), func(b *testing.B) {
			f := startWith(b, "grpc+unix://"+b.TempDir()+"/s.sock", Config{Workers: 1, Alloc: memory.DefaultAllocator})
			mem := memory.NewGoAllocator()
			img := pngBytes(b, 128, 128)
			rows := make([][]byte, c.rows)
			for i := range rows {
				rows[i] = img
			}
			rec := imageBatch(mem, "content", rows...)
			defer rec.Release()
			per := max(b.N/(c.rows*c.streams), 1)
			b.ResetTimer()
			var wg sync.WaitGroup
			for range c.streams {
				wg.Go(func() {
					in := make([]arrow.RecordBatch, per)
					for i := range in {
						in[i] = rec
					}
					out, err := exchange(b, f.client, `{"op": "fft_convolve", "params": {"output": "stats"}}`, in...)
					if err != nil || len(out) != per {
						b.Error(len(out), err)
					}
					for _, r := range out {
						r.Release()
					}
				})
			}
			wg.Wait()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(per*c.rows*c.streams), "ns/image")
		})
	}
}
