package sched

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/pixelflight/pixelflight/imageio"
	"github.com/pixelflight/pixelflight/udf"
)

// ErrClosed is the error of rows still queued when the scheduler closes.
var ErrClosed = errors.New("scheduler closed: the server is stopping")

// ErrNoBackend is the error of a call no backend in service can run.
var ErrNoBackend = errors.New("no backend")

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

// Config is what a Scheduler needs.
type Config struct {
	// Backends pull from the ready queue at once. The first is the
	// fallback: it must accept every task and takes the rows another
	// backend gives back or fails (when it has lanes: a fallback of 0
	// lanes leaves the work to the others, and their failures become the
	// rows' errors).
	Backends []Backend
	// MaxDelay is how long a batching backend waits for a batch to fill
	// before it takes a smaller one.
	MaxDelay time.Duration
	// CPUs is the host's cores this process may use; 0: GOMAXPROCS.
	CPUs int
	// Cores is how many goroutines may work on the host's CPUs at once:
	// decoders, encoders and CPU lanes together; 0: CPUs, less one beside
	// a batching backend on 8 cores or more (its lanes' host work).
	Cores int
	// Budget, when set, holds every row's memory from its decode to the
	// writing of its result (Batch.Free); see Budget.
	Budget  *Budget
	Metrics *Metrics // may be nil
	Log     *zap.Logger
}

// Scheduler is the staged row path of the node: rows from every open
// stream go through intake, the decode stage, the ready queue, the lanes
// of every backend and the encode stage.
type Scheduler struct {
	cfg         Config
	ctx         context.Context
	cancel      context.CancelFunc
	cores       *cores
	rates       *rates
	stats       *counters
	grays       sync.Pool
	stagers     []Stager        // per backend; nil where it is not one
	devDecoders []DeviceDecoder // per backend; nil where it is not one
	split       *decodeSplit
	healthy     []atomic.Bool
	freeMu      sync.Mutex
	freeing     bool           // memory is being returned to the system
	freeAgain   bool           // and a large row finished since that began
	lanes       sync.WaitGroup // lanes and decoders
	encoders    sync.WaitGroup
	encodeQ     chan *Item
	closing     sync.Once

	mu         sync.Mutex
	intake     []*Item
	ready      map[key][]*Item
	keys       []key // keys with ready rows, served round-robin
	readyRows  int
	readyBytes int64
	readyCap   int    // rows the decoders keep ready at most
	readyLimit int64  // and bytes
	minBatch   int    // the smallest MaxBatch of the batching backends (0: none)
	idle       int    // one-row lanes waiting for rows
	toLanes    signal // a ready row, a closed scheduler
	toDecoders signal // a row in the intake, room in the ready queue
	closed     bool
	faults     []string // per backend: the error that took it out of service
}

