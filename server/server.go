package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/pixelflight/pixelflight/kernels/fft"
	"github.com/pixelflight/pixelflight/kernels/haar"
	"github.com/pixelflight/pixelflight/udf"
)

// Config is what a Server needs. Zero fields take the defaults.
type Config struct {
	Version         string
	Limits          udf.Limits
	Workers         int              // CPU workers; default runtime.GOMAXPROCS(0)
	MaxMessageBytes int              // largest gRPC message accepted; default 256 MiB
	DrainTimeout    time.Duration    // how long open streams may finish on stop; default 30s
	Window          int              // batches of one stream in flight at once; default 2
	Alloc           memory.Allocator // default memory.DefaultAllocator
	Log             *zap.Logger
	Cascades        *haar.Library // detect_faces' cascades; default none
}

func (c *Config) defaults() {
	if c.Limits == (udf.Limits{}) {
		c.Limits = udf.DefaultLimits()
	}
	if c.Workers <= 0 {
		c.Workers = runtime.GOMAXPROCS(0)
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
}

// Server is the Flight service: DoExchange runs ops over streamed batches,
// DoAction answers capabilities, health and stats.
type Server struct {
	flight.BaseFlightServer
	cfg    Config
	reg    *udf.Registry
	pool   *udf.Pool
	grpc   *grpc.Server
	health *health.Server
	stats  counters
	start  time.Time
}

type counters struct {
	streams, open, batches, rows, rowErrors, bytesIn atomic.Int64
}

// New builds a server and starts its worker pool; Close or Serve stop it.
func New(cfg Config) *Server {
	cfg.defaults()
	s := &Server{
		cfg:    cfg,
		reg:    udf.NewRegistry(cfg.Limits, cfg.Cascades),
		pool:   udf.NewPool(cfg.Workers, cfg.Limits),
		health: health.NewServer(),
		start:  time.Now(),
	}
	s.grpc = grpc.NewServer(grpc.MaxRecvMsgSize(cfg.MaxMessageBytes))
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
	s.health.SetServingStatus("", st)
	s.health.SetServingStatus("arrow.flight.protocol.FlightService", st)
}

// Serve serves on l until ctx is done, then stops taking new streams,
// lets open ones finish within the drain timeout, and returns.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	errc := make(chan error, 1)
	go func() { errc <- s.grpc.Serve(l) }()
	s.setServing(true)
	select {
	case err := <-errc:
		s.pool.Close()
		return fmt.Errorf("serving: %w", err)
	case <-ctx.Done():
	}
	s.setServing(false)
	s.cfg.Log.Info("draining", zap.Int64("open_streams", s.stats.open.Load()), zap.Duration("deadline", s.cfg.DrainTimeout))
	stopped := make(chan struct{})
	go func() { s.grpc.GracefulStop(); close(stopped) }()
	var err error
	select {
	case <-stopped:
	case <-time.After(s.cfg.DrainTimeout):
		err = fmt.Errorf("drain deadline of %s passed with %d streams open: stopped them", s.cfg.DrainTimeout, s.stats.open.Load())
		s.grpc.Stop()
	}
	s.pool.Close()
	return err
}

