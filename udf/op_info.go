package udf

import (
	"encoding/json"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/pixelflight/pixelflight/imageio"
)

func infoOp() *Op {
	return &Op{
		Name:    "info",
		Summary: "Reads each image's header only: format, width, height, channels.",
		Outputs: map[string]json.RawMessage{"default": json.RawMessage(`{}`)},
		Prepare: func(params json.RawMessage, _ Limits) (Spec, string, error) {
			key, err := parseParams(params, &struct{}{}, nil)
			return infoSpec{}, key, err
		},
	}
}

// infoSpec is an info call.
type infoSpec struct{}

func (infoSpec) Schema() *arrow.Schema {
	return newSchema(
		arrow.Field{Name: "format", Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: "width", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		arrow.Field{Name: "height", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		arrow.Field{Name: "channels", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	)
}

func (infoSpec) Decode() Decode { return DecodeNone }

func (infoSpec) PerPixel(w, h int) int64 { return 0 }

func (infoSpec) Compute(_ *Worker, in Input, _ *imageio.Gray) (Row, error) {
	var info imageio.Info
	var err error
	if im := in.Image; im != nil {
		info, err = imageio.SparkImageInfo(im.Height, im.Width, im.NChannels, im.Mode, im.Data)
	} else {
		info, err = imageio.DecodeInfo(in.Bytes)
	}
	return infoRow(info), err
}

type infoRow imageio.Info

func (r infoRow) Append(b *array.RecordBuilder) {
	b.Field(0).(*array.StringBuilder).Append(r.Format)
	b.Field(1).(*array.Int32Builder).Append(int32(r.W))
	b.Field(2).(*array.Int32Builder).Append(int32(r.H))
	b.Field(3).(*array.Int32Builder).Append(int32(r.Channels))
}
