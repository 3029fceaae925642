package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"image"
	"image/png"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/pixelflight/pixelflight/api"
	pfdial "github.com/pixelflight/pixelflight/internal/dial"
	"github.com/pixelflight/pixelflight/udf"
)

type fixture struct {
	client flight.Client
	conn   *grpc.ClientConn
	srv    *Server
	addr   string
	stop   context.CancelFunc
	done   chan error
}

// start serves on location with a leak-checked allocator; the cleanup
// stops the server and checks that every buffer was released.
func start(t *testing.T, location string) *fixture {
	return startWith(t, location, Config{Workers: 2})
}

// startWith is start with cfg (its Version and DrainTimeout are set
// here, and a leak-checked Alloc unless cfg has one).
func startWith(t testing.TB, location string, cfg Config) *fixture {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	l, loc, err := Listen(location)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Alloc == nil {
		cfg.Alloc = mem
	}
	cfg.Version, cfg.DrainTimeout = "test", 5*time.Second
	srv := New(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	f := &fixture{srv: srv, stop: cancel, done: make(chan error, 1), addr: l.Addr().String()}
	go func() { f.done <- srv.Serve(ctx, l) }()
	target := strings.Replace(loc, "grpc+unix://", "unix://", 1)
	target = strings.TrimPrefix(target, "grpc://")
	f.conn, err = grpc.NewClient(target, pfdial.Options(false, nil, "")...) // as the clients dial: results of any size
	if err != nil {
		t.Fatal(err)
	}
	f.client = flight.NewClientFromConn(f.conn, nil)
	t.Cleanup(func() {
		f.conn.Close()
		f.stop()
		if err := <-f.done; err != nil {
			t.Errorf("serve: %v", err)
		}
		mem.AssertSize(t, 0)
	})
	return f
}

func pngBytes(t testing.TB, w, h int) []byte {
	img := image.NewGray(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = uint8(i * 7)
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func imageBatch(mem memory.Allocator, name string, rows ...[]byte) arrow.RecordBatch {
	b := array.NewBinaryBuilder(mem, arrow.BinaryTypes.Binary)
	defer b.Release()
	for _, r := range rows {
		if r == nil {
			b.AppendNull()
		} else {
			b.Append(r)
		}
	}
	col := b.NewArray()
	defer col.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: name, Type: arrow.BinaryTypes.Binary, Nullable: true}}, nil)
	return array.NewRecordBatch(schema, []arrow.Array{col}, int64(len(rows)))
}

// exchange sends the descriptor alone, as pyarrow does, then the batches,
// and returns what comes back. It returns only once its sender is done
// with the batches, so the caller may release them at once, even when the
// server refused the call before reading them.
func exchange(t testing.TB, c flight.Client, cmd string, batches ...arrow.RecordBatch) ([]arrow.RecordBatch, error) {
	t.Helper()
	var schema *arrow.Schema
	if len(batches) > 0 {
		schema = batches[0].Schema()
	}
	return exchangeAny(t, c, cmdData(cmd), schema, batches...)
}

// exchangeAny is exchange for calls the server may refuse before it has
// read everything: a refused Send is not a test failure, the status the
// server ended the call with is the result.
func exchangeAny(t testing.TB, c flight.Client, first *flight.FlightData, schema *arrow.Schema, batches ...arrow.RecordBatch) ([]arrow.RecordBatch, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	stream, err := c.DoExchange(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sent := make(chan struct{})
	defer func() { cancel(); <-sent }() // the batches are the caller's again
	go func() {
		defer close(sent)
		if stream.Send(first) != nil {
			return
		}
		if schema != nil {
			w := flight.NewRecordWriter(stream, ipc.WithSchema(schema))
			for _, b := range batches {
				if w.Write(b) != nil {
					break
				}
			}
			w.Close()
		}
		stream.CloseSend()
	}()
	rdr, err := flight.NewRecordReader(stream)
	if err != nil {
		return nil, err
	}
	defer rdr.Release()
	var out []arrow.RecordBatch
	for rdr.Next() {
		rec := rdr.RecordBatch()
		rec.Retain()
		out = append(out, rec)
	}
	if err := rdr.Err(); err != nil && !errors.Is(err, io.EOF) {
		return out, err
	}
	return out, nil
}

func cmdData(cmd string) *flight.FlightData {
	return &flight.FlightData{FlightDescriptor: &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: []byte(cmd)}}
}

