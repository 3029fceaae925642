package server

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/status"

	"github.com/pixelflight/pixelflight/internal/clip"
	"github.com/pixelflight/pixelflight/sched"
)

// Transport hygiene: connections and streams that hold the server without
// using it are ended within Config.Transport's limits (1 s here), and
// client text is never echoed whole.

// HTTP/2 frames, written and read by hand: these peers misbehave in ways
// a gRPC client will not.
const (
	h2Settings = 0x4
	h2Ping     = 0x6
	h2GoAway   = 0x7

	h2EnhanceYourCalm = 0xb
)

// h2Frame writes one frame.
func h2Frame(c net.Conn, typ, flags byte, stream uint32, payload []byte) error {
	h := make([]byte, 9, 9+len(payload))
	h[0], h[1], h[2] = byte(len(payload)>>16), byte(len(payload)>>8), byte(len(payload))
	h[3], h[4] = typ, flags
	binary.BigEndian.PutUint32(h[5:], stream)
	_, err := c.Write(append(h, payload...))
	return err
}

// h2Dial connects and sends the client preface and an empty SETTINGS
// frame: a complete HTTP/2 handshake from the client's side.
func h2Dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	if err := h2Frame(c, h2Settings, 0, 0, nil); err != nil {
		t.Fatal(err)
	}
	return c
}

type h2Read struct {
	typ     byte
	payload []byte
}

// h2ReadAll reads frames until the server closes the connection or limit
// passes, answering pings when pong is set and nothing else; it returns
// them, how long it took and whether the server closed it.
func h2ReadAll(t *testing.T, c net.Conn, limit time.Duration, pong bool) ([]h2Read, time.Duration, bool) {
	t.Helper()
	begin := time.Now()
	c.SetReadDeadline(begin.Add(limit))
	var frames []h2Read
	h := make([]byte, 9)
	for {
		if _, err := io.ReadFull(c, h); err != nil {
			var ne net.Error
			timedOut := errors.As(err, &ne) && ne.Timeout()
			return frames, time.Since(begin), !timedOut
		}
		n := int(h[0])<<16 | int(h[1])<<8 | int(h[2])
		p := make([]byte, n)
		if _, err := io.ReadFull(c, p); err != nil {
			return frames, time.Since(begin), true
		}
		frames = append(frames, h2Read{h[3], p})
		if pong && h[3] == h2Ping && h[4]&1 == 0 {
			h2Frame(c, h2Ping, 1, 0, p) //nolint:errcheck // a closed connection ends the loop
		}
	}
}

func hasGoAway(frames []h2Read, code uint32) bool {
	for _, f := range frames {
		if f.typ == h2GoAway && len(f.payload) >= 8 && binary.BigEndian.Uint32(f.payload[4:]) == code {
			return true
		}
	}
	return false
}

// Connections that hold the server without using it are closed: one
// that never completes the handshake (Handshake), one that completes it
// and then answers nothing (keepalive pings unanswered: KeepaliveTime +
// KeepaliveTimeout), and one that answers pings but opens no stream
// (ConnIdle: GOAWAY, then the close).
func TestSilentConnections(t *testing.T) {
	for _, c := range []struct {
		name      string
		tr        Transport
		handshake bool
		pong      bool
		within    time.Duration
	}{
		{"no handshake", Transport{Handshake: time.Second, ConnIdle: -1, KeepaliveTime: -1}, false, false, 3 * time.Second},
		{"pings unanswered", Transport{ConnIdle: -1, KeepaliveTime: time.Second, KeepaliveTimeout: time.Second}, true, false, 4 * time.Second},
		{"no stream", Transport{ConnIdle: time.Second, KeepaliveTime: time.Second, KeepaliveTimeout: time.Second}, true, true, 4 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := startWith(t, "grpc://127.0.0.1:0", Config{Workers: 1, Transport: c.tr})
			var conn net.Conn
			if c.handshake {
				conn = h2Dial(t, f.addr)
			} else {
				var err error
				if conn, err = net.Dial("tcp", f.addr); err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
			}
			frames, took, closed := h2ReadAll(t, conn, c.within, c.pong)
			if !closed {
				t.Fatalf("still open after %v", took)
			}
			if took < 900*time.Millisecond {
				t.Errorf("closed after %v, before its limit of 1s", took)
			}
			if c.name == "no stream" && !hasGoAway(frames, 0) {
				t.Errorf("no GOAWAY (NO_ERROR) before the close: %d frames", len(frames))
			}
			t.Logf("closed after %v", took)
			stillServes(t, f)
		})
	}
}

