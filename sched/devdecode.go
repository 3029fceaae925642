package sched

import (
	"sync"
	"time"
)

// Decoding on a device (DeviceDecoder): the decode stage passes a row on
// undecoded, keyed for that backend (key.device), or decodes it on a
// core, so that the device's decoder and the host's decoders share the
// rows by their measured speeds and neither idles while the other has a
// backlog.
//
// decodeSplit keeps, per device decoder, the moving averages of both
// sides' time per megapixel (the host's per decoder goroutine, the
// device's per lane and batch, as its lanes report in Item.Decode), and
// the pixels each side was given; a row goes to the side that is behind
// its share of the throughput: device px/s / (device + host px/s). Until
// both sides have a time, the rows alternate, so that each gets one.
type decodeSplit struct {
	mu   sync.Mutex
	host time.Duration         // per megapixel, one decoder goroutine
	dev  map[int]time.Duration // per megapixel, one lane, by backend
	sent map[int][2]float64    // megapixels given: [host, device], by backend
}

func newDecodeSplit() *decodeSplit {
	return &decodeSplit{dev: map[int]time.Duration{}, sent: map[int][2]float64{}}
}

// toDevice decides for a row of mp megapixels that backend bi could
// decode, with hosts decoder goroutines and lanes device lanes.
func (d *decodeSplit) toDevice(bi int, mp float64, hosts, lanes int) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	sent := d.sent[bi]
	share := 0.5
	if h, g := d.host, d.dev[bi]; h > 0 && g > 0 {
		hostRate := float64(hosts) / h.Seconds()
		devRate := float64(lanes) / g.Seconds()
		share = devRate / (devRate + hostRate)
	}
	dev := (sent[1]+mp)*(1-share) <= (sent[0]+mp)*share
	if dev {
		sent[1] += mp
	} else {
		sent[0] += mp
	}
	d.sent[bi] = sent
	return dev
}

// least returns the backend of bis given the fewest megapixels to decode
// so far.
func (d *decodeSplit) least(bis []int) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	best := bis[0]
	for _, bi := range bis[1:] {
		if d.sent[bi][1] < d.sent[best][1] {
			best = bi
		}
	}
	return best
}

// observeHost records a host decode of mp megapixels that took took.
func (d *decodeSplit) observeHost(mp float64, took time.Duration) {
	if mp <= 0 {
		return
	}
	d.mu.Lock()
	d.host = average(d.host, time.Duration(float64(took)/mp))
	d.mu.Unlock()
}

// observeDevice records device decodes by backend bi of mp megapixels in
// all that took took on one lane.
func (d *decodeSplit) observeDevice(bi int, mp float64, took time.Duration) {
	if mp <= 0 {
		return
	}
	d.mu.Lock()
	d.dev[bi] = average(d.dev[bi], time.Duration(float64(took)/mp))
	d.mu.Unlock()
}

// share is backend bi's share of the decoding now (0.5 until measured).
func (d *decodeSplit) share(bi, hosts, lanes int) float64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	h, g := d.host, d.dev[bi]
	if h <= 0 || g <= 0 {
		return 0.5
	}
	hostRate, devRate := float64(hosts)/h.Seconds(), float64(lanes)/g.Seconds()
	return devRate / (devRate + hostRate)
}

func average(old, now time.Duration) time.Duration {
	now = max(now, time.Nanosecond)
	if old <= 0 {
		return now
	}
	return old + (now-old)/4
}

// decodeOn returns the backend to pass the row on undecoded to, or -1 to
// decode it here; eligible says whether a device could have decoded it
// (its host decode then counts toward the host's rate). s.mu not held.
func (s *Scheduler) decodeOn(it *Item) (bi int, eligible bool) {
	if it.onHost || it.In.Image != nil {
		return -1, false
	}
	hdr, ok := it.header()
	if !ok {
		return -1, false
	}
	var can []int
	for bi, dd := range s.devDecoders {
		if dd != nil && s.healthy[bi].Load() && dd.Accepts(it.Task) && dd.DecodesOnDevice(it.Task, hdr) {
			can = append(can, bi)
		}
	}
	if len(can) == 0 {
		return -1, false
	}
	bi = s.split.least(can) // several GPUs: the one given least so far
	if s.split.toDevice(bi, float64(hdr.W*hdr.H)/1e6, s.cfg.Cores, s.devDecoders[bi].Lanes()) {
		return bi, true
	}
	return -1, true
}

// decodedOnDevice takes the rows backend bi passed back undecoded out of
// items, back to the host decoders, records its decoder's time for the
// rows it decoded, and returns the others.
func (s *Scheduler) decodedOnDevice(bi int, items []*Item) []*Item {
	if s.devDecoders[bi] == nil {
		return items
	}
	var mp float64
	var took time.Duration
	kept := items[:0:0]
	for _, it := range items {
		switch {
		case !it.encoded:
			kept = append(kept, it)
		case it.declined:
			s.stats.declined(bi)
			s.toHost(it)
		default:
			mp += float64(it.hdr.W*it.hdr.H) / 1e6
			took += it.Decode
			s.stats.decodedOn(bi)
			kept = append(kept, it)
		}
	}
	s.split.observeDevice(bi, mp, took)
	return kept
}

// passOn queues the row undecoded for backend bi.
func (s *Scheduler) passOn(it *Item, bi int) {
	it.encoded = true
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		it.Err = ErrClosed
		s.finish(it)
		return
	}
	it.key = key{task: it.Task.Key, w: it.hdr.W, h: it.hdr.H, device: bi + 1}
	if s.push(it, false) {
		s.toLanes.fire()
	}
	s.mu.Unlock()
}

// toHost sends a row that was passed on undecoded back to the host
// decoders, first in line; it keeps what it holds of the budget.
func (s *Scheduler) toHost(it *Item) {
	it.encoded, it.onHost, it.declined = false, true, false
	it.Row, it.Err, it.Kernel, it.Decode = nil, nil, 0, 0
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		it.Err = ErrClosed
		s.finish(it)
		return
	}
	s.intake = append([]*Item{it}, s.intake...)
	s.toDecoders.fire()
	s.mu.Unlock()
}
