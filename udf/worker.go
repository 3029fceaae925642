package udf

import (
	"context"
	"errors"
	"fmt"
	"math"

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

// Worker holds one CPU lane's reusable state: FFT plans, kernel spectra
// and the detectors' buffers, reused from image to image. It is never
// shared: each CPU lane owns one.
type Worker struct {
	conv *kernels.Convolver
	f32  []float32
	seg  *watershed.Segmenter // made on first use
	blob *blob.Detector       // made on first use
	haar *haar.Detector       // made on first use
	grow func(n int64) bool
}

// SetGrow sets what the next rows ask for memory beyond their Need (a
// kernel whose memory depends on what it finds, as detect_blobs' peaks):
// grow takes n more bytes and reports whether it could. nil: no limit.
func (w *Worker) SetGrow(grow func(n int64) bool) { w.grow = grow }

// NewWorker returns a worker.
func NewWorker() *Worker {
	return &Worker{conv: kernels.NewConvolver()}
}

// DecodeInto decodes a row for t into dst (reusing dst.Pix): 8-bit
// grayscale within the server's limits, for a task that decodes
// (t.Decode is DecodeGray). hdr is the row's header from Header, or the
// zero Info to read it here. A bad image is the error; a panic becomes an
// error wrapping ErrInternal.
func (t *Task) DecodeInto(in Input, hdr imageio.Info, dst *imageio.Gray) (err error) {
	defer recoverRow(&err)
	defer func() {
		if errors.Is(err, imageio.ErrTooLarge) {
			err = fmt.Errorf("%w (raise serve's --max-pixels above the image's pixels; under the Spark executor plugin, in spark.pixelflight.args, as \"--max-pixels=N\")", err)
		}
	}()
	lim := imageio.Limits{MaxPixels: t.limits.MaxPixels}
	switch {
	case in.Null:
		return ErrNullRow
	case in.Image != nil:
		im := in.Image
		return imageio.SparkImageGray(im.Height, im.Width, im.NChannels, im.Mode, im.Data, lim, dst)
	case hdr.Format != "":
		return imageio.DecodeGrayInfo(in.Bytes, hdr, lim, dst)
	}
	return imageio.DecodeGray(in.Bytes, lim, dst)
}

// Header is what the header of a row to decode for t gives, within the
// server's limits: for encoded bytes its format and size (hdr for
// DecodeInto), for a Spark image struct its size alone. ok is false when
// the header does not give it (DecodeInto then says why, or finds the
// size itself).
func (t *Task) Header(in Input) (hdr imageio.Info, ok bool) {
	if t.Decode != DecodeGray || in.Null {
		return hdr, false
	}
	if im := in.Image; im != nil {
		info, err := imageio.SparkImageInfo(im.Height, im.Width, im.NChannels, im.Mode, im.Data)
		if err != nil {
			return hdr, false
		}
		hdr.W, hdr.H = info.W, info.H
	} else {
		info, err := imageio.DecodeInfo(in.Bytes)
		if err != nil {
			return hdr, false
		}
		hdr = info
	}
	if hdr.W <= 0 || hdr.H <= 0 || int64(hdr.W)*int64(hdr.H) > t.limits.MaxPixels {
		return imageio.Info{}, false
	}
	return hdr, true
}

// Refused reports whether the decode of a row whose Header is hdr will
// refuse it before allocating (imageio.CheckHeader: data too short for the
// header, too many JPEG scans), so that its own error, not the memory its
// claimed size would need, is the row's.
func (t *Task) Refused(in Input, hdr imageio.Info) bool {
	return in.Image == nil && imageio.CheckHeader(in.Bytes, hdr, imageio.Limits{MaxPixels: t.limits.MaxPixels}) != nil
}

// Compute runs t's computation on one row with w: on g, the row decoded
// by DecodeInto (nil for a task that does not decode). The row may be an
// Encoder, whose encoding is still to be done. A panic becomes the row's
// error (wrapping ErrInternal).
func (t *Task) Compute(w *Worker, in Input, g *imageio.Gray) (row Row, err error) {
	defer recoverRow(&err)
	if in.Null {
		return nil, ErrNullRow
	}
	return t.compute(w, in, g)
}

// Encode finishes a row from Compute or a backend: an Encoder is
// encoded, any other row is returned as it is. A panic becomes the
// error (wrapping ErrInternal).
func Encode(r Row) (row Row, err error) {
	defer recoverRow(&err)
	if e, ok := r.(Encoder); ok {
		return e.Encode()
	}
	return r, nil
}

func recoverRow(err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("%w: %v", ErrInternal, r)
	}
}

// Result is a batch's output, in record batches of at most
// MaxResultBatchBytes, and how many of its rows failed.
type Result struct {
	Records   []arrow.RecordBatch
	RowErrors int
}

