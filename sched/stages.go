package sched

import (
	"fmt"
	"runtime"
	"time"

	"go.uber.org/zap"

	"github.com/pixelflight/pixelflight/udf"
)

// The stages, in the order a row goes through them: decoder (intake to
// the ready queue), serve (a backend lane: ready queue to results) and
// encoder (results still to encode).

// decoder is one goroutine of the decode stage: it takes the oldest row
// of the intake while the ready queue has room, and passes it on
// undecoded to a device that decodes it (decodeOn) or decodes it here.
func (s *Scheduler) decoder() {
	defer s.lanes.Done()
	for {
		it := s.nextToDecode()
		if it == nil {
			return
		}
		if err := s.admit(it); err != nil {
			s.unrun([]*Item{it}, err)
			continue
		}
		bi, eligible := s.decodeOn(it)
		if bi >= 0 && s.passOn(it, bi) {
			continue
		}
		s.decodeHere(it, eligible)
	}
}

// decodeHere decodes an admitted row on a core and queues it ready under
// its decoded shape. A bad image is the row's error here, and the row is
// done. The decoders call it, and so does whoever gives back rows a
// device did not decode (toHost): those hold their memory already, so
// they must not wait behind rows waiting for memory in the intake.
func (s *Scheduler) decodeHere(it *Item, eligible bool) {
	g := s.getGray(it)
	it.Gray = g
	s.cores.acquire(true)
	// Enter C with nothing queued behind this goroutine: what it
	// readied (a lane, a stream's reader) would otherwise wait out
	// the cgo call until the runtime's monitor takes the P back,
	// which costs thread switches and sets the monitor polling
	// every 20 µs (5.9 -> 4.6 context switches per image, measured).
	runtime.Gosched()
	start, cpu := time.Now(), startThreadCPU()
	err := it.Task.DecodeInto(it.In, it.hdr, g)
	it.Decode = time.Since(start)
	s.stats.decode.add(1, it.Decode, cpu.stop())
	if eligible && err == nil {
		s.split.observeHost(float64(g.W*g.H)/1e6, it.Decode)
	}
	s.cores.release()
	s.cfg.Metrics.decoded(it)
	if err == nil {
		err = it.ctx.Err()
	}
	if err != nil {
		s.putGray(it)
		it.Err = err
		it.backend = "decode"
		s.tally("decode", []*Item{it})
		s.finish(it)
		return
	}
	it.held = int64(cap(g.Pix))
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		s.unrun([]*Item{it}, ErrClosed)
		return
	}
	if !s.runnable(it.Task) { // its backend failed while it was decoded
		s.mu.Unlock()
		s.unrun([]*Item{it}, noBackend(it.Task))
		return
	}
	// A row a device declined after decoding it goes to the fallback.
	it.key = key{task: it.Task.Key, w: g.W, h: g.H, retry: it.fallback && s.cfg.Backends[0].Lanes() > 0}
	if s.push(it, false) {
		s.toLanes.fire()
	}
	s.mu.Unlock()
}

// nextToDecode blocks until a row waits in the intake and the ready queue
// has room (in rows and bytes), and takes it; nil once the scheduler
// closes.
func (s *Scheduler) nextToDecode() *Item {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		if s.closed {
			return nil
		}
		if len(s.intake) > 0 && s.room() {
			it := s.intake[0]
			s.intake[0] = nil
			s.intake = s.intake[1:]
			if s.cfg.Budget != nil {
				it.ticket = s.cfg.Budget.Row() // in intake order
			}
			return it
		}
		s.wait(&s.toDecoders, -1)
	}
}

// admit takes the row's memory from the budget before it is decoded:
// what its op needs at its peak for the size its header gives, waiting
// its turn. A row that needs more than any row may take fails with
// udf.ErrOverBudget, unless its decode refuses it at once anyway (a header
// lying about its size: its own error is the row's); a row whose header
// gives no size is not held back (its decode reads the same header and
// fails).
func (s *Scheduler) admit(it *Item) error {
	b := s.cfg.Budget
	if b == nil || it.ticket == 0 {
		return it.ctx.Err()
	}
	t := it.ticket
	it.ticket = 0
	hdr, ok := it.header()
	if !ok {
		b.Leave(t)
		return it.ctx.Err()
	}
	need := it.Task.Need(hdr.W, hdr.H)
	if need > b.MaxRow() && it.Task.Refused(it.In, hdr) { // its decode says why, at once
		b.Leave(t)
		return it.ctx.Err()
	}
	if need > b.MaxRow() {
		b.Leave(t)
		return fmt.Errorf("%w: a %d×%d image needs about %s for %s (%s per pixel), over the %s a row may take "+
			"of the sidecar's memory budget of %s (--memory-budget; under the executor plugin, "+
			"spark.pixelflight.memoryBudget or spark.executor.memoryOverhead): raise it, or send smaller images",
			udf.ErrOverBudget, hdr.W, hdr.H, udf.FormatBytes(need), it.Task.Op,
			udf.FormatBytes(it.Task.Spec.PerPixel(hdr.W, hdr.H)), udf.FormatBytes(b.MaxRow()), udf.FormatBytes(b.Limit()))
	}
	if err := b.Admit(it.ctx, t, need); err != nil {
		return err
	}
	it.need = need
	return nil
}

// room reports whether the ready queue takes another decoded row; s.mu
// held.
func (s *Scheduler) room() bool {
	return s.readyRows < s.readyCap && (s.readyBytes < s.readyLimit || s.readyRows == 0)
}

