package sched

import (
	"context"
	"time"

	"github.com/pixelflight/pixelflight/imageio"
	"github.com/pixelflight/pixelflight/udf"
)

// Backend computes batches of decoded rows on one kind of hardware. The
// scheduler calls Run from Lanes() goroutines at once, each with its own
// lane number, with up to MaxBatch() rows of one call and one decoded
// shape (Item.Gray, for a task that decodes; a DeviceDecoder also gets
// rows still to decode: Item.Encoded).
//
// Run sets each item's Row or Err (a bad row is the row's error, not the
// batch's), or declines a row it cannot run after all (Item.Decline): the
// scheduler gives it to the fallback, the CPU (an undecoded one to the
// host decoders first). Run returns an error only
// when the backend itself failed (a lost device, out of memory, a launch
// failure): the scheduler then takes the backend out of service and
// gives the batch, still decoded, to the fallback.
type Backend interface {
	Name() string
	Lanes() int
	MaxBatch() int
	Accepts(t *udf.Task) bool
	Run(ctx context.Context, lane int, items []*Item) error
}

// Stager is a Backend that hands the decode stage the memory to decode
// its rows into: pinned host buffers a GPU copies from directly, so its
// lanes need not pack the pixels into staging memory of their own. The
// scheduler decodes a row into it when the row's call is one the backend
// accepts and the header gives the decoded size, and gives the buffer
// back when the row is finished, wherever it ran; Item.Staged tells a
// lane which rows' pixels are in its memory.
type Stager interface {
	// HostBuffer returns memory of at least n bytes, or nil when it has
	// none to give (the row is then decoded into ordinary memory).
	HostBuffer(n int) []byte
	// FreeHostBuffer takes back what HostBuffer returned, whole.
	FreeHostBuffer(b []byte)
}

// DeviceDecoder is a Backend that decodes some images itself, into its
// own memory (JPEG on a GPU), so the decode stage may pass it those rows
// undecoded (Item.Encoded), as many as the measured rates of its decoder
// and the host's say (decodeShare). A lane that cannot decode such a row
// after all (a JPEG its decoder refuses, a corrupt one) declines it
// (Item.Decline): the row goes back to the host decoders, and from there
// to any backend, as every decoded row does. A lane sets a row's Decode
// to its share of the device decoder's time, more than 0: a row it
// declines with Decode set goes on, once the host has decoded it, to the
// fallback alone (the device's reason was its op's, not the image's).
type DeviceDecoder interface {
	Backend
	// DecodesOnDevice reports whether the backend decodes the image of
	// this input and header itself for t (one whose Spec decodes to
	// DecodeGray: the scheduler asks no other).
	DecodesOnDevice(t *udf.Task, in udf.Input, hdr imageio.Info) bool
	// Decoder describes its decoder for the log and capabilities, or why
	// it has none; ok is false when it decodes nothing.
	Decoder() (desc string, ok bool)
}

// hostBackend is a Backend that computes on the host's cores: its lanes
// take a core from the scheduler while they run.
type hostBackend interface {
	onHost()
}

// CPU runs every op, one row at a time per lane, each lane with its own
// udf.Worker (FFT plans, kernel spectra, detectors' buffers), kept from
// row to row. A worker holds buffers for each op it ran, each as large as
// the largest row of that op: after a row that needed more than keep
// bytes (set by the Scheduler; 0: no limit) the lane starts a new worker,
// so that what it keeps outside the budget stays under keep for each op;
// and a lane that has found no row to run for idleDrop lets go of a
// worker whose rows needed more than idleKeep, so that a burst of large
// images leaves nothing large behind.
type CPU struct {
	workers []*udf.Worker
	held    []map[string]int64 // per lane: the largest need of each op its worker ran
	idleAt  []time.Time        // per lane: since when it has found no row (zero: busy)
	keep    int64
}

// NewCPU returns a CPU backend of n lanes (0 or more).
func NewCPU(n int) *CPU {
	c := &CPU{workers: make([]*udf.Worker, max(n, 0)), held: make([]map[string]int64, max(n, 0)), idleAt: make([]time.Time, max(n, 0))}
	for i := range c.workers {
		c.workers[i], c.held[i] = udf.NewWorker(), map[string]int64{}
	}
	return c
}

func (c *CPU) Name() string                { return "cpu" }
func (c *CPU) Lanes() int                  { return len(c.workers) }
func (c *CPU) MaxBatch() int               { return 1 }
func (c *CPU) Accepts(task *udf.Task) bool { return true }
func (c *CPU) onHost()                     {}

// Run runs the items one after another on the lane's worker.
func (c *CPU) Run(_ context.Context, lane int, items []*Item) error {
	c.idleAt[lane] = time.Time{}
	w := c.workers[lane]
	for _, it := range items {
		if err := it.ctx.Err(); err != nil {
			it.Err = err
			continue
		}
		start := time.Now()
		w.SetGrow(it.Grow)
		it.Row, it.Err = it.Task.Compute(w, it.In, it.Gray)
		w.SetGrow(nil) // keep no reference to the row
		it.Kernel = time.Since(start)
		if m, ok := it.Task.Spec.(udf.Methods); ok && it.Err == nil && it.Gray != nil {
			it.Method = m.Method(it.Gray.H, it.Gray.W)
		}
		held := c.held[lane]
		held[it.Task.Op] = max(held[it.Task.Op], it.need)
		if c.keep > 0 && it.need > c.keep {
			w = udf.NewWorker()
			c.held[lane] = map[string]int64{}
			c.workers[lane] = w
		}
	}
	return nil
}

// idleKeep is what an idle CPU lane's worker may go on holding, and
// idleDrop how long it is idle before it lets go of more.
const (
	idleKeep = 16 << 20
	idleDrop = 2 * time.Second
)

// idle is called by lane when it finds no row to run. It reports whether
// it let go of a worker holding more than idleKeep, idle since idleDrop
// ago, and otherwise how soon to call again (0: no need).
func (c *CPU) idle(lane int, now time.Time) (dropped bool, again time.Duration) {
	if c.keep == 0 || sum(c.held[lane]) <= idleKeep {
		return false, 0
	}
	if c.idleAt[lane].IsZero() {
		c.idleAt[lane] = now
	}
	if left := idleDrop - now.Sub(c.idleAt[lane]); left > 0 {
		return false, left
	}
	c.workers[lane], c.held[lane], c.idleAt[lane] = udf.NewWorker(), map[string]int64{}, time.Time{}
	return true, 0
}

func sum(m map[string]int64) (total int64) {
	for _, v := range m {
		total += v
	}
	return total
}
