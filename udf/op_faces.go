package udf

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"reflect"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/pixelflight/pixelflight/imageio"
	"github.com/pixelflight/pixelflight/kernels/haar"
)

func facesOp(lib *haar.Library) *Op {
	return &Op{
		Name:    "detect_faces",
		Summary: "Viola-Jones detection with an OpenCV Haar cascade on the grayscale image, as cv2.CascadeClassifier.detectMultiScale2.",
		Params:  withNames(facesParamDocs, lib.Names()),
		Outputs: map[string]json.RawMessage{
			"default":  json.RawMessage(`{}`),
			"annotate": json.RawMessage(`{"annotate":true}`),
		},
		Prepare: func(params json.RawMessage, _ Limits) (Spec, string, error) {
			return parseFaces(params, lib)
		},
	}
}

const defaultCascade = "haarcascade_frontalface_default"

var facesParamDocs = []Param{
	{Name: "cascade", Type: "string", Default: defaultCascade, Doc: "cascade name: an OpenCV Haar cascade file (without .xml) in the server's cascade directories; capabilities lists them",
		Names: &Names{Flag: "cascade-dir"}},
	{Name: "scale_factor", Type: "float", Default: "1.1", Doc: "image pyramid step, 1.01 to 10", Min: at(1.01), Max: at(10)},
	{Name: "min_neighbors", Type: "int", Default: "3", Doc: "a face needs more than this many raw detections; 0 returns them all", Min: at(0), Max: at(1000)},
	{Name: "min_size", Type: "[w, h] or int", Default: "the cascade's window", Doc: "smallest face in pixels", Min: at(0)},
	{Name: "max_size", Type: "[w, h] or int", Default: "the image", Doc: "largest face in pixels", Min: at(0)},
	{Name: "annotate", Type: "bool", Default: "false", Doc: "also return the grayscale image as PNG with a white box around each face"},
}

var faceType = arrow.ListOf(arrow.StructOf(
	arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int32},
	arrow.Field{Name: "y", Type: arrow.PrimitiveTypes.Int32},
	arrow.Field{Name: "w", Type: arrow.PrimitiveTypes.Int32},
	arrow.Field{Name: "h", Type: arrow.PrimitiveTypes.Int32},
	arrow.Field{Name: "neighbors", Type: arrow.PrimitiveTypes.Int32},
))

// size is a [w, h] pair or one number for both.
type size [2]int

func (s *size) UnmarshalJSON(b []byte) error {
	var n int
	if err := json.Unmarshal(b, &n); err == nil {
		*s = size{n, n}
		return nil
	}
	var wh []int
	if err := json.Unmarshal(b, &wh); err != nil || len(wh) != 2 {
		// A type error, so that the decoder names the parameter.
		return &json.UnmarshalTypeError{Value: string(b), Type: reflect.TypeFor[size]()}
	}
	*s = size{wh[0], wh[1]}
	return nil
}

// FacesSpec is a detect_faces call.
type FacesSpec struct {
	Cascade  *haar.Cascade
	Params   haar.Params
	Annotate bool
}

// parseFaces validates detect_faces' params and finds its cascade in lib;
// key is parseParams'.
func parseFaces(params json.RawMessage, lib *haar.Library) (Spec, string, error) {
	var raw struct {
		Cascade      *string  `json:"cascade"`
		ScaleFactor  *float64 `json:"scale_factor"`
		MinNeighbors *int     `json:"min_neighbors"`
		MinSize      *size    `json:"min_size"`
		MaxSize      *size    `json:"max_size"`
		Annotate     bool     `json:"annotate"`
	}
	key, err := parseParams(params, &raw, facesParamDocs)
	if err != nil {
		return nil, "", err
	}
	p := haar.DefaultParams()
	set(&p.ScaleFactor, raw.ScaleFactor)
	set(&p.MinNeighbors, raw.MinNeighbors)
	if raw.MinSize != nil {
		p.MinW, p.MinH = raw.MinSize[0], raw.MinSize[1]
	}
	if raw.MaxSize != nil {
		p.MaxW, p.MaxH = raw.MaxSize[0], raw.MaxSize[1]
	}
	if err := p.Validate(); err != nil {
		return nil, "", fmt.Errorf("%w: %w", ErrBadCommand, err)
	}
	name := defaultCascade
	set(&name, raw.Cascade)
	if lib == nil {
		return nil, "", fmt.Errorf("%w: this server has no cascade library", ErrBadCommand)
	}
	c, err := lib.Get(name)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %w", ErrBadCommand, err)
	}
	return &FacesSpec{Cascade: c, Params: p, Annotate: raw.Annotate}, key, nil
}

