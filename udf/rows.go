package udf

import (
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Row is one row's results; Append adds them to the builder's result
// fields (every field but "error").
type Row interface {
	Append(b *array.RecordBuilder)
}

// Encoder is a result row whose encoding (a PNG) is left to the
// scheduler's encode stage, off the compute lanes: Encode returns the
// row to append.
type Encoder interface {
	Row
	Encode() (Row, error)
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
