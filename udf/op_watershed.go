package udf

import (
	"encoding/json"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/pixelflight/pixelflight/imageio"
	"github.com/pixelflight/pixelflight/kernels/watershed"
)

func watershedOp() *Op {
	return &Op{
		Name:    "watershed",
		Summary: "Otsu (or given) threshold, Euclidean distance transform, local maxima as markers, watershed of the negated distance within the foreground; as scikit-image.",
		Params:  watershedParamDocs,
		Outputs: map[string]json.RawMessage{"default": json.RawMessage(`{}`)},
		Prepare: func(params json.RawMessage, _ Limits) (Spec, string, error) {
			p := watershed.DefaultParams()
			var raw struct {
				Threshold   *int `json:"threshold"`
				MinDistance *int `json:"min_distance"`
			}
			key, err := parseParams(params, &raw, watershedParamDocs)
			if err != nil {
				return nil, "", err
			}
			set(&p.Threshold, raw.Threshold)
			set(&p.MinDistance, raw.MinDistance)
			if raw.Threshold != nil && *raw.Threshold < 0 {
				return nil, "", fmt.Errorf("%w: threshold %d: want 0 to 255 (omit it for Otsu's)", ErrBadCommand, *raw.Threshold)
			}
			if err := p.Validate(); err != nil {
				return nil, "", fmt.Errorf("%w: %w", ErrBadCommand, err)
			}
			return &WatershedSpec{Params: p}, key, nil
		},
	}
}

var watershedParamDocs = []Param{
	{Name: "threshold", Type: "int", Default: "Otsu's", Doc: "foreground is gray > threshold (0..255); omit for Otsu's threshold", Min: at(0), Max: at(255)},
	{Name: "min_distance", Type: "int", Default: "5", Doc: "minimum distance between markers (peak_local_max)", Min: at(1)},
}

// WatershedSpec is a watershed call.
type WatershedSpec struct {
	Params watershed.Params
}

func (s *WatershedSpec) Schema() *arrow.Schema {
	return newSchema(
		arrow.Field{Name: "segments", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		arrow.Field{Name: "labels", Type: arrow.BinaryTypes.Binary, Nullable: true},
	)
}

func (s *WatershedSpec) Decode() Decode { return DecodeGray }

func (s *WatershedSpec) PerPixel(w, h int) int64 { return watershedPeak }

// Compute segments the image and encodes its labels as a 16-bit PNG:
// encoding them by runs (labelsPNG) costs less than copying them, so the
// worker's label buffer is reused rather than handed to the encode stage.
func (s *WatershedSpec) Compute(w *Worker, _ Input, g *imageio.Gray) (Row, error) {
	if w.seg == nil {
		w.seg = watershed.NewSegmenter()
	}
	labels, n, err := w.seg.Segment(g.Pix, g.H, g.W, s.Params, w.labels)
	if err != nil {
		return nil, err
	}
	w.labels = labels
	if n > 65535 {
		return nil, fmt.Errorf("%d segments do not fit a 16-bit label PNG", n)
	}
	return segmentsRow{int32(n), labelsPNG(labels, g.W, g.H)}, nil
}

type segmentsRow struct {
	n      int32
	labels []byte
}

func (r segmentsRow) Append(b *array.RecordBuilder) {
	b.Field(0).(*array.Int32Builder).Append(r.n)
	b.Field(1).(*array.BinaryBuilder).Append(r.labels)
}

func (r segmentsRow) Bytes() int64 { return int64(len(r.labels)) }
