package sched

import (
	"context"
	"slices"
	"sync"
)

// Budget caps the bytes in flight on the server: the input of every
// stream, the decoded images waiting for or in a backend, and the working
// memory of the CPU lanes. A stream takes its batch's bytes before it
// reads the next one and gives them back once the results are written,
// so a full budget stops the reading and gRPC's flow control makes the
// clients wait: nothing is dropped.
//
// A Scheduler with lanes that report their working memory (WorkingMemory)
// keeps up to half of the budget for them (ReserveWorking): each lane
// holds its equal share of that half until it runs its first row, then
// what its rows need, at most the share. The decode stage adds each
// decoded image until its row is done. Neither waits: they take what
// they need at once (AdjustWorking), and streams wait until the input
// has shrunk under what is left.
type Budget struct {
	mu      sync.Mutex
	limit   int64
	used    int64    // input
	working int64    // decoded images and the lanes' working memory
	queue   []uint64 // tickets of the waiting requests, oldest first
	tickets uint64
	changed chan struct{}
}

// NewBudget returns a budget of limit bytes (at least 1).
func NewBudget(limit int64) *Budget {
	return &Budget{limit: max(limit, 1), changed: make(chan struct{})}
}

// Acquire waits until n bytes are free and takes them. Requests are
// served in the order they came: one that waits holds back those after
// it, so smaller ones cannot keep it waiting. A request larger than the
// budget less what the lanes hold takes all of that, so one huge batch
// still runs, alone. It returns what it took, for Release.
func (b *Budget) Acquire(ctx context.Context, n int64) (int64, error) {
	got, _, err := b.AcquireOr(ctx, n, nil)
	return got, err
}

// AcquireOr is Acquire that also stops waiting, taking nothing, when alt
// is closed first (alt true).
func (b *Budget) AcquireOr(ctx context.Context, n int64, alt <-chan struct{}) (got int64, altFired bool, err error) {
	n = max(n, 0)
	b.mu.Lock()
	defer b.mu.Unlock()
	// room is what input may take beside the working memory (which may
	// pass the limit for a while: decoded images of huge rows).
	room := func() int64 { return max(b.limit-b.working, 1) }
	fits := func() bool { return b.used+b.working+min(n, room()) <= b.limit }
	if len(b.queue) > 0 || !fits() {
		me := b.tickets
		b.tickets++
		b.queue = append(b.queue, me)
		defer b.leave(me)
		for b.queue[0] != me || !fits() {
			changed := b.changed
			b.mu.Unlock()
			select {
			case <-changed:
			case <-alt:
				altFired = true
			case <-ctx.Done():
				err = ctx.Err()
			}
			b.mu.Lock()
			if altFired || err != nil {
				return 0, altFired, err
			}
		}
	}
	n = min(n, room())
	b.used += n
	return n, false, nil
}

// leave takes ticket t out of the queue; b.mu held. When it was first,
// the next may go now.
func (b *Budget) leave(t uint64) {
	i := slices.Index(b.queue, t)
	b.queue = slices.Delete(b.queue, i, i+1)
	if i == 0 {
		b.broadcast()
	}
}

// Waiting reports whether requests wait for the budget.
func (b *Budget) Waiting() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.queue) > 0
}

// Release gives back n bytes from Acquire.
func (b *Budget) Release(n int64) {
	b.mu.Lock()
	b.used -= n
	b.broadcast()
	b.mu.Unlock()
}

// ReserveWorking sets aside half of the budget for the working memory of
// n lanes (call it once, before the streams start) and returns each
// lane's share, which each lane holds from now on until it knows what its
// rows need.
func (b *Budget) ReserveWorking(n int) (share int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	share = b.limit / 2 / int64(max(n, 1))
	b.working += share * int64(n)
	return share
}

// AdjustWorking changes what the lanes hold by delta, without waiting.
func (b *Budget) AdjustWorking(delta int64) {
	b.mu.Lock()
	b.working += delta
	if delta < 0 {
		b.broadcast()
	}
	b.mu.Unlock()
}

func (b *Budget) broadcast() {
	close(b.changed)
	b.changed = make(chan struct{})
}

// Used is the input bytes in flight.
func (b *Budget) Used() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// Working is what the lanes hold for their working memory.
func (b *Budget) Working() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.working
}

// Limit is the budget's size in bytes.
func (b *Budget) Limit() int64 { return b.limit }
