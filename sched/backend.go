package sched

import (
	"context"
	"time"

	"github.com/pixelflight/pixelflight/udf"
)

// Backend runs batches of rows on one kind of hardware. The scheduler
// calls Run from Lanes() goroutines at once, each with its own lane
// number, with up to MaxBatch() rows of one call and one image shape.
//
// Run sets each item's Row or Err (a bad image is the row's error, not
// the batch's). It returns an error only when the backend itself failed
// (a lost device, out of memory, a launch failure): the scheduler then
// takes the backend out of service and redoes the batch on the fallback.
type Backend interface {
	Name() string
	Lanes() int
	MaxBatch() int
	Accepts(t *udf.Task) bool
	Run(ctx context.Context, lane int, items []*Item) error
}

// CPU runs every op, one image at a time per lane, each lane with its own
// udf.Worker (decode buffers, FFT plans, kernel spectra).
type CPU struct {
	workers []*udf.Worker
}

// NewCPU returns a CPU backend of n lanes (0 or more).
func NewCPU(n int, lim udf.Limits) *CPU {
	c := &CPU{workers: make([]*udf.Worker, max(n, 0))}
	for i := range c.workers {
		c.workers[i] = udf.NewWorker(lim)
	}
	return c
}

func (c *CPU) Name() string                { return "cpu" }
func (c *CPU) Lanes() int                  { return len(c.workers) }
func (c *CPU) MaxBatch() int               { return 1 }
func (c *CPU) Accepts(task *udf.Task) bool { return true }

// Working is what a lane's worker holds to run it, from the image's
// header: the decoded image and the op's buffers, kept for the next row.
// Per pixel, as measured (retained heap after one 2000×2000 gray PNG):
// fft_convolve 18 (stats) to 22 (f32), watershed 20, detect_faces 10,
// detect_blobs 65; info and echo decode nothing.
func (c *CPU) Working(it *Item) int64 {
	w, h := shape(it.In)
	px := int64(w) * int64(h)
	switch it.Task.Op {
	case "info", "echo":
		return 0
	case "detect_faces":
		return 12 * px
	case "detect_blobs":
		return 66 * px
	}
	return 24 * px
}

// Run runs the items one after another on the lane's worker.
func (c *CPU) Run(_ context.Context, lane int, items []*Item) error {
	w := c.workers[lane]
	for _, it := range items {
		if err := it.ctx.Err(); err != nil {
			it.Err = err
			continue
		}
		start := time.Now()
		it.Row, it.Decode, it.Err = it.Task.Do(it.ctx, w, it.In)
		it.Kernel = time.Since(start) - it.Decode
	}
	return nil
}

// Throttled is a stand-in for a second device in benchmarks of the
// scheduler on machines without one: CPU lanes that take batches of up
// to Batch rows and never go faster than one row per PerImage, sleeping
// out the rest, as a GPU's host thread waits for its device.
type Throttled struct {
	cpu      *CPU
	batch    int
	perImage time.Duration
}

// NewThrottled returns a Throttled backend named "throttled".
func NewThrottled(lanes, batch int, perImage time.Duration, lim udf.Limits) *Throttled {
	return &Throttled{cpu: NewCPU(max(lanes, 1), lim), batch: max(batch, 1), perImage: perImage}
}

func (t *Throttled) Name() string                { return "throttled" }
func (t *Throttled) Lanes() int                  { return t.cpu.Lanes() }
func (t *Throttled) MaxBatch() int               { return t.batch }
func (t *Throttled) Accepts(task *udf.Task) bool { return true }

// Working is the CPU's: a Throttled lane is a CPU lane.
func (t *Throttled) Working(it *Item) int64 { return t.cpu.Working(it) }

// Run runs the batch on the CPU, then sleeps until len(items)·PerImage
// has passed.
func (t *Throttled) Run(ctx context.Context, lane int, items []*Item) error {
	start := time.Now()
	if err := t.cpu.Run(ctx, lane, items); err != nil {
		return err
	}
	wait := time.NewTimer(time.Duration(len(items))*t.perImage - time.Since(start))
	defer wait.Stop()
	select {
	case <-wait.C:
	case <-ctx.Done():
	}
	return nil
}