// DoExchange is the UDF stream. The first message carries a CMD descriptor
// with the JSON command; the client then streams record batches and gets
// one result batch per input batch, same rows, same order.
func (s *Server) DoExchange(stream flight.FlightService_DoExchangeServer) (err error) {
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	s.stats.streams.Add(1)
	s.stats.open.Add(1)
	defer s.stats.open.Add(-1)
	begin := time.Now()
	var rows, rowErrors, batches int64
	log := s.cfg.Log
	if p, ok := peer.FromContext(ctx); ok {
		log = log.With(zap.String("peer", p.Addr.String()))
	}
	defer func() {
		fields := []zap.Field{zap.Int64("rows", rows), zap.Int64("row_errors", rowErrors), zap.Int64("batches", batches), zap.Duration("took", time.Since(begin))}
		if err != nil {
			log.Warn("stream failed", append(fields, zap.Error(err))...)
			err = toStatus(err)
			return
		}
		log.Info("stream done", fields...)
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
	log = log.With(zap.String("op", cmd.Op))

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

	// Up to Window batches run at once, so one batch's slow last rows do
	// not leave cores idle; results are written in input order.
	type pending struct {
		done chan struct{}
		res  udf.Result
		err  error
	}
	queue := make(chan *pending, s.cfg.Window-1)
	go func() {
		defer close(queue)
		defer rdr.Release()
		for rdr.Next() {
			rec := rdr.RecordBatch()
			rec.Retain()
			p := &pending{done: make(chan struct{})}
			select {
			case queue <- p:
			case <-ctx.Done():
				rec.Release()
				return
			}
			s.stats.bytesIn.Add(recordBytes(rec))
			go func() {
				defer close(p.done)
				defer rec.Release()
				col, err := udf.NewColumn(rec.Column(idx[0]))
				if err != nil {
					p.err = err
					return
				}
				p.res, p.err = task.Run(ctx, s.pool, col, cmd.Strict, s.cfg.Alloc)
			}()
		}
		if err := rdr.Err(); err != nil && !errors.Is(err, io.EOF) {
			p := &pending{done: make(chan struct{}), err: fmt.Errorf("reading input: %w", err)}
			close(p.done)
			select {
			case queue <- p:
			case <-ctx.Done():
			}
		}
	}()
	defer func() {
		cancel()
		go func() { // release what is still queued once the reader stops
			for p := range queue {
				<-p.done
				if p.res.Record != nil {
					p.res.Record.Release()
				}
			}
		}()
	}()
	for p := range queue {
		<-p.done
		if p.err != nil {
			return p.err
		}
		n := p.res.Record.NumRows()
		err := w.Write(p.res.Record)
		p.res.Record.Release()
		if err != nil {
			return fmt.Errorf("writing results: %w", err)
		}
		batches++
		rows += n
		rowErrors += int64(p.res.RowErrors)
		s.stats.batches.Add(1)
		s.stats.rows.Add(n)
		s.stats.rowErrors.Add(int64(p.res.RowErrors))
	}
	return ctx.Err()
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
		{Type: "stats", Description: "counters since start: streams, batches, rows, row errors, bytes in (JSON)"},
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
		body = map[string]any{"status": "SERVING", "backends": s.backends()}
	case "stats":
		body = s.Stats()
	default:
		return status.Errorf(codes.InvalidArgument, "unknown action %q: want capabilities, health or stats", a.GetType())
	}
	b, err := json.Marshal(body)
	if err != nil {
		return status.Error(codes.Internal, err.Error())
	}
	return stream.Send(&flight.Result{Body: b})
}

// Stats returns the counters since start.
func (s *Server) Stats() map[string]int64 {
	return map[string]int64{
		"streams_total":  s.stats.streams.Load(),
		"streams_open":   s.stats.open.Load(),
		"batches":        s.stats.batches.Load(),
		"rows":           s.stats.rows.Load(),
		"row_errors":     s.stats.rowErrors.Load(),
		"bytes_in":       s.stats.bytesIn.Load(),
		"uptime_seconds": int64(time.Since(s.start).Seconds()),
	}
}

func (s *Server) backends() []map[string]any {
	vector := "none"
	if fft.Vectorized() {
		vector = "avx2+fma"
	}
	return []map[string]any{{"name": "cpu", "workers": s.pool.Size(), "healthy": true, "vector": vector}}
}

// Capabilities describes what the server offers.
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
		ops = append(ops, map[string]any{"name": op.Name, "summary": op.Summary, "params": op.Params, "outputs": outputs})
	}
	return map[string]any{
		"version":  s.cfg.Version,
		"ops":      ops,
		"backends": s.backends(),
		"cascades": s.cfg.Cascades.Names(),
		"limits": map[string]any{
			"max_pixels":        s.cfg.Limits.MaxPixels,
			"max_kernel_side":   s.cfg.Limits.MaxKernelSide,
			"max_message_bytes": s.cfg.MaxMessageBytes,
			"max_command_bytes": udf.MaxCommandBytes,
		},
		"input": map[string]any{
			"column_types": []string{"binary", "large_binary", "binary_view", "struct<origin,height,width,nChannels,mode,data> (Spark image)"},
			"formats":      []string{"png", "jpeg", "gif", "bmp", "tiff", "webp", "pgm/ppm"},
		},
	}
}
