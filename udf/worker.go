package udf

import (
	"github.com/pixelflight/pixelflight/kernels"
	"github.com/pixelflight/pixelflight/kernels/blob"
	"github.com/pixelflight/pixelflight/kernels/haar"
	"github.com/pixelflight/pixelflight/kernels/watershed"
)

// Worker holds one CPU lane's reusable state: FFT plans, kernel spectra
// and the detectors' buffers, reused from image to image. It is never
// shared: each CPU lane owns one.
type Worker struct {
	conv   *kernels.Convolver
	f32    []float32
	seg    *watershed.Segmenter // made on first use
	labels []int32              // watershed's, reused
	blob   *blob.Detector       // made on first use
	haar   *haar.Detector       // made on first use
	grow   func(n int64) bool
}

// NewWorker returns a worker.
func NewWorker() *Worker {
	return &Worker{conv: kernels.NewConvolver()}
}

// SetGrow sets what the next rows ask for memory beyond their Need (a
// kernel whose memory depends on what it finds, as detect_blobs' peaks):
// grow takes n more bytes and reports whether it could. nil: no limit.
func (w *Worker) SetGrow(grow func(n int64) bool) { w.grow = grow }
