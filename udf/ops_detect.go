package udf

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/png"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/pixelflight/pixelflight/kernels/watershed"
)

func set[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

var watershedParamDocs = []Param{
	{"threshold", "int", "Otsu's", "foreground is gray > threshold (0..255); omit for Otsu's threshold"},
	{"min_distance", "int", "5", "minimum distance between markers (peak_local_max)"},
}

func watershedOp() *Op {
	return &Op{
		Name:    "watershed",
		Summary: "Otsu (or given) threshold, Euclidean distance transform, local maxima as markers, watershed of the negated distance within the foreground; as scikit-image.",
		Params:  watershedParamDocs,
		Outputs: map[string]json.RawMessage{"default": json.RawMessage(`{}`)},
		Prepare: func(params json.RawMessage, _ Limits) (*Task, error) {
			p := watershed.DefaultParams()
			var raw struct {
				Threshold   *int `json:"threshold"`
				MinDistance *int `json:"min_distance"`
			}
			if err := parseParams(params, &raw, watershedParamDocs); err != nil {
				return nil, err
			}
			set(&p.Threshold, raw.Threshold)
			set(&p.MinDistance, raw.MinDistance)
			if raw.Threshold != nil && *raw.Threshold < 0 {
				return nil, fmt.Errorf("%w: threshold %d: want 0 to 255 (omit it for Otsu's)", ErrBadCommand, *raw.Threshold)
			}
			if err := p.Validate(); err != nil {
				return nil, fmt.Errorf("%w: %w", ErrBadCommand, err)
			}
			return &Task{
				Op: "watershed",
				Schema: newSchema(
					arrow.Field{Name: "segments", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
					arrow.Field{Name: "labels", Type: arrow.BinaryTypes.Binary, Nullable: true},
				),
				row: func(_ context.Context, w *Worker, in Input) (Row, error) {
					g, err := w.decode(in)
					if err != nil {
						return nil, err
					}
					if w.seg == nil {
						w.seg = watershed.NewSegmenter()
					}
					labels, n, err := w.seg.Segment(g.Pix, g.H, g.W, p, w.labels)
					if err != nil {
						return nil, err
					}
					w.labels = labels
					if n > 65535 {
						return nil, fmt.Errorf("%d segments do not fit a 16-bit label PNG", n)
					}
					img := image.NewGray16(image.Rect(0, 0, g.W, g.H))
					for i, l := range labels {
						img.Pix[2*i], img.Pix[2*i+1] = uint8(l>>8), uint8(l)
					}
					var buf bytes.Buffer
					if err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&buf, img); err != nil {
						return nil, fmt.Errorf("encoding labels: %w", err)
					}
					return segmentsRow{int32(n), buf.Bytes()}, nil
				},
			}, nil
		},
	}
}

type segmentsRow struct {
	n      int32
	labels []byte
}

func (r segmentsRow) Append(b *array.RecordBuilder) {
	b.Field(0).(*array.Int32Builder).Append(r.n)
	b.Field(1).(*array.BinaryBuilder).Append(r.labels)
}
