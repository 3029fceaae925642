package udf

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"math"
	"strings"

	"github.com/pixelflight/pixelflight/imageio"
	"github.com/pixelflight/pixelflight/kernels"
	"github.com/pixelflight/pixelflight/kernels/blob"
	"github.com/pixelflight/pixelflight/kernels/haar"
)

// What another backend (package cuda) needs to run fft_convolve itself
// and give back the same rows as the CPU: the call's parameters, the
// decoder, and the result rows.

// ConvolveSpec is what an fft_convolve call computes.
type ConvolveSpec struct {
	Kernel   *kernels.Kernel
	Mode     kernels.Mode
	Boundary kernels.Boundary
	Output   string // "f32", "png" or "stats"
}

// ConvolveSpec returns the parameters of an fft_convolve task prepared by
// a Registry, read back from its Key; ok is false for any other task (or
// one made without a Registry). Each call builds a new Kernel: cache the
// result by t.Key.
func (t *Task) ConvolveSpec() (spec ConvolveSpec, ok bool) {
	params, found := strings.CutPrefix(t.Key, "fft_convolve ")
	if t.Op != "fft_convolve" || !found {
		return spec, false
	}
	var p convolveParams
	if err := parseParams(json.RawMessage(params), &p, convolveParamDocs); err != nil {
		return spec, false
	}
	// The task passed the server's limits when it was prepared.
	k, err := p.kernel(Limits{MaxPixels: math.MaxInt64, MaxKernelSide: math.MaxInt32})
	if err != nil {
		return spec, false
	}
	spec.Kernel = k
	if spec.Mode, err = pick(p.Mode, "same", "mode", map[string]kernels.Mode{"same": kernels.Same, "full": kernels.Full, "valid": kernels.Valid}); err != nil {
		return spec, false
	}
	if spec.Boundary, err = pick(p.Boundary, "zero", "boundary", map[string]kernels.Boundary{"zero": kernels.Zero, "reflect": kernels.Reflect, "wrap": kernels.Wrap}); err != nil {
		return spec, false
	}
	spec.Output = p.Output
	if spec.Output == "" {
		spec.Output = "f32"
	}
	return spec, true
}

// DecodeGray decodes a row to 8-bit grayscale exactly as the CPU backend
// does (same limits, errors and gray rule). The result is valid until the
// worker's next decode.
func (w *Worker) DecodeGray(in Input) (*imageio.Gray, error) {
	return w.decode(in)
}

// F32Row is fft_convolve's f32 result row: height, width and the h×w
// values as little-endian float32.
func F32Row(h, w int, v []float32) Row { return imageRow{h, w, float32LE(v)} }

// PNGRow is fft_convolve's png result row from pixels already clipped and
// rounded to 8 bits (as encodePNG does), encoded with the same settings.
func PNGRow(h, w int, pix []uint8) (Row, error) {
	img := &image.Gray{Pix: pix[:h*w], Stride: w, Rect: image.Rect(0, 0, w, h)}
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	if err := enc.Encode(&buf, img); err != nil {
		return nil, fmt.Errorf("encoding png: %w", err)
	}
	return imageRow{h, w, buf.Bytes()}, nil
}

// StatsRow is fft_convolve's stats result row.
func StatsRow(min, max, mean, std float64) Row { return statsRow{min, max, mean, std} }

// FacesSpec is what a detect_faces call computes.
type FacesSpec struct {
	Cascade  *haar.Cascade
	Params   haar.Params
	Annotate bool
}

// FacesSpec returns the parameters of a detect_faces task prepared by a
// Registry, read back from its Key, and its cascade from lib (the
// library the Registry was given); ok is false for any other task, one
// made without a Registry, or a cascade lib does not have.
func (t *Task) FacesSpec(lib *haar.Library) (spec FacesSpec, ok bool) {
	params, found := strings.CutPrefix(t.Key, "detect_faces ")
	if t.Op != "detect_faces" || !found {
		return spec, false
	}
	spec, err := parseFaces(json.RawMessage(params), lib)
	return spec, err == nil
}

// FacesRow is detect_faces' result row for faces found in the w×h image
// pix, with the annotated PNG when annotated is set, as the CPU's.
func FacesRow(faces []haar.Face, pix []uint8, w, h int, annotated bool) (Row, error) {
	r := facesRow{faces: faces}
	if annotated {
		var err error
		if r.png, err = annotate(pix, w, h, faces); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// BlobsSpec returns the parameters of a detect_blobs task prepared by a
// Registry, read back from its Key; ok is false for any other task or one
// made without a Registry.
func (t *Task) BlobsSpec() (p blob.Params, ok bool) {
	params, found := strings.CutPrefix(t.Key, "detect_blobs ")
	if t.Op != "detect_blobs" || !found {
		return p, false
	}
	// The task passed the server's limits when it was prepared.
	p, err := parseBlobs(json.RawMessage(params), Limits{MaxPixels: math.MaxInt64, MaxKernelSide: math.MaxInt32})
	return p, err == nil
}

// BlobsRow is detect_blobs' result row.
func BlobsRow(blobs []blob.Blob) Row { return blobsRow(blobs) }
