package server

import (
	"context"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/pixelflight/pixelflight/sched"
)

// pending is one input batch in flight: its record (held until its rows
// are done), its share of the memory budget's input, and its queued rows.
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
		p.batch.Free(0, p.batch.Len()) // rows not written: the stream ended first
		p.batch = nil                  // its rows' memory: the reader keeps p while it waits for the budget
	}
	if p.rec != nil {
		p.rec.Release()
	}
	p.drop(b)
	close(p.written)
}

// take gets the budget for a stream's next batch. The previous batch's
// record stays in memory until the reader reads the next one (arrow's
// reader keeps it), and so do its bytes in the budget; once the writer is
// done with it, they count as free for this request (Budget.AcquireFor),
// and the reader gives them back (drop) when it has read the next batch.
func (s *Server) take(ctx context.Context, prev *pending, guess int64) (int64, error) {
	if prev == nil {
		return s.budget.Acquire(ctx, guess)
	}
	select {
	case <-prev.written:
	default:
		held, written, err := s.budget.AcquireFor(ctx, guess, 0, prev.written)
		if err != nil || !written {
			return held, err
		}
	}
	// The writer has dropped its reference: only this goroutine reads
	// prev.bytes now.
	held, _, err := s.budget.AcquireFor(ctx, guess, prev.bytes, nil)
	return held, err
}
