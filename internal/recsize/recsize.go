package recsize

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Bytes is the length of every buffer rec's columns hold, their children's
// (struct fields, list values) and dictionaries' included. A slice counts
// the whole buffers it keeps alive.
func Bytes(rec arrow.RecordBatch) int64 {
	var n int64
	for _, c := range rec.Columns() {
		n += data(c.Data())
	}
	return n
}

func data(d arrow.ArrayData) int64 {
	var n int64
	for _, b := range d.Buffers() {
		if b != nil {
			n += int64(b.Len())
		}
	}
	for _, c := range d.Children() {
		n += data(c)
	}
	// Dictionary returns a nil *array.Data as a non-nil interface.
	if dict, ok := d.Dictionary().(*array.Data); ok && dict != nil {
		n += data(dict)
	}
	return n
}
