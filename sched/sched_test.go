package sched

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/png"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pixelflight/pixelflight/udf"
)

// fake is a second backend: it runs rows on the CPU, records the batches
// it got, can wait on a gate first, and can fail its first batch.
type fake struct {
	name     string
	cpu      *CPU
	batch    int
	gate     chan struct{} // when set, each Run waits for it to close
	failOnce atomic.Bool
	mu       sync.Mutex
	batches  [][]*Item
}

func (f *fake) Name() string             { return f.name }
func (f *fake) Lanes() int               { return f.cpu.Lanes() }
func (f *fake) MaxBatch() int            { return f.batch }
func (f *fake) Accepts(t *udf.Task) bool { return t.Op == "echo" }
func (f *fake) Run(ctx context.Context, lane int, items []*Item) error {
	if f.gate != nil {
		<-f.gate
	}
	f.mu.Lock()
	f.batches = append(f.batches, items)
	f.mu.Unlock()
	if f.failOnce.CompareAndSwap(true, false) {
		return errors.New("simulated device fault: CUDA_ERROR_LAUNCH_FAILED")
	}
	return f.cpu.Run(ctx, lane, items)
}

func task(t *testing.T, op string) *udf.Task {
	t.Helper()
	task, err := udf.NewRegistry(udf.DefaultLimits(), nil).Prepare(udf.Command{Op: op})
	if err != nil {
		t.Fatal(err)
	}
	return task
}

