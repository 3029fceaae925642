package udf

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/pixelflight/pixelflight/imageio"
	"github.com/pixelflight/pixelflight/kernels/blob"
)

func blobsOp() *Op {
	return &Op{
		Name:    "detect_blobs",
		Summary: "Laplacian-of-Gaussian blob detection on the grayscale image, as skimage.feature.blob_log.",
		Params:  blobParamDocs,
		Outputs: map[string]json.RawMessage{"default": json.RawMessage(`{}`)},
		Prepare: func(params json.RawMessage, lim Limits) (Spec, string, error) {
			p, key, err := parseBlobs(params, lim)
			if err != nil {
				return nil, "", err
			}
			return &BlobsSpec{Params: p, Scales: blob.Scales(p)}, key, nil
		},
	}
}

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

// BlobsSpec is a detect_blobs call: its params and their scales.
type BlobsSpec struct {
	Params blob.Params
	Scales []blob.Scale
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

func (s *BlobsSpec) Schema() *arrow.Schema {
	return newSchema(arrow.Field{Name: "blobs", Type: blobType, Nullable: true})
}

func (s *BlobsSpec) Decode() Decode { return DecodeGray }

func (s *BlobsSpec) PerPixel(w, h int) int64 {
	px := int64(w) * int64(h)
	if px == 0 {
		return blobsPeak
	}
	scale := (6*blob.ScaleSpaceBytes(h, w, s.Params)/5 + px - 1) / px
	return max(blobsScale, scale) + blobsPeaks
}

func (s *BlobsSpec) Compute(w *Worker, _ Input, g *imageio.Gray) (Row, error) {
	if w.blob == nil {
		w.blob = blob.NewDetector()
	}
	w.blob.Mem = s.Memory(g.W, g.H, w.grow)
	return BlobsRow(w.blob.Detect(g.Pix, g.H, g.W, s.Params))
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
