package sched

import (
	"context"
	"slices"
	"sync"
)

// Budget is the sidecar's memory budget (--memory-budget): the input of
// every stream and every row's memory, from its decode to the writing of
// its result.
//
// Input: a stream takes its batch's bytes (Acquire) before it reads the
// next one and gives them back once the results are written, so a spent
// budget stops the reading and gRPC's flow control makes the clients
// wait: nothing is dropped. Input takes at most a quarter of the budget
// (InputLimit); a batch larger than that takes the quarter and runs
// alone.
//
// Rows: before a row is decoded it takes what its op needs at its peak
// (udf.Task.Need: the decoded image, the kernel's working set and the
// result), waiting its turn in intake order (Row, then Admit). Once
// computed it keeps only its result's bytes (Free gives back the rest)
// until its stream has written it (Free). A row needing more than the budget less the input's
// quarter (MaxRow) could never run: it gets an error at once. Input
// beyond its quarter (the last batch each waiting stream keeps: see
// AcquireFor) does not hold rows back: rows always have their three
// quarters, so they never wait on the streams that wait on them. As rows are
// admitted in order and an admitted row never waits for memory again,
// the rows before a waiting one all finish, their results are written
// (streams write finished rows out when rows wait: RowsWaiting), and it
// runs: there is no deadlock.
type Budget struct {
	mu      sync.Mutex
	limit   int64
	used    int64    // input
	kept    int64    // of used, what waiting input requests hold (AcquireFor's held)
	working int64    // rows
	queue   []uint64 // tickets of the waiting input requests, oldest first
	rows    []uint64 // tickets of the rows not admitted yet, in intake order
	tickets uint64
	changed chan struct{} // closed when memory is given back
	waiting chan struct{} // closed when a row waits for memory
	rowWait bool
}

// NewBudget returns a budget of limit bytes (at least 4).
func NewBudget(limit int64) *Budget {
	return &Budget{limit: max(limit, 4), changed: make(chan struct{}), waiting: make(chan struct{})}
}

// InputLimit is the most input the streams hold together.
func (b *Budget) InputLimit() int64 { return b.limit / 4 }

// MaxRow is the most a row may need: what is left beside InputLimit.
func (b *Budget) MaxRow() int64 { return b.limit - b.InputLimit() }

// Acquire waits until n bytes of input are free and takes them. Requests
// are served in the order they came: one that waits holds back those
// after it, so smaller ones cannot keep it waiting. A request larger than
// InputLimit takes all of that, so one huge batch still runs, alone. It
// returns what it took, for Release.
func (b *Budget) Acquire(ctx context.Context, n int64) (int64, error) {
	got, _, err := b.AcquireFor(ctx, n, 0, nil)
	return got, err
}

// AcquireFor is Acquire for a stream that holds held bytes of input (its
// last batch, which arrow's reader keeps in memory until it reads the
// next) and gives them back once it has read the next one: they stay taken
// while it waits, and count as free for its request. It also stops
// waiting, taking nothing, when alt is closed first (altFired). When all
// that is taken is held by waiting streams, so that nothing would be given
// back, the first in line goes anyway: input may then pass InputLimit, by
// at most the last batch of each stream (memory that is in use whatever
// the budget says; rows keep their three quarters beside it).
func (b *Budget) AcquireFor(ctx context.Context, n, held int64, alt <-chan struct{}) (got int64, altFired bool, err error) {
	n = min(max(n, 0), b.InputLimit())
	b.mu.Lock()
	defer b.mu.Unlock()
	fits := func() bool {
		return b.used-held+n <= b.InputLimit() && b.used-held+b.working+n <= b.limit
	}
	if len(b.queue) > 0 || !fits() {
		me := b.ticket()
		b.queue = append(b.queue, me)
		if held > 0 {
			b.kept += held
			b.broadcast() // the first in line may go now
		}
		defer func() {
			b.kept -= held
			b.leave(&b.queue, me)
		}()
		for b.queue[0] != me || !fits() && b.used > b.kept {
			if altFired, err = b.wait(ctx, alt); altFired || err != nil {
				return 0, altFired, err
			}
		}
	}
	b.used += n
	return n, false, nil
}

// Force takes n bytes of input without waiting: a batch read larger than
// what its stream took for it (its memory is in use already).
func (b *Budget) Force(n int64) {
	b.mu.Lock()
	b.used += n
	b.mu.Unlock()
}

func (b *Budget) ticket() uint64 {
	b.tickets++
	return b.tickets
}

// wait releases b.mu until memory is given back, alt closes or ctx ends;
// b.mu held.
func (b *Budget) wait(ctx context.Context, alt <-chan struct{}) (altFired bool, err error) {
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
	return altFired, err
}

// leave takes ticket t out of queue q; b.mu held. When it was first, the
// next may go now.
func (b *Budget) leave(q *[]uint64, t uint64) {
	i := slices.Index(*q, t)
	if i < 0 {
		return
	}
	*q = slices.Delete(*q, i, i+1)
	if i == 0 {
		b.broadcast()
	}
}

// Release gives back n bytes of input from Acquire.
func (b *Budget) Release(n int64) {
	b.mu.Lock()
	b.used -= n
	b.broadcast()
	b.mu.Unlock()
}

// Row takes a row's place in line for memory: call it in intake order,
// then Admit (or Leave) with the ticket.
func (b *Budget) Row() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.ticket()
	b.rows = append(b.rows, t)
	return t
}

// Admit waits until the row of ticket t is first in line and need bytes
// fit, and takes them; need is at most MaxRow (larger rows Leave). It
// returns ctx's error, taking nothing, when ctx ends first.
func (b *Budget) Admit(ctx context.Context, t uint64, need int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	defer b.leave(&b.rows, t)
	for b.rows[0] != t || b.working+need > b.limit-min(b.used, b.InputLimit()) {
		if b.rows[0] == t && !b.rowWait {
			b.rowWait = true
			close(b.waiting)
		}
		if _, err := b.wait(ctx, nil); err != nil {
			if b.rows[0] == t {
				b.notWaiting()
			}
			return err
		}
	}
	b.notWaiting()
	b.working += need
	return nil
}

// Grow takes n more bytes of rows' memory for an admitted row if they
// fit now, and reports whether it did. It never waits: a running row that
// waited for memory could wait for rows behind its own, which wait for it.
func (b *Budget) Grow(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.working+n > b.limit-min(b.used, b.InputLimit()) {
		return false
	}
	b.working += n
	return true
}

// notWaiting: the row first in line does not wait (any more); b.mu held.
func (b *Budget) notWaiting() {
	if b.rowWait {
		b.rowWait = false
		b.waiting = make(chan struct{})
	}
}

// Leave gives up the place of ticket t without taking memory.
func (b *Budget) Leave(t uint64) {
	b.mu.Lock()
	b.leave(&b.rows, t)
	b.mu.Unlock()
}

// RowsWaiting is closed while a row, first in line, waits for memory:
// streams then write out the results they hold.
func (b *Budget) RowsWaiting() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.waiting
}

// Free gives back n bytes of rows' memory (from Admit, less what Shrink
// gave back).
func (b *Budget) Free(n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.working -= n
	b.broadcast()
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

// Working is what the rows hold.
func (b *Budget) Working() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.working
}

// Limit is the budget's size in bytes.
func (b *Budget) Limit() int64 { return b.limit }