func pngOf(t *testing.T, w, h int, seed byte) []byte {
	t.Helper()
	img := image.NewGray(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = seed + byte(i)
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func column(t *testing.T, rows [][]byte) *udf.Column {
	t.Helper()
	b := array.NewBinaryBuilder(memory.NewGoAllocator(), arrow.BinaryTypes.Binary)
	defer b.Release()
	for _, r := range rows {
		b.Append(r)
	}
	arr := b.NewArray()
	t.Cleanup(arr.Release)
	col, err := udf.NewColumn(arr)
	if err != nil {
		t.Fatal(err)
	}
	return col
}

func wait(t *testing.T, b *Batch) {
	t.Helper()
	select {
	case <-b.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("batch not done after 20s")
	}
}

// TestOrderUnderConcurrency: 16 streams submit batches at once to a CPU
// backend and a batching one; every row comes back once, in its place,
// and both backends did work.
func TestOrderUnderConcurrency(t *testing.T) {
	f := &fake{name: "fake", cpu: NewCPU(2), batch: 8}
	s := New(Config{Backends: []Backend{NewCPU(2), f}, MaxDelay: time.Millisecond})
	defer s.Close()
	echo := task(t, "echo")
	shapes := [][2]int{{4, 3}, {5, 5}, {7, 2}}
	var wg sync.WaitGroup
	var mix sync.Map
	for stream := range 16 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(stream), 1))
			for batch := range 20 {
				rows := make([][]byte, 1+rng.IntN(12))
				for i := range rows {
					sh := shapes[rng.IntN(len(shapes))]
					rows[i] = pngOf(t, sh[0], sh[1], byte(stream*31+batch*7+i))
				}
				b, err := s.Submit(context.Background(), echo, column(t, rows))
				if err != nil {
					t.Error(err)
					return
				}
				wait(t, b)
				out, errs, by := b.Results()
				res, err := echo.Build(out, errs, true, memory.NewGoAllocator())
				if err != nil {
					t.Errorf("stream %d batch %d: %v", stream, batch, err)
					return
				}
				for i := range rows {
					if got := res.Records[0].Column(0).(*array.Binary).Value(i); !bytes.Equal(got, rows[i]) {
						t.Errorf("stream %d batch %d row %d: another row's bytes came back", stream, batch, i)
					}
				}
				res.Records[0].Release()
				n := 0
				for name, k := range by {
					n += k
					v, _ := mix.LoadOrStore(name, new(atomic.Int64))
					v.(*atomic.Int64).Add(int64(k))
				}
				if n != len(rows) {
					t.Errorf("stream %d batch %d: backends ran %d rows of %d", stream, batch, n, len(rows))
				}
			}
		})
	}
	wg.Wait()
	for _, name := range []string{"cpu", "fake"} {
		if v, ok := mix.Load(name); !ok || v.(*atomic.Int64).Load() == 0 {
			t.Errorf("backend %s ran no rows", name)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, b := range f.batches {
		if len(b) > 8 {
			t.Errorf("a batch of %d rows, max 8", len(b))
		}
		for _, it := range b[1:] {
			if it.key != b[0].key {
				t.Errorf("one batch mixes shapes %v and %v", b[0].key, it.key)
			}
		}
	}
	if s.Depth() != 0 {
		t.Errorf("depth %d after every batch is done", s.Depth())
	}
}

// TestMaxDelay: a batching backend alone takes a partial batch once its
// oldest row has waited MaxDelay, and a full one at once.
func TestMaxDelay(t *testing.T) {
	f := &fake{name: "fake", cpu: NewCPU(1), batch: 4}
	// The fallback accepts echo too, but leaves the rows to a batching
	// backend that has not run echo yet (and is gated besides).
	cpu := &fake{name: "cpu", cpu: NewCPU(1), batch: 1, gate: make(chan struct{})}
	s := New(Config{Backends: []Backend{cpu, f}, MaxDelay: 50 * time.Millisecond})
	defer s.Close()
	echo := task(t, "echo")
	img := pngOf(t, 3, 3, 1)
	b, err := s.Submit(context.Background(), echo, column(t, [][]byte{img, img, img}))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for {
		f.mu.Lock()
		n := len(f.batches)
		f.mu.Unlock()
		if n > 0 {
			break
		}
		if time.Since(start) > 10*time.Second {
			t.Fatal("no partial batch after 10s")
		}
		time.Sleep(time.Millisecond)
	}
	if d := time.Since(start); d < 40*time.Millisecond {
		t.Errorf("a partial batch went after %v, before MaxDelay", d)
	}
	f.mu.Lock()
	if len(f.batches[0]) != 3 {
		t.Errorf("partial batch of %d rows, want 3", len(f.batches[0]))
	}
	f.mu.Unlock()
	close(cpu.gate)
	wait(t, b)
	if _, errs, by := b.Results(); errs[0] != nil || errs[1] != nil || errs[2] != nil || by["fake"] != 3 {
		t.Errorf("errors %v, rows by backend %v", errs, by)
	}
}

// TestFaultGoesToFallback: a backend that fails a batch is taken out of
// service and its rows are redone on the CPU; none is lost.
func TestFaultGoesToFallback(t *testing.T) {
	f := &fake{name: "fake", cpu: NewCPU(1), batch: 16, gate: make(chan struct{})}
	f.failOnce.Store(true)
	cpu := &fake{name: "cpu", cpu: NewCPU(1), batch: 1, gate: make(chan struct{})}
	s := New(Config{Backends: []Backend{cpu, f}, MaxDelay: time.Millisecond})
	defer s.Close()
	echo := task(t, "echo")
	rows := make([][]byte, 10)
	for i := range rows {
		rows[i] = pngOf(t, 3, 3, byte(i))
	}
	b, err := s.Submit(context.Background(), echo, column(t, rows))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // both lanes hold batches at their gates
	close(f.gate)
	close(cpu.gate)
	wait(t, b)
	out, errs, by := b.Results()
	for i := range rows {
		if errs[i] != nil || out[i] == nil {
			t.Errorf("row %d: %v", i, errs[i])
		}
	}
	if by["cpu"] != 10 || by["fake"] != 0 {
		t.Errorf("rows by backend %v, want all 10 on cpu", by)
	}
	st := s.Backends()
	if !st[0].Healthy || st[1].Healthy || st[1].Fault == "" {
		t.Errorf("backends after the fault: %+v", st)
	}
}

// TestCancelFreesQueue: a cancelled stream's queued rows leave at once.
func TestCancelFreesQueue(t *testing.T) {
	cpu := &fake{name: "cpu", cpu: NewCPU(1), batch: 1, gate: make(chan struct{})}
	s := New(Config{Backends: []Backend{cpu}})
	defer s.Close()
	echo := task(t, "echo")
	rows := make([][]byte, 1000)
	for i := range rows {
		rows[i] = []byte(fmt.Sprint(i))
	}
	ctx, cancel := context.WithCancel(context.Background())
	b, err := s.Submit(ctx, echo, column(t, rows))
	if err != nil {
		t.Fatal(err)
	}
	other, err := s.Submit(context.Background(), echo, column(t, rows[:5]))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	if d := s.Depth(); d != 1004 { // one row is held at the gate
		t.Fatalf("depth %d, want 1004", d)
	}
	cancel()
	deadline := time.Now().Add(5 * time.Second)
	for s.Depth() != 5 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if d := s.Depth(); d != 5 {
		t.Fatalf("depth %d after cancel, want the other stream's 5", d)
	}
	close(cpu.gate)
	wait(t, b)
	wait(t, other)
	_, errs, _ := b.Results()
	for i, err := range errs {
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled row %d: %v", i, err)
		}
	}
	if _, errs, _ := other.Results(); errs[4] != nil {
		t.Fatalf("the other stream's row: %v", errs[4])
	}
}

