package server

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestResultsWrittenAsRowsWait: a budget of 17 MiB (12.75 MiB a row), one
// batch of 48 rows of 320x320 fft_convolve f32 by FFT (about 7 MiB each at
// their peak, 400 KiB of result each: 19 MiB of results, more than the
// budget). A row
// keeps its result's bytes until it is written, so the rows after the
// first few can only run once the stream writes out the finished ones:
// every row comes back, in order, in several result batches, and nothing
// is held after.
func TestResultsWrittenAsRowsWait(t *testing.T) {
	const budget = 17 << 20
	f := startWith(t, "grpc://127.0.0.1:0", Config{Workers: 2, MemoryBudget: budget})
	mem := memory.NewGoAllocator()
	rows := make([][]byte, 48)
	for i := range rows {
		rows[i] = pngBytes(t, 320, 320-i)
	}
	rec := imageBatch(mem, "content", rows...)
	defer rec.Release()
	done := make(chan struct{})
	go func() {
		defer close(done)
		// A 15×15 matrix of rank above 1 goes by FFT, whose rows take the
		// most memory (their transform's too): two rows fit at a time.
		var m [15][15]int
		for i := range m {
			for j := range m[i] {
				m[i][j] = (i*15 + j*j) % 7
			}
		}
		matrix, _ := json.Marshal(m)
		out, err := exchange(t, f.client, `{"op": "fft_convolve", "params": {"output": "f32", "matrix": `+string(matrix)+`}}`, rec)
		if err != nil {
			t.Error(err)
			return
		}
		i := 0
		for _, r := range out {
			w, errs := r.Column(1).(*array.Int32), r.Column(3).(*array.String)
			for j := range int(r.NumRows()) {
				if errs.IsValid(j) || int(w.Value(j)) != 320 || int(r.Column(0).(*array.Int32).Value(j)) != 320-i {
					t.Errorf("row %d: %v", i, r)
				}
				i++
			}
			r.Release()
		}
		if i != len(rows) || len(out) < 2 {
			t.Errorf("%d rows in %d result batches, want %d in several", i, len(out), len(rows))
		}
	}()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("the batch did not come back: rows waiting for memory that written results would free?")
	}
	deadline := time.Now().Add(5 * time.Second)
	for f.srv.budget.Working() != 0 || f.srv.budget.Used() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("held after the stream: rows %d, input %d", f.srv.budget.Working(), f.srv.budget.Used())
		}
		time.Sleep(time.Millisecond)
	}
}

// TestRowOverBudget: a row its op could never run within the budget is
// an error in its own row, naming the need and the flag; its neighbours
// come back.
func TestRowOverBudget(t *testing.T) {
	f := startWith(t, "grpc://127.0.0.1:0", Config{Workers: 2, MemoryBudget: 16 << 20})
	mem := memory.NewGoAllocator()
	rec := imageBatch(mem, "content", pngBytes(t, 64, 64), pngBytes(t, 1200, 1200), pngBytes(t, 32, 32))
	defer rec.Release()
	out, err := exchange(t, f.client, `{"op": "detect_blobs"}`, rec)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, r := range out {
			r.Release()
		}
	}()
	if len(out) != 1 || out[0].NumRows() != 3 {
		t.Fatalf("%d result batches", len(out))
	}
	errs := out[0].Column(1).(*array.String)
	if errs.IsValid(0) || errs.IsValid(2) || !strings.Contains(errs.Value(1), "needs about 62.8 MiB for detect_blobs") ||
		!strings.Contains(errs.Value(1), "--memory-budget") {
		t.Fatalf("errors: %v", errs)
	}
}
