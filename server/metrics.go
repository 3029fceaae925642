package server

import (
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/pixelflight/pixelflight/api"
)

// metrics are the server's own series; the scheduler registers the rest
// (queue, batches, rows, errors, decode and kernel time) in the same
// registry. Its counters are the server's, which Stats reads and the
// registry exposes.
type metrics struct {
	streams  *prometheus.CounterVec
	batches  *counter
	bytesIn  *counter
	bytesOut *counter
}

// counter is a count the server keeps and Prometheus reads.
type counter struct{ atomic.Int64 }

func (c *counter) Inc()          { c.Add(1) }
func (c *counter) Add(n float64) { c.Int64.Add(int64(n)) }

// series is c as the Prometheus counter name.
func (c *counter) series(name, help string) prometheus.Collector {
	return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 { return float64(c.Load()) })
}

func newMetrics(reg *prometheus.Registry, s *Server) metrics {
	m := metrics{
		streams: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pixelflight_streams_total", Help: "DoExchange streams ended, by op and gRPC status code."}, []string{"op", "code"}),
		batches:  new(counter),
		bytesIn:  new(counter),
		bytesOut: new(counter),
	}
	reg.MustRegister(m.streams,
		m.batches.series("pixelflight_record_batches_total", "Result record batches written."),
		m.bytesIn.series("pixelflight_bytes_in_total", "Bytes of input record batches read."),
		m.bytesOut.series("pixelflight_bytes_out_total", "Bytes of result record batches written."),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "pixelflight_streams_open", Help: "DoExchange streams open."},
			func() float64 { return float64(s.open.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "pixelflight_inflight_bytes", Help: "Input bytes in flight (read, not yet answered), in the memory budget."},
			func() float64 { return float64(s.budget.Used()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "pixelflight_working_bytes", Help: "Rows' memory held in the memory budget: each op's need from a row's decode, its result's bytes until written."},
			func() float64 { return float64(s.budget.Working()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "pixelflight_memory_budget_bytes", Help: "The memory budget (--memory-budget): input (a quarter at most) and rows together."},
			func() float64 { return float64(s.budget.Limit()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "pixelflight_uptime_seconds", Help: "Seconds since the server started."},
			func() float64 { return time.Since(s.start).Seconds() }),
	)
	return m
}

// Stats returns the counters since start: a summary, the process's CPU
// time, where the rows' time went (stages: sched.Stats), and under
// "metrics" every Prometheus series by its exposition name (histograms as
// _count and _sum).
func (s *Server) Stats() (api.Stats, error) {
	mfs, err := s.cfg.Metrics.Gather()
	if err != nil {
		return api.Stats{}, err
	}
	series := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			name := mf.GetName() + labels(m)
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				series[name] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				series[name] = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				series[mf.GetName()+"_count"+labels(m)] = float64(m.GetHistogram().GetSampleCount())
				series[mf.GetName()+"_sum"+labels(m)] = m.GetHistogram().GetSampleSum()
			}
		}
	}
	cpu, stages, totals := hostCPU(), s.sched.Stats(), s.sched.Totals()
	var rows, rowErrors int64
	for _, n := range totals.Rows {
		rows += n
	}
	for _, n := range totals.RowErrors {
		rowErrors += n
	}
	return api.Stats{
		StreamsTotal:    s.ids.Load(),
		StreamsOpen:     s.open.Load(),
		Batches:         s.m.batches.Load(),
		Rows:            rows,
		RowErrors:       rowErrors,
		RowsByBackend:   totals.Rows,
		RowErrorsByKind: totals.RowErrors,
		BytesIn:         s.m.bytesIn.Load(),
		BytesOut:        s.m.bytesOut.Load(),
		QueueDepth:      int64(s.sched.Depth()),
		InflightBytes:   s.budget.Used(),
		WorkingBytes:    s.budget.Working(),
		UptimeSeconds:   int64(time.Since(s.start).Seconds()),
		HostCPUSeconds:  &cpu,
		Stages:          &stages,
		Metrics:         series,
	}, nil
}

// labels writes a series' labels as Prometheus does: {a="x",b="y"}.
func labels(m *dto.Metric) string {
	if len(m.GetLabel()) == 0 {
		return ""
	}
	parts := make([]string, 0, len(m.GetLabel()))
	for _, lp := range m.GetLabel() {
		parts = append(parts, lp.GetName()+"=\""+lp.GetValue()+"\"")
	}
	sort.Strings(parts)
	return "{" + strings.Join(parts, ",") + "}"
}

// hostCPU is the process's CPU time so far (user and system, every
// thread), in seconds.
func hostCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
