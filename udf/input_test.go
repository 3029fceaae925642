package udf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// sparkType is Spark's image struct with origin and data of the given types.
func sparkType(origin, data arrow.DataType) *arrow.StructType {
	return arrow.StructOf(
		arrow.Field{Name: "origin", Type: origin, Nullable: true},
		arrow.Field{Name: "height", Type: arrow.PrimitiveTypes.Int32},
		arrow.Field{Name: "width", Type: arrow.PrimitiveTypes.Int32},
		arrow.Field{Name: "nChannels", Type: arrow.PrimitiveTypes.Int32},
		arrow.Field{Name: "mode", Type: arrow.PrimitiveTypes.Int32},
		arrow.Field{Name: "data", Type: data, Nullable: true},
	)
}

// sparkStruct is an image struct column with origin and data of the given
// types: one 2x1 gray row, then one whose data is null.
func sparkStruct(t *testing.T, origin, data arrow.DataType) arrow.Array {
	t.Helper()
	sb := array.NewStructBuilder(memory.NewGoAllocator(), sparkType(origin, data))
	defer sb.Release()
	for row := range 2 {
		sb.Append(true)
		sb.FieldBuilder(0).(interface{ Append(string) }).Append("file:/a/long/enough/path.png")
		for i, v := range []int32{1, 2, 1, 0} {
			sb.FieldBuilder(1 + i).(*array.Int32Builder).Append(v)
		}
		if row == 0 {
			sb.FieldBuilder(5).(interface{ Append([]byte) }).Append([]byte{7, 9})
		} else {
			sb.FieldBuilder(5).AppendNull()
		}
	}
	a := sb.NewArray()
	t.Cleanup(a.Release)
	return a
}

// Spark sends the image struct's origin as large_utf8 and data as
// large_binary under spark.sql.execution.arrow.useLargeVarTypes; views
// are taken too.
func TestSparkStructVarTypes(t *testing.T) {
	for _, origin := range []arrow.DataType{arrow.BinaryTypes.String, arrow.BinaryTypes.LargeString, arrow.BinaryTypes.StringView} {
		for _, data := range []arrow.DataType{arrow.BinaryTypes.Binary, arrow.BinaryTypes.LargeBinary, arrow.BinaryTypes.BinaryView} {
			a := sparkStruct(t, origin, data)
			col, err := NewColumn(a)
			if err != nil {
				t.Errorf("origin %s, data %s: %v", origin, data, err)
				continue
			}
			im := col.Row(0).Image
			if im == nil || im.Origin != "file:/a/long/enough/path.png" || im.Height != 1 || im.Width != 2 || !bytes.Equal(im.Data, []byte{7, 9}) {
				t.Errorf("origin %s, data %s: row 0 is %+v", origin, data, col.Row(0))
			}
			if !col.Row(1).Null {
				t.Errorf("origin %s, data %s: row 1 (null data) is %+v", origin, data, col.Row(1))
			}
		}
	}
	for _, c := range []struct {
		origin, data arrow.DataType
		want         string
	}{
		{arrow.BinaryTypes.Binary, arrow.BinaryTypes.Binary, `field "origin" is binary, want utf8, large_utf8 or string_view`},
		{arrow.BinaryTypes.String, arrow.BinaryTypes.LargeString, `field "data" is large_utf8, want binary, large_binary or binary_view`},
	} {
		err := CheckColumn("image", sparkType(c.origin, c.data))
		if !errors.Is(err, ErrBadCommand) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("origin %s, data %s: %v, want %q", c.origin, c.data, err, c.want)
		}
	}
}

// A view inside the struct pointing outside its data buffers is a bad
// command, as one of a binary_view column is.
func TestSparkStructCorruptView(t *testing.T) {
	for _, c := range []struct {
		name         string
		origin, data arrow.DataType
		field, at    int // the field, and the byte of row 0's view to set
		v            uint32
	}{
		// The origin is out of line: its buffer index becomes 5.
		{"origin view in a missing buffer", arrow.BinaryTypes.StringView, arrow.BinaryTypes.Binary, 0, 8, 5},
		// The data (2 bytes) is inline: its length becomes 20, in buffer 0.
		{"data view in a missing buffer", arrow.BinaryTypes.String, arrow.BinaryTypes.BinaryView, 5, 0, 20},
	} {
		a := sparkStruct(t, c.origin, c.data)
		views := a.(*array.Struct).Field(c.field).Data().Buffers()[1].Bytes()
		binary.LittleEndian.PutUint32(views[c.at:], c.v)
		if _, err := NewColumn(a); !errors.Is(err, ErrBadCommand) || !strings.Contains(err.Error(), "outside the") {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}