// TestClose: rows queued at Close end with ErrClosed; Submit then fails.
func TestClose(t *testing.T) {
	cpu := &fake{name: "cpu", cpu: NewCPU(1), batch: 1, gate: make(chan struct{})}
	s := New(Config{Backends: []Backend{cpu}})
	echo := task(t, "echo")
	b, err := s.Submit(context.Background(), echo, column(t, [][]byte{[]byte("a"), []byte("b"), []byte("c")}))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // the lane holds the first row at the gate
	time.AfterFunc(20*time.Millisecond, func() { close(cpu.gate) })
	s.Close()
	wait(t, b)
	_, errs, _ := b.Results()
	if errs[0] != nil || !errors.Is(errs[1], ErrClosed) || !errors.Is(errs[2], ErrClosed) {
		t.Errorf("rows at close: %v", errs)
	}
	if _, err := s.Submit(context.Background(), echo, column(t, [][]byte{[]byte("d")})); !errors.Is(err, ErrClosed) {
		t.Errorf("Submit after Close: %v", err)
	}
}

// TestBudget: input holders never exceed the input's quarter of the
// budget; a request above it takes the whole quarter; a cancelled wait
// returns the context's error.
func TestBudget(t *testing.T) {
	b := NewBudget(400)
	var used, peak atomic.Int64
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 2))
			for range 200 {
				n, err := b.Acquire(context.Background(), 1+rng.Int64N(60))
				if err != nil {
					t.Error(err)
					return
				}
				u := used.Add(n)
				for p := peak.Load(); u > p && !peak.CompareAndSwap(p, u); p = peak.Load() {
				}
				time.Sleep(time.Duration(rng.IntN(50)) * time.Microsecond)
				used.Add(-n)
				b.Release(n)
			}
		})
	}
	wg.Wait()
	if p := peak.Load(); p > 100 || p < 60 {
		t.Errorf("peak in flight %d: want 60..100", p)
	}
	if n, err := b.Acquire(context.Background(), 500); n != 100 || err != nil {
		t.Fatalf("oversized request took %d, %v", n, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := b.Acquire(ctx, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("acquire on a full budget: %v", err)
	}
	b.Release(100)
	if b.Used() != 0 {
		t.Fatalf("used %d", b.Used())
	}
}

// TestNoLanesNoFallback: with a fallback of no lanes the other backend
// runs everything; a call it refuses fails at once, and its failure is
// the rows' error, not a hang.
func TestNoLanesNoFallback(t *testing.T) {
	f := &fake{name: "fake", cpu: NewCPU(1), batch: 4}
	s := New(Config{Backends: []Backend{NewCPU(0), f}, MaxDelay: time.Millisecond})
	defer s.Close()
	if _, err := s.Submit(context.Background(), task(t, "info"), column(t, [][]byte{[]byte("x")})); !errors.Is(err, ErrNoBackend) {
		t.Fatalf("info with no backend taking it: %v", err)
	}
	b, err := s.Submit(context.Background(), task(t, "echo"), column(t, [][]byte{[]byte("x"), []byte("y")}))
	if err != nil {
		t.Fatal(err)
	}
	wait(t, b)
	if _, errs, by := b.Results(); errs[0] != nil || by["fake"] != 2 {
		t.Fatalf("errors %v, by backend %v", errs, by)
	}
	f.failOnce.Store(true)
	b, err = s.Submit(context.Background(), task(t, "echo"), column(t, [][]byte{[]byte("z")}))
	if err != nil {
		t.Fatal(err)
	}
	wait(t, b)
	if _, errs, _ := b.Results(); !errors.Is(errs[0], ErrNoBackend) || !strings.Contains(errs[0].Error(), "CUDA_ERROR_LAUNCH_FAILED") {
		t.Fatalf("row of a failed batch without fallback: %v", errs[0])
	}
}

// TestRowAdmission: a row holds what its op needs (udf.Task.Need) from
// before its decode until its stream frees it, keeping only its result's
// bytes once computed; a row that needs more than MaxRow is its own error,
// naming the sizes and the flag; rows that must wait for memory all run,
// in turn, without passing the budget.
func TestRowAdmission(t *testing.T) {
	b := NewBudget(8 << 20) // 6 MiB a row
	s := New(Config{Backends: []Backend{NewCPU(2)}, Budget: b})
	defer s.Close()
	fft := task(t, "fft_convolve") // f32 by the separable method: 32 bytes per pixel, and 1 MiB a row
	batch, err := s.Submit(context.Background(), fft, column(t, [][]byte{pngOf(t, 64, 32, 1), pngOf(t, 1000, 1000, 2)}))
	if err != nil {
		t.Fatal(err)
	}
	wait(t, batch)
	_, errs, _ := batch.Results()
	if errs[0] != nil {
		t.Fatal(errs[0])
	}
	for _, want := range []string{"1000×1000", "31.5 MiB", "32 B per pixel", "6.0 MiB", "8.0 MiB", "--memory-budget"} {
		if !errors.Is(errs[1], udf.ErrOverBudget) || !strings.Contains(errs[1].Error(), want) {
			t.Fatalf("the 1000x1000 row: %v; want ErrOverBudget naming %q", errs[1], want)
		}
	}
	if w := b.Working(); w != 4*64*32+64 { // the f32 result, until written
		t.Fatalf("held %d after the batch, want its result's %d", w, 4*64*32+64)
	}
	batch.Free(0, batch.Len())
	if w := b.Working(); w != 0 {
		t.Fatalf("held %d after Free", w)
	}

	// 24 rows of 320x320 need 5.8 MiB each: one at a time fits.
	var peak atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			default:
			}
			peak.Store(max(peak.Load(), b.Working()))
			time.Sleep(50 * time.Microsecond)
		}
	}()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			rows := make([][]byte, 6)
			for i := range rows {
				rows[i] = pngOf(t, 320, 320, byte(i))
			}
			batch, err := s.Submit(context.Background(), fft, column(t, rows))
			if err != nil {
				t.Error(err)
				return
			}
			// As a stream does: free each finished row at once.
			for freed := 0; freed < batch.Len(); {
				n, grows := batch.Prefix()
				batch.Free(freed, n)
				freed = n
				if freed < batch.Len() {
					<-grows
				}
			}
			if _, errs, _ := batch.Results(); errs[0] != nil || errs[5] != nil {
				t.Errorf("row errors: %v", errs)
			}
		})
	}
	wg.Wait()
	close(stop)
	<-sampled
	// One row's need and the results of finished rows not yet freed: two
	// rows' needs (11.6 MiB) would pass the limit.
	if p := peak.Load(); p > b.Limit() || p < 4<<20 {
		t.Errorf("rows held %d at most, want one row's need (5.8 MiB) and results, within the limit (%d)", p, b.Limit())
	}
	if w := b.Working(); w != 0 {
		t.Errorf("held %d after every row was freed", w)
	}
}

