package cli

import (
	"fmt"

	"github.com/pixelflight/pixelflight/internal/memlimit"
	"github.com/pixelflight/pixelflight/udf"
)

// memory is serve's memory budget and the garbage collector's soft limit,
// and where the budget came from, for the log.
type memory struct {
	budget, gcLimit int64
	source          string
}

// The budget's share of a memory cgroup's limit, and the garbage
// collector's: the rest is the runtime, gRPC's buffers, the lanes' kept
// buffers and the C decoders' memory.
const (
	cgroupBudgetShare = 0.6
	cgroupGCShare     = 0.9
	machineShare      = 4 // a quarter of the machine without a cgroup limit
)

// memoryOf works out the memory budget: --memory-budget when set, else a
// share of the memory cgroup's limit (YARN's, Kubernetes', Docker's) when
// there is one, else a quarter of the machine's memory; and the garbage
// collector's limit: --gc-memory-limit when set, else 90% of the cgroup's
// limit, else the budget plus 256 MiB and 32 MiB per worker.
func memoryOf(budget, gcLimit int64, workers int, sys memlimit.Sys) (memory, error) {
	m := memory{budget: budget, source: "--memory-budget"}
	cg, file, limited := sys.Cgroup()
	if m.budget == 0 {
		if limited {
			m.budget, m.source = int64(cgroupBudgetShare*float64(cg)), fmt.Sprintf("%.0f%% of the memory cgroup's limit, %s (%s)", 100*cgroupBudgetShare, udf.FormatBytes(cg), file)
		} else {
			total, err := sys.Total()
			if err != nil {
				return m, fmt.Errorf("--memory-budget 0 (automatic): no memory cgroup limit, and %w: give --memory-budget", err)
			}
			m.budget, m.source = total/machineShare, fmt.Sprintf("a quarter of the machine's %s (no memory cgroup limit)", udf.FormatBytes(total))
		}
	}
	switch {
	case gcLimit != 0:
		m.gcLimit = gcLimit
	case limited:
		m.gcLimit = int64(cgroupGCShare * float64(cg))
	default:
		m.gcLimit = m.budget + 256<<20 + int64(max(workers, 0))*32<<20
	}
	return m, nil
}
