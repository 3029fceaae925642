package sched

import (
	"context"
	"sync"
)

// Budget caps the bytes of input in flight on the server. A stream takes
// its batch's bytes before it reads the next one and gives them back once
// the results are written, so a full budget stops the reading and gRPC's
// flow control makes the clients wait: nothing is dropped.
type Budget struct {
	mu      sync.Mutex
	limit   int64
	used    int64
	changed chan struct{}
}

// NewBudget returns a budget of limit bytes (at least 1).
func NewBudget(limit int64) *Budget {
	return &Budget{limit: max(limit, 1), changed: make(chan struct{})}
}

// Acquire waits until n bytes are free and takes them. A request larger
// than the whole budget takes all of it, so one huge batch still runs,
// alone. It returns what it took, for Release.
func (b *Budget) Acquire(ctx context.Context, n int64) (int64, error) {
	got, _, err := b.AcquireOr(ctx, n, nil)
	return got, err
}

// AcquireOr is Acquire that also stops waiting, taking nothing, when alt
// is closed first (alt true).
func (b *Budget) AcquireOr(ctx context.Context, n int64, alt <-chan struct{}) (got int64, altFired bool, err error) {
	n = min(max(n, 0), b.limit)
	b.mu.Lock()
	for b.used+n > b.limit {
		changed := b.changed
		b.mu.Unlock()
		select {
		case <-changed:
		case <-alt:
			return 0, true, nil
		case <-ctx.Done():
			return 0, false, ctx.Err()
		}
		b.mu.Lock()
	}
	b.used += n
	b.mu.Unlock()
	return n, false, nil
}

// Release gives back n bytes from Acquire.
func (b *Budget) Release(n int64) {
	b.mu.Lock()
	b.used -= n
	close(b.changed)
	b.changed = make(chan struct{})
	b.mu.Unlock()
}

// Used is the bytes in flight; Limit the cap.
func (b *Budget) Used() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// Limit is the budget's size in bytes.
func (b *Budget) Limit() int64 { return b.limit }
