package server

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/pixelflight/pixelflight/sched"
)

// slowSim is a sim backend of one lane, batches of up to batch rows,
// whose fft_convolve takes per for a w×h image.
func slowSim(batch int, per time.Duration, w, h int) *sched.Sim {
	r := sched.DefaultSimRates()
	r.PerImage["fft_convolve"] = per * 512 * 512 / time.Duration(w*h)
	return sched.NewSim(1, batch, r)
}

// TestManyStreamsTwoBackends: 16 streams of fft_convolve at once over a
// CPU lane and a slow batching backend (a sim, 2 ms an image); each
// stream gets every row back once, in order (each image's size comes
// back as its row's), and both backends ran rows: the CPU lane takes the
// rows it finishes before the sim would reach them.
func TestManyStreamsTwoBackends(t *testing.T) {
	f := startWith(t, "grpc://127.0.0.1:0", Config{Workers: 1, MaxDelay: time.Millisecond,
		Backends: []sched.Backend{slowSim(8, 2*time.Millisecond, 8, 6)}})
	mem := memory.NewGoAllocator()
	imgs := [][]byte{pngBytes(t, 8, 6), pngBytes(t, 5, 5), []byte("corrupt")}
	dims := [][2]int32{{6, 8}, {5, 5}, {0, 0}}
	var wg sync.WaitGroup
	for stream := range 16 {
		wg.Go(func() {
			var in []arrow.RecordBatch
			var want [][2]int32
			for b := range 6 {
				var rows [][]byte
				for r := range 1 + (stream+b)%5 {
					k := (stream + b + r) % len(imgs)
					rows = append(rows, imgs[k])
					want = append(want, dims[k])
				}
				in = append(in, imageBatch(mem, "content", rows...))
			}
			out, err := exchange(t, f.client, `{"op": "fft_convolve", "params": {"output": "f32"}}`, in...)
			if err != nil {
				t.Errorf("stream %d: %v", stream, err)
				return
			}
			var got int
			for i, rec := range out {
				if rec.NumRows() != in[i].NumRows() {
					t.Errorf("stream %d batch %d: %d rows, sent %d", stream, i, rec.NumRows(), in[i].NumRows())
				}
				hs, ws := rec.Column(0).(*array.Int32), rec.Column(1).(*array.Int32)
				for r := range int(rec.NumRows()) {
					if (hs.Value(r) != want[got][0] || ws.Value(r) != want[got][1]) && hs.IsValid(r) {
						t.Errorf("stream %d row %d: another row came back", stream, got)
					}
					if hs.IsValid(r) != (want[got][0] > 0) {
						t.Errorf("stream %d row %d: error %q", stream, got, rec.Column(3).(*array.String).Value(r))
					}
					got++
				}
				rec.Release()
			}
			for _, rec := range in {
				rec.Release()
			}
			if got != len(want) {
				t.Errorf("stream %d: %d rows back, sent %d", stream, got, len(want))
			}
		})
	}
	wg.Wait()
	st, err := f.srv.Stats()
	if err != nil {
		t.Fatal(err)
	}
	by := st.RowsByBackend
	if by["cpu"] == 0 || by["sim"] == 0 {
		t.Errorf("rows by backend %v: want both", by)
	}
	if st.InflightBytes != 0 || st.QueueDepth != 0 {
		t.Errorf("in flight after every stream ended: %v", st)
	}
	// The same counters over HTTP, in Prometheus' format.
	rec := httptest.NewRecorder()
	f.srv.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	for _, want := range []string{
		fmt.Sprintf(`pixelflight_rows_total{backend="sim",op="fft_convolve"} %d`, by["sim"]),
		`pixelflight_streams_total{code="OK",op="fft_convolve"} 16`,
		`pixelflight_backend_healthy{backend="sim"} 1`,
		`pixelflight_stage_busy_seconds_total{stage="decode"}`, `pixelflight_stage_queue_depth{queue="ready"} 0`,
		"pixelflight_queue_wait_seconds_bucket", "pixelflight_batch_size_bucket{backend=\"sim\"", "pixelflight_batch_fill_bucket{backend=\"sim\"",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

// TestInflightCapHolds: with a 1 MiB cap on input (a 4 MiB budget), after
// a first stream of one batch (the others' first guess), 8 streams of 256
// KiB batches hold no more than the cap and the last batch of each, and
// every row comes back; the bytes of
// Spark image structs (in the struct's children) count as binary rows do.
func TestInflightCapHolds(t *testing.T) {
	big := make([]byte, 256<<10)
	for _, c := range []struct {
		name, cmd string
		batch     func(memory.Allocator) arrow.RecordBatch
	}{
		{"binary", `{"op": "echo"}`, func(mem memory.Allocator) arrow.RecordBatch { return imageBatch(mem, "content", big) }},
		{"spark struct", `{"op": "info", "column": "image"}`, func(mem memory.Allocator) arrow.RecordBatch {
			return sparkBatch(mem, 512, 512, big)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := startWith(t, "grpc+unix://"+t.TempDir()+"/s.sock", Config{Workers: 2, MemoryBudget: 4 << 20})
			mem := memory.NewGoAllocator()
			stop := make(chan struct{})
			var peak int64
			var sampler sync.WaitGroup
			sampler.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					peak = max(peak, f.srv.budget.Used())
					runtime.Gosched()
				}
			})
			// A first stream of one batch: the others' first guess.
			first := c.batch(mem)
			if out, err := exchange(t, f.client, c.cmd, first); err != nil || len(out) != 1 {
				t.Fatalf("%d batches back, %v", len(out), err)
			} else {
				out[0].Release()
			}
			first.Release()
			var wg sync.WaitGroup
			for range 8 {
				wg.Go(func() {
					var in []arrow.RecordBatch
					for range 8 {
						in = append(in, c.batch(mem))
					}
					out, err := exchange(t, f.client, c.cmd, in...)
					if err != nil || len(out) != len(in) {
						t.Errorf("%d batches back, %v", len(out), err)
					}
					for _, r := range append(out, in...) {
						r.Release()
					}
				})
			}
			wg.Wait()
			close(stop)
			sampler.Wait()
			// Each stream's reader keeps its last batch until it has read
			// the next (arrow's reader), in the budget: beyond the cap by
			// at most a batch per stream.
			if most := int64(1<<20 + 8*(len(big)+rowBytes)); peak > most || peak < int64(len(big)) {
				t.Errorf("peak in flight %d bytes, want one batch (%d) to the cap and a batch per stream (%d)", peak, len(big), most)
			}
		})
	}
}

