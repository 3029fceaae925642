package sched

import (
	"sync"
)

// cores lets at most n goroutines work on the host's CPUs at once; the
// decode and encode stages (acquire(true)) go before the CPU lanes, so
// that the rows a device waits for are decoded first.
type cores struct {
	mu     sync.Mutex
	cond   *sync.Cond
	free   int
	urgent int // waiting with priority
}

func newCores(n int) *cores {
	c := &cores{free: n}
	c.cond = sync.NewCond(&c.mu)
	return c
}

func (c *cores) acquire(urgent bool) {
	c.mu.Lock()
	if urgent {
		c.urgent++
		for c.free == 0 {
			c.cond.Wait()
		}
		c.urgent--
	} else {
		for c.free == 0 || c.urgent > 0 {
			c.cond.Wait()
		}
	}
	c.free--
	c.mu.Unlock()
}

func (c *cores) release() {
	c.mu.Lock()
	c.free++
	c.mu.Unlock()
	c.cond.Broadcast()
}
