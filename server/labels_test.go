package server

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
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
