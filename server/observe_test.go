package server

import (
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// TestMetricsLabels: every series MetricsHandler serves carries the
// configured labels, a series' own label of the same name wins, and the
// stats action's series are as registered.
func TestMetricsLabels(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pixelflight_test_total", Help: "t"}, []string{"backend"})
	reg.MustRegister(c)
	c.WithLabelValues("cpu").Add(3)
	s := &Server{cfg: Config{Metrics: reg, MetricsLabels: map[string]string{"spark_executor_id": "7", "backend": "x", "spark_app_id": "app-1"}}}
	rec := httptest.NewRecorder()
	s.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	want := `pixelflight_test_total{backend="cpu",spark_app_id="app-1",spark_executor_id="7"} 3`
	if !strings.Contains(rec.Body.String(), want) {
		t.Errorf("/metrics lacks %s:\n%s", want, rec.Body.String())
	}
	mfs, err := reg.Gather()
	if err != nil || len(mfs[0].GetMetric()[0].GetLabel()) != 1 {
		t.Errorf("the registry's own series changed: %v %v", mfs, err)
	}
}

// TestProgressLines: a stream whose batches go on past Config.Progress
// logs a progress line with its rows so far, and none with the default
// interval for a short one.
func TestProgressLines(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	f := startWith(t, "grpc://127.0.0.1:0", Config{Workers: 2, Progress: time.Nanosecond, Log: zap.New(core)})
	mem := memory.NewGoAllocator()
	img := pngBytes(t, 9, 6)
	b := imageBatch(mem, "content", img, img)
	defer b.Release()
	if _, err := exchange(t, f.client, `{"op": "fft_convolve", "params": {"output": "stats"}}`, b, b, b); err != nil {
		t.Fatal(err)
	}
	var rows []int64
	for _, e := range logs.FilterMessage("stream progress").All() {
		rows = append(rows, e.ContextMap()["rows"].(int64))
	}
	if !slices.Equal(rows, []int64{2, 4, 6}) {
		t.Errorf("progress lines' rows %v, want [2 4 6]", rows)
	}
}
