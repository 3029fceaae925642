package udf

import (
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/pixelflight/pixelflight/internal/clip"
)

// Input is one row of the input column: encoded image bytes, or Spark's
// image struct.
type Input struct {
	Null  bool
	Bytes []byte
	Image *SparkImage
}

// SparkImage is a row of Spark's image data source: pixels row-major,
// interleaved, BGR(A) for 3 or 4 channels; Mode is the OpenCV type.
type SparkImage struct {
	Origin                         string
	Height, Width, NChannels, Mode int32
	Data                           []byte
}

// sparkFields are the struct fields an image column must have, with the
// integer fields read as int32.
var sparkFields = [...]string{"origin", "height", "width", "nChannels", "mode", "data"}

// Column gives row access to an input column.
type Column struct {
	n   int
	get func(i int) Input
}

// CheckColumn reports whether a column of type dt can be read as images.
func CheckColumn(name string, dt arrow.DataType) error {
	switch dt.ID() {
	case arrow.BINARY, arrow.LARGE_BINARY, arrow.BINARY_VIEW:
		return nil
	case arrow.STRUCT:
		st := dt.(*arrow.StructType)
		for _, f := range sparkFields {
			i, ok := st.FieldIdx(f)
			if !ok {
				return fmt.Errorf("%w: column %s is a struct without field %q: want binary image bytes or Spark's image struct (origin, height, width, nChannels, mode, data)", ErrBadCommand, clip.Quote(name), f)
			}
			want := []arrow.DataType{arrow.PrimitiveTypes.Int32}
			switch f {
			case "origin":
				want = []arrow.DataType{arrow.BinaryTypes.String, arrow.BinaryTypes.LargeString, arrow.BinaryTypes.StringView}
			case "data":
				want = []arrow.DataType{arrow.BinaryTypes.Binary, arrow.BinaryTypes.LargeBinary, arrow.BinaryTypes.BinaryView}
			}
			got := st.Field(i).Type
			if !slices.ContainsFunc(want, func(t arrow.DataType) bool { return t.ID() == got.ID() }) {
				return fmt.Errorf("%w: column %s field %q is %s, want %s", ErrBadCommand, clip.Quote(name), f, got, oneOf(want))
			}
		}
		return nil
	}
	return fmt.Errorf("%w: column %s is %s: want binary, large_binary or Spark's image struct", ErrBadCommand, clip.Quote(name), clip.String(dt.String()))
}

// NewColumn wraps an array that passed CheckColumn. The array came from
// the network: its offsets and views are checked first, so that corrupt
// buffers are a bad command instead of a panic when a row is read.
func NewColumn(a arrow.Array) (*Column, error) {
	if err := CheckColumn("input", a.DataType()); err != nil {
		return nil, err
	}
	if err := validate(a); err != nil {
		return nil, fmt.Errorf("%w: corrupt input column: %w", ErrBadCommand, err)
	}
	c := &Column{n: a.Len()}
	type bytesArray interface{ Value(int) []byte }
	switch b := a.(type) {
	case bytesArray:
		c.get = func(i int) Input {
			if a.IsNull(i) {
				return Input{Null: true}
			}
			return Input{Bytes: b.Value(i)}
		}
	case *array.Struct:
		st := b.DataType().(*arrow.StructType)
		field := func(name string) arrow.Array { i, _ := st.FieldIdx(name); return b.Field(i) }
		// utf8, large_utf8 or string_view; binary, large_binary or binary_view.
		origin := field("origin").(interface{ Value(int) string })
		h, w := field("height").(*array.Int32), field("width").(*array.Int32)
		nc, mode := field("nChannels").(*array.Int32), field("mode").(*array.Int32)
		data := field("data")
		pixels := data.(bytesArray)
		c.get = func(i int) Input {
			if b.IsNull(i) || data.IsNull(i) {
				return Input{Null: true}
			}
			return Input{Image: &SparkImage{
				Origin: origin.Value(i), Height: h.Value(i), Width: w.Value(i),
				NChannels: nc.Value(i), Mode: mode.Value(i), Data: pixels.Value(i),
			}}
		}
	default:
		return nil, fmt.Errorf("%w: column of type %s", ErrBadCommand, a.DataType())
	}
	return c, nil
}

// oneOf words a list of types: "binary, large_binary or binary_view".
func oneOf(types []arrow.DataType) string {
	names := make([]string, len(types))
	for i, t := range types {
		names[i] = t.String()
	}
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// Len is the number of rows.
func (c *Column) Len() int { return c.n }

// Row returns row i.
func (c *Column) Row(i int) Input { return c.get(i) }

// validate checks a's buffers: arrow's full validation (offsets within
// the data, never decreasing; nested fields too), then what it leaves out
// for binary and string views, a struct's fields included: every non-null
// view inside its data buffers.
func validate(a arrow.Array) error {
	if err := array.ValidateFull(a); err != nil {
		return err
	}
	return validateViews(a)
}

// validateViews is validate's part for views.
func validateViews(a arrow.Array) error {
	if st, ok := a.(*array.Struct); ok {
		for i := range st.NumField() {
			if err := validateViews(st.Field(i)); err != nil {
				return fmt.Errorf("field %s: %w", clip.Quote(st.DataType().(*arrow.StructType).Field(i).Name), err)
			}
		}
		return nil
	}
	v, ok := a.(interface {
		ValueHeader(int) *arrow.ViewHeader
	})
	if !ok {
		return nil
	}
	bufs := a.Data().Buffers()[2:]
	for i := range a.Len() {
		h := v.ValueHeader(i)
		if a.IsNull(i) || h.Len() >= 0 && h.IsInline() {
			continue
		}
		k, off, n := int(h.BufferIndex()), int64(h.BufferOffset()), int64(h.Len())
		if n < 0 || k < 0 || k >= len(bufs) || bufs[k] == nil || off < 0 || off+n > int64(bufs[k].Len()) {
			return fmt.Errorf("binary view %d (length %d, buffer %d, offset %d) is outside the %d data buffers", i, n, k, off, len(bufs))
		}
	}
	return nil
}
