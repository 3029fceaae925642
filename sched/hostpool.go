package sched

import "sync"

// HostPool keeps the buffers a Stager hands out: made by alloc (pinned
// memory, for a GPU) in size classes, reused once given back, at most
// max bytes made in all; beyond that HostBuffer returns nil.
type HostPool struct {
	alloc func(n int) ([]byte, error)
	max   int64

	mu   sync.Mutex
	free map[int][][]byte // by size class
	made int64
	all  [][]byte
}

// NewHostPool returns a pool that makes buffers with alloc.
func NewHostPool(alloc func(n int) ([]byte, error), max int64) *HostPool {
	return &HostPool{alloc: alloc, max: max, free: map[int][][]byte{}}
}

// class is the size a buffer of n bytes is made at: a power of two from
// 64 KiB to 1 MiB, then whole MiB.
func class(n int) int {
	if n > 1<<20 {
		return (n + 1<<20 - 1) &^ (1<<20 - 1)
	}
	c := 64 << 10
	for c < n {
		c *= 2
	}
	return c
}

// Get returns a buffer of at least n bytes, or nil.
func (p *HostPool) Get(n int) []byte {
	c := class(n)
	p.mu.Lock()
	defer p.mu.Unlock()
	if f := p.free[c]; len(f) > 0 {
		b := f[len(f)-1]
		p.free[c] = f[:len(f)-1]
		return b
	}
	if p.made+int64(c) > p.max {
		return nil
	}
	b, err := p.alloc(c)
	if err != nil {
		return nil
	}
	p.made += int64(c)
	p.all = append(p.all, b)
	return b
}

// Put gives back a buffer from Get.
func (p *HostPool) Put(b []byte) {
	p.mu.Lock()
	p.free[len(b)] = append(p.free[len(b)], b)
	p.mu.Unlock()
}

// Made is the bytes of the buffers made so far.
func (p *HostPool) Made() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.made
}

// Drain returns every buffer the pool made, for freeing; the pool is
// empty after it.
func (p *HostPool) Drain() [][]byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	all := p.all
	p.all, p.free, p.made = nil, map[int][][]byte{}, 0
	return all
}