// TestBigBatchNotStarved: a batch of most of the 1 MiB input cap (a 4 MiB
// budget), sent while
// three streams of 300 KiB batches keep most of it busy, waits its turn
// only: it is back before any of those streams ends (each keeping its
// bytes for its next batch would hold it back until they end).
func TestBigBatchNotStarved(t *testing.T) {
	f := startWith(t, "grpc://127.0.0.1:0", Config{Workers: 2, MemoryBudget: 4 << 20})
	mem := memory.NewGoAllocator()
	small := imageBatch(mem, "content", make([]byte, 300<<10))
	defer small.Release()
	var ended atomic.Int32
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			out, err := exchange(t, f.client, `{"op": "echo"}`, slices.Repeat([]arrow.RecordBatch{small}, 16)...)
			ended.Add(1)
			if err != nil {
				t.Error(err)
			}
			for _, r := range out {
				r.Release()
			}
		})
	}
	for f.srv.budget.Used() < 800<<10 && ended.Load() == 0 {
		time.Sleep(100 * time.Microsecond)
	}
	big := imageBatch(mem, "content", make([]byte, 600<<10))
	defer big.Release()
	out, err := exchange(t, f.client, `{"op": "echo"}`, big)
	if n := ended.Load(); err != nil || n > 0 {
		t.Errorf("the big batch came back (%v) after %d of the 3 streams had ended", err, n)
	}
	for _, r := range out {
		r.Release()
	}
	wg.Wait()
}

// sparkBatch is one row of Spark's image struct: h x w gray pixels.
func sparkBatch(mem memory.Allocator, h, w int, pix []byte) arrow.RecordBatch {
	st := arrow.StructOf(
		arrow.Field{Name: "origin", Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: "height", Type: arrow.PrimitiveTypes.Int32},
		arrow.Field{Name: "width", Type: arrow.PrimitiveTypes.Int32},
		arrow.Field{Name: "nChannels", Type: arrow.PrimitiveTypes.Int32},
		arrow.Field{Name: "mode", Type: arrow.PrimitiveTypes.Int32},
		arrow.Field{Name: "data", Type: arrow.BinaryTypes.Binary, Nullable: true})
	sb := array.NewStructBuilder(mem, st)
	defer sb.Release()
	sb.Append(true)
	sb.FieldBuilder(0).(*array.StringBuilder).Append("file:/x.png")
	for i, v := range []int32{int32(h), int32(w), 1, 0} {
		sb.FieldBuilder(1 + i).(*array.Int32Builder).Append(v)
	}
	sb.FieldBuilder(5).(*array.BinaryBuilder).Append(pix)
	col := sb.NewArray()
	defer col.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "image", Type: st, Nullable: true}}, nil)
	return array.NewRecordBatch(schema, []arrow.Array{col}, 1)
}

// TestCancelFreesWork: clients that give up mid-stream, again and again,
// leave no queued rows, no bytes in flight and no goroutines behind.
func TestCancelFreesWork(t *testing.T) {
	f := startWith(t, "grpc://127.0.0.1:0", Config{Workers: 1})
	mem := memory.NewGoAllocator()
	img := pngBytes(t, 64, 64)
	rows := make([][]byte, 200)
	for i := range rows {
		rows[i] = img
	}
	rec := imageBatch(mem, "content", rows...)
	defer rec.Release()
	settle := func() int {
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			if f.srv.sched.Depth() == 0 && f.srv.budget.Used() == 0 && f.srv.open.Load() == 0 {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(50 * time.Millisecond)
		return runtime.NumGoroutine()
	}
	streams := 50
	if race {
		streams = 10
	}
	before := settle()
	for i := range streams {
		ctx, cancel := context.WithCancel(context.Background())
		stream, err := f.client.DoExchange(ctx)
		if err != nil {
			t.Fatal(err)
		}
		desc := &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: []byte(`{"op": "fft_convolve", "params": {"sigma": 3}}`)}
		if err := stream.Send(&flight.FlightData{FlightDescriptor: desc}); err != nil {
			t.Fatal(err)
		}
		w := flight.NewRecordWriter(stream, ipc.WithSchema(rec.Schema()))
		for range 3 {
			if w.Write(rec) != nil {
				break
			}
		}
		if i%2 == 0 { // half wait for a first result, half leave at once
			rdr, err := flight.NewRecordReader(stream)
			if err == nil {
				rdr.Next()
				rdr.Release()
			} else if err != io.EOF {
				t.Logf("reader: %v", err)
			}
		}
		cancel()
		w.Close()
	}
	after := settle()
	if d, u := f.srv.sched.Depth(), f.srv.budget.Used(); d != 0 || u != 0 {
		t.Errorf("after %d cancelled streams: %d rows queued, %d bytes in flight", streams, d, u)
	}
	if after > before+5 {
		t.Errorf("goroutines: %d before, %d after", before, after)
	}
}
