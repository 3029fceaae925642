package sched

import (
	"maps"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pixelflight/pixelflight/udf"
)

// counters are the stages' running totals.
type counters struct {
	start          time.Time
	decode, encode stageCounters
	backends       []backendCounters

	mu         sync.Mutex
	rows, errs map[string]int64 // Totals
}

// Totals are the rows ended since the scheduler started, by backend
// ("decode": rows whose image failed to decode; "none": rows no backend
// ran: over the memory budget, cancelled or closed before they ran, or
// no backend in service for them), failed rows included, and the rows
// that failed, by udf.ErrorKind.
type Totals struct {
	Rows      map[string]int64
	RowErrors map[string]int64
}

// Totals returns the totals now.
func (s *Scheduler) Totals() Totals {
	c := s.stats
	c.mu.Lock()
	defer c.mu.Unlock()
	return Totals{Rows: maps.Clone(c.rows), RowErrors: maps.Clone(c.errs)}
}

// tally counts rows a backend ran, and their errors, in the totals and
// the metrics.
func (s *Scheduler) tally(backend string, items []*Item) {
	if len(items) == 0 {
		return
	}
	c := s.stats
	c.mu.Lock()
	c.rows[backend] += int64(len(items))
	for _, it := range items {
		if it.Err != nil {
			c.errs[udf.ErrorKind(it.Err)]++
		}
	}
	c.mu.Unlock()
	s.cfg.Metrics.ran(backend, items)
}

// tallyFailed counts the error of a row its lane counted before the row
// failed (in the encode stage).
func (s *Scheduler) tallyFailed(it *Item) {
	if it.Err == nil {
		return
	}
	c := s.stats
	c.mu.Lock()
	c.errs[udf.ErrorKind(it.Err)]++
	c.mu.Unlock()
	s.cfg.Metrics.failed(it)
}

// stageCounters are a stage's rows and its goroutines' wall and thread
// CPU time on them, in ns.
type stageCounters struct {
	rows, busy, cpu atomic.Int64
}

func (c *stageCounters) add(rows int, busy, cpu time.Duration) {
	c.rows.Add(int64(rows))
	c.busy.Add(int64(busy))
	c.cpu.Add(int64(cpu))
}

func (c *stageCounters) stage() Stage {
	return Stage{Rows: c.rows.Load(), BusySeconds: time.Duration(c.busy.Load()).Seconds(), CPUSeconds: time.Duration(c.cpu.Load()).Seconds()}
}

type backendCounters struct {
	stageCounters
	batches, declined, decoded atomic.Int64
}

// cpuClock measures the CPU time of a stretch of work on its goroutine's
// thread. The goroutine is locked to its thread only from start to stop:
// a goroutine locked while it waits costs two thread switches each time
// it blocks and wakes.
type cpuClock time.Duration

func startThreadCPU() cpuClock {
	runtime.LockOSThread()
	return cpuClock(threadCPU())
}

// stop unlocks the thread and returns the CPU time since start.
func (c cpuClock) stop() time.Duration {
	d := threadCPU() - time.Duration(c)
	runtime.UnlockOSThread()
	return d
}

// threadCPU is the CPU time of the calling thread.
func threadCPU() time.Duration {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

func newCounters(backends int) *counters {
	return &counters{start: time.Now(), backends: make([]backendCounters, backends), rows: map[string]int64{}, errs: map[string]int64{}}
}

func (c *counters) ran(bi, rows int, busy, cpu time.Duration) {
	b := &c.backends[bi]
	b.add(rows, busy, cpu)
	b.batches.Add(1)
}

func (c *counters) declined(bi int) { c.backends[bi].declined.Add(1) }

func (c *counters) decodedOn(bi int) { c.backends[bi].decoded.Add(1) }

// Stats is where the time goes: each stage's work and queue, since the
// scheduler started.
type Stats struct {
	UptimeSeconds float64        `json:"uptime_seconds"`
	Cores         int            `json:"cores"` // goroutines that may work on the host's CPUs at once
	Queues        Queues         `json:"queues"`
	Decode        Stage          `json:"decode"`
	Encode        Stage          `json:"encode"`
	Backends      []BackendStage `json:"backends"`
}

// Queues are the rows waiting at each stage now.
type Queues struct {
	Intake int `json:"intake"` // to decode
	Ready  int `json:"ready"`  // decoded, for a backend
	Encode int `json:"encode"` // results to encode
}

// Stage is a host stage's work: rows done, the wall time spent on them
// (summed over its goroutines) and the CPU time of its threads.
type Stage struct {
	Rows        int64   `json:"rows"`
	BusySeconds float64 `json:"busy_seconds"`
	CPUSeconds  float64 `json:"cpu_seconds"`
}

// BackendStage is one backend's work: its lanes' busy time (a batch's
// wall time, device waits included) and CPU time (a CPU backend's; a
// device's lanes' host work is not counted), batches and how full they
// were (rows / max batch), the rows it gave back (decoded, to the
// fallback; undecoded, to the host decoders), and for a DeviceDecoder the
// rows whose images it decoded and its share of the rows a device could
// decode (in megapixels, given it by the measured rates).
type BackendStage struct {
	Stage
	Name     string `json:"name"`
	Lanes    int    `json:"lanes"`
	MaxBatch int    `json:"max_batch"`
	Batches  int64  `json:"batches"`
	// BusyFraction is BusySeconds over the lanes' time since start.
	BusyFraction float64 `json:"busy_fraction"`
	BatchFill    float64 `json:"batch_fill"`
	Declined     int64   `json:"declined"`
	Decoded      int64   `json:"decoded,omitempty"`
	DecodeShare  float64 `json:"decode_share,omitempty"`
}

// Stats returns the stages' figures now.
func (s *Scheduler) Stats() Stats {
	c := s.stats
	up := time.Since(c.start)
	st := Stats{
		UptimeSeconds: up.Seconds(),
		Cores:         s.cfg.Cores,
		Decode:        c.decode.stage(),
		Encode:        c.encode.stage(),
	}
	s.mu.Lock()
	st.Queues = Queues{Intake: len(s.intake), Ready: s.readyRows, Encode: len(s.encodeQ)}
	s.mu.Unlock()
	for i, b := range s.cfg.Backends {
		bc := &c.backends[i]
		bs := BackendStage{Stage: bc.stage(), Name: b.Name(), Lanes: b.Lanes(), MaxBatch: max(b.MaxBatch(), 1),
			Batches: bc.batches.Load(), Declined: bc.declined.Load(), Decoded: bc.decoded.Load()}
		if s.devDecoders[i] != nil {
			bs.DecodeShare = s.split.share(i)
		}
		if b.Lanes() > 0 {
			bs.BusyFraction = bs.BusySeconds / (up.Seconds() * float64(b.Lanes()))
		}
		if bs.Batches > 0 {
			bs.BatchFill = float64(bs.Rows) / float64(bs.Batches) / float64(bs.MaxBatch)
		}
		st.Backends = append(st.Backends, bs)
	}
	return st
}
