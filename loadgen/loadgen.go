package loadgen

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/pixelflight/pixelflight/api"
	"github.com/pixelflight/pixelflight/internal/dial"
	"github.com/pixelflight/pixelflight/internal/recsize"
	"github.com/pixelflight/pixelflight/sched"
)

// Window is how many batches one stream may have sent and not yet had
// answered.
const Window = 4

// Column is the binary column the images are sent in.
const Column = "image"

// Config says what to send, where, and for how long.
type Config struct {
	Endpoint string // grpc+unix:///path.sock, grpc://host:port or grpc+tls://host:port
	// TLS is the client configuration for a grpc+tls endpoint (nil: the
	// system's roots); Token, when set, goes with every call as
	// "authorization: Bearer <token>" (server --token-file).
	TLS          *tls.Config
	Token        string
	Streams      int           // concurrent DoExchange streams, each on its own connection
	RowsPerBatch int           // images per record batch
	Duration     time.Duration // how long to send when Count is 0
	Count        int           // images to send in all; 0: send for Duration
	Command      Command       // the op to run on every image
	Images       [][]byte      // encoded image files, sent in turn
}

// Command is the op and its params, as in the protocol's JSON command.
type Command struct {
	Op     string
	Params json.RawMessage // a JSON object; empty means {}
}

// Report is what a run measured. Its JSON form is what `pixelflight bench
// --json` prints.
type Report struct {
	Endpoint     string          `json:"endpoint"`
	Op           string          `json:"op"`
	Params       json.RawMessage `json:"params"`
	Streams      int             `json:"streams"`
	RowsPerBatch int             `json:"rows_per_batch"`
	Images       int64           `json:"images"` // rows answered, row errors included
	// ImagesInWindow is how many of Images were answered within the
	// window Seconds measures: Duration for a timed run, all of them for
	// a counted one.
	ImagesInWindow int64            `json:"images_in_window"`
	Batches        int64            `json:"batches"` // result batches
	RowErrors      int64            `json:"row_errors"`
	BytesSent      int64            `json:"bytes_sent"`     // encoded image bytes
	BytesReceived  int64            `json:"bytes_received"` // Arrow buffer bytes of the results
	Seconds        float64          `json:"seconds"`        // the window: Duration for a timed run, else WallSeconds
	WallSeconds    float64          `json:"wall_seconds"`   // from opening the streams to the last one ending
	ImagesPerS     float64          `json:"images_per_s"`   // images_in_window / seconds
	MBPerS         float64          `json:"mb_per_s"`       // bytes_sent × images_in_window / images / 10^6 / seconds
	LatencyMS      Latency          `json:"latency_ms"`
	BackendMix     map[string]int64 `json:"backend_mix,omitempty"` // rows per backend during the run; absent when the server does not say
	// HostCPUUSPerImage is the server process's CPU time (user and
	// system, all threads) per image answered during the run, in µs.
	HostCPUUSPerImage float64 `json:"host_cpu_us_per_image,omitempty"`
	// Stages is each stage's work during the run (decode, encode, and
	// each backend by name), from the server's stats.
	Stages map[string]StageFigures `json:"stages,omitempty"`
}

// StageFigures is one stage's work during a run.
type StageFigures struct {
	Rows        int64   `json:"rows"`
	BusySeconds float64 `json:"busy_seconds"`
	// BusyFraction is BusySeconds over the time of the stage's goroutines
	// (a backend's lanes; the cores, for decode and encode).
	BusyFraction float64 `json:"busy_fraction"`
	USPerRow     float64 `json:"us_per_row"`     // busy time per row
	CPUUSPerRow  float64 `json:"cpu_us_per_row"` // its threads' CPU time per row (host stages and CPU backends)
	Batches      int64   `json:"batches,omitempty"`
	BatchFill    float64 `json:"batch_fill,omitempty"` // rows per batch over the backend's max batch
	// Decoded is the rows whose images a backend decoded itself (a GPU's
	// nvJPEG), DecodeShare its share of the decoding at the end.
	Decoded     int64   `json:"decoded,omitempty"`
	DecodeShare float64 `json:"decode_share,omitempty"`
}

