package udf

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"math"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/pixelflight/pixelflight/imageio"
	"github.com/pixelflight/pixelflight/internal/clip"
	"github.com/pixelflight/pixelflight/kernels"
)

func convolveOp() *Op {
	return &Op{
		Name:    "fft_convolve",
		Summary: "Converts each image to 8-bit grayscale and convolves it with a kernel, by the cheapest exact method (two 1-D passes for a separable kernel, the direct sum for a small one, else FFT); equals scipy.signal.fftconvolve on the same grayscale image.",
		Params:  convolveParamDocs,
		Outputs: map[string]json.RawMessage{
			"f32":   json.RawMessage(`{"output":"f32"}`),
			"png":   json.RawMessage(`{"output":"png"}`),
			"stats": json.RawMessage(`{"output":"stats"}`),
		},
		Prepare: prepareConvolve,
	}
}

var convolveParamDocs = []Param{
	{Name: "kernel", Type: "string", Default: "gaussian", Doc: "gaussian, box, laplacian, sobel_x, sobel_y, sharpen or matrix",
		Choices: []string{"gaussian", "box", "laplacian", "sobel_x", "sobel_y", "sharpen", "matrix"}},
	{Name: "sigma", Type: "float", Default: "1.0", Doc: "gaussian only: standard deviation in pixels",
		Min: at(minSigma), Max: kernelSide()},
	{Name: "size", Type: "int", Default: "gaussian: 2*ceil(3*sigma)+1, box: 3", Doc: "gaussian and box only: kernel side",
		Min: at(1), Max: kernelSide()},
	{Name: "matrix", Type: "list of rows of floats", Doc: "the kernel itself (kernel matrix, or omit kernel); rectangular, finite, magnitudes summing to at most 1e20"},
	{Name: "mode", Type: "string", Default: "same", Doc: "same (as large as the image), full or valid, as scipy.signal.fftconvolve",
		Choices: []string{"same", "full", "valid"}},
	{Name: "boundary", Type: "string", Default: "zero", Doc: "zero (as scipy), reflect (edge repeated, convolve2d's symm) or wrap",
		Choices: []string{"zero", "reflect", "wrap"}},
	{Name: "output", Type: "string", Default: "f32", Doc: "f32 (height, width, data: little-endian float32 row-major), png (8-bit, scaled by png_scale and rounded) or stats (min, max, mean, std)",
		Choices: []string{"f32", "png", "stats"}},
	{Name: "png_scale", Type: "string", Default: "clip", Doc: "output png only: clip (values below 0 become 0, above 255 become 255), abs (|value|, then clip: both signs of a sobel or laplacian show) or minmax (the image's min..max stretched to 0..255; a constant image is 0)",
		Choices: []string{"clip", "abs", "minmax"}},
}

// minSigma is the smallest Gaussian sigma taken (fft_convolve's sigma,
// detect_blobs' min_sigma). Far smaller ones break the kernels, which turn
// NaN once sigma^2 or 1/sigma^4 leaves float64 (from about 1e-77 down),
// while below about 0.06 a Gaussian is one pixel in float32 anyway.
const minSigma = 1e-6

// maxKernelWeight bounds the sum of a kernel matrix's magnitudes. An output
// pixel is at most 255 times it, and the FFT's products at most 255 times it
// times the pixel count: both stay far inside float32.
const maxKernelWeight = 1e20

// ConvolveSpec is an fft_convolve call.
type ConvolveSpec struct {
	Kernel   *kernels.Kernel
	Mode     kernels.Mode
	Boundary kernels.Boundary
	Output   Output
	PNGScale PNGScale // for OutputPNG
}

// Output is what fft_convolve returns for a row (param output).
type Output uint8

const (
	OutputF32   Output = iota // "f32": the float32 output, little-endian, row-major
	OutputPNG                 // "png": an 8-bit PNG, scaled by PNGScale
	OutputStats               // "stats": min, max, mean and standard deviation
)

