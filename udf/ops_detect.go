package udf

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/pixelflight/pixelflight/imageio"
	"github.com/pixelflight/pixelflight/kernels/blob"
	"github.com/pixelflight/pixelflight/kernels/watershed"
)

var blobParamDocs = []Param{
	{Name: "min_sigma", Type: "float", Default: "1", Doc: "smallest Gaussian sigma", Min: at(minSigma)},
	{Name: "max_sigma", Type: "float", Default: "50", Doc: "largest Gaussian sigma, >= min_sigma", Max: kernelSide()},
	{Name: "num_sigma", Type: "int", Default: "10", Doc: "scales between min_sigma and max_sigma", Min: at(1), Max: at(blob.MaxNumSigma)},
	{Name: "threshold", Type: "float", Default: "0.2", Doc: "absolute lower bound of scale-space maxima (image scaled to 0..1)", Min: at(0)},
	{Name: "overlap", Type: "float", Default: "0.5", Doc: "blobs overlapping more than this fraction are pruned, the smaller goes", Min: at(0), Max: at(1)},
	{Name: "log_scale", Type: "bool", Default: "false", Doc: "scales spaced on a log scale"},
	{Name: "exclude_border", Type: "bool", Default: "false", Doc: "drop maxima at the image border"},
}

var blobType = arrow.ListOf(arrow.StructOf(
	arrow.Field{Name: "y", Type: arrow.PrimitiveTypes.Float32},
	arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Float32},
	arrow.Field{Name: "sigma", Type: arrow.PrimitiveTypes.Float32},
))

func blobsOp() *Op {
	return &Op{
		Name:    "detect_blobs",
		Summary: "Laplacian-of-Gaussian blob detection on the grayscale image, as skimage.feature.blob_log.",
		Params:  blobParamDocs,
		Outputs: map[string]json.RawMessage{"default": json.RawMessage(`{}`)},
		Prepare: func(params json.RawMessage, lim Limits) (*Task, error) {
			p, key, err := parseBlobs(params, lim)
			if err != nil {
				return nil, err
			}
			spec := &BlobsSpec{Params: p, Scales: blob.Scales(p)}
			return &Task{
				Op:     "detect_blobs",
				Key:    key,
				Schema: newSchema(arrow.Field{Name: "blobs", Type: blobType, Nullable: true}),
				Decode: DecodeGray,
				Spec:   spec,
				peak:   blobsPeak,
				compute: func(w *Worker, _ Input, g *imageio.Gray) (Row, error) {
					if w.blob == nil {
						w.blob = blob.NewDetector()
					}
					w.blob.Mem = spec.Memory(g.W, g.H, w.grow)
					return BlobsRow(w.blob.Detect(g.Pix, g.H, g.W, p))
				},
			}, nil
		},
	}
}

// parseBlobs reads and checks detect_blobs' params; key is parseParams'.
func parseBlobs(params json.RawMessage, lim Limits) (p blob.Params, key string, err error) {
	p = blob.DefaultParams()
	var raw struct {
		MinSigma      *float64 `json:"min_sigma"`
		MaxSigma      *float64 `json:"max_sigma"`
		NumSigma      *int     `json:"num_sigma"`
		Threshold     *float64 `json:"threshold"`
		Overlap       *float64 `json:"overlap"`
		LogScale      *bool    `json:"log_scale"`
		ExcludeBorder *bool    `json:"exclude_border"`
	}
	if key, err = parseParams(params, &raw, blobParamDocs); err != nil {
		return p, "", err
	}
	set(&p.MinSigma, raw.MinSigma)
	set(&p.MaxSigma, raw.MaxSigma)
	set(&p.NumSigma, raw.NumSigma)
	set(&p.Threshold, raw.Threshold)
	set(&p.Overlap, raw.Overlap)
	set(&p.LogScale, raw.LogScale)
	set(&p.ExcludeBorder, raw.ExcludeBorder)
	if err := p.Validate(); err != nil {
		return p, "", fmt.Errorf("%w: %w", ErrBadCommand, err)
	}
	// The kernels' radius is 4 sigma: the largest sets the memory and
	// time of every row (max_sigma 1e6 took 610 MB a row, 1e9 hung).
	switch {
	case p.MinSigma < minSigma:
		return p, "", fmt.Errorf("%w: min_sigma %g: want at least %g: smaller ones underflow", ErrBadCommand, p.MinSigma, minSigma)
	case p.MaxSigma > float64(lim.MaxKernelSide):
		return p, "", fmt.Errorf("%w: max_sigma %g: want at most %d (the kernel side limit)", ErrBadCommand, p.MaxSigma, lim.MaxKernelSide)
	}
	return p, key, nil
}

