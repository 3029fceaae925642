package sched

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/pixelflight/pixelflight/udf"
)

func convolve(t *testing.T, params string) *udf.Task {
	t.Helper()
	task, err := udf.NewRegistry(udf.DefaultLimits(), nil).Prepare(udf.Command{Op: "fft_convolve", Params: json.RawMessage(params)})
	if err != nil {
		t.Fatal(err)
	}
	return task
}

// sim is a Sim of lanes lanes, batches of batch, whose fft_convolve takes
// per for a w×h image (and copies take nothing).
func sim(lanes, batch int, per time.Duration, w, h int) *Sim {
	r := DefaultSimRates()
	r.PerImage["fft_convolve"] = per * 512 * 512 / time.Duration(w*h)
	r.Copy = 1e15
	return NewSim(lanes, batch, r)
}

// TestStagedOrder: 8 streams of images of mixed shapes through the decode
// stage, a CPU lane and a sim, with png output through the encode stage:
// each row comes back once, in its place (its image's size is its row's),
// each image is decoded once, and every stage saw every row.
func TestStagedOrder(t *testing.T) {
	s := New(Config{Backends: []Backend{NewCPU(1), sim(2, 4, 100*time.Microsecond, 16, 16)}, MaxDelay: time.Millisecond})
	defer s.Close()
	task := convolve(t, `{"output":"png"}`)
	shapes := [][2]int{{16, 16}, {9, 4}, {5, 7}}
	var wg sync.WaitGroup
	var sent, bad int64
	var mu sync.Mutex
	for stream := range 8 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(stream), 3))
			for batch := range 10 {
				rows := make([][]byte, 1+rng.IntN(10))
				var want [][2]int
				nbad := 0
				for i := range rows {
					sh := shapes[rng.IntN(len(shapes))]
					rows[i] = pngOf(t, sh[0], sh[1], byte(stream+batch+i))
					if rng.IntN(8) == 0 {
						rows[i], sh = []byte("not an image"), [2]int{}
						nbad++
					}
					want = append(want, sh)
				}
				b, err := s.Submit(context.Background(), task, column(t, rows))
				if err != nil {
					t.Error(err)
					return
				}
				wait(t, b)
				out, errs, _ := b.Results()
				res, err := task.Build(out, errs, false, memory.NewGoAllocator())
				if err != nil {
					t.Error(err)
					return
				}
				hs, ws := res.Records[0].Column(0).(*array.Int32), res.Records[0].Column(1).(*array.Int32)
				for i, sh := range want {
					if sh == [2]int{} != hs.IsNull(i) || sh != [2]int{} && (int(ws.Value(i)) != sh[0] || int(hs.Value(i)) != sh[1]) {
						t.Errorf("stream %d batch %d row %d: want %v, got %v", stream, batch, i, sh, res.Records[0])
					}
				}
				res.Records[0].Release()
				mu.Lock()
				sent += int64(len(rows))
				bad += int64(nbad)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	st := s.Stats()
	if st.Decode.Rows != sent {
		t.Errorf("%d decodes for %d rows: want each decoded once", st.Decode.Rows, sent)
	}
	if ran := st.Backends[0].Rows + st.Backends[1].Rows; ran != sent-bad || st.Encode.Rows != ran {
		t.Errorf("backends ran %d rows and %d were encoded, of %d good rows", ran, st.Encode.Rows, sent-bad)
	}
	if st.Queues != (Queues{}) || s.Depth() != 0 {
		t.Errorf("queues after every batch is done: %+v", st.Queues)
	}
}

// failing is a batching backend that fails every batch and counts rows.
type failing struct {
	*Sim
	mu   sync.Mutex
	rows int
}

func (f *failing) Run(ctx context.Context, lane int, items []*Item) error {
	f.mu.Lock()
	f.rows += len(items)
	f.mu.Unlock()
	return errors.New("simulated device fault")
}