// serve is one lane of backend bi.
func (s *Scheduler) serve(bi, lane int) {
	defer s.lanes.Done()
	b := s.cfg.Backends[bi]
	_, host := b.(hostBackend)
	for {
		items := s.next(bi, lane)
		if items == nil {
			return
		}
		var cpu cpuClock
		if host {
			s.cores.acquire(false)
			cpu = startThreadCPU()
		}
		start := time.Now()
		for _, it := range items {
			s.cfg.Metrics.queued(start.Sub(it.enq))
		}
		err := b.Run(s.ctx, lane, items)
		took := time.Since(start)
		var cpuTime time.Duration
		if host {
			cpuTime = cpu.stop()
			s.cores.release()
		}
		s.stats.ran(bi, len(items), took, cpuTime)
		s.cfg.Metrics.filled(b.Name(), len(items), max(b.MaxBatch(), 1))
		if err == nil {
			items = s.decodedOnDevice(bi, items)
		}
		switch {
		case len(items) == 0:
			continue
		case err == nil:
			s.rates.observe(bi, items[0], len(items), took)
		case bi != 0:
			if err = s.fail(bi, err, items); err == nil {
				continue // the fallback runs them
			}
		default:
			err = fmt.Errorf("backend %s: %w", b.Name(), err)
		}
		var ran []*Item
		for _, it := range items {
			if err == nil && it.declined && bi != 0 {
				s.giveBack(bi, it)
				continue
			}
			switch {
			case err != nil:
				it.Err = err
			case it.declined:
				it.Err = fmt.Errorf("%w: the fallback backend %s declined the row", ErrNoBackend, b.Name())
			}
			it.backend = b.Name()
			ran = append(ran, it)
		}
		s.tally(b.Name(), ran)
		for _, it := range ran {
			s.done(it)
		}
	}
}

// done sends a row with a result still to encode to the encode stage,
// and finishes any other.
func (s *Scheduler) done(it *Item) {
	if _, ok := it.Row.(udf.Encoder); ok && it.Err == nil {
		s.encodeQ <- it
		return
	}
	s.finish(it)
}

// encoder is one goroutine of the encode stage.
func (s *Scheduler) encoder() {
	defer s.encoders.Done()
	for it := range s.encodeQ {
		if err := it.ctx.Err(); err != nil {
			it.Row, it.Err = nil, err
			s.tallyFailed(it) // its lane counted the row
			s.finish(it)
			continue
		}
		s.cores.acquire(true)
		start, cpu := time.Now(), startThreadCPU()
		it.Row, it.Err = udf.Encode(it.Row)
		s.stats.encode.add(1, time.Since(start), cpu.stop())
		s.cores.release()
		s.tallyFailed(it) // its lane counted the row, before it was encoded
		s.finish(it)
	}
}

// giveBack queues a declined row for the fallback backend, first in
// line, already decoded.
func (s *Scheduler) giveBack(bi int, it *Item) {
	s.stats.declined(bi)
	it.declined, it.Row, it.Err, it.Kernel = false, nil, nil, 0
	s.mu.Lock()
	closed := s.closed
	if !closed && s.cfg.Backends[0].Lanes() > 0 {
		it.key.retry = true
		s.push(it, true)
		s.toLanes.fire()
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	err := ErrClosed
	if !closed {
		err = fmt.Errorf("%w: backend %s declined the row and the fallback has no lanes", ErrNoBackend, s.cfg.Backends[bi].Name())
	}
	s.unrun([]*Item{it}, err)
}

// fail takes backend bi out of service after it failed a batch. With a
// fallback of lanes it gives the batch to it, first in line, already
// decoded, and returns nil. Without one it returns the batch's rows'
// error, and ends at once the queued rows no backend in service runs
// now (those decoded or submitted later end in the decoder and Submit).
func (s *Scheduler) fail(bi int, err error, items []*Item) error {
	name := s.cfg.Backends[bi].Name()
	fallback := s.cfg.Backends[0].Lanes() > 0
	s.cfg.Log.Error("backend failed a batch: out of service", zap.String("backend", name),
		zap.Int("rows", len(items)), zap.Bool("to_fallback", fallback), zap.Error(err))
	s.mu.Lock()
	if s.healthy[bi].Swap(false) {
		s.faults[bi] = err.Error()
	}
	s.toLanes.fire() // its other lanes stop
	// Its queued undecoded rows go to the host decoders, and with a
	// fallback so do the batch's.
	var undecoded []*Item
	if !s.closed {
		undecoded = s.remove(func(it *Item) bool { return it.key.device == bi+1 })
		defer func() { s.toHost(undecoded) }()
	}
	if !s.closed && fallback {
		for _, it := range items {
			if it.encoded {
				undecoded = append(undecoded, it)
			}
		}
		for i := len(items) - 1; i >= 0; i-- {
			it := items[i]
			if it.encoded {
				continue
			}
			it.Row, it.Err, it.Kernel, it.declined = nil, nil, 0, false
			it.key.retry = true
			s.push(it, true)
		}
		s.mu.Unlock()
		return nil
	}
	var gone []*Item
	if s.closed {
		err = ErrClosed
	} else {
		err = fmt.Errorf("%w: backend %s failed and the fallback has no lanes: %w", ErrNoBackend, name, err)
		gone = s.remove(func(it *Item) bool { return !s.runnable(it.Task) })
	}
	s.mu.Unlock()
	s.unrun(gone, err)
	return err
}

// unrun ends rows that no backend ran with err (refused at admission,
// cancelled or closed before they ran, or no backend in service for
// them); they count as backend "none".
func (s *Scheduler) unrun(items []*Item, err error) {
	for _, it := range items {
		it.Err, it.backend = err, "none"
	}
	s.tally("none", items)
	for _, it := range items {
		s.finish(it)
	}
}