func TestExchangeBothTransports(t *testing.T) {
	for _, loc := range []string{"grpc://127.0.0.1:0", "grpc+unix://" + filepath.Join(t.TempDir(), "pf.sock")} {
		t.Run(strings.SplitN(loc, ":", 2)[0], func(t *testing.T) {
			f := start(t, loc)
			mem := memory.NewGoAllocator()
			img := pngBytes(t, 9, 6)
			in := []arrow.RecordBatch{
				imageBatch(mem, "content", img, []byte("junk"), nil),
				imageBatch(mem, "content", img),
				imageBatch(mem, "content", nil, img),
			}
			out, err := exchange(t, f.client, `{"op": "fft_convolve", "params": {"kernel": "box", "size": 5, "output": "stats"}}`, in...)
			if err != nil {
				t.Fatal(err)
			}
			if len(out) != len(in) {
				t.Fatalf("%d batches back, sent %d", len(out), len(in))
			}
			for i, rec := range out {
				if rec.NumRows() != in[i].NumRows() {
					t.Errorf("batch %d: %d rows back, sent %d", i, rec.NumRows(), in[i].NumRows())
				}
				errs := rec.Column(4).(*array.String)
				for r := 0; r < int(rec.NumRows()); r++ {
					good := in[i].Column(0).IsValid(r) && bytes.Equal(in[i].Column(0).(*array.Binary).Value(r), img)
					if good != errs.IsNull(r) {
						t.Errorf("batch %d row %d: good=%v error=%q", i, r, good, errs.Value(r))
					}
				}
				rec.Release()
			}
			var stats api.Stats
			action(t, f.client, "stats", &stats)
			if stats.Rows != 6 || stats.RowErrors != 3 || stats.Batches != 3 || stats.RowsByBackend["cpu"] != 3 || stats.RowsByBackend["decode"] != 3 ||
				stats.RowErrorsByKind["null"] != 2 || stats.RowErrorsByKind["unknown_format"] != 1 {
				t.Errorf("stats = %+v", stats)
			}
			if v := stats.Metrics[`pixelflight_rows_total{backend="cpu",op="fft_convolve"}`]; v != 3 {
				t.Errorf("rows_total series = %v in %v", v, stats.Metrics)
			}
			// A box 5 is separable: its rows by that method, in every
			// build (kernels.TestChoose). On this 9×6 image a sobel_x goes
			// by its nonzero taps in C, and a box 3 is within 3% of it.
			if v := stats.Metrics[`pixelflight_method_rows_total{backend="cpu",method="separable",op="fft_convolve"}`]; v != 3 {
				t.Errorf("method_rows_total series = %v in %v", v, stats.Metrics)
			}
		})
	}
}

func action(t *testing.T, c flight.Client, name string, v any) {
	t.Helper()
	stream, err := c.DoAction(context.Background(), &flight.Action{Type: name})
	if err != nil {
		t.Fatal(err)
	}
	res, err := stream.Recv()
	if err != nil {
		t.Fatalf("action %s: %v", name, err)
	}
	if err := json.Unmarshal(res.Body, v); err != nil {
		t.Fatal(err)
	}
}

func TestBadCalls(t *testing.T) {
	f := start(t, "grpc://127.0.0.1:0")
	mem := memory.NewGoAllocator()
	img := pngBytes(t, 4, 4)
	for _, c := range []struct {
		cmd, column, want string
	}{
		{`{"op": "sharpen_all"}`, "content", `unknown op "sharpen_all"`},
		{`not json`, "content", "not valid JSON"},
		{`{"op": "fft_convolve", "params": {"sigma": -2}}`, "content", "sigma -2"},
		{`{"op": "echo", "column": "image"}`, "content", `input has no column "image" (columns: [content])`},
		{`{"op": "fft_convolve", "strict": true}`, "content", "row 1 of the batch failed"},
	} {
		rec := imageBatch(mem, c.column, img, []byte("bad"))
		_, err := exchange(t, f.client, c.cmd, rec)
		rec.Release()
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want InvalidArgument containing %q", c.cmd, err, c.want)
		}
	}
	// A column of the wrong type.
	b := array.NewInt32Builder(mem)
	b.Append(1)
	col := b.NewArray()
	rec := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "content", Type: arrow.PrimitiveTypes.Int32}}, nil), []arrow.Array{col}, 1)
	_, err := exchange(t, f.client, `{"op": "echo"}`, rec)
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "is int32: want binary") {
		t.Errorf("int32 column: %v", err)
	}
	rec.Release()
	col.Release()
	b.Release()
	// The server still serves.
	rec = imageBatch(mem, "content", img)
	defer rec.Release()
	out, err := exchange(t, f.client, `{"op": "info"}`, rec)
	if err != nil || len(out) != 1 {
		t.Fatalf("after bad calls: %v", err)
	}
	out[0].Release()
}

