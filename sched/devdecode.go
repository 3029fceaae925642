package sched

import (
	"sync"
	"time"

	"github.com/pixelflight/pixelflight/udf"
)

// Decoding on a device (DeviceDecoder): the decode stage passes a row on
// undecoded, keyed for one such backend (key.device), or decodes it on a
// core, so that the devices' decoders and the host's decoders share the
// rows by their measured speeds and none idles while another has a
// backlog.
//
// decodeSplit keeps the moving averages of each side's time per megapixel
// (the host's per decoder goroutine; each device's per lane and batch, as
// its lanes report in Item.Decode) and the megapixels each side was given.
// A row a device can decode goes to the side furthest behind its share of
// the throughput: side i's px/s over the sum of the host's and every
// device's (the devices that can take it; until a side has a time, every
// side counts as fast as the others).
type decodeSplit struct {
	mu       sync.Mutex
	host     time.Duration         // per megapixel, one decoder goroutine
	dev      map[int]time.Duration // per megapixel, one lane, by backend
	hostSent float64               // megapixels given to the host decoders
	sent     map[int]float64       // and to each device, by backend
}

func newDecodeSplit() *decodeSplit {
	return &decodeSplit{dev: map[int]time.Duration{}, sent: map[int]float64{}}
}

// side is one decoder of a row: the host (bi -1) or a device, with its
// goroutines or lanes.
type side struct{ bi, n int }

// choose decides for a row of mp megapixels between the host and the
// devices in can: the backend to pass it to, or -1 for the host.
func (d *decodeSplit) choose(mp float64, host side, can []side) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	sides := append([]side{host}, can...)
	rates := make([]float64, len(sides))
	known, total := true, 0.0
	for i, s := range sides {
		t := d.host
		if s.bi >= 0 {
			t = d.dev[s.bi]
		}
		if t <= 0 {
			known = false
			break
		}
		rates[i] = float64(s.n) / t.Seconds()
		total += rates[i]
	}
	given := d.hostSent
	for _, s := range can {
		given += d.sent[s.bi]
	}
	given += mp
	best, most := 0, 0.0
	for i, s := range sides {
		share := 1 / float64(len(sides))
		if known {
			share = rates[i] / total
		}
		had := d.hostSent
		if s.bi >= 0 {
			had = d.sent[s.bi]
		}
		if behind := share*given - had; i == 0 || behind > most {
			best, most = i, behind
		}
	}
	if b := sides[best].bi; b >= 0 {
		d.sent[b] += mp
		return b
	}
	d.hostSent += mp
	return -1
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

// share is what backend bi was given of the rows the devices could
// decode: the megapixels passed to it over all those given to any side.
func (d *decodeSplit) share(bi int) float64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	total := d.hostSent
	for _, v := range d.sent {
		total += v
	}
	if total == 0 {
		return 0
	}
	return d.sent[bi] / total
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
	if it.In.Image != nil || it.Task.Spec.Decode() != udf.DecodeGray { // DecodeGrayOnHost: the host's pixels
		return -1, false
	}
	hdr, ok := it.header()
	if !ok {
		return -1, false
	}
	var can []side
	for bi, dd := range s.devDecoders {
		if dd != nil && s.healthy[bi].Load() && dd.Accepts(it.Task) && dd.DecodesOnDevice(it.Task, it.In, hdr) {
			can = append(can, side{bi, dd.Lanes()})
		}
	}
	if len(can) == 0 {
		return -1, false
	}
	return s.split.choose(float64(hdr.W*hdr.H)/1e6, side{-1, s.cfg.Cores}, can), true
}

// decodedOnDevice takes the rows backend bi passed back undecoded out of
// items, back to the host decoders, records its decoder's time for the
// rows it decoded, and returns the others. A row it declined after
// decoding it (Decode set: its op's reason, not the image's) goes on from
// the host decoders to the fallback only.
func (s *Scheduler) decodedOnDevice(bi int, items []*Item) []*Item {
	if s.devDecoders[bi] == nil {
		return items
	}
	var mp float64
	var took time.Duration
	var back []*Item
	kept := items[:0:0]
	for _, it := range items {
		switch {
		case !it.encoded:
			kept = append(kept, it)
		case it.declined:
			s.stats.declined(bi)
			it.fallback = it.Decode > 0
			back = append(back, it)
		default:
			mp += float64(it.hdr.W*it.hdr.H) / 1e6
			took += it.Decode
			s.stats.decodedOn(bi)
			kept = append(kept, it)
		}
	}
	s.split.observeDevice(bi, mp, took)
	s.toHost(back)
	return kept
}

// passOn queues the row undecoded for backend bi, and reports whether it
// did: not if bi went out of service since decodeOn chose it (fail() has
// taken its undecoded rows already), and the caller decodes it.
func (s *Scheduler) passOn(it *Item, bi int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false // decodeHere ends it
	}
	if !s.healthy[bi].Load() {
		return false
	}
	it.encoded = true
	it.key = key{task: it.Task.Key, w: it.hdr.W, h: it.hdr.H, device: bi + 1}
	if s.push(it, false) {
		s.toLanes.fire()
	}
	return true
}

// toHost decodes on the host, here and now, rows that were passed on
// undecoded and came back; they keep what they hold of the budget (they
// never go back to the intake, where the decoders may all be waiting for
// memory that these rows hold).
func (s *Scheduler) toHost(items []*Item) {
	for _, it := range items {
		it.encoded, it.declined = false, false
		it.Row, it.Err, it.Kernel, it.Decode, it.Method = nil, nil, 0, 0, ""
		it.key = key{}
		s.decodeHere(it, false)
	}
}
