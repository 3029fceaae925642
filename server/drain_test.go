package server

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/pixelflight/pixelflight/sched"
)

// SIGTERM with streams open, beyond TestDrain (one stream, a new
// connection refused): several streams finish within the deadline while
// new streams on their own connection are refused; past the deadline the
// open streams are stopped and Serve says so.

// serving is a server whose Serve the test stops and checks itself.
type serving struct {
	srv    *Server
	conn   *grpc.ClientConn
	client flight.Client
	addr   string
	stop   context.CancelFunc
	done   chan error
}

func serveFor(t *testing.T, cfg Config) *serving {
	t.Helper()
	l, _, err := Listen("grpc://127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Version = "test"
	s := &serving{srv: New(cfg), done: make(chan error, 1), addr: l.Addr().String()}
	ctx, cancel := context.WithCancel(context.Background())
	s.stop = cancel
	go func() { s.done <- s.srv.Serve(ctx, l) }()
	if s.conn, err = grpc.NewClient(s.addr, grpc.WithTransportCredentials(insecure.NewCredentials())); err != nil {
		t.Fatal(err)
	}
	s.client = flight.NewClientFromConn(s.conn, nil)
	t.Cleanup(func() {
		s.conn.Close()
		s.stop()
		select {
		case <-s.done:
		case <-time.After(time.Minute):
			t.Error("Serve did not return")
		}
	})
	return s
}

// openStream starts an echo exchange, sends one batch and reads its
// answer; the stream stays open.
type openStream struct {
	stream flight.FlightService_DoExchangeClient
	w      *flight.Writer
	rdr    *flight.Reader
	cancel context.CancelFunc
}

func open(t *testing.T, c flight.Client, cmd string, rec arrow.RecordBatch) *openStream {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	stream, err := c.DoExchange(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(cmdData(cmd)); err != nil {
		t.Fatal(err)
	}
	o := &openStream{stream: stream, w: flight.NewRecordWriter(stream, ipc.WithSchema(rec.Schema())), cancel: cancel}
	if err := o.w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if o.rdr, err = flight.NewRecordReader(stream); err != nil {
		t.Fatal(err)
	}
	if !o.rdr.Next() {
		t.Fatalf("no first answer: %v", o.rdr.Err())
	}
	t.Cleanup(func() { o.rdr.Release(); cancel() })
	return o
}

// newExchange starts an exchange on c and returns how it ended.
func newExchange(c flight.Client, cmd string, rec arrow.RecordBatch) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stream, err := c.DoExchange(ctx)
	if err != nil {
		return err
	}
	if err := stream.Send(cmdData(cmd)); err == nil {
		w := flight.NewRecordWriter(stream, ipc.WithSchema(rec.Schema()))
		w.Write(rec)
		w.Close()
		stream.CloseSend()
	}
	for {
		if _, err := stream.Recv(); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// Three streams are open when the server is told to stop: a new stream
// on their connection and a new connection are both refused with
// UNAVAILABLE, each open stream still sends two more batches and gets
// every row back, and once they end Serve returns nil, before the deadline.
func TestDrainFinishesOpenStreams(t *testing.T) {
	const deadline = 20 * time.Second
	s := serveFor(t, Config{Workers: 2, DrainTimeout: deadline, Alloc: memory.NewGoAllocator()})
	mem := memory.NewGoAllocator()
	rec := imageBatch(mem, "content", []byte("a"), []byte("bc"))
	defer rec.Release()
	var streams []*openStream
	for range 3 {
		streams = append(streams, open(t, s.client, `{"op": "echo"}`, rec))
	}
	stopped := time.Now()
	s.stop() // as SIGTERM does
	// New streams are refused, on the open connection and on a new one.
	// GracefulStop refuses them from the moment it starts; poll until it has.
	var err error
	for range 100 {
		if err = newExchange(s.client, `{"op": "echo"}`, rec); status.Code(err) == codes.Unavailable {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	wantStatus(t, "a new stream on an open connection", err, codes.Unavailable)
	conn, err := grpc.NewClient(s.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	wantStatus(t, "a new connection", newExchange(flight.NewClientFromConn(conn, nil), `{"op": "echo"}`, rec), codes.Unavailable)
	select {
	case err := <-s.done:
		t.Fatalf("Serve returned with streams open: %v", err)
	default:
	}
	// The open streams go on to their end.
	for i, o := range streams {
		for range 2 {
			if err := o.w.Write(rec); err != nil {
				t.Fatalf("stream %d: %v", i, err)
			}
		}
		o.w.Close()
		o.stream.CloseSend()
		n := 0
		for o.rdr.Next() {
			if got := o.rdr.RecordBatch(); got.NumRows() != 2 || got.Column(1).NullN() != 2 || string(got.Column(0).(*array.Binary).Value(1)) != "bc" {
				t.Errorf("stream %d: a batch of %d rows came back", i, got.NumRows())
			}
			n++
		}
		if n != 2 || o.rdr.Err() != nil && !errors.Is(o.rdr.Err(), io.EOF) {
			t.Errorf("stream %d: %d more batches while draining, %v", i, n, o.rdr.Err())
		}
	}
	select {
	case err := <-s.done:
		if err != nil {
			t.Errorf("Serve: %v, want nil", err)
		}
		if took := time.Since(stopped); took >= deadline {
			t.Errorf("Serve took %v, past the %v deadline", took, deadline)
		}
	case <-time.After(deadline + 10*time.Second):
		t.Fatal("Serve did not return after the open streams ended")
	}
	s.done <- nil // for the cleanup
	if o := s.srv.open.Load(); o != 0 {
		t.Errorf("%d streams still open", o)
	}
}

// Past the deadline the open streams are stopped: a stream that never
// ends and one whose rows are still queued both end with UNAVAILABLE,
// and Serve logs a warning naming the deadline and the streams it
// stopped, and returns nil: the stop was asked for and done.
func TestDrainDeadline(t *testing.T) {
	const deadline = 300 * time.Millisecond
	// No CPU lanes; a sim of one lane, 200 ms a batch of one row, so that
	// a 20-row batch is still queued at the deadline.
	const stats = `{"op": "fft_convolve", "params": {"output": "stats"}}`
	core, logs := observer.New(zap.WarnLevel)
	s := serveFor(t, Config{Workers: -1, Backends: []sched.Backend{slowSim(1, 200*time.Millisecond, 3, 3)}, DrainTimeout: deadline,
		Alloc: memory.NewGoAllocator(), Log: zap.New(core)})
	mem := memory.NewGoAllocator()
	img := pngBytes(t, 3, 3)
	one := imageBatch(mem, "content", img)
	defer one.Release()
	idle := open(t, s.client, stats, one) // answered, then never closed
	rows := make([][]byte, 20)
	for i := range rows {
		rows[i] = img
	}
	many := imageBatch(mem, "content", rows...)
	defer many.Release()
	if err := idle.w.Write(one); err != nil { // a second batch on the idle stream
		t.Fatal(err)
	}
	busy := make(chan error, 1)
	go func() { busy <- newExchange(s.client, stats, many) }()
	for s.srv.sched.Depth() == 0 { // the 20 rows are queued
		time.Sleep(5 * time.Millisecond)
	}
	stopped := time.Now()
	s.stop()
	var err error
	select {
	case err = <-s.done:
	case <-time.After(deadline + 20*time.Second):
		t.Fatal("Serve did not return after the drain deadline")
	}
	took := time.Since(stopped)
	s.done <- err // for the cleanup
	if err != nil {
		t.Errorf("Serve: %v, want nil after the drain deadline", err)
	}
	if w := logs.FilterMessage("drain deadline of 300ms passed with 2 streams open: stopped them").All(); len(w) != 1 || w[0].Level != zap.WarnLevel {
		t.Errorf("warnings %v, want one naming the deadline and 2 streams", logs.All())
	}
	if took < deadline {
		t.Errorf("Serve returned %v after the stop, before the %v deadline", took, deadline)
	}
	wantStatus(t, "the stream with queued rows", <-busy, codes.Unavailable)
	for idle.rdr.Next() {
	}
	wantStatus(t, "the idle stream", idle.rdr.Err(), codes.Unavailable)
}