// device is a batching backend of one lane, for echo and fft_convolve.
// It waits on gate first when set, then fails the batch when fail is set
// or a row is "fault"; it declines a row "decline", gives a row "badpng"
// a result that fails to encode, and echoes the others.
type device struct {
	gate chan struct{}
	fail bool
}

func (d *device) Name() string  { return "dev" }
func (d *device) Lanes() int    { return 1 }
func (d *device) MaxBatch() int { return 2 }
func (d *device) Accepts(t *udf.Task) bool {
	return t.Op == "echo" || t.Op == "fft_convolve"
}
func (d *device) Run(_ context.Context, _ int, items []*Item) error {
	if d.gate != nil {
		<-d.gate
	}
	for _, it := range items {
		switch in := string(it.In.Bytes); {
		case d.fail || in == "fault":
			return errors.New("device lost: CUDA_ERROR_LAUNCH_FAILED")
		case in == "decline":
			it.Decline()
		case in == "badpng":
			it.Row = badPNG{}
		default:
			it.Row = udf.StatsRow(0, 0, 0, 0)
		}
	}
	return nil
}

// badPNG is a result whose encoding fails.
type badPNG struct{ udf.Row }

func (badPNG) Encode() (udf.Row, error) { return nil, errors.New("png: cannot encode") }

