package sched

import (
	"time"
)

// next blocks until lane lane of backend bi has rows to run, and takes
// them; nil once the scheduler closes or the backend is out of service.
//
//   - Rows given back (declined, or of a failed batch) go to the fallback,
//     backend 0, first.
//   - A batching backend takes up to MaxBatch rows of one key from the
//     front: a full batch, or a smaller one whose oldest row has waited
//     MaxDelay.
//   - A one-row lane (the CPU) takes the oldest row of a key no batching
//     backend runs. Of a key one does run, it takes the newest row, and
//     only when it would finish it before the batching backend reached it
//     (see leave).
func (s *Scheduler) next(bi, lane int) []*Item {
	b := s.cfg.Backends[bi]
	limit := max(b.MaxBatch(), 1)
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		if s.closed || !s.healthy[bi].Load() {
			return nil
		}
		wait, left := time.Duration(-1), false
		for i, k := range s.keys {
			q := s.ready[k]
			switch {
			case k.device != 0 && k.device-1 != bi: // undecoded, for another backend
			case k.retry:
				if bi == 0 {
					return s.take(i, limit, false)
				}
			case !b.Accepts(q[0].Task): // not this backend's
			case limit > 1:
				due := s.cfg.MaxDelay - time.Since(q[0].enq)
				if len(q) >= limit || due <= 0 {
					return s.take(i, limit, false)
				}
				if wait < 0 || due < wait {
					wait = due
				}
			case k.device != 0: // its own undecoded rows: no other takes them
				return s.take(i, 1, false)
			default:
				leave, batcher := s.leave(bi, lane, q[0], len(q))
				if !leave {
					return s.take(i, 1, batcher)
				}
				left = true
			}
		}
		switch {
		case left: // look again soon: the queue and the rates change
			if wait < 0 || wait > recheck {
				wait = recheck
			}
		case limit == 1:
			s.idle++
			if c, ok := b.(*CPU); ok {
				dropped, again := c.idle(lane, time.Now())
				if dropped {
					s.freeMemory()
				}
				if again > 0 && (wait < 0 || again < wait) {
					wait = again
				}
			}
		}
		s.wait(&s.toLanes, wait)
		if !left && limit == 1 {
			s.idle--
		}
	}
}

// recheck is how often a one-row lane that left rows to a batching
// backend looks at them again.
const recheck = 2 * time.Millisecond

// leave decides for a one-row lane of backend bi whether to leave the
// newest of q ready rows like it to a batching backend that runs them
// (StarPU's dmda policy: each row where it finishes first). It leaves it
// unless the lane's measured time per row is below the time the fastest
// such backend takes to reach it: its lanes working through q rows at
// its measured time per row, or per batch of MaxBatch (whichever is
// less: a device's partial batches cost about what full ones do). Until
// that backend has run rows of this kind the lane leaves them; until the
// lane has, its lane 0 takes one to learn its time, when more than a
// batch is queued. batcher says whether such a backend exists.
func (s *Scheduler) leave(bi, lane int, it *Item, q int) (leave, batcher bool) {
	var reach time.Duration // the soonest a batching backend reaches the row
	known, most := true, 0
	for j, o := range s.cfg.Backends {
		if j == bi || o.MaxBatch() <= 1 || o.Lanes() == 0 || !s.healthy[j].Load() || !o.Accepts(it.Task) {
			continue
		}
		batcher = true
		most = max(most, o.MaxBatch())
		r, ok := s.rates.get(j, it)
		if !ok {
			known = false
			continue
		}
		batches := (q + o.MaxBatch() - 1) / o.MaxBatch()
		d := min(time.Duration(q)*r.perRow, time.Duration(batches)*r.perBatch) / time.Duration(o.Lanes())
		if reach == 0 || d < reach {
			reach = d
		}
	}
	switch {
	case !batcher:
		return false, false
	case !known && reach == 0:
		return true, true
	}
	own, ok := s.rates.get(bi, it)
	if !ok {
		return lane != 0 || q <= most, true
	}
	return own.perRow >= reach, true
}

// take removes up to n rows of the i-th key, the newest when tail is set;
// s.mu held. A key with rows left moves to the back, so calls share the
// lanes.
func (s *Scheduler) take(i, n int, tail bool) []*Item {
	k := s.keys[i]
	q := s.ready[k]
	n = min(len(q), n)
	full := len(s.intake) > 0 && !s.room()
	items := make([]*Item, n)
	var rest []*Item
	if tail {
		copy(items, q[len(q)-n:])
		clear(q[len(q)-n:])
		rest = q[:len(q)-n]
	} else {
		copy(items, q)
		clear(q[:n])
		rest = q[n:]
	}
	s.keys = append(s.keys[:i], s.keys[i+1:]...)
	if len(rest) > 0 {
		s.ready[k] = rest
		s.keys = append(s.keys, k)
	} else {
		delete(s.ready, k)
	}
	s.readyRows -= n
	for _, it := range items {
		s.readyBytes -= it.held
	}
	if full && s.room() {
		s.toDecoders.fire()
	}
	return items
}
