package sched

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pixelflight/pixelflight/udf"
)

// Metrics are the scheduler's Prometheus series. A nil *Metrics records
// nothing.
type Metrics struct {
	reg    prometheus.Registerer
	wait   prometheus.Histogram
	batch  *prometheus.HistogramVec
	rows   *prometheus.CounterVec
	errs   *prometheus.CounterVec
	decode *prometheus.HistogramVec
	kernel *prometheus.HistogramVec
}

// NewMetrics registers the scheduler's series with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	secs := prometheus.ExponentialBuckets(100e-6, 2, 16) // 100 µs to 3.3 s
	m := &Metrics{
		reg: reg,
		wait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "pixelflight_queue_wait_seconds", Help: "Time rows waited in the queue before a backend took them.", Buckets: secs}),
		batch: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "pixelflight_batch_size", Help: "Rows per batch a backend ran.", Buckets: prometheus.ExponentialBuckets(1, 2, 10)}, []string{"backend"}),
		rows: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pixelflight_rows_total", Help: "Rows run, by backend and op (failed rows included)."}, []string{"backend", "op"}),
		errs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pixelflight_row_errors_total", Help: "Rows that failed, by op and kind (null, empty, unknown_format, too_large, corrupt, bad_dims, bad_struct, cancelled, internal, other)."}, []string{"op", "kind"}),
		decode: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "pixelflight_decode_seconds", Help: "Time decoding one image, by backend and op.", Buckets: secs}, []string{"backend", "op"}),
		kernel: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "pixelflight_kernel_seconds", Help: "Time running the op on one decoded image, by backend and op.", Buckets: secs}, []string{"backend", "op"}),
	}
	reg.MustRegister(m.wait, m.batch, m.rows, m.errs, m.decode, m.kernel)
	return m
}

// watch adds the gauges read from s at scrape time.
func (m *Metrics) watch(s *Scheduler) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "pixelflight_queue_depth", Help: "Rows queued, waiting for a backend."},
		func() float64 { return float64(s.Depth()) }))
	for i, b := range s.cfg.Backends {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "pixelflight_backend_healthy", Help: "1 while the backend is in service, 0 once a failure took it out.",
			ConstLabels: prometheus.Labels{"backend": b.Name()}},
			func() float64 {
				if s.healthy[i].Load() {
					return 1
				}
				return 0
			}))
	}
}

func (m *Metrics) queued(d time.Duration) {
	if m != nil {
		m.wait.Observe(d.Seconds())
	}
}

func (m *Metrics) ran(backend string, items []*Item) {
	if m == nil {
		return
	}
	m.batch.WithLabelValues(backend).Observe(float64(len(items)))
	for _, it := range items {
		op := it.Task.Op
		m.rows.WithLabelValues(backend, op).Inc()
		if it.Err != nil {
			m.errs.WithLabelValues(op, udf.ErrorKind(it.Err)).Inc()
		}
		if it.Decode > 0 {
			m.decode.WithLabelValues(backend, op).Observe(it.Decode.Seconds())
		}
		if it.Kernel > 0 {
			m.kernel.WithLabelValues(backend, op).Observe(it.Kernel.Seconds())
		}
	}
}