// TestFaultNoFallbackEndsQueued: with a fallback of no lanes (--workers 0
// beside a GPU), a backend that fails a batch ends not only that batch's
// rows but every row queued for it (decoded or not), at once, and new
// ones are refused.
func TestFaultNoFallbackEndsQueued(t *testing.T) {
	dev := &device{gate: make(chan struct{}), fail: true}
	s := New(Config{Backends: []Backend{NewCPU(0), dev}, MaxDelay: time.Millisecond, Cores: 1})
	defer s.Close()
	conv := convolve(t, `{"output":"stats"}`)
	imgs := make([][]byte, 20) // more than the ready queue holds: some stay in the intake
	for i := range imgs {
		imgs[i] = pngOf(t, 8, 8, byte(i))
	}
	bc, err := s.Submit(context.Background(), conv, column(t, imgs))
	if err != nil {
		t.Fatal(err)
	}
	be, err := s.Submit(context.Background(), task(t, "echo"), column(t, [][]byte{{1}, {2}, {3}}))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // the lane holds a batch at the gate
	close(dev.gate)
	for _, b := range []*Batch{bc, be} {
		select {
		case <-b.Done():
		case <-time.After(5 * time.Second):
			t.Fatalf("rows not done 5s after the device failed: %d still queued", s.Depth())
		}
		_, errs, _ := b.Results()
		for i, err := range errs {
			if !errors.Is(err, ErrNoBackend) {
				t.Errorf("row %d: %v, want ErrNoBackend", i, err)
			}
		}
	}
	if d := s.Depth(); d != 0 {
		t.Errorf("depth %d", d)
	}
	if _, err := s.Submit(context.Background(), conv, column(t, imgs[:1])); !errors.Is(err, ErrNoBackend) {
		t.Errorf("Submit after the fault: %v", err)
	}
}

// TestRowErrorsCounted: rows_total and row_errors_total count the rows of
// a failed batch without a fallback, a declined row without one, and a
// row whose result fails to encode.
func TestRowErrorsCounted(t *testing.T) {
	reg := prometheus.NewRegistry()
	s := New(Config{Backends: []Backend{NewCPU(0), &device{}}, MaxDelay: time.Millisecond, Metrics: NewMetrics(reg)})
	defer s.Close()
	echo := task(t, "echo")
	for _, rows := range [][][]byte{{[]byte("decline"), []byte("badpng")}, {[]byte("fault"), []byte("x")}} {
		b, err := s.Submit(context.Background(), echo, column(t, rows))
		if err != nil {
			t.Fatal(err)
		}
		wait(t, b)
		if _, errs, _ := b.Results(); errs[0] == nil || errs[1] == nil {
			t.Fatalf("rows %q: errors %v", rows, errs)
		}
	}
	count := func(name string) (n float64) {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				if mf.GetName() == name {
					n += m.GetCounter().GetValue()
				}
			}
		}
		return n
	}
	if rows, errs := count("pixelflight_rows_total"), count("pixelflight_row_errors_total"); rows != 4 || errs != 4 {
		t.Errorf("rows_total %v, row_errors_total %v; want 4 and 4", rows, errs)
	}
}

// queued reports whether n requests wait for b.
func queued(b *Budget, n int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.queue) == n
}

