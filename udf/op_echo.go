package udf

import (
	"encoding/json"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/pixelflight/pixelflight/imageio"
)

func echoOp() *Op {
	return &Op{
		Name:    "echo",
		Summary: "Returns each row's bytes unchanged (the data field for Spark image structs): a transport check.",
		Outputs: map[string]json.RawMessage{"default": json.RawMessage(`{}`)},
		Prepare: func(params json.RawMessage, _ Limits) (Spec, string, error) {
			key, err := parseParams(params, &struct{}{}, nil)
			return echoSpec{}, key, err
		},
	}
}

// echoSpec is an echo call.
type echoSpec struct{}

func (echoSpec) Schema() *arrow.Schema {
	return newSchema(arrow.Field{Name: "data", Type: arrow.BinaryTypes.Binary, Nullable: true})
}

func (echoSpec) Decode() Decode { return DecodeNone }

func (echoSpec) PerPixel(w, h int) int64 { return 0 }

func (echoSpec) Compute(_ *Worker, in Input, _ *imageio.Gray) (Row, error) {
	if in.Image != nil {
		return bytesRow(in.Image.Data), nil
	}
	return bytesRow(in.Bytes), nil
}

type bytesRow []byte

func (r bytesRow) Append(b *array.RecordBuilder) { b.Field(0).(*array.BinaryBuilder).Append(r) }

func (r bytesRow) Bytes() int64 { return int64(len(r)) }
