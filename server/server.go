package server

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/pixelflight/pixelflight/gpu"
	"github.com/pixelflight/pixelflight/imageio"
	"github.com/pixelflight/pixelflight/kernels/fft"
	"github.com/pixelflight/pixelflight/kernels/haar"
	"github.com/pixelflight/pixelflight/sched"
	"github.com/pixelflight/pixelflight/udf"
)

// Config is what a Server needs. Zero fields take the defaults.
type Config struct {
	Version         string
	Limits          udf.Limits
	Workers         int              // CPU lanes; 0: runtime.GOMAXPROCS(0); negative: none (Backends run everything)
	Backends        []sched.Backend  // more backends beside the CPU, which is always first
	MaxDelay        time.Duration    // how long a batching backend waits to fill a batch; default 2ms
	MaxInflight     int64            // input bytes in flight on the server; default 1 GiB
	MaxMessageBytes int              // largest gRPC message accepted; default 256 MiB
	DrainTimeout    time.Duration    // how long open streams may finish on stop; default 30s
	Window          int              // batches of one stream in flight at once; default 2
	Alloc           memory.Allocator // default memory.DefaultAllocator
	Log             *zap.Logger
	Cascades        *haar.Library        // detect_faces' cascades; default none
	Metrics         *prometheus.Registry // where the series go; default a new one
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
}

