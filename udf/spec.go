package udf

import (
	"github.com/apache/arrow-go/v18/arrow"

	"github.com/pixelflight/pixelflight/imageio"
)

// Spec is one call of an op, its params parsed and checked once: what
// it returns, what its rows are decoded to, its computation on the CPU
// and the memory that takes. Each op has its own Spec type; everything
// that runs an op asks its Spec, and the ops a device also runs are
// DeviceSpecs, which name their Device method themselves.
type Spec interface {
	// Schema is the result columns, the last one "error".
	Schema() *arrow.Schema
	// Decode is what a row is decoded to before Compute.
	Decode() Decode
	// Compute computes one row on the CPU with w: on g, the row decoded
	// (nil where Decode is DecodeNone). The row may be an Encoder, whose
	// encoding the scheduler's encode stage does.
	Compute(w *Worker, in Input, g *imageio.Gray) (Row, error)
	// PerPixel is the bytes per pixel a w×h row takes at its peak on the
	// CPU: decoded image, working set and result together (Task.Need).
	PerPixel(w, h int) int64
}

// Decode is what an op's rows are decoded to before its computation.
type Decode int

const (
	DecodeNone Decode = iota // the row as it came (echo, info)
	DecodeGray               // 8-bit gray pixels, on the host or a device
	// DecodeGrayOnHost is 8-bit gray pixels in host memory: the result
	// reads them after the computation (detect_faces' annotated PNG), so
	// a device may compute the row but not decode it.
	DecodeGrayOnHost
)

// Methods is a Spec whose CPU computation has several methods: Method
// names the one an h×w image takes, for the metrics.
type Methods interface {
	Method(h, w int) string
}

// Device is a backend that computes ops off the CPU (a GPU, or the sim
// standing in for one), one method per op it runs, on the batch it was
// handed. A DeviceSpec calls its op's method (RunOn), so no backend asks
// which op a call is; an op a device runs adds a method here, and every
// device backend must then run it.
type Device interface {
	Convolve(s *ConvolveSpec) error
	DetectFaces(s *FacesSpec) error
	DetectBlobs(s *BlobsSpec) error
}

// DeviceSpec is the Spec of an op a Device runs.
type DeviceSpec interface {
	Spec
	// RunOn calls d's method for this op.
	RunOn(d Device) error
}

func (s *ConvolveSpec) RunOn(d Device) error { return d.Convolve(s) }

func (s *FacesSpec) RunOn(d Device) error { return d.DetectFaces(s) }

func (s *BlobsSpec) RunOn(d Device) error { return d.DetectBlobs(s) }