func (s *FacesSpec) Schema() *arrow.Schema {
	fields := []arrow.Field{{Name: "faces", Type: faceType, Nullable: true}}
	if s.Annotate {
		fields = append(fields, arrow.Field{Name: "annotated", Type: arrow.BinaryTypes.Binary, Nullable: true})
	}
	return newSchema(fields...)
}

// Decode: the annotated PNG is drawn on the host's pixels.
func (s *FacesSpec) Decode() Decode {
	if s.Annotate {
		return DecodeGrayOnHost
	}
	return DecodeGray
}

func (s *FacesSpec) PerPixel(w, h int) int64 { return facesPeak(s.Annotate) }

func (s *FacesSpec) Compute(w *Worker, _ Input, g *imageio.Gray) (Row, error) {
	if w.haar == nil {
		w.haar = haar.NewDetector()
	}
	faces, err := w.haar.Detect(s.Cascade, g.Pix, g.W, g.H, s.Params)
	if err != nil {
		return nil, err
	}
	return FacesRow(faces, g.Pix, g.W, g.H, s.Annotate), nil
}

// FacesRow is detect_faces' result row for faces found in the w×h image
// pix; when annotated, an Encoder that draws them on pix and encodes the
// PNG (pix must stay as it is until then).
func FacesRow(faces []haar.Face, pix []uint8, w, h int, annotated bool) Row {
	if annotated {
		return annotatedRow{faces, pix, w, h}
	}
	return facesRow{faces: faces}
}

type facesRow struct {
	faces []haar.Face
	png   []byte // nil unless annotating
}

// annotatedRow is a facesRow whose annotated PNG is still to encode.
type annotatedRow struct {
	faces []haar.Face
	pix   []uint8
	w, h  int
}

func (r annotatedRow) Append(b *array.RecordBuilder) {
	panic("udf: an annotated faces row appended before Encode")
}

func (r annotatedRow) Encode() (Row, error) {
	png, err := annotate(r.pix, r.w, r.h, r.faces)
	if err != nil {
		return nil, err
	}
	return facesRow{r.faces, png}, nil
}

func (r facesRow) Bytes() int64 { return int64(len(r.png) + 20*len(r.faces)) }

func (r facesRow) Append(b *array.RecordBuilder) {
	lb := b.Field(0).(*array.ListBuilder)
	sb := lb.ValueBuilder().(*array.StructBuilder)
	lb.Append(true)
	for _, f := range r.faces {
		sb.Append(true)
		for i, v := range []int{f.X, f.Y, f.W, f.H, f.Neighbors} {
			sb.FieldBuilder(i).(*array.Int32Builder).Append(int32(v))
		}
	}
	if r.png != nil {
		b.Field(1).(*array.BinaryBuilder).Append(r.png)
	}
}

// annotate draws a 2-pixel white box around each face on a copy of the
// grayscale image and encodes it as PNG.
func annotate(pix []uint8, w, h int, faces []haar.Face) ([]byte, error) {
	img := image.NewGray(image.Rect(0, 0, w, h))
	copy(img.Pix, pix[:w*h])
	for _, f := range faces {
		for t := range 2 {
			x0, y0, x1, y1 := f.X+t, f.Y+t, f.X+f.W-1-t, f.Y+f.H-1-t
			for x := x0; x <= x1; x++ {
				img.Pix[y0*w+x], img.Pix[y1*w+x] = 255, 255
			}
			for y := y0; y <= y1; y++ {
				img.Pix[y*w+x0], img.Pix[y*w+x1] = 255, 255
			}
		}
	}
	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&buf, img); err != nil {
		return nil, fmt.Errorf("encoding annotated image: %w", err)
	}
	return buf.Bytes(), nil
}