// TestFallbackDecodesOnce: a failed device batch goes back to the ready
// queue already decoded: the CPU redoes its rows, and no image is decoded
// twice.
func TestFallbackDecodesOnce(t *testing.T) {
	f := &failing{Sim: sim(1, 16, 0, 8, 8)}
	s := New(Config{Backends: []Backend{NewCPU(1), f}, MaxDelay: 5 * time.Millisecond})
	defer s.Close()
	rows := make([][]byte, 12)
	for i := range rows {
		rows[i] = pngOf(t, 8, 8, byte(i))
	}
	b, err := s.Submit(context.Background(), convolve(t, `{"output":"stats"}`), column(t, rows))
	if err != nil {
		t.Fatal(err)
	}
	wait(t, b)
	_, errs, by := b.Results()
	for i, err := range errs {
		if err != nil {
			t.Errorf("row %d: %v", i, err)
		}
	}
	st := s.Stats()
	if f.rows == 0 || by["cpu"] != len(rows) || st.Decode.Rows != int64(len(rows)) {
		t.Errorf("device got %d rows, backends %v, %d decodes: want a failed batch, every row on the cpu, %d decodes", f.rows, by, st.Decode.Rows, len(rows))
	}
}

// gated is a backend whose lanes wait for gate before each batch.
type gated struct {
	Backend
	gate chan struct{}
}

func (g *gated) Run(ctx context.Context, lane int, items []*Item) error {
	select {
	case <-g.gate:
	case <-ctx.Done():
	}
	return g.Backend.Run(ctx, lane, items)
}

// TestDecodedInBudget: decoded images count in the budget while they
// wait for a backend, and leave it when their rows end.
func TestDecodedInBudget(t *testing.T) {
	budget := NewBudget(64 << 20)
	g := &gated{Backend: sim(1, 64, 0, 32, 32), gate: make(chan struct{})}
	s := New(Config{Backends: []Backend{NewCPU(0), g}, MaxDelay: time.Hour, Budget: budget})
	defer s.Close()
	rows := make([][]byte, 10)
	for i := range rows {
		rows[i] = pngOf(t, 32, 32, byte(i))
	}
	b, err := s.Submit(context.Background(), convolve(t, `{"output":"stats"}`), column(t, rows))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for s.Stats().Queues.Ready != 10 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if w := budget.Working(); w < 10*32*32 {
		t.Errorf("working bytes %d with 10 decoded 32×32 images ready: want at least %d", w, 10*32*32)
	}
	s.Close() // the rows still wait (MaxDelay is an hour): they end with ErrClosed
	wait(t, b)
	if w := budget.Working(); w != 0 {
		t.Errorf("working bytes %d after every row is done", w)
	}
}

// TestCancelEveryStage: a stream cancelled with rows waiting to be
// decoded, decoded and waiting for a backend, and in a backend's lane
// gets every row back with the context's error (but the row in the lane,
// which finishes); the queues empty and the budget is whole again.
func TestCancelEveryStage(t *testing.T) {
	budget := NewBudget(64 << 20)
	g := &gated{Backend: NewCPU(1), gate: make(chan struct{})}
	s := New(Config{Backends: []Backend{g}, Budget: budget, Cores: 1})
	defer s.Close()
	rows := make([][]byte, 40)
	for i := range rows {
		rows[i] = pngOf(t, 16, 16, byte(i))
	}
	ctx, cancel := context.WithCancel(context.Background())
	b, err := s.Submit(ctx, convolve(t, `{"output":"png"}`), column(t, rows))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for q := s.Stats().Queues; (q.Ready == 0 || q.Intake == 0) && time.Now().Before(deadline); q = s.Stats().Queues {
		time.Sleep(time.Millisecond)
	}
	if q := s.Stats().Queues; q.Ready == 0 || q.Intake == 0 {
		t.Fatalf("queues %+v: want rows in the intake and ready", q)
	}
	cancel()
	close(g.gate)
	wait(t, b)
	_, errs, _ := b.Results()
	cancelled := 0
	for _, err := range errs {
		if errors.Is(err, context.Canceled) {
			cancelled++
		}
	}
	if cancelled < len(rows)-1 {
		t.Errorf("%d of %d rows cancelled: %v", cancelled, len(rows), errs)
	}
	if s.Depth() != 0 {
		t.Errorf("depth %d after cancel", s.Depth())
	}
	s.Close()
	if w, u := budget.Working(), budget.Used(); w != 0 || u != 0 {
		t.Errorf("budget after: working %d, used %d", w, u)
	}
}

