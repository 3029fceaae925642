package server

import (
	"math"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"

	"github.com/pixelflight/pixelflight/internal/clip"
)

// minPingInterval is how often a client may ping (gRPC keepalive) before
// the server ends its connection with GOAWAY ENHANCE_YOUR_CALM
// ("too_many_pings"): 10 s, the shortest keepalive time grpc-java allows.
// Pings are allowed on connections without streams (Spark's clients keep
// idle channels).
const minPingInterval = 10 * time.Second

// never is gRPC's "no limit" for a duration.
const never = time.Duration(math.MaxInt64)

func (t Transport) withDefaults() Transport {
	d := DefaultTransport()
	for _, f := range []struct{ v, def *time.Duration }{
		{&t.ConnIdle, &d.ConnIdle}, {&t.KeepaliveTime, &d.KeepaliveTime}, {&t.KeepaliveTimeout, &d.KeepaliveTimeout},
		{&t.Command, &d.Command}, {&t.StreamIdle, &d.StreamIdle},
	} {
		if *f.v == 0 {
			*f.v = *f.def
		}
	}
	if t.Handshake <= 0 {
		t.Handshake = d.Handshake
	}
	if t.MaxStreams == 0 {
		t.MaxStreams = d.MaxStreams
	}
	return t
}

// orNever is d, or gRPC's "never" for a limit turned off (negative).
func orNever(d time.Duration) time.Duration {
	if d < 0 {
		return never
	}
	return d
}

// options are the gRPC server options that enforce t's connection
// limits; Command and StreamIdle are DoExchange's own (exchange.go).
func (t Transport) options() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: minPingInterval, PermitWithoutStream: true}),
		grpc.KeepaliveParams(keepalive.ServerParameters{
			MaxConnectionIdle: orNever(t.ConnIdle),
			Time:              orNever(t.KeepaliveTime),
			Timeout:           orNever(t.KeepaliveTimeout),
		}),
		grpc.ConnectionTimeout(t.Handshake),
		grpc.MaxConcurrentStreams(t.MaxStreams),
	}
}

// unknownMethod answers calls of methods this server does not have,
// naming the method clipped (gRPC's own answer echoes it whole).
func unknownMethod(_ any, stream grpc.ServerStream) error {
	m, _ := grpc.MethodFromServerStream(stream)
	return status.Errorf(codes.Unimplemented, "unknown method %s", clip.Quote(m))
}

// idleWatch ends an exchange whose client has sent nothing for its limit
// while the server owes it nothing: the stream's reader waits for the
// client's next message and every batch read has been answered. Time the
// server spends on the client's batches, or waiting for the memory
// budget, never counts. A nil *idleWatch watches nothing.
type idleWatch struct {
	d    time.Duration
	t    *time.Timer // runs end once d has passed idle
	mu   sync.Mutex
	recv bool // the reader waits in Recv
	owed int  // batches read and not answered yet
}

// newIdleWatch watches for d (nil when d is not positive) and calls end
// with the status the stream ends with.
func newIdleWatch(d time.Duration, end func(error)) *idleWatch {
	if d <= 0 {
		return nil
	}
	err := status.Errorf(codes.DeadlineExceeded,
		"no input for %s: the client sent nothing while it was owed no results (the server's --stream-idle-timeout)", d)
	w := &idleWatch{d: d}
	w.t = time.AfterFunc(never, func() { end(err) })
	w.t.Stop()
	return w
}

// update starts or stops the timer for the new state; w.mu is held.
func (w *idleWatch) update(wasIdle bool) {
	switch idle := w.recv && w.owed == 0; {
	case idle && !wasIdle:
		w.t.Reset(w.d)
	case !idle && wasIdle:
		w.t.Stop()
	}
}

func (w *idleWatch) change(f func()) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	was := w.recv && w.owed == 0
	f()
	w.update(was)
}

// receiving says whether the reader is waiting in Recv.
func (w *idleWatch) receiving(on bool) { w.change(func() { w.recv = on }) }

// read counts a batch read, answered counts one answered.
func (w *idleWatch) read()     { w.change(func() { w.owed++ }) }
func (w *idleWatch) answered() { w.change(func() { w.owed-- }) }

// stop stops the timer for good.
func (w *idleWatch) stop() {
	if w != nil {
		w.change(func() { w.recv = false; w.owed = math.MaxInt32 })
	}
}