// PNGScale maps the float output to 8 bits for OutputPNG (param png_scale).
type PNGScale uint8

const (
	ScaleClip   PNGScale = iota // "clip": clipped to 0..255, rounded
	ScaleAbs                    // "abs": |x|, then clipped
	ScaleMinMax                 // "minmax": (x - min) * 255 / (max - min), rounded
)

type convolveParams struct {
	Kernel   string      `json:"kernel"`
	Sigma    *float64    `json:"sigma"`
	Size     *int        `json:"size"`
	Matrix   [][]float64 `json:"matrix"`
	Mode     string      `json:"mode"`
	Boundary string      `json:"boundary"`
	Output   string      `json:"output"`
	PNGScale string      `json:"png_scale"`
}

func prepareConvolve(params json.RawMessage, lim Limits) (Spec, string, error) {
	var p convolveParams
	key, err := parseParams(params, &p, convolveParamDocs)
	if err != nil {
		return nil, "", err
	}
	k, err := p.kernel(lim)
	if err != nil {
		return nil, "", err
	}
	mode, err := pick(p.Mode, "same", "mode", map[string]kernels.Mode{"same": kernels.Same, "full": kernels.Full, "valid": kernels.Valid})
	if err != nil {
		return nil, "", err
	}
	boundary, err := pick(p.Boundary, "zero", "boundary", map[string]kernels.Boundary{"zero": kernels.Zero, "reflect": kernels.Reflect, "wrap": kernels.Wrap})
	if err != nil {
		return nil, "", err
	}
	output, err := pick(p.Output, "f32", "output", map[string]Output{"f32": OutputF32, "png": OutputPNG, "stats": OutputStats})
	if err != nil {
		return nil, "", err
	}
	scale, err := pick(p.PNGScale, "clip", "png_scale", map[string]PNGScale{"clip": ScaleClip, "abs": ScaleAbs, "minmax": ScaleMinMax})
	if err != nil {
		return nil, "", err
	}
	if p.PNGScale != "" && output != OutputPNG {
		return nil, "", fmt.Errorf("%w: png_scale applies only to output png, not %q", ErrBadCommand, cmp.Or(p.Output, "f32"))
	}
	return &ConvolveSpec{Kernel: k, Mode: mode, Boundary: boundary, Output: output, PNGScale: scale}, key, nil
}

func (p *convolveParams) kernel(lim Limits) (*kernels.Kernel, error) {
	name := p.Kernel
	if name == "" {
		name = "gaussian"
		if p.Matrix != nil {
			name = "matrix"
		}
	}
	if p.Matrix != nil && name != "matrix" {
		return nil, fmt.Errorf("%w: matrix is given, so kernel must be \"matrix\" or omitted, not %s", ErrBadCommand, clip.Quote(name))
	}
	if p.Sigma != nil && name != "gaussian" {
		return nil, fmt.Errorf("%w: sigma applies only to kernel gaussian, not %s", ErrBadCommand, clip.Quote(name))
	}
	if p.Size != nil && name != "gaussian" && name != "box" {
		return nil, fmt.Errorf("%w: size applies only to kernels gaussian and box, not %s", ErrBadCommand, clip.Quote(name))
	}
	side := func(n int) error {
		if n < 1 || n > lim.MaxKernelSide {
			return fmt.Errorf("%w: kernel size %d: want 1 to %d", ErrBadCommand, n, lim.MaxKernelSide)
		}
		return nil
	}
	switch name {
	case "gaussian":
		sigma := 1.0
		if p.Sigma != nil {
			sigma = *p.Sigma
		}
		if !(sigma > 0) || sigma > float64(lim.MaxKernelSide) {
			return nil, fmt.Errorf("%w: sigma %g: want more than 0 and at most %d", ErrBadCommand, sigma, lim.MaxKernelSide)
		}
		if sigma < minSigma {
			return nil, fmt.Errorf("%w: sigma %g: want at least %g: smaller ones underflow", ErrBadCommand, sigma, minSigma)
		}
		size := 2*int(math.Ceil(3*sigma)) + 1
		if p.Size != nil {
			size = *p.Size
		} else if size > lim.MaxKernelSide {
			return nil, fmt.Errorf("%w: sigma %g: its default size, 2*ceil(3*sigma)+1 = %d, passes %d: give a size (1 to %d)",
				ErrBadCommand, sigma, size, lim.MaxKernelSide, lim.MaxKernelSide)
		}
		if err := side(size); err != nil {
			return nil, err
		}
		return kernels.Gaussian(sigma, size), nil
	case "box":
		size := 3
		if p.Size != nil {
			size = *p.Size
		}
		if err := side(size); err != nil {
			return nil, err
		}
		return kernels.Box(size), nil
	case "laplacian":
		return kernels.Laplacian(), nil
	case "sobel_x":
		return kernels.SobelX(), nil
	case "sobel_y":
		return kernels.SobelY(), nil
	case "sharpen":
		return kernels.Sharpen(), nil
	case "matrix":
		return matrixKernel(p.Matrix, side)
	}
	return nil, fmt.Errorf("%w: kernel %s: want gaussian, box, laplacian, sobel_x, sobel_y, sharpen or matrix", ErrBadCommand, clip.Quote(name))
}

