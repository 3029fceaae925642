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
	fill   *prometheus.HistogramVec
	method *prometheus.CounterVec
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
			Name: "pixelflight_rows_total", Help: "Rows run, by backend and op (failed rows included; backend decode: rows that failed to decode, none: rows no backend ran: over the memory budget, cancelled or closed before they ran, or no backend in service for them)."}, []string{"backend", "op"}),
		errs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pixelflight_row_errors_total", Help: "Rows that failed, by op and kind (null, empty, unknown_format, too_large, corrupt, bad_dims, bad_struct, over_budget, cancelled, internal, other)."}, []string{"op", "kind"}),
		decode: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "pixelflight_decode_seconds", Help: "Time decoding one image in the decode stage, by op.", Buckets: secs}, []string{"op"}),
		kernel: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "pixelflight_kernel_seconds", Help: "Time running the op on one decoded image, by backend and op.", Buckets: secs}, []string{"backend", "op"}),
		fill: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "pixelflight_batch_fill", Help: "Rows per batch over the backend's max batch.", Buckets: []float64{0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 1}}, []string{"backend"}),
		method: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pixelflight_method_rows_total", Help: "Rows computed, by backend, op and method, for the ops with several (fft_convolve: fft, separable, direct on the CPU; fft, separable on a GPU)."}, []string{"backend", "op", "method"}),
	}
	reg.MustRegister(m.wait, m.batch, m.rows, m.errs, m.decode, m.kernel, m.fill, m.method)
	return m
}

// watch adds the gauges read from s at scrape time.
func (m *Metrics) watch(s *Scheduler) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "pixelflight_queue_depth", Help: "Rows queued, waiting to be decoded or for a backend."},
		func() float64 { return float64(s.Depth()) }))
	queue := func(name string, f func(Queues) int) {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "pixelflight_stage_queue_depth", Help: "Rows waiting at a stage: intake (to decode), ready (decoded, for a backend), encode.",
			ConstLabels: prometheus.Labels{"queue": name}},
			func() float64 { return float64(f(s.Stats().Queues)) }))
	}
	queue("intake", func(q Queues) int { return q.Intake })
	queue("ready", func(q Queues) int { return q.Ready })
	queue("encode", func(q Queues) int { return q.Encode })
	busy := func(stage string, f func(Stats) float64) {
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "pixelflight_stage_busy_seconds_total", Help: "Time a stage worked, summed over its goroutines: decode, encode, and each backend's lanes.",
			ConstLabels: prometheus.Labels{"stage": stage}},
			func() float64 { return f(s.Stats()) }))
	}
	busy("decode", func(st Stats) float64 { return st.Decode.BusySeconds })
	busy("encode", func(st Stats) float64 { return st.Encode.BusySeconds })
	for i, b := range s.cfg.Backends {
		busy(b.Name(), func(st Stats) float64 { return st.Backends[i].BusySeconds })
	}
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

func (m *Metrics) decoded(it *Item) {
	if m != nil {
		m.decode.WithLabelValues(it.Task.Op).Observe(it.Decode.Seconds())
	}
}

// ran counts rows a backend ran (backend "decode": rows whose image
// failed to decode; "none": rows no backend ran).
func (m *Metrics) ran(backend string, items []*Item) {
	if m == nil || len(items) == 0 {
		return
	}
	if backend != "decode" && backend != "none" {
		m.batch.WithLabelValues(backend).Observe(float64(len(items)))
	}
	for _, it := range items {
		op := it.Task.Op
		m.rows.WithLabelValues(backend, op).Inc()
		m.failed(it)
		if it.Kernel > 0 {
			m.kernel.WithLabelValues(backend, op).Observe(it.Kernel.Seconds())
		}
		if it.Method != "" {
			m.method.WithLabelValues(backend, op, it.Method).Inc()
		}
	}
}

// failed counts the row's error, if it has one.
func (m *Metrics) failed(it *Item) {
	if m != nil && it.Err != nil {
		m.errs.WithLabelValues(it.Task.Op, udf.ErrorKind(it.Err)).Inc()
	}
}

func (m *Metrics) filled(backend string, rows, most int) {
	if m != nil {
		m.fill.WithLabelValues(backend).Observe(float64(rows) / float64(most))
	}
}