func (c *Config) defaults() {
	if c.Limits == (udf.Limits{}) {
		c.Limits = udf.DefaultLimits()
	}
	if c.Workers == 0 {
		c.Workers = runtime.GOMAXPROCS(0)
	}
	if c.MaxDelay <= 0 {
		c.MaxDelay = 2 * time.Millisecond
	}
	if c.MaxInflight <= 0 {
		c.MaxInflight = 1 << 30
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
	cfg     Config
	reg     *udf.Registry
	sched   *sched.Scheduler
	budget  *sched.Budget
	grpc    *grpc.Server
	health  *health.Server
	m       metrics
	start   time.Time
	ids     atomic.Int64 // streams started
	open    atomic.Int64 // streams open
	serving atomic.Bool
	gpus    *gpus
}

// New builds a server and starts its backends' lanes; Close or Serve stop
// them.
func New(cfg Config) *Server {
	cfg.defaults()
	s := &Server{
		cfg:    cfg,
		reg:    udf.NewRegistry(cfg.Limits, cfg.Cascades),
		budget: sched.NewBudget(cfg.MaxInflight),
		health: health.NewServer(),
		start:  time.Now(),
		gpus:   &gpus{probe: cfg.GPUs},
	}
	s.sched = sched.New(sched.Config{
		Backends: append([]sched.Backend{sched.NewCPU(max(cfg.Workers, 0))}, cfg.Backends...),
		MaxDelay: cfg.MaxDelay,
		Budget:   s.budget,
		Metrics:  sched.NewMetrics(cfg.Metrics),
		Log:      cfg.Log,
	})
	s.m = newMetrics(cfg.Metrics, s)
	cfg.Metrics.MustRegister(gpu.NewCollector(func() []gpu.Device { d, _ := s.gpus.get(); return d }))
	// Fixed flow-control windows (no BDP growth) keep what gRPC buffers
	// small beside the in-flight budget: a stream waiting for the budget
	// holds at most its window of data (64 KiB, gRPC's least; 1 MiB
	// windows held 56 MiB for 64 waiting streams), and a message larger
	// than the window is let in whole once the reader asks for it.
	opts := []grpc.ServerOption{grpc.MaxRecvMsgSize(cfg.MaxMessageBytes),
		grpc.InitialWindowSize(64 << 10), grpc.InitialConnWindowSize(2 << 20)}
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

// MetricsHandler serves the Prometheus series over HTTP.
func (s *Server) MetricsHandler() http.Handler {
	return promhttp.HandlerFor(s.cfg.Metrics, promhttp.HandlerOpts{})
}

// Serve serves on l until ctx is done, then stops taking new streams,
// lets open ones finish within the drain timeout, and returns.
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
	var err error
	select {
	case <-stopped:
	case <-time.After(s.cfg.DrainTimeout):
		err = fmt.Errorf("drain deadline of %s passed with %d streams open: stopped them", s.cfg.DrainTimeout, s.open.Load())
		s.grpc.Stop()
	}
	s.sched.Close()
	return err
}

// DoExchange is the UDF stream. The first message carries a CMD descriptor
// with the JSON command; the client then streams record batches and gets
// one result batch per input batch, same rows, same order.
func (s *Server) DoExchange(stream flight.FlightService_DoExchangeServer) (err error) {
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	id := s.ids.Add(1)
	s.open.Add(1)
	defer s.open.Add(-1)
	begin := time.Now()
	var rows, rowErrors, batches int64
	mix := map[string]int{}
	op := ""
	log := s.cfg.Log.With(zap.Int64("stream", id))
	if p, ok := peer.FromContext(ctx); ok {
		log = log.With(zap.String("peer", p.Addr.String()))
	}
	defer func() {
		fields := []zap.Field{zap.Int64("rows", rows), zap.Int64("row_errors", rowErrors), zap.Int64("batches", batches),
			zap.Any("backends", mix), zap.Duration("took", time.Since(begin))}
		if err != nil {
			err = toStatus(err)
			log.Warn("stream failed", append(fields, zap.Error(err))...)
		} else {
			log.Info("stream done", fields...)
		}
		s.m.streams.WithLabelValues(op, status.Code(err).String()).Inc()
	}()

	first, err := stream.Recv()
	if err != nil {
		return err
	}
	d := first.GetFlightDescriptor()
	if d == nil || d.GetType() != flight.DescriptorCMD {
		return fmt.Errorf("%w: the first message must carry a CMD descriptor with the JSON command", udf.ErrBadCommand)
	}
	cmd, err := udf.ParseCommand(d.GetCmd())
	if err != nil {
		return err
	}
	task, err := s.reg.Prepare(cmd)
	if err != nil {
		return err
	}
	op = task.Op
	log = log.With(zap.String("op", op))

	rdr, err := flight.NewRecordReader(&replay{first: first, stream: stream}, ipc.WithAllocator(s.cfg.Alloc))
	if err != nil {
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("%w: the stream ended before a schema was sent", udf.ErrBadCommand)
		}
		return fmt.Errorf("%w: reading the input schema: %w", udf.ErrBadCommand, err)
	}
	idx := rdr.Schema().FieldIndices(cmd.Column)
	if len(idx) == 0 {
		rdr.Release()
		return fmt.Errorf("%w: input has no column %q (columns: %v)", udf.ErrBadCommand, cmd.Column, fieldNames(rdr.Schema()))
	}
	if err := udf.CheckColumn(cmd.Column, rdr.Schema().Field(idx[0]).Type); err != nil {
		rdr.Release()
		return err
	}

	w := flight.NewRecordWriter(stream, ipc.WithSchema(task.Schema), ipc.WithAllocator(s.cfg.Alloc))
	defer w.Close()

	// The reader submits each batch's rows to the node's queue as it
	// arrives, up to Window batches ahead of the writer, which writes the
	// results in input order.
	queue := make(chan *pending, s.cfg.Window-1)
	go s.read(ctx, rdr, idx[0], task, queue)
	defer func() {
		cancel()
		go func() { // release what is still queued once the reader stops
			for p := range queue {
				p.release(s.budget)
			}
		}()
	}()
	for p := range queue {
		if p.err != nil {
			p.release(s.budget)
			return p.err
		}
		<-p.batch.Done()
		if err := ctx.Err(); err != nil {
			p.release(s.budget)
			return err
		}
		out, errs, by := p.batch.Results()
		res, err := task.Build(out, errs, cmd.Strict, s.cfg.Alloc)
		p.release(s.budget)
		if err != nil {
			return err
		}
		n := res.Record.NumRows()
		s.m.bytesOut.Add(float64(recordBytes(res.Record)))
		err = w.Write(res.Record)
		res.Record.Release()
		if err != nil {
			return fmt.Errorf("writing results: %w", err)
		}
		batches++
		rows += n
		rowErrors += int64(res.RowErrors)
		for b, k := range by {
			mix[b] += k
		}
		s.m.batches.Inc()
	}
	return ctx.Err()
}

// pending is one input batch in flight: its record (held until its rows
// are done), its share of the in-flight budget, and its queued rows.
//
// Its bytes stay taken from the budget until both the writer is done with
// it and the reader has read past it: arrow's reader keeps the last record
// it returned alive until its next Next, so a written batch is still in
// memory while its stream waits to read another.
type pending struct {
	rec     arrow.RecordBatch
	bytes   int64
	batch   *sched.Batch
	err     error
	refs    atomic.Int32  // the writer's and the reader's
	written chan struct{} // closed once the writer is done with it
}

func newPending(rec arrow.RecordBatch, bytes int64) *pending {
	p := &pending{rec: rec, bytes: bytes, written: make(chan struct{})}
	p.refs.Store(2)
	return p
}

// drop gives up one reference; the last gives the bytes back.
func (p *pending) drop(b *sched.Budget) {
	if p.refs.Add(-1) == 0 {
		b.Release(p.bytes)
	}
}

