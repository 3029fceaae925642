package sched

import (
	"context"
	"errors"
	"fmt"
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

// Item is one row of work. A backend reads Task and In and sets the
// results: Row or Err, and how long decoding and the kernel took.
type Item struct {
	Task   *udf.Task
	In     udf.Input
	Row    udf.Row
	Err    error
	Decode time.Duration
	Kernel time.Duration

	backend string
	ctx     context.Context
	key     key
	enq     time.Time
	batch   *Batch
}

// Context is the context of the stream the row came from.
func (it *Item) Context() context.Context { return it.ctx }

func (it *Item) finish() {
	if it.batch.left.Add(-1) == 0 {
		close(it.batch.done)
	}
}

// key groups the rows that may share a batch: one call (op and params)
// and one image shape. Rows a failed backend gave back are keyed apart
// and go to the fallback backend only.
type key struct {
	task  string
	w, h  int
	retry bool
}

// Batch is the rows of one Submit. Done is closed once every row has a
// result; Results then returns them in order.
type Batch struct {
	items []Item
	left  atomic.Int64
	done  chan struct{}
	stop  func() bool
}

// Done is closed when every row of the batch has its result.
func (b *Batch) Done() <-chan struct{} { return b.done }

// Results returns each row's result and error, in input order, and the
// rows each backend ran. Call it after Done.
func (b *Batch) Results() (rows []udf.Row, errs []error, byBackend map[string]int) {
	b.stop()
	rows, errs, byBackend = make([]udf.Row, len(b.items)), make([]error, len(b.items)), map[string]int{}
	for i := range b.items {
		it := &b.items[i]
		rows[i], errs[i] = it.Row, it.Err
		if it.backend != "" {
			byBackend[it.backend]++
		}
	}
	return rows, errs, byBackend
}

// Config is what a Scheduler needs.
type Config struct {
	// Backends pull from the queue at once. The first is the fallback: it
	// must accept every task and takes the batches another backend fails
	// (when it has lanes: a fallback of 0 lanes leaves the work to the
	// others, and their failures become the rows' errors).
	Backends []Backend
	// MaxDelay is how long a batching backend waits for a batch to fill
	// before it takes a smaller one.
	MaxDelay time.Duration
	// Budget, when set, also holds the working memory of the lanes of
	// backends that report it (WorkingMemory); see Budget.
	Budget  *Budget
	Metrics *Metrics // may be nil
	Log     *zap.Logger
}

// WorkingMemory is a Backend whose lanes hold memory of their own to run
// a row (its decoded image, the kernel's buffers), beside the row's input.
type WorkingMemory interface {
	Working(it *Item) int64 // bytes, estimated before the row runs
}

// Scheduler is one queue of rows from every open stream, served by the
// lanes of every backend.
type Scheduler struct {
	cfg      Config
	ctx      context.Context
	cancel   context.CancelFunc
	batching bool
	share    int64 // of the budget, per lane of a WorkingMemory backend
	healthy  []atomic.Bool
	wg       sync.WaitGroup

	mu      sync.Mutex
	byKey   map[key][]*Item
	keys    []key // keys with queued rows, served round-robin
	depth   int
	changed chan struct{} // closed and replaced whenever the queue grows or closes
	closed  bool
	faults  []string // per backend: the error that took it out of service
}

// New starts a lane goroutine per backend lane.
func New(cfg Config) *Scheduler {
	if cfg.Log == nil {
		cfg.Log = zap.NewNop()
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Scheduler{
		cfg: cfg, ctx: ctx, cancel: cancel,
		healthy: make([]atomic.Bool, len(cfg.Backends)),
		faults:  make([]string, len(cfg.Backends)),
		byKey:   map[key][]*Item{},
		changed: make(chan struct{}),
	}
	lanes := 0
	for _, b := range cfg.Backends {
		if _, ok := b.(WorkingMemory); ok {
			lanes += b.Lanes()
		}
	}
	if cfg.Budget != nil && lanes > 0 {
		s.share = cfg.Budget.ReserveWorking(lanes)
	}
	for bi, b := range cfg.Backends {
		s.healthy[bi].Store(true)
		s.batching = s.batching || b.MaxBatch() > 1
		for lane := range b.Lanes() {
			s.wg.Add(1)
			go s.serve(bi, lane)
		}
	}
	if cfg.Metrics != nil {
		cfg.Metrics.watch(s)
	}
	return s
}

// Submit queues one row per entry of col for task; the rows of a stream
// whose ctx ends leave the queue at once with the context's error.
func (s *Scheduler) Submit(ctx context.Context, task *udf.Task, col *udf.Column) (*Batch, error) {
	n := col.Len()
	b := &Batch{items: make([]Item, n), done: make(chan struct{})}
	b.left.Store(int64(n))
	now := time.Now()
	for i := range b.items {
		in := col.Row(i)
		b.items[i] = Item{Task: task, In: in, ctx: ctx, key: s.keyOf(task, in), enq: now, batch: b}
	}
	if n == 0 {
		close(b.done)
		b.stop = func() bool { return true }
		return b, nil
	}
	if !s.runnable(task) {
		return nil, fmt.Errorf("%w: no backend in service runs %s", ErrNoBackend, task.Op)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	for i := range b.items {
		s.push(&b.items[i], false)
	}
	s.broadcast()
	s.mu.Unlock()
	b.stop = context.AfterFunc(ctx, func() { s.purge(ctx) })
	return b, nil
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

// keyOf reads the image's shape from its header when some backend
// batches; otherwise every row of a call shares one key.
func (s *Scheduler) keyOf(task *udf.Task, in udf.Input) key {
	k := key{task: task.Key}
	if s.batching {
		k.w, k.h = shape(in)
	}
	return k
}

// shape is the image's size from its header (0, 0 when unreadable).
func shape(in udf.Input) (w, h int) {
	switch {
	case in.Image != nil:
		return int(in.Image.Width), int(in.Image.Height)
	case !in.Null:
		if info, err := imageio.DecodeInfo(in.Bytes); err == nil {
			return info.W, info.H
		}
	}
	return 0, 0
}

// push queues it (at the front when it was given back); s.mu held.
func (s *Scheduler) push(it *Item, front bool) {
	q, ok := s.byKey[it.key]
	if !ok {
		s.keys = append(s.keys, it.key)
	}
	if front {
		q = append([]*Item{it}, q...)
	} else {
		q = append(q, it)
	}
	s.byKey[it.key] = q
	s.depth++
}

func (s *Scheduler) broadcast() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// purge takes the queued rows of a stream that ended out of the queue.
func (s *Scheduler) purge(ctx context.Context) {
	var gone []*Item
	s.mu.Lock()
	for i := 0; i < len(s.keys); i++ {
		k := s.keys[i]
		q := s.byKey[k][:0]
		for _, it := range s.byKey[k] {
			if it.ctx == ctx {
				gone = append(gone, it)
			} else {
				q = append(q, it)
			}
		}
		if len(q) == 0 {
			delete(s.byKey, k)
			s.keys = append(s.keys[:i], s.keys[i+1:]...)
			i--
		} else {
			s.byKey[k] = q
		}
	}
	s.depth -= len(gone)
	s.mu.Unlock()
	for _, it := range gone {
		it.Err = ctx.Err()
		it.finish()
	}
}

// next blocks until backend bi has a batch: a full one, or a smaller one
// whose oldest row has waited MaxDelay. It returns nil once the scheduler
// closes or the backend is out of service.
func (s *Scheduler) next(bi int) []*Item {
	b := s.cfg.Backends[bi]
	limit := max(b.MaxBatch(), 1)
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		if s.closed || !s.healthy[bi].Load() {
			return nil
		}
		wait := time.Duration(-1)
		for i, k := range s.keys {
			q := s.byKey[k]
			if (k.retry && bi != 0) || !b.Accepts(q[0].Task) {
				continue
			}
			left := s.cfg.MaxDelay - time.Since(q[0].enq)
			if len(q) >= limit || left <= 0 {
				return s.take(i, limit)
			}
			if wait < 0 || left < wait {
				wait = left
			}
		}
		changed := s.changed
		s.mu.Unlock()
		if wait < 0 {
			<-changed
		} else {
			t := time.NewTimer(wait)
			select {
			case <-changed:
			case <-t.C:
			}
			t.Stop()
		}
		s.mu.Lock()
	}
}

// take removes up to limit rows of the i-th key; s.mu held. A key with
// rows left moves to the back, so calls share the lanes.
func (s *Scheduler) take(i, limit int) []*Item {
	k := s.keys[i]
	q := s.byKey[k]
	n := min(len(q), limit)
	items := make([]*Item, n)
	copy(items, q)
	clear(q[:n])
	s.keys = append(s.keys[:i], s.keys[i+1:]...)
	if rest := q[n:]; len(rest) > 0 {
		s.byKey[k] = rest
		s.keys = append(s.keys, k)
	} else {
		delete(s.byKey, k)
	}
	s.depth -= n
	return items
}

// serve is one lane of backend bi. A lane of a WorkingMemory backend
// holds its share of the budget until its first batch, then what its
// latest batch needs (the largest row: a lane runs them one after
// another), at most its share; its worker keeps that memory between rows.
func (s *Scheduler) serve(bi, lane int) {
	defer s.wg.Done()
	b := s.cfg.Backends[bi]
	wm, _ := b.(WorkingMemory)
	held := s.share
	if wm == nil || s.cfg.Budget == nil {
		wm, held = nil, 0
	}
	defer func() {
		if held > 0 {
			s.cfg.Budget.AdjustWorking(-held)
		}
	}()
	for {
		items := s.next(bi)
		if items == nil {
			return
		}
		if wm != nil {
			var need int64
			for _, it := range items {
				need = max(need, min(wm.Working(it), s.share))
			}
			s.cfg.Budget.AdjustWorking(need - held)
			held = need
		}
		start := time.Now()
		for _, it := range items {
			s.cfg.Metrics.queued(start.Sub(it.enq))
		}
		err := b.Run(s.ctx, lane, items)
		if err != nil && bi != 0 {
			s.fail(bi, err, items)
			continue
		}
		for _, it := range items {
			if err != nil {
				it.Err = fmt.Errorf("backend %s: %w", b.Name(), err)
			}
			it.backend = b.Name()
		}
		s.cfg.Metrics.ran(b.Name(), items)
		for _, it := range items {
			it.finish()
		}
	}
}

// fail takes backend bi out of service and gives its batch to the
// fallback backend, first in line.
func (s *Scheduler) fail(bi int, err error, items []*Item) {
	name := s.cfg.Backends[bi].Name()
	s.cfg.Log.Error("backend failed a batch: out of service; its rows go to the fallback",
		zap.String("backend", name), zap.Int("rows", len(items)), zap.Error(err))
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.healthy[bi].Swap(false) {
		s.faults[bi] = err.Error()
	}
	if s.closed || s.cfg.Backends[0].Lanes() == 0 {
		for _, it := range items {
			it.Err = ErrClosed
			if !s.closed {
				it.Err = fmt.Errorf("%w: backend %s failed and the fallback has no lanes: %w", ErrNoBackend, name, err)
			}
			it.finish()
		}
		return
	}
	for i := len(items) - 1; i >= 0; i-- {
		it := items[i]
		it.Row, it.Err, it.Decode, it.Kernel = nil, nil, 0, 0
		it.key.retry = true
		s.push(it, true)
	}
	s.broadcast()
}

// Depth is the number of queued rows.
func (s *Scheduler) Depth() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.depth
}

// Status describes one backend.
type Status struct {
	Name     string `json:"name"`
	Lanes    int    `json:"lanes"`
	MaxBatch int    `json:"max_batch"`
	Healthy  bool   `json:"healthy"`
	Fault    string `json:"fault,omitempty"`
}

// Backends reports each backend and whether it is in service.
func (s *Scheduler) Backends() []Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Status, len(s.cfg.Backends))
	for i, b := range s.cfg.Backends {
		out[i] = Status{Name: b.Name(), Lanes: b.Lanes(), MaxBatch: max(b.MaxBatch(), 1), Healthy: s.healthy[i].Load(), Fault: s.faults[i]}
	}
	return out
}

// Close stops the lanes after the batches they are running; rows still
// queued end with ErrClosed, and Submit refuses new ones.
func (s *Scheduler) Close() {
	s.mu.Lock()
	s.closed = true
	var gone []*Item
	for _, k := range s.keys {
		gone = append(gone, s.byKey[k]...)
	}
	s.keys, s.byKey, s.depth = nil, map[key][]*Item{}, 0
	s.broadcast()
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
	for _, it := range gone {
		it.Err = ErrClosed
		it.finish()
	}
}