func matrixKernel(m [][]float64, side func(int) error) (*kernels.Kernel, error) {
	if len(m) == 0 || len(m[0]) == 0 {
		return nil, fmt.Errorf("%w: kernel matrix needs a matrix: a non-empty list of non-empty rows", ErrBadCommand)
	}
	if err := side(len(m)); err != nil {
		return nil, fmt.Errorf("matrix has %d rows: %w", len(m), err)
	}
	if err := side(len(m[0])); err != nil {
		return nil, fmt.Errorf("matrix has %d columns: %w", len(m[0]), err)
	}
	k := &kernels.Kernel{H: len(m), W: len(m[0]), Data: make([]float32, 0, len(m)*len(m[0]))}
	weight := 0.0
	for i, row := range m {
		if len(row) != k.W {
			return nil, fmt.Errorf("%w: matrix row %d has %d values, row 0 has %d: rows must be of equal length", ErrBadCommand, i, len(row), k.W)
		}
		for _, v := range row {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("%w: matrix row %d holds %g: values must be finite", ErrBadCommand, i, v)
			}
			weight += math.Abs(v)
			k.Data = append(k.Data, float32(v))
		}
	}
	if weight > maxKernelWeight {
		return nil, fmt.Errorf("%w: matrix values' magnitudes sum to %g, above %g: the result would overflow float32", ErrBadCommand, weight, maxKernelWeight)
	}
	return kernels.Factor(k), nil
}