// New starts the decoders, the encoders and a goroutine per backend lane.
func New(cfg Config) *Scheduler {
	if cfg.Log == nil {
		cfg.Log = zap.NewNop()
	}
	if cfg.Cores <= 0 {
		// Beside a batching backend (a GPU) on a node of 8 cores or more,
		// one is left to its lanes' host work: packing, launches, building
		// rows (on smaller ones decoding is the bottleneck).
		cfg.Cores = cmp.Or(cfg.CPUs, runtime.GOMAXPROCS(0))
		for _, b := range cfg.Backends {
			if b.MaxBatch() > 1 && b.Lanes() > 0 && cfg.Cores >= 8 {
				cfg.Cores--
				break
			}
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Scheduler{
		cfg: cfg, ctx: ctx, cancel: cancel,
		cores:       newCores(cfg.Cores),
		rates:       newRates(len(cfg.Backends)),
		stats:       newCounters(len(cfg.Backends)),
		healthy:     make([]atomic.Bool, len(cfg.Backends)),
		faults:      make([]string, len(cfg.Backends)),
		ready:       map[key][]*Item{},
		stagers:     make([]Stager, len(cfg.Backends)),
		devDecoders: make([]DeviceDecoder, len(cfg.Backends)),
		split:       newDecodeSplit(),
		readyLimit:  256 << 20,
	}
	s.grays.New = func() any { return new(imageio.Gray) }
	for bi, b := range cfg.Backends {
		if st, ok := b.(Stager); ok && b.Lanes() > 0 {
			s.stagers[bi] = st
		}
		if dd, ok := b.(DeviceDecoder); ok && b.Lanes() > 0 {
			if _, decodes := dd.Decoder(); decodes {
				s.devDecoders[bi] = dd
			}
		}
		s.readyCap += 2 * b.Lanes() * max(b.MaxBatch(), 1)
		if m := b.MaxBatch(); m > 1 && (s.minBatch == 0 || m < s.minBatch) {
			s.minBatch = m
		}
	}
	s.readyCap = max(s.readyCap, 2)
	if cfg.Budget != nil {
		s.readyLimit = cfg.Budget.Limit() / 8
		for _, b := range cfg.Backends {
			if c, ok := b.(*CPU); ok && c.Lanes() > 0 {
				// What a lane's worker keeps between rows is outside the
				// budget: at most this much each.
				c.keep = cfg.Budget.Limit() / 4 / int64(c.Lanes())
			}
		}
	}
	s.encodeQ = make(chan *Item, s.readyCap)
	for range cfg.Cores {
		s.lanes.Add(1)
		go s.decoder()
		s.encoders.Add(1)
		go s.encoder()
	}
	for bi, b := range cfg.Backends {
		s.healthy[bi].Store(true)
		for lane := range b.Lanes() {
			s.lanes.Add(1)
			go s.serve(bi, lane)
		}
	}
	if cfg.Metrics != nil {
		cfg.Metrics.watch(s)
	}
	return s
}

// Submit queues one row per entry of col for task; the rows of a stream
// whose ctx ends leave every queue at once with the context's error.
func (s *Scheduler) Submit(ctx context.Context, task *udf.Task, col *udf.Column) (*Batch, error) {
	n := col.Len()
	b := &Batch{items: make([]Item, n), done: make(chan struct{}), budget: s.cfg.Budget, progress: make(chan struct{}), freed: s.resultsFreed}
	b.left.Store(int64(n))
	now := time.Now()
	for i := range b.items {
		b.items[i] = Item{Task: task, In: col.Row(i), ctx: ctx, key: key{task: task.Key}, enq: now, batch: b}
	}
	if n == 0 {
		close(b.done)
		b.stop = func() bool { return true }
		return b, nil
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	if !s.runnable(task) { // under s.mu: a backend that fails ends the rows queued before
		s.mu.Unlock()
		return nil, noBackend(task)
	}
	for i := range b.items {
		if it := &b.items[i]; task.Spec.Decode() == udf.DecodeNone {
			s.push(it, false)
		} else {
			s.intake = append(s.intake, it)
		}
	}
	s.toLanes.fire()
	s.toDecoders.fire()
	s.mu.Unlock()
	b.stop = context.AfterFunc(ctx, func() { s.purge(ctx) })
	return b, nil
}

// noBackend is the error of a call no backend in service runs.
func noBackend(task *udf.Task) error {
	return fmt.Errorf("%w: no backend in service runs %s", ErrNoBackend, task.Op)
}

// runnable reports whether a backend with lanes, in service, takes task.
func (s *Scheduler) runnable(task *udf.Task) bool {
	for i, b := range s.cfg.Backends {
		if b.Lanes() > 0 && s.healthy[i].Load() && b.Accepts(task) {
			return true
		}
	}
	return false
}

// push adds it to the ready queue (at the front when it was given back);
// s.mu held. It reports whether the lanes should look again: a key with
// its first row, or a batch's worth, or a one-row lane waiting.
func (s *Scheduler) push(it *Item, front bool) bool {
	q, ok := s.ready[it.key]
	if !ok {
		s.keys = append(s.keys, it.key)
	}
	if front {
		q = append([]*Item{it}, q...)
	} else {
		it.enq = time.Now()
		q = append(q, it)
	}
	s.ready[it.key] = q
	s.readyRows++
	s.readyBytes += it.held
	return len(q) == 1 || s.idle > 0 || s.minBatch > 0 && len(q)%s.minBatch == 0
}

// signal wakes the goroutines waiting on it; s.mu guards it. Its channel
// is made only when one waits.
type signal struct{ ch chan struct{} }

func (g *signal) fire() {
	if g.ch != nil {
		close(g.ch)
		g.ch = nil
	}
}

// wait releases s.mu until g fires or d passes (d < 0: no timeout); s.mu
// held.
func (s *Scheduler) wait(g *signal, d time.Duration) {
	if g.ch == nil {
		g.ch = make(chan struct{})
	}
	changed := g.ch
	s.mu.Unlock()
	defer s.mu.Lock()
	if d < 0 {
		<-changed
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-changed:
	case <-t.C:
	}
}

// purge takes the queued rows of a stream that ended out of intake and
// the ready queue.
func (s *Scheduler) purge(ctx context.Context) {
	s.mu.Lock()
	gone := s.remove(func(it *Item) bool { return it.ctx == ctx })
	s.mu.Unlock()
	for _, it := range gone {
		it.Err = ctx.Err()
		s.finish(it)
	}
}

// remove takes the rows for which drop is true out of intake and the
// ready queue, and returns them; s.mu held.
func (s *Scheduler) remove(drop func(*Item) bool) []*Item {
	var gone []*Item
	in := s.intake[:0]
	for _, it := range s.intake {
		if drop(it) {
			gone = append(gone, it)
		} else {
			in = append(in, it)
		}
	}
	clear(s.intake[len(in):])
	s.intake = in
	for i := 0; i < len(s.keys); i++ {
		k := s.keys[i]
		q := s.ready[k][:0]
		for _, it := range s.ready[k] {
			if drop(it) {
				gone = append(gone, it)
				s.readyRows--
				s.readyBytes -= it.held
			} else {
				q = append(q, it)
			}
		}
		if len(q) == 0 {
			delete(s.ready, k)
			s.keys = append(s.keys[:i], s.keys[i+1:]...)
			i--
		} else {
			s.ready[k] = q
		}
	}
	s.toDecoders.fire()
	return gone
}

// finish gives the row's decoded image back, keeps of its budget only
// what its result takes, and counts the row done.
func (s *Scheduler) finish(it *Item) {
	if it.Gray != nil {
		s.putGray(it)
		it.held = 0
	}
	if it.need > 0 {
		keep := int64(0)
		if it.Err == nil {
			keep = min(udf.RowBytes(it.Row), it.need)
		}
		s.cfg.Budget.Free(it.need - keep)
		if it.need >= s.cfg.Budget.Limit()/8 {
			it.large = true
			s.freeMemory()
		}
		it.need = keep
	}
	if it.batch.finished(it) {
		close(it.batch.done)
	}
}

// freeMemory returns the heap's free memory to the system, after a row
// that took a large share of the budget: off the row path, one at a time
// and at most once per freeEvery, and once more after the one running
// when another large row finished, so that the last row's memory goes
// back too.
func (s *Scheduler) freeMemory() {
	s.freeMu.Lock()
	s.freeAgain = true
	if s.freeing {
		s.freeMu.Unlock()
		return
	}
	s.freeing = true
	s.freeMu.Unlock()
	go func() {
		for last := (time.Time{}); ; {
			s.freeMu.Lock()
			if !s.freeAgain {
				s.freeing = false
				s.freeMu.Unlock()
				return
			}
			s.freeAgain = false
			s.freeMu.Unlock()
			// At most once per freeEvery: a steady flow of large rows must
			// not keep the garbage collector running.
			time.Sleep(time.Until(last.Add(freeEvery)))
			last = time.Now()
			debug.FreeOSMemory()
		}
	}()
}

// freeEvery is how often freeMemory returns memory at most.
const freeEvery = time.Second

// resultsFreed follows Batch.Free of a large row's result: once it is
// written and freed, its memory goes back to the system too (the return
// when the row finished came before it was written).
func (s *Scheduler) resultsFreed() { s.freeMemory() }

// maxPooledGray is the largest decoded image kept in the pool for the
// next row: a larger one goes back to the heap (a pooled object outlives
// one garbage collection, so FreeOSMemory would not return it).
const maxPooledGray = 16 << 20

// getGray returns what to decode it into: memory of the first stager in
// service that accepts its call, when its header gives the decoded size,
// else a pooled image.
func (s *Scheduler) getGray(it *Item) *imageio.Gray {
	for bi, st := range s.stagers {
		if st == nil || !s.healthy[bi].Load() || !s.cfg.Backends[bi].Accepts(it.Task) {
			continue
		}
		hdr, ok := it.header()
		if !ok {
			break
		}
		if b := st.HostBuffer(hdr.W * hdr.H); b != nil {
			it.stager, it.staged = st, b
			return &imageio.Gray{Pix: b[:0]}
		}
		break
	}
	return s.grays.Get().(*imageio.Gray)
}

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

// putGray gives the row's decoded image back to where getGray took it.
func (s *Scheduler) putGray(it *Item) {
	if it.stager != nil {
		it.stager.FreeHostBuffer(it.staged)
		it.stager, it.staged = nil, nil
	} else if it.Gray != nil && cap(it.Gray.Pix) <= maxPooledGray {
		s.grays.Put(it.Gray)
	}
	it.Gray = nil
}

// Depth is the number of rows queued for decoding or a backend.
func (s *Scheduler) Depth() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.intake) + s.readyRows
}

// Status describes one backend.
type Status struct {
	Name     string `json:"name"`
	Lanes    int    `json:"lanes"`
	MaxBatch int    `json:"max_batch"`
	Healthy  bool   `json:"healthy"`
	Fault    string `json:"fault,omitempty"`
	Decoder  string `json:"decoder,omitempty"` // a DeviceDecoder's
}

// Backends reports each backend and whether it is in service.
func (s *Scheduler) Backends() []Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Status, len(s.cfg.Backends))
	for i, b := range s.cfg.Backends {
		out[i] = Status{Name: b.Name(), Lanes: b.Lanes(), MaxBatch: max(b.MaxBatch(), 1), Healthy: s.healthy[i].Load(), Fault: s.faults[i]}
		if dd, ok := b.(DeviceDecoder); ok {
			out[i].Decoder, _ = dd.Decoder()
		}
	}
	return out
}

// Close stops the stages after the rows they are running; rows still
// queued end with ErrClosed, and Submit refuses new ones.
func (s *Scheduler) Close() { s.closing.Do(s.close) }

func (s *Scheduler) close() {
	s.mu.Lock()
	s.closed = true
	gone := s.intake
	for _, k := range s.keys {
		gone = append(gone, s.ready[k]...)
	}
	s.intake, s.keys, s.ready, s.readyRows, s.readyBytes = nil, nil, map[key][]*Item{}, 0, 0
	s.toLanes.fire()
	s.toDecoders.fire()
	s.mu.Unlock()
	s.cancel()
	s.lanes.Wait()
	close(s.encodeQ)
	s.encoders.Wait()
	for _, it := range gone {
		it.Err = ErrClosed
		s.finish(it)
	}
}
