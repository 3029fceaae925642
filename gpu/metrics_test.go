package gpu

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestCollectorDGXA100(t *testing.T) {
	devs, err := Devices(dgx())
	if err != nil {
		t.Fatal(err)
	}
	c := NewCollector(func() []Device { return devs[:2] })
	if n := testutil.CollectAndCount(c); n != 12 {
		t.Errorf("%d series for 2 GPUs, want 12", n)
	}
	devs[1].UtilizationJPEG = -1 // no JPEG engines: no series
	if n := testutil.CollectAndCount(c, "pixelflight_gpu_jpeg_utilization_percent"); n != 1 {
		t.Errorf("%d JPEG utilisation series, want 1", n)
	}
	want := `
# HELP pixelflight_gpu_memory_total_bytes GPU memory, total (NVML).
# TYPE pixelflight_gpu_memory_total_bytes gauge
pixelflight_gpu_memory_total_bytes{index="0",name="` + devs[0].Name + `",uuid="` + devs[0].UUID + `"} 4.294967296e+10
pixelflight_gpu_memory_total_bytes{index="1",name="` + devs[1].Name + `",uuid="` + devs[1].UUID + `"} 4.294967296e+10
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "pixelflight_gpu_memory_total_bytes"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(NewCollector(func() []Device { return nil })); n != 0 {
		t.Errorf("%d series without GPUs", n)
	}
}
