package server

import (
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/pixelflight/pixelflight/internal/clip"
	"github.com/pixelflight/pixelflight/udf"
)

// projection is the result columns a stream sends: those the command's
// columns list names, in the op's order, and error always (last). A
// command without a list gets every column.
type projection struct {
	schema *arrow.Schema
	keep   []int // indices into the op's schema; nil: all
}

func project(full *arrow.Schema, columns []string) (projection, error) {
	if columns == nil {
		return projection{schema: full}, nil
	}
	names := fieldNames(full)
	for _, c := range columns {
		if !slices.Contains(names, c) {
			return projection{}, fmt.Errorf("%w: columns: the result has no column %s (columns: %v)", udf.ErrBadCommand, clip.Quote(c), names)
		}
	}
	var keep []int
	var fields []arrow.Field
	for i, f := range full.Fields() {
		if i == len(names)-1 || slices.Contains(columns, f.Name) {
			keep = append(keep, i)
			fields = append(fields, f)
		}
	}
	return projection{schema: arrow.NewSchema(fields, nil), keep: keep}, nil
}

// apply returns rec's kept columns, releasing rec.
func (p projection) apply(rec arrow.RecordBatch) arrow.RecordBatch {
	if p.keep == nil {
		return rec
	}
	defer rec.Release()
	cols := make([]arrow.Array, len(p.keep))
	for i, k := range p.keep {
		cols[i] = rec.Column(k)
	}
	return array.NewRecordBatch(p.schema, cols, rec.NumRows())
}
