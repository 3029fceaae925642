package server

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/pixelflight/pixelflight/gpu"
	"github.com/pixelflight/pixelflight/kernels/haar"
	"github.com/pixelflight/pixelflight/sched"
	"github.com/pixelflight/pixelflight/udf"
)

// Config is what a Server needs. Zero fields take the defaults.
type Config struct {
	Version         string
	Limits          udf.Limits
	CPUs            int             // the host's cores this server may use; 0: runtime.GOMAXPROCS(0)
	Workers         int             // CPU lanes; 0: CPUs; negative: none (Backends run everything)
	Backends        []sched.Backend // more backends beside the CPU, which is always first
	MaxDelay        time.Duration   // how long a batching backend waits to fill a batch; 0: 2ms; negative: no wait
	MemoryBudget    int64           // the memory budget (sched.Budget); default 1 GiB
	MaxMessageBytes int             // largest gRPC message accepted; default 256 MiB
	DrainTimeout    time.Duration   // how long open streams may finish on stop; default 30s
	Window          int             // batches of one stream in flight at once; default 2
	// Progress is how often a long stream logs a progress line (rows,
	// errors, backends, rows/s since the last line) as its batches are
	// answered; default 1 min, negative: never.
	Progress time.Duration
	Alloc    memory.Allocator // default memory.DefaultAllocator
	Log      *zap.Logger
	Cascades *haar.Library        // detect_faces' cascades; default none
	Metrics  *prometheus.Registry // where the series go; default a new one
	// MetricsLabels are added to every series MetricsHandler serves (a
	// series' own label of the same name wins): the executor plugin's
	// spark_app_id and spark_executor_id. stats' metrics are without them.
	MetricsLabels map[string]string
	// GPUs lists the node's GPUs for capabilities, health and metrics
	// (gpu.Probe); nil: none are reported.
	GPUs func() ([]gpu.Device, error)
	// TLS, when set, serves TLS with it (LoadTLS); nil: plain connections
	// (Unix sockets and loopback, see ListenConfig).
	TLS *tls.Config
	// Token, when set, is the bearer token every call must carry as
	// "authorization: Bearer <token>" metadata (ReadToken); the health
	// service too.
	Token string
	// Transport limits: how long a silent peer is kept. Zero fields take
	// the defaults of DefaultTransport; a negative duration turns that
	// limit off.
	Transport Transport
}

// Transport bounds what connections and streams may hold without using
// it (transport.go says how each limit is enforced).
type Transport struct {
	// ConnIdle: a connection with no open stream for this long is closed
	// (GOAWAY; clients connect again on their next call).
	ConnIdle time.Duration
	// KeepaliveTime: a connection that has sent nothing for this long is
	// pinged; KeepaliveTimeout: it is closed when the ping is not answered
	// within this.
	KeepaliveTime, KeepaliveTimeout time.Duration
	// Handshake: a new connection must finish its TLS and HTTP/2
	// handshakes within this.
	Handshake time.Duration
	// Command: an exchange whose first message (the command) has not
	// come within this is ended with DEADLINE_EXCEEDED.
	Command time.Duration
	// StreamIdle: an exchange whose client sends nothing for this long
	// while every result it is owed has been written is ended with
	// DEADLINE_EXCEEDED.
	StreamIdle time.Duration
	// MaxStreams is the most streams one connection may have open at
	// once; a client's further streams wait for one to end.
	MaxStreams uint32
}

// DefaultTransport is the Transport that zero fields take.
func DefaultTransport() Transport {
	return Transport{
		ConnIdle:         5 * time.Minute,
		KeepaliveTime:    time.Minute,
		KeepaliveTimeout: 20 * time.Second,
		Handshake:        20 * time.Second,
		Command:          30 * time.Second,
		StreamIdle:       10 * time.Minute,
		MaxStreams:       1000,
	}
}

