package gpu

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// Collector exports each device's memory and utilisation as Prometheus
// gauges, read from list at scrape time.
type Collector struct {
	list                                     func() []Device
	total, free, util, memUtil, jpgUtil, mig *prometheus.Desc
}

// NewCollector returns a collector of the devices list returns.
func NewCollector(list func() []Device) *Collector {
	labels := []string{"index", "uuid", "name"}
	desc := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("pixelflight_gpu_"+name, help, labels, nil)
	}
	return &Collector{
		list:    list,
		total:   desc("memory_total_bytes", "GPU memory, total (NVML)."),
		free:    desc("memory_free_bytes", "GPU memory, free (NVML)."),
		util:    desc("utilization_percent", "GPU utilisation over NVML's last sample period; absent when the GPU does not report it."),
		memUtil: desc("memory_utilization_percent", "GPU memory-controller utilisation (NVML); absent when not reported."),
		jpgUtil: desc("jpeg_utilization_percent", "GPU hardware JPEG engines' utilisation (NVML); absent on a GPU without them or where they are not visible (a container without the video capability)."),
		mig:     desc("mig_enabled", "1 when MIG mode is on."),
	}
}

// Describe sends the descriptions of every series.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.total, c.free, c.util, c.memUtil, c.jpgUtil, c.mig} {
		ch <- d
	}
}

// Collect reads the devices and sends their gauges.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	for _, d := range c.list() {
		l := []string{strconv.Itoa(d.Index), d.UUID, d.Name}
		gauge := func(desc *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v, l...)
		}
		gauge(c.total, float64(d.MemoryTotal))
		gauge(c.free, float64(d.MemoryFree))
		if d.UtilizationGPU >= 0 {
			gauge(c.util, float64(d.UtilizationGPU))
		}
		if d.UtilizationMemory >= 0 {
			gauge(c.memUtil, float64(d.UtilizationMemory))
		}
		if d.UtilizationJPEG >= 0 {
			gauge(c.jpgUtil, float64(d.UtilizationJPEG))
		}
		mig := 0.0
		if d.MIG {
			mig = 1
		}
		gauge(c.mig, mig)
	}
}
