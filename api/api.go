package api

import (
	"github.com/pixelflight/pixelflight/gpu"
	"github.com/pixelflight/pixelflight/sched"
	"github.com/pixelflight/pixelflight/udf"
)

// Capabilities is the capabilities action's answer. Lists are [] when
// empty, never null.
type Capabilities struct {
	Version  string    `json:"version"`
	Ops      []Op      `json:"ops"`
	Backends []Backend `json:"backends"`
	GPUs     GPUs      `json:"gpus"`
	Cascades []string  `json:"cascades"`
	Limits   Limits    `json:"limits"`
	Input    Input     `json:"input"`
}

// Op is one op: its params and the result schema of each output variant.
type Op struct {
	Name    string             `json:"name"`
	Summary string             `json:"summary"`
	Params  []udf.Param        `json:"params"`
	Outputs map[string][]Field `json:"outputs"`
}

// Field is a result column: its name and Arrow type.
type Field struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

// Backend is one backend of the scheduler.
type Backend struct {
	Name     string `json:"name"`
	Lanes    int    `json:"lanes"`
	MaxBatch int    `json:"max_batch"`
	Healthy  bool   `json:"healthy"`
	Fault    string `json:"fault,omitempty"`   // what took it out of service
	Vector   string `json:"vector,omitempty"`  // the CPU's: the FFT's vector unit
	Decoder  string `json:"decoder,omitempty"` // a backend that can decode JPEGs itself
}

// GPUs is what NVML shows; Note says why it shows none.
type GPUs struct {
	Devices []gpu.Device `json:"devices"`
	Note    string       `json:"note,omitempty"`
}

// Limits are the server's limits.
type Limits struct {
	MemoryBudget    int64   `json:"memory_budget"`
	MaxDelayMS      float64 `json:"max_delay_ms"`
	MaxPixels       int64   `json:"max_pixels"`
	MaxKernelSide   int     `json:"max_kernel_side"`
	MaxMessageBytes int     `json:"max_message_bytes"`
	MaxCommandBytes int     `json:"max_command_bytes"`
}

// Input is what the server reads.
type Input struct {
	ColumnTypes []string `json:"column_types"`
	Formats     []string `json:"formats"`
	JPEGDecoder string   `json:"jpeg_decoder"`
	PNGDecoder  string   `json:"png_decoder"`
}

// Health is the health action's answer.
type Health struct {
	Status   string    `json:"status"` // SERVING or NOT_SERVING
	Backends []Backend `json:"backends"`
	GPUs     GPUs      `json:"gpus"`
}

// Stats is the stats action's answer: counters since start. A client
// reading an older server's answer finds HostCPUSeconds and Stages nil
// where it did not say.
type Stats struct {
	StreamsTotal    int64              `json:"streams_total"`
	StreamsOpen     int64              `json:"streams_open"`
	Batches         int64              `json:"batches"`
	Rows            int64              `json:"rows"`
	RowErrors       int64              `json:"row_errors"`
	RowsByBackend   map[string]int64   `json:"rows_by_backend"`
	RowErrorsByKind map[string]int64   `json:"row_errors_by_kind"`
	BytesIn         int64              `json:"bytes_in"`
	BytesOut        int64              `json:"bytes_out"`
	QueueDepth      int64              `json:"queue_depth"`
	InflightBytes   int64              `json:"inflight_bytes"`
	WorkingBytes    int64              `json:"working_bytes"`
	UptimeSeconds   int64              `json:"uptime_seconds"`
	HostCPUSeconds  *float64           `json:"host_cpu_seconds"`
	Stages          *sched.Stats       `json:"stages"`
	Metrics         map[string]float64 `json:"metrics"` // every Prometheus series by its exposition name
}