func (c *Config) defaults() {
	if c.Limits == (udf.Limits{}) {
		c.Limits = udf.DefaultLimits()
	}
	if c.CPUs <= 0 {
		c.CPUs = runtime.GOMAXPROCS(0)
	}
	if c.Workers == 0 {
		c.Workers = c.CPUs
	}
	if c.MaxDelay == 0 {
		c.MaxDelay = 2 * time.Millisecond
	}
	c.MaxDelay = max(c.MaxDelay, 0)
	if c.MemoryBudget <= 0 {
		c.MemoryBudget = 1 << 30
	}
	if c.MaxMessageBytes <= 0 {
		c.MaxMessageBytes = 256 << 20
	}
	if c.DrainTimeout <= 0 {
		c.DrainTimeout = 30 * time.Second
	}
	if c.Window <= 0 {
		c.Window = 2
	}
	if c.Alloc == nil {
		c.Alloc = memory.DefaultAllocator
	}
	if c.Log == nil {
		c.Log = zap.NewNop()
	}
	c.Transport = c.Transport.withDefaults()
	if c.Progress == 0 {
		c.Progress = time.Minute
	}
	if c.Metrics == nil {
		// The process's own series too: go_goroutines, go_memstats_*,
		// process_resident_memory_bytes, process_open_fds.
		c.Metrics = prometheus.NewRegistry()
		c.Metrics.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
}

// Server is the Flight service: DoExchange runs ops over streamed batches,
// DoAction answers capabilities, health and stats.
type Server struct {
	flight.BaseFlightServer
	cfg       Config
	reg       *udf.Registry
	sched     *sched.Scheduler
	budget    *sched.Budget
	grpc      *grpc.Server
	health    *health.Server
	m         metrics
	start     time.Time
	ids       atomic.Int64 // streams started
	open      atomic.Int64 // streams open
	lastBatch atomic.Int64 // bytes of the last input batch read, a new stream's first guess
	serving   atomic.Bool
	gpus      *gpus
}

// New builds a server and starts its backends' lanes; Close or Serve stop
// them.
func New(cfg Config) *Server {
	cfg.defaults()
	s := &Server{
		cfg:    cfg,
		reg:    udf.NewRegistry(cfg.Limits, cfg.Cascades),
		budget: sched.NewBudget(cfg.MemoryBudget),
		health: health.NewServer(),
		start:  time.Now(),
		gpus:   &gpus{probe: cfg.GPUs},
	}
	s.sched = sched.New(sched.Config{
		Backends: append([]sched.Backend{sched.NewCPU(max(cfg.Workers, 0))}, cfg.Backends...),
		MaxDelay: cfg.MaxDelay,
		CPUs:     cfg.CPUs,
		Budget:   s.budget,
		Metrics:  sched.NewMetrics(cfg.Metrics),
		Log:      cfg.Log,
	})
	s.m = newMetrics(cfg.Metrics, s)
	cfg.Metrics.MustRegister(gpu.NewCollector(func() []gpu.Device { d, _ := s.gpus.get(); return d }))
	// Fixed flow-control windows (no BDP growth) keep what gRPC buffers
	// small beside the memory budget: a stream waiting for the budget
	// holds at most its window of data (64 KiB, gRPC's least; 1 MiB
	// windows held 56 MiB for 64 waiting streams), and a message larger
	// than the window is let in whole once the reader asks for it.
	opts := []grpc.ServerOption{grpc.MaxRecvMsgSize(cfg.MaxMessageBytes),
		grpc.InitialWindowSize(64 << 10), grpc.InitialConnWindowSize(2 << 20)}
	opts = append(opts, receiveOptions()...)
	opts = append(opts, cfg.Transport.options()...)
	opts = append(opts, grpc.UnknownServiceHandler(unknownMethod))
	if cfg.TLS != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(cfg.TLS)))
	}
	if cfg.Token != "" {
		a := newTokenAuth(cfg.Token, cfg.Log)
		opts = append(opts, grpc.ChainUnaryInterceptor(a.unary), grpc.ChainStreamInterceptor(a.stream))
	}
	s.grpc = grpc.NewServer(opts...)
	flight.RegisterFlightServiceServer(s.grpc, s)
	healthpb.RegisterHealthServer(s.grpc, s.health)
	s.setServing(false)
	return s
}

func (s *Server) setServing(ok bool) {
	st := healthpb.HealthCheckResponse_NOT_SERVING
	if ok {
		st = healthpb.HealthCheckResponse_SERVING
	}
	s.serving.Store(ok)
	s.health.SetServingStatus("", st)
	s.health.SetServingStatus("arrow.flight.protocol.FlightService", st)
}

// MetricsHandler serves the Prometheus series over HTTP, with
// Config.MetricsLabels.
func (s *Server) MetricsHandler() http.Handler {
	return promhttp.HandlerFor(labeled{s.cfg.Metrics, s.cfg.MetricsLabels}, promhttp.HandlerOpts{})
}

// Serve serves on l until ctx is done, then stops taking new streams,
// lets open ones finish within the drain timeout, and returns nil; past
// the deadline it stops the streams still open, with a warning.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	errc := make(chan error, 1)
	go func() { errc <- s.grpc.Serve(l) }()
	s.setServing(true)
	select {
	case err := <-errc:
		s.sched.Close()
		return fmt.Errorf("serving: %w", err)
	case <-ctx.Done():
	}
	s.setServing(false)
	s.cfg.Log.Info("draining", zap.Int64("open_streams", s.open.Load()), zap.Duration("deadline", s.cfg.DrainTimeout))
	stopped := make(chan struct{})
	go func() { s.grpc.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(s.cfg.DrainTimeout):
		s.cfg.Log.Warn(fmt.Sprintf("drain deadline of %s passed with %d streams open: stopped them", s.cfg.DrainTimeout, s.open.Load()))
		s.grpc.Stop()
	}
	s.sched.Close()
	return nil
}