func (s *ConvolveSpec) Schema() *arrow.Schema {
	dims := []arrow.Field{
		{Name: "height", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "width", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	}
	switch s.Output {
	case OutputPNG:
		return newSchema(append(dims, arrow.Field{Name: "png", Type: arrow.BinaryTypes.Binary, Nullable: true})...)
	case OutputStats:
		f := func(name string) arrow.Field {
			return arrow.Field{Name: name, Type: arrow.PrimitiveTypes.Float64, Nullable: true}
		}
		return newSchema(f("min"), f("max"), f("mean"), f("std"))
	}
	return newSchema(append(dims, arrow.Field{Name: "data", Type: arrow.BinaryTypes.Binary, Nullable: true})...)
}

func (s *ConvolveSpec) Decode() Decode { return DecodeGray }

// Method is the method kernels.Choose takes for an h×w image.
func (s *ConvolveSpec) Method(h, w int) string {
	return kernels.Choose(h, w, s.Kernel, s.Mode, s.Boundary).String()
}

// PerPixel depends on the method, for the image's size: by FFT, the
// transform's bytes and half again, spread over the pixels.
func (s *ConvolveSpec) PerPixel(w, h int) int64 {
	per := convolvePeak[s.Output]
	if px := int64(w) * int64(h); px > 0 && kernels.Choose(h, w, s.Kernel, s.Mode, s.Boundary) == kernels.FFT {
		per += (3*kernels.FFTBytes(h, w, s.Kernel, s.Mode, s.Boundary)/2 + px - 1) / px
	}
	return per
}

func (s *ConvolveSpec) Compute(w *Worker, _ Input, g *imageio.Gray) (Row, error) {
	out, oh, ow, _, err := w.conv.Convolve(w.f32, g.Pix, g.H, g.W, s.Kernel, s.Mode, s.Boundary)
	if err != nil {
		return nil, err
	}
	w.f32 = out
	return s.Row(out, oh, ow), nil
}

// Row is the result row of an h×w output v: the f32 bytes, the stats, or
// the PNG still to encode (scaled to 8 bits now). v is not kept.
func (s *ConvolveSpec) Row(v []float32, h, w int) Row {
	switch s.Output {
	case OutputPNG:
		return pngRow{h, w, toUint8(v, s.PNGScale)}
	case OutputStats:
		return stats(v)
	}
	return imageRow{h, w, float32LE(v)}
}

// imageRow is height, width and one binary column.
type imageRow struct {
	h, w int
	data []byte
}

func (r imageRow) Append(b *array.RecordBuilder) {
	b.Field(0).(*array.Int32Builder).Append(int32(r.h))
	b.Field(1).(*array.Int32Builder).Append(int32(r.w))
	b.Field(2).(*array.BinaryBuilder).Append(r.data)
}

func (r imageRow) Bytes() int64 { return int64(len(r.data)) }

func float32LE(v []float32) []byte {
	out := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(f))
	}
	return out
}

// toUint8 scales v to 8 bits by png_scale and rounds.
func toUint8(v []float32, scale PNGScale) []uint8 {
	out := make([]uint8, len(v))
	a, m := float32(0), float32(1) // x -> (x - a) * m
	if scale == ScaleMinMax && len(v) > 0 {
		lo, hi := slices.Min(v), slices.Max(v)
		if a, m = lo, 0; hi > lo {
			m = 255 / (hi - lo)
		}
	}
	for i, f := range v {
		x := (f - a) * m
		if scale == ScaleAbs {
			x = float32(math.Abs(float64(x)))
		}
		out[i] = uint8(math.Round(float64(min(max(x, 0), 255))))
	}
	return out
}

// pngRow is an fft_convolve png row still to encode: height, width and
// its 8-bit pixels.
type pngRow struct {
	h, w int
	pix  []uint8
}

func (r pngRow) Append(b *array.RecordBuilder) { panic("udf: a png row appended before Encode") }

func (r pngRow) Encode() (Row, error) {
	img := &image.Gray{Pix: r.pix[:r.h*r.w], Stride: r.w, Rect: image.Rect(0, 0, r.w, r.h)}
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	if err := enc.Encode(&buf, img); err != nil {
		return nil, fmt.Errorf("encoding png: %w", err)
	}
	return imageRow{r.h, r.w, buf.Bytes()}, nil
}

type statsRow struct{ min, max, mean, std float64 }

func stats(v []float32) statsRow {
	var s statsRow
	s.min, s.max, s.mean, s.std = kernels.Stats(v)
	return s
}

func (r statsRow) Append(b *array.RecordBuilder) {
	for i, v := range [...]float64{r.min, r.max, r.mean, r.std} {
		b.Field(i).(*array.Float64Builder).Append(v)
	}
}

// StatsRow is fft_convolve's stats row.
func StatsRow(min, max, mean, std float64) Row { return statsRow{min, max, mean, std} }

// PNGRow is fft_convolve's png row, still to encode, from h×w pixels
// already scaled to 8 bits (a copy is kept).
func PNGRow(h, w int, pix []uint8) Row { return pngRow{h, w, slices.Clone(pix[:h*w])} }
