package sched

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pixelflight/pixelflight/imageio"
	"github.com/pixelflight/pixelflight/udf"
)

// Item is one row of work. The decode stage sets Gray (for a task that
// decodes) or Err, or passes it on undecoded to a DeviceDecoder (Encoded);
// a backend reads Task, In and Gray and sets Row or Err and how long its
// kernel took (a DeviceDecoder also its decoding, in Decode).
type Item struct {
	Task   *udf.Task
	In     udf.Input
	Gray   *imageio.Gray // the decoded image; the scheduler's until the row is finished
	Row    udf.Row
	Err    error
	Decode time.Duration
	Kernel time.Duration
	Method string // how the kernel computed it, where its op has several ways (udf.Methods)

	backend  string
	ctx      context.Context
	key      key
	enq      time.Time // when it entered its current queue
	batch    *Batch
	declined bool
	held     int64        // bytes of Gray, for the ready queue's limit
	ticket   uint64       // its place in line for the budget (0: none)
	need     int64        // what it holds of the budget: from its admission until its result is written
	finished bool         // it has its result; under batch.mu
	hdr      imageio.Info // the header, once header has read it
	hdrRead  bool         // header has read it; hdrOK: Task.Header's ok
	hdrOK    bool
	stager   Stager // which gave staged, the memory Gray was decoded into
	staged   []byte
	encoded  bool // passed on undecoded, for a DeviceDecoder (key.device)
	fallback bool // and then run by the fallback: the device declined it after decoding it
	large    bool // it took a large share of the budget (finish returned memory for it)
}

// Encoded reports whether the row was passed on undecoded, for the
// backend to decode itself (DeviceDecoder); Header then gives its shape
// and format.
func (it *Item) Encoded() bool { return it.encoded }

// Header is the image's header, as the decode stage read it.
func (it *Item) Header() imageio.Info { return it.hdr }

// header is Task.Header of the row, read once: admission and getGray
// both need it, and the decode takes it (it.hdr) rather than read it again.
func (it *Item) header() (imageio.Info, bool) {
	if !it.hdrRead {
		it.hdrRead = true
		if hdr, ok := it.Task.Header(it.In); ok {
			it.hdr, it.hdrOK = hdr, true
		}
	}
	return it.hdr, it.hdrOK
}

// Staged reports whether the row's decoded pixels (Gray.Pix) are in
// memory that b handed the decode stage (Stager).
func (it *Item) Staged(b Stager) bool {
	return it.stager == b && it.Gray != nil && len(it.Gray.Pix) > 0 && &it.Gray.Pix[0] == &it.staged[0]
}

// Context is the context of the stream the row came from.
func (it *Item) Context() context.Context { return it.ctx }

// Grow takes n more bytes of the memory budget for the row, beyond what
// its op's model made it take, if they are free now (Budget.Grow); always
// true without a budget. A kernel whose memory depends on what it finds
// (detect_blobs' peaks) asks for it this way and fails the row when it is
// refused.
func (it *Item) Grow(n int64) bool {
	if it.batch == nil || it.batch.budget == nil {
		return true
	}
	if !it.batch.budget.Grow(n) {
		return false
	}
	it.need += n
	return true
}

// Decline gives the row back from a backend that does not run it after
// all (an image too large for the device, a result it cannot decide): it
// goes to the fallback backend, the CPU, already decoded.
func (it *Item) Decline() { it.declined = true }

// key groups the rows that may share a batch: one call (op and params)
// and one decoded shape. Rows given back by a backend (declined, or of a
// failed batch) are keyed apart and go to the fallback backend only.
type key struct {
	task   string
	w, h   int
	retry  bool
	device int // undecoded rows for backend device-1 (a DeviceDecoder); 0: decoded
}

// Batch is the rows of one Submit. Done is closed once every row has a
// result; Results then returns them in order. Prefix and Take give the
// results of the rows finished so far from the first, for a stream that
// writes them before the batch is done.
type Batch struct {
	items  []Item
	left   atomic.Int64
	done   chan struct{}
	stop   func() bool
	budget *Budget // nil: none
	freed  func()  // after Free of a large row's result: the scheduler returns memory

	mu       sync.Mutex
	prefix   int           // rows finished from the first
	progress chan struct{} // closed when prefix grows
}

// Len is the batch's row count.
func (b *Batch) Len() int { return len(b.items) }

// Done is closed when every row of the batch has its result.
func (b *Batch) Done() <-chan struct{} { return b.done }

// Prefix returns how many rows from the first have their results, and a
// channel closed when that grows.
func (b *Batch) Prefix() (n int, grows <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.prefix, b.progress
}

// Results returns each row's result and error, in input order, and the
// rows each backend ran. Call it after Done.
func (b *Batch) Results() (rows []udf.Row, errs []error, byBackend map[string]int) {
	return b.Take(0, len(b.items))
}

// Take returns the results of rows [from, to), which must be within
// Prefix, as Results does.
func (b *Batch) Take(from, to int) (rows []udf.Row, errs []error, byBackend map[string]int) {
	if to == len(b.items) {
		b.stop()
	}
	rows, errs, byBackend = make([]udf.Row, to-from), make([]error, to-from), map[string]int{}
	for i := from; i < to; i++ {
		it := &b.items[i]
		rows[i-from], errs[i-from] = it.Row, it.Err
		it.Row = nil // the caller's now
		if it.backend != "" {
			byBackend[it.backend]++
		}
	}
	return rows, errs, byBackend
}

// Bytes is what the results of rows [from, to), within Prefix, hold of
// the budget.
func (b *Batch) Bytes(from, to int) int64 {
	var n int64
	for i := from; i < to; i++ {
		n += b.items[i].need
	}
	return n
}

// Free gives back the budget the results of rows [from, to) hold, once
// they are written (or will not be); rows must be within Prefix. Free(0,
// Len()) after Done frees the whole batch.
func (b *Batch) Free(from, to int) {
	if b.budget == nil {
		return
	}
	var n int64
	large := false
	for i := from; i < to; i++ {
		n += b.items[i].need
		b.items[i].need = 0
		large = large || b.items[i].large
		b.items[i].large = false
	}
	b.budget.Free(n)
	if large && n > 0 && b.freed != nil {
		b.freed()
	}
}

// finished marks it done and moves the prefix; it reports whether the
// batch is done.
func (b *Batch) finished(it *Item) bool {
	b.mu.Lock()
	it.finished = true
	moved := false
	for b.prefix < len(b.items) && b.items[b.prefix].finished {
		b.prefix++
		moved = true
	}
	if moved {
		close(b.progress)
		b.progress = make(chan struct{})
	}
	b.mu.Unlock()
	return b.left.Add(-1) == 0
}
