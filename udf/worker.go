package udf

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/pixelflight/pixelflight/imageio"
	"github.com/pixelflight/pixelflight/kernels"
	"github.com/pixelflight/pixelflight/kernels/blob"
	"github.com/pixelflight/pixelflight/kernels/haar"
	"github.com/pixelflight/pixelflight/kernels/watershed"
)

// ErrNullRow is the error of a null input row.
var ErrNullRow = errors.New("input row is null")

// Worker holds one goroutine's reusable state: decode buffers, FFT plans
// and kernel spectra. Ops get it from the pool; it is never shared.
type Worker struct {
	lim    Limits
	gray   imageio.Gray
	conv   *kernels.Convolver
	f32    []float32
	seg    *watershed.Segmenter // made on first use
	labels []int32
	blob   *blob.Detector // made on first use
	haar   *haar.Detector // made on first use
}

func newWorker(lim Limits) *Worker {
	return &Worker{lim: lim, conv: kernels.NewConvolver()}
}

// decode turns a row into 8-bit grayscale pixels, reusing the worker's
// buffer: the result is valid until the worker's next decode.
func (w *Worker) decode(in Input) (*imageio.Gray, error) {
	lim := imageio.Limits{MaxPixels: w.lim.MaxPixels}
	switch {
	case in.Null:
		return nil, ErrNullRow
	case in.Image != nil:
		im := in.Image
		if err := imageio.SparkImageGray(im.Height, im.Width, im.NChannels, im.Mode, im.Data, lim, &w.gray); err != nil {
			return nil, err
		}
	default:
		if err := imageio.DecodeGray(in.Bytes, lim, &w.gray); err != nil {
			return nil, err
		}
	}
	return &w.gray, nil
}

// Pool runs rows on a fixed set of workers shared by every stream, so the
// node's cores are used across images and calls.
type Pool struct {
	jobs chan func(*Worker) // unbuffered: a sent job is always run
	quit chan struct{}
	wg   sync.WaitGroup
	size int
}

// ErrPoolClosed is returned by Run once the pool is closed.
var ErrPoolClosed = errors.New("worker pool closed: the server is stopping")

// NewPool starts n workers (at least 1).
func NewPool(n int, lim Limits) *Pool {
	n = max(n, 1)
	p := &Pool{jobs: make(chan func(*Worker)), quit: make(chan struct{}), size: n}
	p.wg.Add(n)
	for range n {
		go func() {
			defer p.wg.Done()
			w := newWorker(lim)
			for {
				select {
				case job := <-p.jobs:
					job(w)
				case <-p.quit:
					return
				}
			}
		}()
	}
	return p
}

// Size is the number of workers.
func (p *Pool) Size() int { return p.size }

// Close stops the workers after the jobs they are running; calls of Run
// still sending rows get ErrPoolClosed.
func (p *Pool) Close() {
	close(p.quit)
	p.wg.Wait()
}

// Result is a batch's output and how many of its rows failed.
type Result struct {
	Record    arrow.RecordBatch
	RowErrors int
}

// Run applies t to every row of col on the pool and returns one output row
// per input row, in order. A row that fails gets nulls and its message in
// the error column; in strict mode the first failing row fails the batch.
func (t *Task) Run(ctx context.Context, p *Pool, col *Column, strict bool, mem memory.Allocator) (Result, error) {
	n := col.Len()
	rows, errs := make([]Row, n), make([]error, n)
	var wg sync.WaitGroup
	wg.Add(n)
	sent := 0
	for i := range n {
		job := func(w *Worker) {
			defer wg.Done()
			defer func() {
				if r := recover(); r != nil {
					errs[i] = fmt.Errorf("internal error on this row (a bug: please report it): %v", r)
				}
			}()
			rows[i], errs[i] = t.row(ctx, w, col.Row(i))
		}
		var err error
		select {
		case p.jobs <- job:
			sent++
			continue
		case <-ctx.Done():
			err = ctx.Err()
		case <-p.quit:
			err = ErrPoolClosed
		}
		wg.Add(sent - n) // drop the rows never sent
		wg.Wait()
		return Result{}, err
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	b := array.NewRecordBuilder(mem, t.Schema)
	defer b.Release()
	nres := len(t.Schema.Fields()) - 1
	errCol := b.Field(nres).(*array.StringBuilder)
	failed := 0
	for i := range n {
		if errs[i] != nil {
			if strict {
				return Result{}, &RowError{Row: i, Err: errs[i]}
			}
			failed++
			for f := range nres {
				b.Field(f).AppendNull()
			}
			errCol.Append(errs[i].Error())
			continue
		}
		rows[i].Append(b)
		errCol.AppendNull()
	}
	return Result{Record: b.NewRecordBatch(), RowErrors: failed}, nil
}

// RowError is the first failing row of a strict call.
type RowError struct {
	Row int
	Err error
}

func (e *RowError) Error() string {
	return fmt.Sprintf("strict mode: row %d of the batch failed: %v", e.Row, e.Err)
}

func (e *RowError) Unwrap() error { return e.Err }
