package server

import (
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/pixelflight/pixelflight/api"
)

// metrics are the server's own series; the scheduler registers the rest
// (queue, batches, rows, errors, decode and kernel time) in the same
// registry.
type metrics struct {
	streams  *prometheus.CounterVec
	batches  prometheus.Counter
	bytesIn  prometheus.Counter
	bytesOut prometheus.Counter
}

func newMetrics(reg *prometheus.Registry, s *Server) metrics {
	m := metrics{
		streams: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pixelflight_streams_total", Help: "DoExchange streams ended, by op and gRPC status code."}, []string{"op", "code"}),
		batches:  prometheus.NewCounter(prometheus.CounterOpts{Name: "pixelflight_record_batches_total", Help: "Result record batches written."}),
		bytesIn:  prometheus.NewCounter(prometheus.CounterOpts{Name: "pixelflight_bytes_in_total", Help: "Bytes of input record batches read."}),
		bytesOut: prometheus.NewCounter(prometheus.CounterOpts{Name: "pixelflight_bytes_out_total", Help: "Bytes of result record batches written."}),
	}
	reg.MustRegister(m.streams, m.batches, m.bytesIn, m.bytesOut,
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
	sum := func(name string) (total float64) {
		for k, v := range series {
			if k == name || strings.HasPrefix(k, name+"{") {
				total += v
			}
		}
		return total
	}
	byLabel := func(name, label string) map[string]int64 {
		out := map[string]int64{}
		for _, mf := range mfs {
			if mf.GetName() != name {
				continue
			}
			for _, m := range mf.GetMetric() {
				for _, lp := range m.GetLabel() {
					if lp.GetName() == label {
						out[lp.GetValue()] += int64(m.GetCounter().GetValue())
					}
				}
			}
		}
		return out
	}
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
	cpu, stages := hostCPU(), s.sched.Stats()
	return api.Stats{
		StreamsTotal:    s.ids.Load(),
		StreamsOpen:     s.open.Load(),
		Batches:         int64(sum("pixelflight_record_batches_total")),
		Rows:            int64(sum("pixelflight_rows_total")),
		RowErrors:       int64(sum("pixelflight_row_errors_total")),
		RowsByBackend:   byLabel("pixelflight_rows_total", "backend"),
		RowErrorsByKind: byLabel("pixelflight_row_errors_total", "kind"),
		BytesIn:         int64(sum("pixelflight_bytes_in_total")),
		BytesOut:        int64(sum("pixelflight_bytes_out_total")),
		QueueDepth:      int64(sum("pixelflight_queue_depth")),
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
