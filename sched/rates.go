package sched

import (
	"math/bits"
	"sync"
	"time"
)

// rates is the measured time of each backend lane per row and per batch,
// by op and image size (pixels to the next power of two): moving
// averages over its batches.
type rates struct {
	mu sync.Mutex
	m  []map[rateKey]rate // per backend
}

type rateKey struct {
	op   string
	size int // bits.Len of the pixel count
}

type rate struct{ perRow, perBatch time.Duration }

func newRates(backends int) *rates {
	r := &rates{m: make([]map[rateKey]rate, backends)}
	for i := range r.m {
		r.m[i] = map[rateKey]rate{}
	}
	return r
}

func rateKeyOf(it *Item) rateKey {
	k := rateKey{op: it.Task.Op}
	switch {
	case it.Gray != nil:
		k.size = bits.Len(uint(it.Gray.W * it.Gray.H))
	case it.hdrOK:
		k.size = bits.Len(uint(it.hdr.W * it.hdr.H))
	}
	return k
}

// observe records a batch of n rows like it that took d on one lane.
func (r *rates) observe(bi int, it *Item, n int, d time.Duration) {
	k := rateKeyOf(it)
	d = max(d, time.Nanosecond)
	now := rate{perRow: max(d/time.Duration(max(n, 1)), time.Nanosecond), perBatch: d}
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.m[bi][k]; ok {
		now.perRow = old.perRow + (now.perRow-old.perRow)/4
		now.perBatch = old.perBatch + (now.perBatch-old.perBatch)/4
	}
	r.m[bi][k] = now
}

// get is backend bi's time for rows like it, on one lane.
func (r *rates) get(bi int, it *Item) (rate, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	d, ok := r.m[bi][rateKeyOf(it)]
	return d, ok
}