// release is the writer's end of p: it waits for the batch's rows (a
// backend may still be reading the record's bytes), then frees the record.
func (p *pending) release(b *sched.Budget) {
	if p.batch != nil {
		<-p.batch.Done()
	}
	if p.rec != nil {
		p.rec.Release()
	}
	p.drop(b)
	close(p.written)
}

// take gets the budget for a stream's next batch. Bytes of the previous
// batch that only the reader still holds carry over (they are freed when
// the reader reads the next one), so a waiting reader never sits on bytes
// that nothing else will give back.
func (s *Server) take(ctx context.Context, prev *pending, guess int64) (int64, error) {
	if prev == nil {
		return s.budget.Acquire(ctx, guess)
	}
	select {
	case <-prev.written:
	default:
		held, written, err := s.budget.AcquireOr(ctx, guess, prev.written)
		if err != nil || !written {
			return held, err
		}
	}
	held := prev.bytes // the writer has dropped its reference: only this goroutine reads bytes now
	prev.bytes = 0
	if held >= guess {
		return held, nil
	}
	s.budget.Release(held) // never hold and wait
	return s.budget.Acquire(ctx, guess)
}

// read takes each input batch's bytes from the budget before reading it
// (guessing from the previous batch, then settling the difference), then
// queues its rows; it closes queue at the end of the input.
func (s *Server) read(ctx context.Context, rdr *flight.Reader, col int, task *udf.Task, queue chan<- *pending) {
	defer close(queue)
	defer rdr.Release()
	var prev *pending // the last batch read: the reader still holds its record
	defer func() {
		if prev != nil {
			prev.drop(s.budget)
		}
	}()
	// Before the first batch the guess is a 64th of the budget, so that a
	// crowd of new streams cannot all read a large first batch at once.
	guess := s.budget.Limit() / 64
	for {
		held, err := s.take(ctx, prev, guess)
		if err != nil {
			return
		}
		if !rdr.Next() {
			s.budget.Release(held)
			break
		}
		if prev != nil {
			prev.drop(s.budget)
			prev = nil
		}
		rec := rdr.RecordBatch()
		data := recordBytes(rec)
		size := data + rowBytes*rec.NumRows() // a million empty rows hold no data, but hundreds of MiB
		guess = size
		if size > held { // give back and wait for the whole: never hold and wait
			s.budget.Release(held)
			if held, err = s.budget.Acquire(ctx, size); err != nil {
				return
			}
		} else {
			s.budget.Release(held - size)
			held = size
		}
		rec.Retain()
		s.m.bytesIn.Add(float64(data))
		p := newPending(rec, held)
		prev = p
		c, err := udf.NewColumn(rec.Column(col))
		if most := max(s.budget.Limit()/rowBytes, 1); err == nil && rec.NumRows() > most {
			err = fmt.Errorf("%w: a batch of %d rows: at most %d fit the in-flight budget (%d bytes, %d per row): send smaller batches",
				udf.ErrBadCommand, rec.NumRows(), most, s.budget.Limit(), rowBytes)
		}
		if err == nil {
			p.batch, err = s.sched.Submit(ctx, task, c)
		}
		p.err = err
		select {
		case queue <- p:
		case <-ctx.Done():
			p.release(s.budget)
			return
		}
		if err != nil {
			return
		}
	}
	if err := rdr.Err(); err != nil && !errors.Is(err, io.EOF) {
		p := newPending(nil, 0)
		p.err = fmt.Errorf("reading input: %w", err)
		if _, ok := status.FromError(err); !ok { // not the transport: bytes that are not Arrow IPC
			p.err = fmt.Errorf("%w: reading input: %w", udf.ErrBadCommand, err)
		}
		select {
		case queue <- p:
		case <-ctx.Done():
		}
	}
}

// replay hands the reader the first message again when it carried data
// (some clients put the schema in it; pyarrow sends the descriptor alone).
type replay struct {
	first  *flight.FlightData
	stream flight.DataStreamReader
}

func (r *replay) Recv() (*flight.FlightData, error) {
	if f := r.first; f != nil {
		r.first = nil
		if len(f.DataHeader) > 0 {
			return f, nil
		}
	}
	return r.stream.Recv()
}

// rowBytes is what the server holds per row in flight beside the row's
// own bytes (its queued item, result and error; about 400 bytes
// measured). The in-flight budget counts it too, so that batches of many
// tiny rows are bounded as batches of big images are.
const rowBytes = 512

func recordBytes(rec arrow.RecordBatch) int64 {
	var n int64
	for _, c := range rec.Columns() {
		for _, b := range c.Data().Buffers() {
			if b != nil {
				n += int64(b.Len())
			}
		}
	}
	return n
}

func fieldNames(s *arrow.Schema) []string {
	names := make([]string, s.NumFields())
	for i, f := range s.Fields() {
		names[i] = f.Name
	}
	return names
}

