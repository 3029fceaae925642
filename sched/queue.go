package sched

import (
	"context"
	"runtime/debug"
	"time"

	"github.com/pixelflight/pixelflight/imageio"
	"github.com/pixelflight/pixelflight/udf"
)

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
	s.unrun(gone, ctx.Err())
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
