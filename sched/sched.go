package sched

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime"
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
