package udf

import (
	"context"
	"errors"
	"fmt"
	"time"

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

// ErrInternal marks a row that hit a bug (a recovered panic).
var ErrInternal = errors.New("internal error on this row (a bug: please report it)")

// Worker holds one goroutine's reusable state: decode buffers, FFT plans
// and kernel spectra. It is never shared: each CPU lane owns one.
type Worker struct {
	lim     Limits
	gray    imageio.Gray
	conv    *kernels.Convolver
	f32     []float32
	seg     *watershed.Segmenter // made on first use
	labels  []int32
	blob    *blob.Detector // made on first use
	haar    *haar.Detector // made on first use
	decoded time.Duration  // time spent decoding since the last Do
}

// NewWorker returns a worker for rows within lim.
func NewWorker(lim Limits) *Worker {
	return &Worker{lim: lim, conv: kernels.NewConvolver()}
}

// decode turns a row into 8-bit grayscale pixels, reusing the worker's
// buffer: the result is valid until the worker's next decode.
func (w *Worker) decode(in Input) (*imageio.Gray, error) {
	defer func(t time.Time) { w.decoded += time.Since(t) }(time.Now())
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

// Do runs t on one row with w. A panic becomes the row's error (wrapping
// ErrInternal). decode is the part of the time spent decoding the image.
func (t *Task) Do(ctx context.Context, w *Worker, in Input) (row Row, decode time.Duration, err error) {
	w.decoded = 0
	defer func() {
		if r := recover(); r != nil {
			row, err = nil, fmt.Errorf("%w: %v", ErrInternal, r)
		}
		decode = w.decoded
	}()
	row, err = t.row(ctx, w, in)
	return row, 0, err
}

// Result is a batch's output and how many of its rows failed.
type Result struct {
	Record    arrow.RecordBatch
	RowErrors int
}

// Build assembles one output row per input row, in order: a row whose
// errs entry is set gets nulls and its message in the error column; in
// strict mode the first failing row fails the batch instead.
func (t *Task) Build(rows []Row, errs []error, strict bool, mem memory.Allocator) (Result, error) {
	b := array.NewRecordBuilder(mem, t.Schema)
	defer b.Release()
	nres := len(t.Schema.Fields()) - 1
	errCol := b.Field(nres).(*array.StringBuilder)
	failed := 0
	for i, err := range errs {
		if err != nil {
			if strict {
				return Result{}, &RowError{Row: i, Err: err}
			}
			failed++
			for f := range nres {
				b.Field(f).AppendNull()
			}
			errCol.Append(err.Error())
			continue
		}
		rows[i].Append(b)
		errCol.AppendNull()
	}
	return Result{Record: b.NewRecordBatch(), RowErrors: failed}, nil
}

// ErrorKind names the class of a row error, for metrics: null, empty,
// unknown_format, too_large, corrupt, bad_dims, bad_struct, cancelled,
// internal, or other.
func ErrorKind(err error) string {
	for _, k := range []struct {
		err  error
		name string
	}{
		{ErrNullRow, "null"}, {imageio.ErrEmpty, "empty"}, {imageio.ErrUnknownFormat, "unknown_format"},
		{imageio.ErrTooLarge, "too_large"}, {imageio.ErrCorrupt, "corrupt"}, {imageio.ErrBadDims, "bad_dims"},
		{imageio.ErrBadStruct, "bad_struct"}, {context.Canceled, "cancelled"}, {context.DeadlineExceeded, "cancelled"},
		{ErrInternal, "internal"},
	} {
		if errors.Is(err, k.err) {
			return k.name
		}
	}
	return "other"
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
