package recsize

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Binary, struct, list and dictionary columns each count the bytes of
// their values, wherever in the column they are.
func TestBytes(t *testing.T) {
	mem := memory.NewGoAllocator()
	val := make([]byte, 1000)

	bin := array.NewBinaryBuilder(mem, arrow.BinaryTypes.Binary)
	bin.Append(val)
	st := array.NewStructBuilder(mem, arrow.StructOf(arrow.Field{Name: "data", Type: arrow.BinaryTypes.Binary}))
	st.Append(true)
	st.FieldBuilder(0).(*array.BinaryBuilder).Append(val)
	ls := array.NewListBuilder(mem, arrow.BinaryTypes.Binary)
	ls.Append(true)
	ls.ValueBuilder().(*array.BinaryBuilder).Append(val)
	dict := array.NewDictionaryBuilder(mem, &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.Binary})
	if err := dict.(*array.BinaryDictionaryBuilder).Append(val); err != nil {
		t.Fatal(err)
	}
	for _, b := range []array.Builder{bin, st, ls, dict} {
		col := b.NewArray()
		rec := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "c", Type: col.DataType()}}, nil), []arrow.Array{col}, 1)
		if n := Bytes(rec); n < int64(len(val)) || n > int64(len(val))+512 {
			t.Errorf("%s: %d bytes, want %d and a few buffers of offsets and validity", col.DataType(), n, len(val))
		}
		rec.Release()
		col.Release()
		b.Release()
	}
}
