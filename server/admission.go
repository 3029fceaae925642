package server

import (
	"context"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/pixelflight/pixelflight/sched"
)

// pending is one input batch in flight: its record (held until its rows
// are done), its share of the in-flight budget, and its queued rows.
//
// Its bytes stay taken from the budget until both the writer is done with
// it and the reader has read past it: arrow's reader keeps the last record
// it returned alive until its next Next, so a written batch is still in
// memory while its stream waits to read another.
type pending struct {
	rec     arrow.RecordBatch
	bytes   int64
	batch   *sched.Batch
	err     error
	refs    atomic.Int32  // the writer's and the reader's
	written chan struct{} // closed once the writer is done with it
}

func newPending(rec arrow.RecordBatch, bytes int64) *pending {
	p := &pending{rec: rec, bytes: bytes, written: make(chan struct{})}
	p.refs.Store(2)
	return p
}

// drop gives up one reference; the last gives the bytes back.
func (p *pending) drop(b *sched.Budget) {
	if p.refs.Add(-1) == 0 {
		b.Release(p.bytes)
	}
}

// release is the writer's end of p: it waits for the batch's rows (a
// backend may still be reading the record's bytes), then frees the record.
func (p *pending) release(b *sched.Budget) {
	if p.batch != nil {
		<-p.batch.Done()
		p.batch = nil // its rows' memory: the reader keeps p while it waits for the budget
	}
	if p.rec != nil {
		p.rec.Release()
	}
	p.drop(b)
	close(p.written)
}

// take gets the budget for a stream's next batch. Bytes of the previous
// batch that only the reader still holds carry over (they are freed when
// the reader reads the next one), so a waiting reader never sits on bytes
// that nothing else will give back; unless others wait for the budget:
// then they go first.
func (s *Server) take(ctx context.Context, prev *pending, guess int64) (int64, error) {
	if prev == nil {
		return s.budget.Acquire(ctx, guess)
	}
	select {
	case <-prev.written:
	default:
		held, written, err := s.budget.AcquireOr(ctx, guess, prev.written)
		if err != nil || !written {
			return held, err
		}
	}
	held := prev.bytes // the writer has dropped its reference: only this goroutine reads bytes now
	prev.bytes = 0
	if held >= guess && !s.budget.Waiting() {
		return held, nil
	}
	s.budget.Release(held) // never hold and wait
	return s.budget.Acquire(ctx, guess)
}
