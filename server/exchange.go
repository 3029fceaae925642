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

	"github.com/pixelflight/pixelflight/internal/clip"
	"github.com/pixelflight/pixelflight/internal/recsize"
	"github.com/pixelflight/pixelflight/sched"
	"github.com/pixelflight/pixelflight/udf"
)

// DoExchange is the UDF stream. The first message carries a CMD descriptor
// with the JSON command; the client then streams record batches and gets
// its rows' results in input order: one or more result batches per input
// batch (see udf.MaxResultBatchBytes), whose rows add up to the input
// batch's.
func (s *Server) DoExchange(stream flight.FlightService_DoExchangeServer) (err error) {
	ctx, cancel := context.WithCancelCause(stream.Context())
	defer cancel(nil)
	id := s.ids.Add(1)
	s.open.Add(1)
	defer s.open.Add(-1)
	begin := time.Now()
	said, saidRows := begin, int64(0) // the last progress line
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

	// The client's messages are read by other goroutines (head, then
	// read), so that this one can end the stream when the client sends
	// nothing: the command within Transport.Command, then no message for
	// Transport.StreamIdle while it is owed no results (idleWatch).
	// Returning ends the stream, which ends their Recv.
	watch := newIdleWatch(s.cfg.Transport.StreamIdle, cancel)
	defer watch.stop()
	h, err := s.head(ctx, stream, watch, cancel)
	if err != nil {
		return err
	}
	cmd, task, proj, rdr, col := h.cmd, h.task, h.proj, h.rdr, h.col
	op = task.Op
	log = log.With(zap.String("op", op))

	w := flight.NewRecordWriter(stream, ipc.WithSchema(proj.schema), ipc.WithAllocator(s.cfg.Alloc))
	defer w.Close()

	// The reader submits each batch's rows to the node's queue as it
	// arrives, up to Window batches ahead of the writer, which writes the
	// results in input order.
	queue := make(chan *pending, s.cfg.Window-1)
	go s.read(ctx, rdr, col, task, watch, queue)
	defer func() {
		cancel(nil)
		go func() { // release what is still queued once the reader stops
			for p := range queue {
				p.release(s.budget)
			}
		}()
	}()
	for {
		var p *pending
		select {
		case p = <-queue:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		if p == nil { // the input ended
			break
		}
		if p.err != nil {
			p.release(s.budget)
			return p.err
		}
		n, failed, err := s.writeResults(ctx, w, p.batch, task, cmd.Strict, proj, mix)
		p.release(s.budget)
		rows += n
		rowErrors += failed
		if err != nil {
			return err
		}
		watch.answered()
		batches++
		s.m.batches.Inc()
		if now := time.Now(); s.cfg.Progress > 0 && now.Sub(said) >= s.cfg.Progress {
			log.Info("stream progress", zap.Int64("rows", rows), zap.Int64("row_errors", rowErrors), zap.Int64("batches", batches),
				zap.Any("backends", mix), zap.Duration("took", now.Sub(begin)),
				zap.Float64("rows_per_s", float64(rows-saidRows)/now.Sub(said).Seconds()))
			said, saidRows = now, rows
		}
	}
	return context.Cause(ctx)
}

// exchangeHead is what an exchange's first messages give: the command,
// its task and projection, and the input's reader and column.
type exchangeHead struct {
	cmd  udf.Command
	task *udf.Task
	proj projection
	rdr  *flight.Reader
	col  int
	err  error
}

// head reads the command and the input's schema in a goroutine of its
// own and waits for them, or for ctx to end: Transport.Command after the
// stream began when no first message has come by then, or the idle watch.
func (s *Server) head(ctx context.Context, stream flight.FlightService_DoExchangeServer, watch *idleWatch, end context.CancelCauseFunc) (*exchangeHead, error) {
	gotFirst := func() {}
	if d := s.cfg.Transport.Command; d > 0 {
		t := time.AfterFunc(d, func() {
			end(status.Errorf(codes.DeadlineExceeded, "no command within %s: the first message of an exchange must carry it (the server's --command-timeout)", d))
		})
		gotFirst = func() { t.Stop() }
	}
	c := make(chan *exchangeHead, 1)
	go func() { c <- s.readHead(stream, watch, gotFirst) }()
	select {
	case h := <-c:
		return h, h.err
	case <-ctx.Done():
		go func() { // its Recv ends with the stream
			if h := <-c; h.rdr != nil {
				h.rdr.Release()
			}
		}()
		return nil, context.Cause(ctx)
	}
}

func (s *Server) readHead(stream flight.FlightService_DoExchangeServer, watch *idleWatch, gotFirst func()) *exchangeHead {
	h := &exchangeHead{}
	fail := func(err error) *exchangeHead {
		if h.rdr != nil {
			h.rdr.Release()
			h.rdr = nil
		}
		h.err = err
		return h
	}
	first, err := stream.Recv()
	gotFirst()
	if err != nil {
		return fail(err)
	}
	d := first.GetFlightDescriptor()
	if d == nil || d.GetType() != flight.DescriptorCMD {
		return fail(fmt.Errorf("%w: the first message must carry a CMD descriptor with the JSON command", udf.ErrBadCommand))
	}
	if h.cmd, err = udf.ParseCommand(d.GetCmd()); err != nil {
		return fail(err)
	}
	if h.task, err = s.reg.Prepare(h.cmd); err != nil {
		return fail(err)
	}
	if h.proj, err = project(h.task.Schema, h.cmd.Columns); err != nil {
		return fail(err)
	}
	h.rdr, err = flight.NewRecordReader(&replay{first: first, stream: stream, watch: watch}, ipc.WithAllocator(s.cfg.Alloc))
	if err != nil {
		if errors.Is(err, io.EOF) {
			return fail(fmt.Errorf("%w: the stream ended before a schema was sent", udf.ErrBadCommand))
		}
		return fail(fmt.Errorf("%w: reading the input schema: %w", udf.ErrBadCommand, err))
	}
	idx := h.rdr.Schema().FieldIndices(h.cmd.Column)
	if len(idx) == 0 {
		return fail(fmt.Errorf("%w: input has no column %s (columns: %s)", udf.ErrBadCommand, clip.Quote(h.cmd.Column), fieldList(h.rdr.Schema())))
	}
	if err := udf.CheckColumn(h.cmd.Column, h.rdr.Schema().Field(idx[0]).Type); err != nil {
		return fail(err)
	}
	h.col = idx[0]
	return h
}

// read takes each input batch's bytes from the budget before reading it
// (guessing from the previous batch, then settling the difference), then
// queues its rows; it closes queue at the end of the input.
func (s *Server) read(ctx context.Context, rdr *flight.Reader, col int, task *udf.Task, watch *idleWatch, queue chan<- *pending) {
	defer close(queue)
	defer rdr.Release()
	var prev *pending // the last batch read: the reader still holds its record
	defer func() {
		if prev != nil {
			prev.drop(s.budget)
		}
	}()
	// Before the first batch the guess is the last batch any stream read
	// (a job's tasks send alike), at least a 16th of the input's share of
	// the budget: a batch larger than the guess is in memory once read, and
	// taken then (Force), so a crowd of new streams could otherwise pass the
	// share.
	guess := max(s.budget.InputLimit()/16, s.lastBatch.Load())
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
		s.lastBatch.Store(size)
		if size > held { // it is in memory already: take the rest at once
			s.budget.Force(size - held)
			held = size
		} else {
			s.budget.Release(held - size)
			held = size
		}
		rec.Retain()
		s.m.bytesIn.Add(float64(data))
		p := newPending(rec, held)
		prev = p
		c, err := udf.NewColumn(rec.Column(col))
		if most := max(s.budget.InputLimit()/rowBytes, 1); err == nil && rec.NumRows() > most {
			err = fmt.Errorf("%w: a batch of %d rows: at most %d fit the input's share of the memory budget (%d bytes, %d per row): send smaller batches",
				udf.ErrBadCommand, rec.NumRows(), most, s.budget.InputLimit(), rowBytes)
		}
		if err == nil {
			p.batch, err = s.sched.Submit(ctx, task, c)
		}
		p.err = err
		watch.read()
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
// It tells watch when it waits for the client.
type replay struct {
	first  *flight.FlightData
	stream flight.DataStreamReader
	watch  *idleWatch
}

func (r *replay) Recv() (*flight.FlightData, error) {
	if f := r.first; f != nil {
		r.first = nil
		if len(f.DataHeader) > 0 {
			return f, nil
		}
	}
	r.watch.receiving(true)
	defer r.watch.receiving(false)
	return r.stream.Recv()
}

// rowBytes is what the server holds per row in flight beside the row's
// own bytes (its queued item, result and error; about 400 bytes
// measured). The memory budget counts it as input too, so that batches of many
// tiny rows are bounded as batches of big images are.
const rowBytes = 512

// fieldList is a schema's column names for a message, clipped: the
// client named them.
func fieldList(s *arrow.Schema) string {
	return fmt.Sprint(clip.Strings(fieldNames(s)))
}

func fieldNames(s *arrow.Schema) []string {
	names := make([]string, s.NumFields())
	for i, f := range s.Fields() {
		names[i] = f.Name
	}
	return names
}

// toStatus maps errors to gRPC codes at the service boundary. Messages
// are clipped (clip.Message): they may quote what the client sent. A
// strict-mode row failure and a refused command carry an ErrorInfo too
// (newStatus).
func toStatus(err error) error {
	if st, ok := status.FromError(err); ok {
		if m := clip.Message(st.Message()); m != st.Message() {
			return status.Error(st.Code(), m)
		}
		return err
	}
	return newStatus(code(err), err).Err()
}

// code is the gRPC code of an error that is not a status.
func code(err error) codes.Code {
	var rowErr *udf.RowError
	switch { // a strict row that failed for the server's state has its code
	case errors.Is(err, sched.ErrClosed):
		return codes.Unavailable
	case errors.Is(err, sched.ErrNoBackend):
		return codes.FailedPrecondition
	case errors.Is(err, udf.ErrBadCommand), errors.As(err, &rowErr):
		return codes.InvalidArgument
	case errors.Is(err, context.Canceled):
		return codes.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		return codes.DeadlineExceeded
	}
	return codes.Internal
}