// BlobsSpec is a detect_blobs call: its params and their scales.
type BlobsSpec struct {
	Params blob.Params
	Scales []blob.Scale
}

// Memory is what the peaks and pairs of a w×h image may take (blob.Memory):
// the part of the op's model kept for them, then what grow gives.
func (s *BlobsSpec) Memory(w, h int, grow func(n int64) bool) blob.Memory {
	return blob.Memory{Free: blobsPeaks * int64(w) * int64(h), Grow: grow}
}

// BlobsRow is detect_blobs' result row of blob.Detect's or blob.Prune's
// answer; too many peaks for the memory there is is ErrOverBudget.
func BlobsRow(blobs []blob.Blob, err error) (Row, error) {
	if errors.Is(err, blob.ErrTooMany) {
		return nil, fmt.Errorf("%w: detect_blobs: %w", ErrOverBudget, err)
	}
	if err != nil {
		return nil, err
	}
	return blobsRow(blobs), nil
}

type blobsRow []blob.Blob

func (r blobsRow) Bytes() int64 { return int64(32 * len(r)) }

func (r blobsRow) Append(b *array.RecordBuilder) {
	lb := b.Field(0).(*array.ListBuilder)
	sb := lb.ValueBuilder().(*array.StructBuilder)
	lb.Append(true)
	for _, bl := range r {
		sb.Append(true)
		sb.FieldBuilder(0).(*array.Float32Builder).Append(bl.Y)
		sb.FieldBuilder(1).(*array.Float32Builder).Append(bl.X)
		sb.FieldBuilder(2).(*array.Float32Builder).Append(bl.Sigma)
	}
}

func set[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

var watershedParamDocs = []Param{
	{Name: "threshold", Type: "int", Default: "Otsu's", Doc: "foreground is gray > threshold (0..255); omit for Otsu's threshold", Min: at(0), Max: at(255)},
	{Name: "min_distance", Type: "int", Default: "5", Doc: "minimum distance between markers (peak_local_max)", Min: at(1)},
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
			key, err := parseParams(params, &raw, watershedParamDocs)
			if err != nil {
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
				Op:  "watershed",
				Key: key,
				Schema: newSchema(
					arrow.Field{Name: "segments", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
					arrow.Field{Name: "labels", Type: arrow.BinaryTypes.Binary, Nullable: true},
				),
				Decode: DecodeGray,
				Spec:   &WatershedSpec{Params: p},
				peak:   watershedPeak,
				compute: func(w *Worker, _ Input, g *imageio.Gray) (Row, error) {
					if w.seg == nil {
						w.seg = watershed.NewSegmenter()
					}
					labels, n, err := w.seg.Segment(g.Pix, g.H, g.W, p, nil)
					if err != nil {
						return nil, err
					}
					if n > 65535 {
						return nil, fmt.Errorf("%d segments do not fit a 16-bit label PNG", n)
					}
					return labelsRow{int32(n), labels, g.W, g.H}, nil // the encode stage makes the PNG
				},
			}, nil
		},
	}
}

// WatershedSpec is a watershed call.
type WatershedSpec struct {
	Params watershed.Params
}

// labelsRow is a watershed row whose 16-bit label PNG is still to encode.
type labelsRow struct {
	n      int32
	labels []int32
	w, h   int
}

func (r labelsRow) Append(b *array.RecordBuilder) { panic("udf: a labels row appended before Encode") }

func (r labelsRow) Encode() (Row, error) {
	enc, err := labelsPNG(r.labels, r.w, r.h)
	if err != nil {
		return nil, fmt.Errorf("encoding labels: %w", err)
	}
	return segmentsRow{r.n, enc}, nil
}

func (r labelsRow) Bytes() int64 { return 4 * int64(len(r.labels)) }

type segmentsRow struct {
	n      int32
	labels []byte
}

func (r segmentsRow) Append(b *array.RecordBuilder) {
	b.Field(0).(*array.Int32Builder).Append(r.n)
	b.Field(1).(*array.BinaryBuilder).Append(r.labels)
}

func (r segmentsRow) Bytes() int64 { return int64(len(r.labels)) }
