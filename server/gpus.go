package server

import (
	"sync"
	"time"

	"github.com/pixelflight/pixelflight/api"
	"github.com/pixelflight/pixelflight/gpu"
)

// gpus remembers the last NVML probe for a while: a probe can take long
// on machines without persistence mode, and capabilities, health and
// every metrics scrape ask for it.
type gpus struct {
	probe func() ([]gpu.Device, error)
	mu    sync.Mutex
	at    time.Time
	devs  []gpu.Device
	err   error
}

const gpuProbeEvery = 10 * time.Second

func (g *gpus) get() ([]gpu.Device, error) {
	if g.probe == nil {
		return []gpu.Device{}, nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.at.IsZero() || time.Since(g.at) > gpuProbeEvery {
		g.devs, g.err = g.probe()
		if g.devs == nil {
			g.devs = []gpu.Device{}
		}
		g.at = time.Now()
	}
	return g.devs, g.err
}

// describe is the "gpus" part of capabilities and health.
func (g *gpus) describe() api.GPUs {
	devs, err := g.get()
	out := api.GPUs{Devices: devs}
	if err != nil {
		out.Note = err.Error()
	}
	return out
}
