package server

import (
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// BenchmarkExchange is the per-row cost of the transport and the queue:
// echo of a 4 KiB row, in batches of 1 and of 256 rows.
func BenchmarkExchange(b *testing.B) {
	for _, rows := range []int{1, 256} {
		b.Run(fmt.Sprintf("rows-%d", rows), func(b *testing.B) {
			f := startWith(&testing.T{}, "grpc+unix://"+b.TempDir()+"/s.sock", Config{Workers: 2})
			mem := memory.NewGoAllocator()
			row := make([]byte, 4096)
			batch := make([][]byte, rows)
			for i := range batch {
				batch[i] = row
			}
			rec := imageBatch(mem, "content", batch...)
			n := max(b.N/rows, 1)
			in := make([]arrow.RecordBatch, n)
			for i := range in {
				in[i] = rec
			}
			b.SetBytes(int64(4096 * rows))
			b.ResetTimer()
			out, err := exchange(&testing.T{}, f.client, `{"op": "echo"}`, in...)
			if err != nil || len(out) != n {
				b.Fatal(len(out), err)
			}
			b.StopTimer()
			for _, r := range out {
				r.Release()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*rows), "ns/row")
		})
	}
}