// A client whose idle connection was closed (ConnIdle) connects again on
// its next call: nothing fails.
func TestReapedClientReconnects(t *testing.T) {
	f := startWith(t, "grpc://127.0.0.1:0", Config{Workers: 1, Transport: Transport{ConnIdle: time.Second}})
	stillServes(t, f)
	if s := f.conn.GetState(); s != connectivity.Ready {
		t.Fatalf("after a call the connection is %v", s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	begin := time.Now()
	for s := f.conn.GetState(); s == connectivity.Ready; s = f.conn.GetState() {
		if !f.conn.WaitForStateChange(ctx, s) {
			t.Fatalf("the idle connection was not closed within 10s")
		}
	}
	t.Logf("idle connection closed after %v; state %v", time.Since(begin), f.conn.GetState())
	stillServes(t, f)
	if _, err := f.client.DoAction(ctx, &flight.Action{Type: "health"}); err != nil {
		t.Fatal(err)
	}
}

// A client that pings more often than minPingInterval is told to calm
// down (GOAWAY ENHANCE_YOUR_CALM) and closed.
func TestTooManyPings(t *testing.T) {
	f := startWith(t, "grpc://127.0.0.1:0", Config{Workers: 1})
	c := h2Dial(t, f.addr)
	for i := range 5 {
		if err := h2Frame(c, h2Ping, 0, 0, []byte{0, 0, 0, 0, 0, 0, 0, byte(i)}); err != nil {
			break // closed already
		}
	}
	frames, took, closed := h2ReadAll(t, c, 5*time.Second, false)
	if !closed || !hasGoAway(frames, h2EnhanceYourCalm) {
		t.Fatalf("5 pings at once: closed %v after %v, GOAWAY ENHANCE_YOUR_CALM %v", closed, took, hasGoAway(frames, h2EnhanceYourCalm))
	}
	if !strings.Contains(string(frames[len(frames)-1].payload), "too_many_pings") {
		t.Errorf("last frame %x", frames[len(frames)-1].payload)
	}
	stillServes(t, f)
}

// An exchange whose first message does not come within Command ends with
// DEADLINE_EXCEEDED saying so; one that goes silent between batches, with
// its results all sent, ends after StreamIdle.
func TestSilentStreams(t *testing.T) {
	f := startWith(t, "grpc://127.0.0.1:0", Config{Workers: 1, Transport: Transport{Command: time.Second, StreamIdle: time.Second}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	// No command.
	stream, err := f.client.DoExchange(ctx)
	if err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	_, err = stream.Recv()
	took := time.Since(begin)
	wantStatus(t, "no command", err, codes.DeadlineExceeded, "no command within 1s")
	if took < 900*time.Millisecond || took > 5*time.Second {
		t.Errorf("no command: ended after %v, want about 1s", took)
	}

	// A command, no schema.
	stream, err = f.client.DoExchange(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(cmdData(`{"op": "info"}`)); err != nil {
		t.Fatal(err)
	}
	_, err = stream.Recv()
	wantStatus(t, "no schema", err, codes.DeadlineExceeded, "no input for 1s")

	// Two batches 0.6 s apart, an answer each, then silence.
	mem := memory.NewGoAllocator()
	rec := imageBatch(mem, "content", pngBytes(t, 6, 5))
	defer rec.Release()
	stream, err = f.client.DoExchange(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(cmdData(`{"op": "info"}`)); err != nil {
		t.Fatal(err)
	}
	w := flight.NewRecordWriter(stream, ipc.WithSchema(rec.Schema()))
	defer w.Close()
	var rdr *flight.Reader
	for i := range 2 {
		if i > 0 {
			time.Sleep(600 * time.Millisecond)
		}
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		if rdr == nil { // the server sends its schema with the first result
			if rdr, err = flight.NewRecordReader(stream); err != nil {
				t.Fatal(err)
			}
			defer rdr.Release()
		}
		if !rdr.Next() {
			t.Fatalf("batch %d: no answer: %v", i, rdr.Err())
		}
	}
	begin = time.Now()
	if rdr.Next() {
		t.Fatal("an answer to no batch")
	}
	took = time.Since(begin)
	wantStatus(t, "silent after two batches", rdr.Err(), codes.DeadlineExceeded, "no input for 1s")
	if took < 900*time.Millisecond || took > 5*time.Second {
		t.Errorf("silent between batches: ended after %v, want about 1s", took)
	}
	stillServes(t, f)
}

// Time the server spends on a stream's rows is not idle time: a batch
// that takes 1.5 s on the (simulated) device, under a 1 s StreamIdle,
// is answered.
func TestSlowRowsAreNotIdle(t *testing.T) {
	sim := sched.NewSim(1, 1, sched.SimRates{PerImage: map[string]time.Duration{"fft_convolve": 1500 * time.Millisecond}, Copy: 1e12})
	f := startWith(t, "grpc://127.0.0.1:0", Config{Workers: -1, Backends: []sched.Backend{sim}, Transport: Transport{StreamIdle: time.Second}})
	mem := memory.NewGoAllocator()
	rec := imageBatch(mem, "content", pngBytes(t, 512, 512))
	defer rec.Release()
	begin := time.Now()
	out, err := exchange(t, f.client, `{"op": "fft_convolve", "params": {"output": "stats"}}`, rec)
	if err != nil || len(out) != 1 {
		t.Fatalf("a 1.5 s batch under a 1 s idle limit: %d batches, %v", len(out), err)
	}
	out[0].Release()
	if took := time.Since(begin); took < 1400*time.Millisecond {
		t.Errorf("the batch took %v: the sim did not stand for 1.5 s", took)
	}
}

// A 100,000-character action, op, column or method name comes back as a
// short INVALID_ARGUMENT (UNIMPLEMENTED for the method) naming its
// clipped start and its length; the server goes on serving.
func TestLongNamesClipped(t *testing.T) {
	f := startWith(t, "grpc://127.0.0.1:0", Config{Workers: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	long := strings.Repeat("n", 100_000)
	clipped := clip.Quote(long)
	check := func(what string, err error, code codes.Code) {
		t.Helper()
		wantStatus(t, what, err, code, clipped)
		if m := status.Convert(err).Message(); len(m) > clip.MaxMessage {
			t.Errorf("%s: a message of %d bytes", what, len(m))
		}
	}

	s, err := f.client.DoAction(ctx, &flight.Action{Type: long})
	if err == nil {
		_, err = s.Recv()
	}
	check("action", err, codes.InvalidArgument)

	mem := memory.NewGoAllocator()
	rec := imageBatch(mem, "content", pngBytes(t, 4, 4))
	defer rec.Release()
	_, err = exchange(t, f.client, `{"op": "`+long+`"}`, rec)
	check("op", err, codes.InvalidArgument)
	_, err = exchange(t, f.client, `{"op": "fft_convolve", "params": {"`+long+`": 1}}`, rec)
	check("parameter", err, codes.InvalidArgument)
	_, err = exchange(t, f.client, `{"op": "info", "column": "`+long+`"}`, rec)
	check("column", err, codes.InvalidArgument)
	_, err = exchange(t, f.client, `{"op": "info", "columns": ["`+long+`"]}`, rec)
	check("result column", err, codes.InvalidArgument)
	// Input columns named by the client: each clipped, as many listed as
	// fit clip.MaxList.
	fields := make([]arrow.Field, 40)
	for i := range fields {
		fields[i] = arrow.Field{Name: long + string(rune('a'+i%26)), Type: arrow.BinaryTypes.Binary}
	}
	_, err = exchangeAny(t, f.client, cmdData(`{"op": "info"}`), arrow.NewSchema(fields, nil))
	wantStatus(t, "40 long input columns", err, codes.InvalidArgument, `input has no column "content"`, "…(100001 bytes)", "…(37 more)")

	method := "/arrow.flight.protocol.FlightService/" + long
	err = f.conn.Invoke(ctx, method, &flight.Empty{}, &flight.Empty{})
	wantStatus(t, "method", err, codes.Unimplemented, "unknown method "+clip.Quote(method))
	stillServes(t, f)
}

// The limits a zero Transport takes.
func TestTransportDefaults(t *testing.T) {
	got := Transport{}.withDefaults()
	if got != DefaultTransport() {
		t.Errorf("zero Transport: %+v, want %+v", got, DefaultTransport())
	}
	off := Transport{ConnIdle: -1, KeepaliveTime: -1, StreamIdle: -1}.withDefaults()
	if off.ConnIdle != -1 || off.StreamIdle != -1 || newIdleWatch(off.StreamIdle, nil) != nil {
		t.Errorf("negative limits: %+v", off)
	}
	if orNever(-1) != never || orNever(time.Second) != time.Second {
		t.Error("orNever")
	}
}
