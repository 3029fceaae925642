package server

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
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
	by := st["rows_by_backend"].(map[string]int64)
	if by["cpu"] == 0 || by["sim"] == 0 {
		t.Errorf("rows by backend %v: want both", by)
	}
	if st["inflight_bytes"].(int64) != 0 || st["queue_depth"].(int64) != 0 {
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

// TestInflightCapHolds: with a 1 MiB cap, 8 streams of 256 KiB batches
// never hold more than the cap, and every row comes back.
func TestInflightCapHolds(t *testing.T) {
	f := startWith(t, "grpc+unix://"+t.TempDir()+"/s.sock", Config{Workers: 2, MaxInflight: 1 << 20})
	mem := memory.NewGoAllocator()
	big := make([]byte, 256<<10)
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
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			var in []arrow.RecordBatch
			for range 8 {
				in = append(in, imageBatch(mem, "content", big))
			}
			out, err := exchange(t, f.client, `{"op": "echo"}`, in...)
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
	if peak > 1<<20 || peak == 0 {
		t.Errorf("peak in flight %d bytes, cap %d", peak, 1<<20)
	}
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