// Release releases the result's record batches.
func (r Result) Release() {
	for _, rec := range r.Records {
		if rec != nil {
			rec.Release()
		}
	}
}

// MaxResultBatchBytes bounds the bytes of one result record batch: a
// batch's rows are split into record batches of at most this many bytes of
// results (a single row larger than that alone), so a batch's results may
// add up to any size, where one Arrow binary column, and one gRPC message,
// holds under 2 GiB.
const MaxResultBatchBytes = 64 << 20

// MaxResultBytes is the largest result of one row: an Arrow binary value
// (32-bit offsets) beside up to MaxResultBatchBytes of other rows. A row
// whose result is larger gets ErrResultTooLarge in its row.
const MaxResultBytes = math.MaxInt32 - MaxResultBatchBytes

// ErrResultTooLarge is the error of a row whose result is over
// MaxResultBytes.
var ErrResultTooLarge = errors.New("result too large")

// sized is a result row that knows its bytes (its binary values); rows
// that do not are a few numbers, counted as rowOverhead.
type sized interface {
	Bytes() int64
}

const rowOverhead = 64

// RowBytes is what a result row holds in memory, about.
func RowBytes(r Row) int64 {
	if s, ok := r.(sized); ok {
		return s.Bytes() + rowOverhead
	}
	return rowOverhead
}

// Build assembles one output row per input row, in order, in record
// batches of at most MaxResultBatchBytes: a row whose errs entry is set
// gets nulls and its message in the error column; in strict mode the first
// failing row fails the batch instead. Rows must be encoded (Encode: the
// scheduler's encode stage does it); one that is not is an internal error
// in its row. Each row's result is dropped from rows once appended, so its
// memory goes as the record batches are made.
func (t *Task) Build(rows []Row, errs []error, strict bool, mem memory.Allocator) (Result, error) {
	for i, r := range rows {
		if _, ok := r.(Encoder); ok && errs[i] == nil {
			rows[i], errs[i] = nil, fmt.Errorf("%w: a %s row reached the results unencoded", ErrInternal, t.Op)
		}
		if errs[i] == nil {
			if n := RowBytes(rows[i]) - rowOverhead; n > MaxResultBytes {
				errs[i] = fmt.Errorf("%w: this row's result is %d bytes, over the %d an Arrow binary value holds: "+
					"choose a smaller output (output=png or stats) or lower --max-pixels", ErrResultTooLarge, n, MaxResultBytes)
				rows[i] = nil
			}
		}
		if errs[i] != nil && strict {
			return Result{}, &RowError{Row: i, Err: errs[i]}
		}
	}
	b := array.NewRecordBuilder(mem, t.Schema)
	defer b.Release()
	nres := len(t.Schema.Fields()) - 1
	errCol := b.Field(nres).(*array.StringBuilder)
	var res Result
	var held int64 // bytes in b
	for i, err := range errs {
		n := int64(rowOverhead)
		if err == nil {
			n = RowBytes(rows[i])
		} else {
			n += int64(len(err.Error()))
		}
		if held > 0 && held+n > MaxResultBatchBytes {
			res.Records = append(res.Records, b.NewRecordBatch())
			held = 0
		}
		held += n
		if err != nil {
			res.RowErrors++
			for f := range nres {
				b.Field(f).AppendNull()
			}
			errCol.Append(err.Error())
			continue
		}
		rows[i].Append(b)
		rows[i] = nil
		errCol.AppendNull()
	}
	if held > 0 || len(res.Records) == 0 {
		res.Records = append(res.Records, b.NewRecordBatch())
	}
	return res, nil
}

// ErrorKind names the class of a row error, for metrics: null, empty,
// unknown_format, too_large, corrupt, bad_dims, bad_struct, over_budget,
// cancelled, internal, or other.
func ErrorKind(err error) string {
	for _, k := range []struct {
		err  error
		name string
	}{
		{ErrNullRow, "null"}, {imageio.ErrEmpty, "empty"}, {imageio.ErrUnknownFormat, "unknown_format"},
		{imageio.ErrTooLarge, "too_large"}, {imageio.ErrCorrupt, "corrupt"}, {imageio.ErrBadDims, "bad_dims"},
		{imageio.ErrBadStruct, "bad_struct"}, {ErrOverBudget, "over_budget"}, {context.Canceled, "cancelled"}, {context.DeadlineExceeded, "cancelled"},
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

// Run is the whole op on one row with w, on the CPU: decode, compute,
// encode.
func (t *Task) Run(w *Worker, in Input) (Row, error) {
	var g *imageio.Gray
	if t.Decode == DecodeGray {
		g = new(imageio.Gray)
		if err := t.DecodeInto(in, imageio.Info{}, g); err != nil {
			return nil, err
		}
	}
	r, err := t.Compute(w, in, g)
	if err != nil {
		return nil, err
	}
	return Encode(r)
}