// TestRouting: with a device much faster than the CPU lanes, the device
// gets the rows (the CPU a few: one to learn its time, and any the
// device's measured rate, timer waits included, leaves it); with one much
// slower, the CPU lanes take most, and the device some; with none, the
// CPU all of them.
func TestRouting(t *testing.T) {
	const n = 120
	task := convolve(t, `{"output":"stats"}`)
	for _, c := range []struct {
		name   string
		side   int // of the images: the CPU's time per row
		device Backend
		check  func(by map[string]int) bool
	}{
		{"fast device", 768, sim(2, 16, 10*time.Microsecond, 768, 768), func(by map[string]int) bool { return by["cpu"] <= n/20 }},
		{"slow device", 128, sim(1, 2, 200*time.Millisecond, 128, 128), func(by map[string]int) bool { return by["sim"] >= 1 && by["cpu"] > n/2 }},
		{"cpu only", 128, nil, func(by map[string]int) bool { return by["cpu"] == n }},
	} {
		t.Run(c.name, func(t *testing.T) {
			rows := make([][]byte, n)
			for i := range rows {
				rows[i] = pngOf(t, c.side, c.side, byte(i))
			}
			bs := []Backend{NewCPU(2)}
			if c.device != nil {
				bs = append(bs, c.device)
			}
			s := New(Config{Backends: bs, MaxDelay: 2 * time.Millisecond})
			defer s.Close()
			var wg sync.WaitGroup
			by := map[string]int{}
			var mu sync.Mutex
			for part := range 4 {
				wg.Go(func() {
					b, err := s.Submit(context.Background(), task, column(t, rows[part*n/4:(part+1)*n/4]))
					if err != nil {
						t.Error(err)
						return
					}
					wait(t, b)
					_, errs, got := b.Results()
					mu.Lock()
					defer mu.Unlock()
					for k, v := range got {
						by[k] += v
					}
					for i, err := range errs {
						if err != nil {
							t.Errorf("row %d: %v", i, err)
						}
					}
				})
			}
			wg.Wait()
			if !c.check(by) {
				t.Errorf("rows by backend %v", by)
			}
			t.Logf("rows by backend %v", by)
		})
	}
}

// stagerCount is a Sim that counts the buffers it has out and the rows
// its lanes find decoded into them.
type stagerCount struct {
	*Sim
	out, staged atomic.Int64
}

func (c *stagerCount) HostBuffer(n int) []byte {
	b := c.Sim.HostBuffer(n)
	if b != nil {
		c.out.Add(1)
	}
	return b
}

func (c *stagerCount) FreeHostBuffer(b []byte) {
	c.out.Add(-1)
	c.Sim.FreeHostBuffer(b)
}

func (c *stagerCount) Run(ctx context.Context, lane int, items []*Item) error {
	for _, it := range items {
		if it.Staged(c) {
			c.staged.Add(1)
		}
	}
	return c.Sim.Run(ctx, lane, items)
}

// TestDecodedIntoStagerMemory: rows of a call a Stager accepts are
// decoded into its memory, which comes back once each row is finished:
// run on it, run on the CPU, failed in decoding (a PNG whose header is
// whole) or cancelled.
func TestDecodedIntoStagerMemory(t *testing.T) {
	st := &stagerCount{Sim: sim(1, 4, 50*time.Microsecond, 16, 16)}
	s := New(Config{Backends: []Backend{NewCPU(1), st}, MaxDelay: time.Millisecond})
	defer s.Close()
	task := convolve(t, `{"output":"stats"}`)
	good := pngOf(t, 16, 16, 1)
	cut := good[:len(good)-20] // header whole, pixels not
	var rows [][]byte
	for i := range 40 {
		rows = append(rows, [][]byte{good, cut, []byte("not an image"), good}[i%4])
	}
	b, err := s.Submit(context.Background(), task, column(t, rows))
	if err != nil {
		t.Fatal(err)
	}
	wait(t, b)
	_, errs, _ := b.Results()
	for i, e := range errs {
		if (e != nil) != (i%4 == 1 || i%4 == 2) {
			t.Errorf("row %d: error %v", i, e)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	b, err = s.Submit(ctx, task, column(t, rows))
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	wait(t, b)
	if n := st.out.Load(); n != 0 {
		t.Errorf("%d buffers not given back", n)
	}
	if st.staged.Load() == 0 {
		t.Error("no row on the stager was decoded into its memory")
	}
}