// TestBudgetFirstComeFirstServed: a request waiting for the budget holds
// back later ones that would fit, so they cannot keep it waiting; when it
// gives up, the next goes.
func TestBudgetFirstComeFirstServed(t *testing.T) {
	b := NewBudget(400) // 100 for input
	ctx := context.Background()
	acquire := func(ctx context.Context, n int64) chan int64 {
		got := make(chan int64, 1)
		go func() {
			n, err := b.Acquire(ctx, n)
			if err != nil {
				n = -1
			}
			got <- n
		}()
		return got
	}
	waitQueued := func(n int) {
		for !queued(b, n) {
			time.Sleep(time.Millisecond)
		}
	}
	held, _ := b.Acquire(ctx, 60)
	big := acquire(ctx, 90)
	waitQueued(1)
	small := acquire(ctx, 20) // it fits beside the 60, but comes later
	waitQueued(2)
	select {
	case <-small:
		t.Fatal("a later request of 20 went before a waiting one of 90")
	case <-time.After(10 * time.Millisecond):
	}
	b.Release(held)
	if n := <-big; n != 90 {
		t.Fatalf("the waiting request took %d", n)
	}
	third := acquire(ctx, 5) // it fits beside the 90, but the 20 waits
	waitQueued(2)
	b.Release(90)
	if n, m := <-small, <-third; n != 20 || m != 5 {
		t.Fatalf("took %d and %d, want 20 and 5", n, m)
	}
	b.Release(25)

	// A waiter that gives up lets the next one go.
	held, _ = b.Acquire(ctx, 80)
	bigCtx, cancelBig := context.WithCancel(ctx)
	big = acquire(bigCtx, 90)
	waitQueued(1)
	small = acquire(ctx, 5)
	waitQueued(2)
	cancelBig()
	if n := <-big; n != -1 {
		t.Fatalf("the cancelled request took %d", n)
	}
	select {
	case n := <-small:
		if n != 5 {
			t.Fatalf("took %d", n)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a request behind a cancelled one still waits")
	}
	b.Release(held + 5)
	if u := b.Used(); u != 0 {
		t.Fatalf("used %d", u)
	}
}

// TestBudgetGrow: a running row takes more of the budget only while it
// fits, never waiting, and gives it back with the rest of its need.
func TestBudgetGrow(t *testing.T) {
	b := NewBudget(400) // rows: 400 less the input, up to 100 of it
	tk := b.Row()
	if err := b.Admit(context.Background(), tk, 250); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Acquire(context.Background(), 50); err != nil {
		t.Fatal(err)
	}
	if !b.Grow(100) || b.Grow(1) || b.Working() != 350 {
		t.Fatalf("grew to %d; want 350 and no more beside 50 of input", b.Working())
	}
	b.Release(50)
	if !b.Grow(50) || b.Grow(1) {
		t.Fatalf("grew to %d; want 400 with no input", b.Working())
	}
	b.Free(400)
	if b.Working() != 0 {
		t.Fatalf("held %d after Free", b.Working())
	}
}

// TestCPULetsGoWhenIdle: a CPU lane idle for idleDrop lets go of a worker
// holding more than idleKeep, keeps a small one, and a busy lane keeps
// its worker.
func TestCPULetsGoWhenIdle(t *testing.T) {
	c := NewCPU(1)
	c.keep = 1 << 30
	w := c.workers[0]
	c.held[0]["fft_convolve"] = 100 << 20
	now := time.Now()
	if dropped, again := c.idle(0, now); dropped || again != idleDrop {
		t.Fatalf("just idle: dropped %v, again in %v; want idleDrop", dropped, again)
	}
	if dropped, _ := c.idle(0, now.Add(idleDrop/2)); dropped || c.workers[0] != w {
		t.Fatal("dropped before idleDrop")
	}
	if dropped, _ := c.idle(0, now.Add(idleDrop)); !dropped || c.workers[0] == w || len(c.held[0]) != 0 {
		t.Fatal("a large worker kept after idleDrop")
	}
	c.held[0]["watershed"] = 1 << 20
	if dropped, again := c.idle(0, now.Add(10*idleDrop)); dropped || again != 0 {
		t.Fatalf("a small worker: dropped %v, again in %v", dropped, again)
	}
}
