package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/pixelflight/pixelflight/internal/recsize"
	"github.com/pixelflight/pixelflight/sched"
	"github.com/pixelflight/pixelflight/udf"
)

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
	proj, err := project(task.Schema, cmd.Columns)
	if err != nil {
		return err
	}

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

	w := flight.NewRecordWriter(stream, ipc.WithSchema(proj.schema), ipc.WithAllocator(s.cfg.Alloc))
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
		rec := proj.apply(res.Record)
		n := rec.NumRows()
		s.m.bytesOut.Add(float64(recsize.Bytes(rec)))
		err = w.Write(rec)
		rec.Release()
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
		data := recsize.Bytes(rec)
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