// toStatus maps errors to gRPC codes at the service boundary.
func toStatus(err error) error {
	if _, ok := status.FromError(err); ok {
		return err
	}
	switch {
	case errors.Is(err, udf.ErrBadCommand):
		return status.Error(codes.InvalidArgument, err.Error())
	case errors.Is(err, sched.ErrClosed):
		return status.Error(codes.Unavailable, err.Error())
	case errors.Is(err, sched.ErrNoBackend):
		return status.Error(codes.FailedPrecondition, err.Error())
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, err.Error())
	}
	var rowErr *udf.RowError
	if errors.As(err, &rowErr) {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	return status.Error(codes.Internal, err.Error())
}

// ListActions names the actions DoAction serves.
func (s *Server) ListActions(_ *flight.Empty, stream flight.FlightService_ListActionsServer) error {
	for _, a := range []*flight.ActionType{
		{Type: "capabilities", Description: "ops with their params and output schemas, backends, limits, version (JSON)"},
		{Type: "health", Description: "whether the server takes new streams, and its backends (JSON)"},
		{Type: "stats", Description: "counters since start: streams, rows by backend, row errors by kind, bytes, queue, in-flight bytes, and every Prometheus series (JSON)"},
	} {
		if err := stream.Send(a); err != nil {
			return err
		}
	}
	return nil
}

// DoAction answers one action with one JSON result.
func (s *Server) DoAction(a *flight.Action, stream flight.FlightService_DoActionServer) error {
	var body any
	switch a.GetType() {
	case "capabilities":
		body = s.Capabilities()
	case "health":
		st := "SERVING"
		if !s.serving.Load() {
			st = "NOT_SERVING"
		}
		body = map[string]any{"status": st, "backends": s.backends(), "gpus": s.gpus.describe()}
	case "stats":
		st, err := s.Stats()
		if err != nil {
			return status.Error(codes.Internal, err.Error())
		}
		body = st
	default:
		return status.Errorf(codes.InvalidArgument, "unknown action %q: want capabilities, health or stats", a.GetType())
	}
	b, err := json.Marshal(body)
	if err != nil {
		return status.Error(codes.Internal, err.Error())
	}
	return stream.Send(&flight.Result{Body: b})
}

func (s *Server) backends() []map[string]any {
	vector := "none"
	if fft.Vectorized() {
		vector = "avx2+fma"
	}
	var out []map[string]any
	for _, b := range s.sched.Backends() {
		m := map[string]any{"name": b.Name, "lanes": b.Lanes, "max_batch": b.MaxBatch, "healthy": b.Healthy}
		if b.Fault != "" {
			m["fault"] = b.Fault
		}
		if b.Name == "cpu" {
			m["vector"] = vector
		}
		out = append(out, m)
	}
	return out
}

// orEmpty is s, or an empty slice for nil: JSON lists are [], never null.
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// Capabilities describes what the server offers. Lists are [] when empty.
func (s *Server) Capabilities() map[string]any {
	var ops []map[string]any
	for _, op := range s.reg.Ops() {
		outputs := map[string]any{}
		for label, params := range op.Outputs {
			t, err := op.Prepare(params, s.cfg.Limits)
			if err != nil {
				continue
			}
			var fields []map[string]string
			for _, f := range t.Schema.Fields() {
				fields = append(fields, map[string]string{"name": f.Name, "type": f.Type.String()})
			}
			outputs[label] = fields
		}
		ops = append(ops, map[string]any{"name": op.Name, "summary": op.Summary, "params": orEmpty(op.Params), "outputs": outputs})
	}
	return map[string]any{
		"version":  s.cfg.Version,
		"ops":      ops,
		"backends": orEmpty(s.backends()),
		"gpus":     s.gpus.describe(),
		"cascades": orEmpty(s.cfg.Cascades.Names()),
		"limits": map[string]any{
			"max_inflight_bytes": s.cfg.MaxInflight,
			"max_delay_ms":       s.cfg.MaxDelay.Seconds() * 1000,
			"max_pixels":         s.cfg.Limits.MaxPixels,
			"max_kernel_side":    s.cfg.Limits.MaxKernelSide,
			"max_message_bytes":  s.cfg.MaxMessageBytes,
			"max_command_bytes":  udf.MaxCommandBytes,
		},
		"input": map[string]any{
			"column_types": []string{"binary", "large_binary", "binary_view", "struct<origin,height,width,nChannels,mode,data> (Spark image)"},
			"formats":      []string{"png", "jpeg", "gif", "bmp", "tiff", "webp", "pgm/ppm"},
			"jpeg_decoder": imageio.JPEGDecoder(),
			"png_decoder":  imageio.PNGDecoder(),
		},
	}
}