// Latency is a distribution of batch latencies in milliseconds: from just
// before a batch is written to its result being read.
type Latency struct {
	Per string  `json:"per"` // "batch"
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// Run sends cfg.Images to the server at cfg.Endpoint over cfg.Streams
// streams until cfg.Count images are sent or cfg.Duration has passed, and
// reports what came back. Any stream failing fails the run.
func Run(ctx context.Context, cfg Config) (Report, error) {
	rep := Report{Endpoint: cfg.Endpoint, Op: cfg.Command.Op, Streams: cfg.Streams, RowsPerBatch: cfg.RowsPerBatch}
	params, err := cfg.check()
	if err != nil {
		return rep, err
	}
	rep.Params = params
	tgt, useTLS, err := dial.Target(cfg.Endpoint)
	if err != nil {
		return rep, err
	}
	opts := dial.Options(useTLS, cfg.TLS, cfg.Token)
	cmd, err := json.Marshal(struct {
		Op     string          `json:"op"`
		Column string          `json:"column"`
		Params json.RawMessage `json:"params"`
	}{cfg.Command.Op, Column, params})
	if err != nil {
		return rep, fmt.Errorf("command: %w", err)
	}
	set, err := newImageSet(cfg.Images, cfg.RowsPerBatch)
	if err != nil {
		return rep, err
	}
	defer set.release()

	if err := dial.CheckPeer(ctx, tgt); err != nil {
		return rep, fmt.Errorf("endpoint %s: %w", cfg.Endpoint, err)
	}
	ctl, err := grpc.NewClient(tgt, opts...)
	if err != nil {
		return rep, fmt.Errorf("endpoint %s: %w", cfg.Endpoint, err)
	}
	defer ctl.Close()
	before, err := stats(ctx, flight.NewClientFromConn(ctl, nil))
	if status.Code(err) == codes.Unavailable {
		return rep, fmt.Errorf("cannot reach %s: %w", cfg.Endpoint, err)
	} else if err != nil {
		return rep, fmt.Errorf("endpoint %s: %w", cfg.Endpoint, err)
	}

	r := &run{cfg: cfg, target: tgt, opts: opts, cmd: cmd, set: set}
	tallies, elapsed, err := r.streams(ctx)
	if err != nil {
		return rep, err
	}
	var lat []time.Duration
	var timed int64
	for _, t := range tallies {
		timed += t.rowsByDeadline
		rep.Images += t.rows
		rep.Batches += t.batches
		rep.RowErrors += t.rowErrors
		rep.BytesSent += t.bytesSent
		rep.BytesReceived += t.bytesReceived
		lat = append(lat, t.latencies...)
	}
	rep.WallSeconds = elapsed.Seconds()
	rep.Seconds, rep.ImagesInWindow = rep.WallSeconds, rep.Images
	if cfg.Count == 0 {
		// A timed run counts what was answered within the duration; the
		// batches still in flight at the deadline are answered and checked
		// but not counted, so the tail does not dilute the rate.
		rep.Seconds, rep.ImagesInWindow = cfg.Duration.Seconds(), timed
	}
	rep.ImagesPerS = float64(rep.ImagesInWindow) / rep.Seconds
	if rep.Images > 0 {
		rep.MBPerS = float64(rep.BytesSent) * float64(rep.ImagesInWindow) / float64(rep.Images) / 1e6 / rep.Seconds
	}
	rep.LatencyMS = latency(lat)

	after, err := stats(ctx, flight.NewClientFromConn(ctl, nil))
	if err != nil {
		return rep, fmt.Errorf("endpoint %s after the run: %w", cfg.Endpoint, err)
	}
	rep.figures(before, after)
	return rep, nil
}

// figures sets what the server's stats before and after the run say:
// the backend mix, the host CPU per image and the stages.
func (rep *Report) figures(before, after api.Stats) {
	if after.RowsByBackend != nil {
		rep.BackendMix = make(map[string]int64, len(after.RowsByBackend))
		for k, v := range after.RowsByBackend {
			rep.BackendMix[k] = v - before.RowsByBackend[k]
		}
	}
	if after.HostCPUSeconds != nil && before.HostCPUSeconds != nil && rep.Images > 0 {
		rep.HostCPUUSPerImage = (*after.HostCPUSeconds - *before.HostCPUSeconds) * 1e6 / float64(rep.Images)
	}
	a, b := after.Stages, before.Stages
	if a == nil || b == nil || len(a.Backends) != len(b.Backends) {
		return
	}
	secs := a.UptimeSeconds - b.UptimeSeconds
	fig := func(x, y sched.Stage, batches int64, workers, most int) StageFigures {
		rows, busy := x.Rows-y.Rows, x.BusySeconds-y.BusySeconds
		f := StageFigures{Rows: rows, Batches: batches, BusySeconds: busy}
		if workers > 0 && secs > 0 {
			f.BusyFraction = busy / secs / float64(workers)
		}
		if rows > 0 {
			f.USPerRow = busy * 1e6 / float64(rows)
			f.CPUUSPerRow = (x.CPUSeconds - y.CPUSeconds) * 1e6 / float64(rows)
		}
		if batches > 0 && most > 0 {
			f.BatchFill = float64(rows) / float64(batches) / float64(most)
		}
		return f
	}
	rep.Stages = map[string]StageFigures{
		"decode": fig(a.Decode, b.Decode, 0, a.Cores, 0),
		"encode": fig(a.Encode, b.Encode, 0, a.Cores, 0),
	}
	for i, x := range a.Backends {
		y := b.Backends[i]
		f := fig(x.Stage, y.Stage, x.Batches-y.Batches, x.Lanes, x.MaxBatch)
		f.Decoded, f.DecodeShare = x.Decoded-y.Decoded, x.DecodeShare
		rep.Stages[x.Name] = f
	}
}

// check validates cfg and returns its params as compact JSON.
func (cfg Config) check() (json.RawMessage, error) {
	switch {
	case cfg.Endpoint == "":
		return nil, errors.New("no endpoint")
	case cfg.Streams < 1:
		return nil, fmt.Errorf("streams %d: want at least 1", cfg.Streams)
	case cfg.RowsPerBatch < 1:
		return nil, fmt.Errorf("rows per batch %d: want at least 1", cfg.RowsPerBatch)
	case cfg.Count < 0:
		return nil, fmt.Errorf("count %d: want 0 (run for the duration) or more", cfg.Count)
	case cfg.Count == 0 && cfg.Duration <= 0:
		return nil, errors.New("neither a count nor a positive duration: the run would never end")
	case len(cfg.Images) == 0:
		return nil, errors.New("no images to send")
	case cfg.Command.Op == "":
		return nil, errors.New("no op")
	}
	return ParseParams(cfg.Command.Params)
}

// ParseParams checks that p is one JSON object and returns it compacted;
// empty p is {}.
func ParseParams(p []byte) (json.RawMessage, error) {
	if len(p) == 0 {
		return json.RawMessage(`{}`), nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(p, &obj); err != nil {
		return nil, fmt.Errorf("params %s: want a JSON object such as {\"sigma\": 2}: %w", p, err)
	}
	if obj == nil {
		return nil, fmt.Errorf("params %s: want a JSON object such as {\"sigma\": 2}, not null", p)
	}
	out, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("params: %w", err)
	}
	return out, nil
}

// stats calls the stats action.
func stats(ctx context.Context, c flight.Client) (api.Stats, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	stream, err := c.DoAction(ctx, &flight.Action{Type: "stats"})
	if err != nil {
		return api.Stats{}, fmt.Errorf("stats action: %w", err)
	}
	res, err := stream.Recv()
	if err != nil {
		return api.Stats{}, fmt.Errorf("stats action: %w", err)
	}
	return parseStats(res.Body)
}

func parseStats(body []byte) (api.Stats, error) {
	var st api.Stats
	if err := json.Unmarshal(body, &st); err != nil {
		return st, fmt.Errorf("stats action: %w", err)
	}
	return st, nil
}

// run is one Run's shared state.
type run struct {
	cfg     Config
	target  string
	opts    []grpc.DialOption
	cmd     []byte
	set     *imageSet
	claimed atomic.Int64 // images claimed by the streams' writers so far
}

// tally is what one stream counted.
type tally struct {
	rows, batches, rowErrors int64
	rowsByDeadline           int64 // rows answered before the deadline
	bytesSent, bytesReceived int64
	latencies                []time.Duration
}

// sent is a batch written and not yet answered.
type sent struct {
	at   time.Time
	rows int64
}

// streams runs every stream and returns their tallies and the time from
// opening the first to the last one ending.
func (r *run) streams(ctx context.Context) ([]tally, time.Duration, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	tallies := make([]tally, r.cfg.Streams)
	errs := make([]error, r.cfg.Streams)
	start := time.Now()
	deadline := start.Add(r.cfg.Duration)
	var wg sync.WaitGroup
	for i := range tallies {
		wg.Go(func() {
			tallies[i], errs[i] = r.stream(ctx, deadline)
			if errs[i] != nil {
				cancel() // one failure ends the run
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	// Report the failure that caused the others: they end cancelled.
	var first error
	for i, err := range errs {
		if err == nil {
			continue
		}
		err = fmt.Errorf("%s, stream %d of %d: %w", r.cfg.Endpoint, i+1, r.cfg.Streams, err)
		if first == nil || (isCancel(first) && !isCancel(err)) {
			first = err
		}
	}
	return tallies, elapsed, first
}

func isCancel(err error) bool {
	return errors.Is(err, context.Canceled) || status.Code(err) == codes.Canceled
}

// stream runs one DoExchange: a writer goroutine sends batches while this
// one reads the results.
func (r *run) stream(ctx context.Context, deadline time.Time) (tally, error) {
	conn, err := grpc.NewClient(r.target, r.opts...)
	if err != nil {
		return tally{}, err
	}
	defer conn.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ex, err := flight.NewClientFromConn(conn, nil).DoExchange(ctx)
	if err != nil {
		return tally{}, err
	}
	desc := &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: r.cmd}
	if err := ex.Send(&flight.FlightData{FlightDescriptor: desc}); err != nil && !errors.Is(err, io.EOF) {
		return tally{}, fmt.Errorf("sending the command: %w", err)
	}

	window := make(chan struct{}, Window)
	fifo := make(chan sent, Window)
	var out tally // the writer's: rows and bytes sent
	werrc := make(chan error, 1)
	go func() {
		err := r.write(ctx, ex, window, fifo, deadline, &out)
		if err != nil && !errors.Is(err, io.EOF) {
			cancel()
		}
		werrc <- err
	}()
	in, rerr := r.read(ex, window, fifo, deadline)
	if rerr != nil {
		cancel()
	}
	werr := <-werrc
	// io.EOF on a send means the server ended the call: its status is
	// what the reader got.
	switch {
	case rerr != nil && (!isCancel(rerr) || werr == nil || errors.Is(werr, io.EOF)):
		return in, rerr
	case werr != nil && !errors.Is(werr, io.EOF):
		return in, werr
	case werr != nil:
		return in, fmt.Errorf("the server ended the stream while batches were still being sent (%d rows sent, %d answered)", out.rows, in.rows)
	case len(fifo) > 0 || in.rows != out.rows:
		return in, fmt.Errorf("the stream ended with %d batches unanswered: %d rows sent, %d answered: rows lost", len(fifo), out.rows, in.rows)
	}
	in.bytesSent = out.bytesSent
	return in, nil
}

// write sends batches until the run's count or deadline, at most Window
// unanswered, then ends the client's side of the stream.
func (r *run) write(ctx context.Context, ex flight.FlightService_DoExchangeClient, window chan<- struct{}, fifo chan<- sent, deadline time.Time, t *tally) error {
	w := flight.NewRecordWriter(ex, ipc.WithSchema(r.set.schema))
	for {
		select {
		case window <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
		rec, bytes, ok := r.next(deadline)
		if !ok {
			break
		}
		fifo <- sent{at: time.Now(), rows: rec.NumRows()} // never blocks: window holds the count
		err := w.Write(rec)
		rows := rec.NumRows()
		rec.Release()
		if err != nil {
			return fmt.Errorf("sending a batch: %w", err)
		}
		t.rows += rows
		t.bytesSent += bytes
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("ending the batches: %w", err)
	}
	if err := ex.CloseSend(); err != nil {
		return fmt.Errorf("ending the stream: %w", err)
	}
	return nil
}

// next claims the next batch's images, or says the run is over.
func (r *run) next(deadline time.Time) (arrow.RecordBatch, int64, bool) {
	if r.cfg.Count == 0 && !time.Now().Before(deadline) {
		return nil, 0, false
	}
	n := int64(r.cfg.RowsPerBatch)
	start := r.claimed.Add(n) - n
	if r.cfg.Count > 0 {
		left := int64(r.cfg.Count) - start
		if left <= 0 {
			return nil, 0, false
		}
		n = min(n, left)
	}
	rec, bytes := r.set.batch(start, n)
	return rec, bytes, true
}

// read reads result batches, checks each against the batch it answers and
// counts rows, row errors, bytes and latencies.
func (r *run) read(ex flight.FlightService_DoExchangeClient, window <-chan struct{}, fifo <-chan sent, deadline time.Time) (tally, error) {
	var t tally
	rdr, err := flight.NewRecordReader(ex)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return t, nil // the server ended without a schema: nothing was sent
		}
		return t, err
	}
	defer rdr.Release()
	idx := rdr.Schema().FieldIndices("error")
	if len(idx) == 0 {
		return t, fmt.Errorf("the results have no error column (schema %s)", rdr.Schema())
	}
	// A batch's answer may come in parts (the server writes results as
	// rows finish when memory is short, and splits large ones): each part
	// answers the next rows of the oldest batch not yet fully answered.
	var s sent
	var left, errs int64 // rows of s still to answer, row errors so far
	for rdr.Next() {
		rec := rdr.RecordBatch()
		now := time.Now()
		if left == 0 {
			select {
			case s = <-fifo:
				<-window
				left, errs = s.rows, 0
			default:
				return t, fmt.Errorf("result batch %d (%d rows) answers no batch sent: a duplicated batch", t.batches+1, rec.NumRows())
			}
		}
		if rec.NumRows() > left || rec.NumRows() == 0 {
			return t, fmt.Errorf("a result part of %d rows for batch %d, which has %d of its %d rows unanswered: rows lost or duplicated",
				rec.NumRows(), t.batches+1, left, s.rows)
		}
		left -= rec.NumRows()
		errs += rec.NumRows() - int64(rec.Column(idx[0]).NullN())
		t.bytesReceived += recsize.Bytes(rec)
		if left > 0 {
			continue
		}
		t.batches++
		t.rows += s.rows
		if now.Before(deadline) {
			t.rowsByDeadline += s.rows
		}
		t.rowErrors += errs
		t.latencies = append(t.latencies, now.Sub(s.at))
	}
	if left > 0 {
		return t, fmt.Errorf("the stream ended with %d of batch %d's %d rows unanswered", left, t.batches+1, s.rows)
	}
	if err := rdr.Err(); err != nil && !errors.Is(err, io.EOF) {
		return t, err
	}
	return t, nil
}

// latency summarises batch latencies (nearest rank).
func latency(d []time.Duration) Latency {
	l := Latency{Per: "batch"}
	if len(d) == 0 {
		return l
	}
	slices.Sort(d)
	at := func(q float64) float64 {
		i := int(math.Ceil(q*float64(len(d)))) - 1
		return float64(d[max(i, 0)]) / float64(time.Millisecond)
	}
	l.P50, l.P90, l.P99, l.Max = at(0.50), at(0.90), at(0.99), at(1)
	return l
}

// imageSet holds the images once, as one Arrow column followed by its
// first RowsPerBatch-1 images again, so that every batch, wherever it
// starts in the cycle, is a zero-copy slice.
type imageSet struct {
	schema *arrow.Schema
	rec    arrow.RecordBatch
	col    *array.Binary
	n      int64 // distinct images
}

func newImageSet(images [][]byte, rows int) (*imageSet, error) {
	total := 0
	for i := range len(images) + rows - 1 {
		total += len(images[i%len(images)])
	}
	if total > math.MaxInt32 {
		return nil, fmt.Errorf("the images and one batch more come to %d bytes: over the 2 GiB of one binary column; use fewer", total)
	}
	b := array.NewBinaryBuilder(memory.NewGoAllocator(), arrow.BinaryTypes.Binary)
	defer b.Release()
	b.ReserveData(total)
	for i := range len(images) + rows - 1 {
		b.Append(images[i%len(images)])
	}
	col := b.NewBinaryArray()
	defer col.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: Column, Type: arrow.BinaryTypes.Binary}}, nil)
	rec := array.NewRecordBatch(schema, []arrow.Array{col}, int64(col.Len()))
	return &imageSet{schema: schema, rec: rec, col: rec.Column(0).(*array.Binary), n: int64(len(images))}, nil
}

// batch returns the n images from image number start of the cycle on, and
// their size in bytes. The caller releases the batch.
func (s *imageSet) batch(start, n int64) (arrow.RecordBatch, int64) {
	off := start % s.n
	offs := s.col.ValueOffsets()
	bytes := int64(offs[off+n] - offs[off])
	return s.rec.NewSlice(off, off+n), bytes
}

func (s *imageSet) release() { s.rec.Release() }
