package sched

import (
	"sync/atomic"
	"time"
)

// counters are the stages' running totals.
type counters struct {
	start      time.Time
	decodes    atomic.Int64
	decodeBusy atomic.Int64 // ns
	encodes    atomic.Int64
	encodeBusy atomic.Int64 // ns
	backends   []backendCounters
}

type backendCounters struct {
	rows, batches, declined atomic.Int64
	busy                    atomic.Int64 // ns, summed over lanes
}

func newCounters(backends int) *counters {
	return &counters{start: time.Now(), backends: make([]backendCounters, backends)}
}

func (c *counters) decoded(d time.Duration) {
	c.decodes.Add(1)
	c.decodeBusy.Add(int64(d))
}

func (c *counters) encoded(d time.Duration) {
	c.encodes.Add(1)
	c.encodeBusy.Add(int64(d))
}

func (c *counters) ran(bi, rows int, d time.Duration) {
	b := &c.backends[bi]
	b.rows.Add(int64(rows))
	b.batches.Add(1)
	b.busy.Add(int64(d))
}

func (c *counters) declined(bi int) { c.backends[bi].declined.Add(1) }

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

// Stage is a host stage's work: rows done and the time spent on them.
type Stage struct {
	Rows        int64   `json:"rows"`
	BusySeconds float64 `json:"busy_seconds"`
}

// BackendStage is one backend's work: its lanes' busy time (a batch's
// wall time, device waits included), batches and how full they were
// (rows / max batch), and the rows it gave back to the fallback.
type BackendStage struct {
	Name        string  `json:"name"`
	Lanes       int     `json:"lanes"`
	MaxBatch    int     `json:"max_batch"`
	Rows        int64   `json:"rows"`
	Batches     int64   `json:"batches"`
	BusySeconds float64 `json:"busy_seconds"`
	// BusyFraction is BusySeconds over the lanes' time since start.
	BusyFraction float64 `json:"busy_fraction"`
	BatchFill    float64 `json:"batch_fill"`
	Declined     int64   `json:"declined"`
}

// Stats returns the stages' figures now.
func (s *Scheduler) Stats() Stats {
	c := s.stats
	up := time.Since(c.start)
	st := Stats{
		UptimeSeconds: up.Seconds(),
		Cores:         s.cfg.Cores,
		Decode:        Stage{Rows: c.decodes.Load(), BusySeconds: time.Duration(c.decodeBusy.Load()).Seconds()},
		Encode:        Stage{Rows: c.encodes.Load(), BusySeconds: time.Duration(c.encodeBusy.Load()).Seconds()},
	}
	s.mu.Lock()
	st.Queues = Queues{Intake: len(s.intake), Ready: s.readyRows, Encode: len(s.encodeQ)}
	s.mu.Unlock()
	for i, b := range s.cfg.Backends {
		bc := &c.backends[i]
		bs := BackendStage{Name: b.Name(), Lanes: b.Lanes(), MaxBatch: max(b.MaxBatch(), 1), Rows: bc.rows.Load(), Batches: bc.batches.Load(),
			BusySeconds: time.Duration(bc.busy.Load()).Seconds(), Declined: bc.declined.Load()}
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
