package udf

import (
	"context"
	"errors"
	"fmt"

	"github.com/pixelflight/pixelflight/imageio"
)

// ErrNullRow is the error of a null input row.
var ErrNullRow = errors.New("input row is null")

// ErrInternal marks a row that hit a bug (a recovered panic).
var ErrInternal = errors.New("internal error on this row (a bug: please report it)")

// ErrResultTooLarge is the error of a row whose result is over
// MaxResultBytes.
var ErrResultTooLarge = errors.New("result too large")

// ErrOverBudget is the error of a row whose op would need more memory
// than the sidecar's budget lets one row take.
var ErrOverBudget = errors.New("over the memory budget")

func recoverRow(err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("%w: %v", ErrInternal, r)
	}
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