// Empty lists in capabilities are [], never null: a server with no
// cascades, no GPU probe, and ops without params.
func TestCapabilitiesHaveNoNulls(t *testing.T) {
	f := start(t, "grpc://127.0.0.1:0")
	stream, err := f.client.DoAction(context.Background(), &flight.Action{Type: "capabilities"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(res.Body, []byte(":null")) {
		t.Errorf("capabilities hold null: %s", res.Body)
	}
	var caps struct {
		Cascades []string
		Ops      []struct{ Params []udf.Param }
	}
	if err := json.Unmarshal(res.Body, &caps); err != nil || caps.Cascades == nil || len(caps.Ops) == 0 || caps.Ops[0].Params == nil {
		t.Errorf("capabilities = %+v, %v: want [] for the empty lists", caps, err)
	}
}

func TestActionsAndHealth(t *testing.T) {
	f := start(t, "grpc://127.0.0.1:0")
	var caps api.Capabilities
	action(t, f.client, "capabilities", &caps)
	if caps.Version != "test" || len(caps.Ops) != len(udf.NewRegistry(udf.DefaultLimits(), nil).Ops()) || len(caps.Backends) != 1 {
		t.Fatalf("capabilities = %+v", caps)
	}
	for _, op := range caps.Ops {
		if op.Name == "fft_convolve" {
			stats := op.Outputs["stats"]
			if len(stats) != 5 || stats[0].Name != "min" || stats[4].Name != "error" {
				t.Errorf("fft_convolve stats output = %+v", stats)
			}
		}
	}
	var h api.Health
	action(t, f.client, "health", &h)
	if h.Status != "SERVING" || len(h.Backends) != 1 || h.Backends[0].Name != "cpu" || h.Backends[0].Vector == "" {
		t.Errorf("health = %+v", h)
	}
	resp, err := healthpb.NewHealthClient(f.conn).Check(context.Background(), &healthpb.HealthCheckRequest{})
	if err != nil || resp.Status != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("grpc health: %v %v", resp, err)
	}
	stream, err := f.client.DoAction(context.Background(), &flight.Action{Type: "reboot"})
	if err == nil {
		_, err = stream.Recv()
	}
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), `unknown action "reboot"`) {
		t.Errorf("unknown action: %v", err)
	}
}

// TestDrain stops the server while a stream is open: the stream finishes,
// new calls are refused, Serve returns nil.
func TestDrain(t *testing.T) {
	f := start(t, "grpc://127.0.0.1:0")
	mem := memory.NewGoAllocator()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stream, err := f.client.DoExchange(ctx)
	if err != nil {
		t.Fatal(err)
	}
	desc := &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: []byte(`{"op": "echo"}`)}
	if err := stream.Send(&flight.FlightData{FlightDescriptor: desc}); err != nil {
		t.Fatal(err)
	}
	rec := imageBatch(mem, "content", []byte("a"))
	defer rec.Release()
	w := flight.NewRecordWriter(stream, ipc.WithSchema(rec.Schema()))
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	rdr, err := flight.NewRecordReader(stream)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	if !rdr.Next() {
		t.Fatalf("no first result: %v", rdr.Err())
	}
	f.stop() // as SIGTERM does
	time.Sleep(200 * time.Millisecond)
	resp, err := healthpb.NewHealthClient(f.conn).Check(context.Background(), &healthpb.HealthCheckRequest{})
	if err == nil && resp.Status == healthpb.HealthCheckResponse_SERVING {
		t.Error("still SERVING while draining")
	}
	// New calls are refused.
	conn, err := grpc.NewClient(f.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, err = healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{})
	if status.Code(err) != codes.Unavailable {
		t.Errorf("new call while draining: %v, want Unavailable", err)
	}
	// The open stream still works.
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	w.Close()
	stream.CloseSend()
	if !rdr.Next() {
		t.Fatalf("open stream cut while draining: %v", rdr.Err())
	}
	if rdr.Next() {
		t.Fatal("extra batch")
	}
}

// MaxDelay 0 is the default (2ms), a negative one none: a batching
// backend takes what is ready (serve --max-delay 0).
func TestMaxDelayDefaults(t *testing.T) {
	for _, c := range []struct{ in, want time.Duration }{{0, 2 * time.Millisecond}, {-1, 0}, {5 * time.Millisecond, 5 * time.Millisecond}} {
		cfg := Config{MaxDelay: c.in}
		cfg.defaults()
		if cfg.MaxDelay != c.want {
			t.Errorf("MaxDelay %v: %v after defaults, want %v", c.in, cfg.MaxDelay, c.want)
		}
	}
}
