package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"

	"github.com/pixelflight/pixelflight/api"
	"github.com/pixelflight/pixelflight/internal/dial"
	"github.com/pixelflight/pixelflight/server"
)

// serve starts a server on a Unix socket in a temp dir and returns its
// location.
func serve(t *testing.T) string {
	t.Helper()
	l, loc, err := server.Listen("grpc+unix://" + filepath.Join(t.TempDir(), "pf.sock"))
	if err != nil {
		t.Fatal(err)
	}
	srv := server.New(server.Config{Version: "test", Workers: 2})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return loc
}

// serverRows is the "rows" counter of the server's stats action.
func serverRows(t *testing.T, loc string) int64 {
	t.Helper()
	tgt, _, err := dial.Target(loc)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(tgt, dial.Options(false, nil, "")...)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	stream, err := flight.NewClientFromConn(conn, nil).DoAction(context.Background(), &flight.Action{Type: "stats"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var stats struct{ Rows int64 }
	if err := json.Unmarshal(res.Body, &stats); err != nil {
		t.Fatal(err)
	}
	return stats.Rows
}

func testImages(t *testing.T, n int) [][]byte {
	t.Helper()
	imgs, err := Generate(24, 16, n)
	if err != nil {
		t.Fatal(err)
	}
	return imgs
}

func TestCountAcrossStreams(t *testing.T) {
	loc := serve(t)
	imgs := testImages(t, 5)
	var want int64 // bytes of images 0..199 in turn
	for i := range 200 {
		want += int64(len(imgs[i%len(imgs)]))
	}
	for _, c := range []Command{
		{Op: "echo"},
		{Op: "fft_convolve", Params: json.RawMessage(`{"kernel": "gaussian", "sigma": 1, "output": "stats"}`)},
	} {
		t.Run(c.Op, func(t *testing.T) {
			rowsBefore := serverRows(t, loc)
			rep, err := Run(context.Background(), Config{Endpoint: loc, Streams: 4, RowsPerBatch: 3, Count: 200, Command: c, Images: imgs})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Images != 200 || rep.RowErrors != 0 || rep.Batches != 67 || rep.BytesSent != want {
				t.Errorf("images %d row errors %d batches %d bytes %d: want 200, 0, 67 (66 of 3, one of 2), %d", rep.Images, rep.RowErrors, rep.Batches, rep.BytesSent, want)
			}
			if got := serverRows(t, loc) - rowsBefore; got != 200 {
				t.Errorf("the server saw %d rows, want 200", got)
			}
			if rep.Seconds <= 0 || rep.ImagesPerS <= 0 || rep.MBPerS <= 0 || rep.BytesReceived <= 0 {
				t.Errorf("rates: %+v", rep)
			}
			l := rep.LatencyMS
			if l.Per != "batch" || l.P50 <= 0 || l.P50 > l.P90 || l.P90 > l.P99 || l.P99 > l.Max {
				t.Errorf("latency %+v", l)
			}
			var mixed int64
			for _, n := range rep.BackendMix {
				mixed += n
			}
			if rep.BackendMix != nil && mixed != 200 {
				t.Errorf("backend mix %v: want 200 rows in all", rep.BackendMix)
			}
			b, err := json.Marshal(rep)
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			json.Unmarshal(b, &m)
			for _, k := range []string{"endpoint", "op", "params", "streams", "rows_per_batch", "images", "batches", "row_errors", "bytes_sent", "bytes_received", "seconds", "images_per_s", "mb_per_s", "latency_ms"} {
				if _, ok := m[k]; !ok {
					t.Errorf("report JSON has no %q: %s", k, b)
				}
			}
		})
	}
}

func TestRowErrorsCounted(t *testing.T) {
	loc := serve(t)
	imgs := testImages(t, 2)
	imgs = append(imgs, []byte("not an image"))
	rep, err := Run(context.Background(), Config{Endpoint: loc, Streams: 3, RowsPerBatch: 4, Count: 100, Command: Command{Op: "fft_convolve", Params: json.RawMessage(`{"output": "stats"}`)}, Images: imgs})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Images != 100 || rep.RowErrors != 33 { // images 2, 5, ..., 98
		t.Errorf("images %d, row errors %d: want 100, 33", rep.Images, rep.RowErrors)
	}
}

func TestDuration(t *testing.T) {
	loc := serve(t)
	rep, err := Run(context.Background(), Config{Endpoint: loc, Streams: 2, RowsPerBatch: 2, Duration: 200 * time.Millisecond, Command: Command{Op: "info"}, Images: testImages(t, 3)})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Images == 0 || rep.Images > 2*rep.Batches || rep.Seconds < 0.2 {
		t.Errorf("images %d batches %d seconds %.3f", rep.Images, rep.Batches, rep.Seconds)
	}
}

func TestErrors(t *testing.T) {
	loc := serve(t)
	imgs := testImages(t, 1)
	cfg := func(c Command) Config {
		return Config{Endpoint: loc, Streams: 2, RowsPerBatch: 2, Count: 10, Command: c, Images: imgs}
	}
	missing := "grpc+unix://" + filepath.Join(t.TempDir(), "none.sock")
	for _, c := range []struct {
		cfg  Config
		want []string
	}{
		{cfg(Command{Op: "nope"}), []string{"InvalidArgument", `unknown op "nope"`}},
		{cfg(Command{Op: "fft_convolve", Params: json.RawMessage(`{"sigma": -2}`)}), []string{"InvalidArgument", "sigma -2"}},
		{cfg(Command{Op: "echo", Params: json.RawMessage(`[1]`)}), []string{"params [1]: want a JSON object"}},
		{cfg(Command{Op: "echo", Params: json.RawMessage(`{"a":`)}), []string{"want a JSON object"}},
		{Config{Endpoint: missing, Streams: 1, RowsPerBatch: 1, Count: 1, Command: Command{Op: "echo"}, Images: imgs}, []string{"cannot reach " + missing, "no such file"}},
		{Config{Endpoint: "ftp://x", Streams: 1, RowsPerBatch: 1, Count: 1, Command: Command{Op: "echo"}, Images: imgs}, []string{"want grpc+unix:///path.sock or grpc://host:port"}},
		{Config{Endpoint: loc, Streams: 1, RowsPerBatch: 1, Command: Command{Op: "echo"}, Images: imgs}, []string{"never end"}},
		{Config{Endpoint: loc, Streams: 1, RowsPerBatch: 1, Count: 1, Command: Command{Op: "echo"}}, []string{"no images"}},
	} {
		_, err := Run(context.Background(), c.cfg)
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%+v: error %v, want it to contain %q", c.cfg.Command, err, w)
			}
		}
	}
}

// fake is a Flight server that answers every batch with one row fewer
// when drop is set, in parts of at most part rows when part is set, and
// reports rows_by_backend in its stats.
type fake struct {
	flight.BaseFlightServer
	drop  bool
	part  int
	delay time.Duration // before answering each batch
	rows  atomic.Int64
}

func (f *fake) DoAction(_ *flight.Action, s flight.FlightService_DoActionServer) error {
	b := fmt.Sprintf(`{"rows": %d, "rows_by_backend": {"cpu": %d, "gpu": 7}}`, f.rows.Load(), f.rows.Load())
	return s.Send(&flight.Result{Body: []byte(b)})
}

func (f *fake) DoExchange(s flight.FlightService_DoExchangeServer) error {
	if _, err := s.Recv(); err != nil { // the command
		return err
	}
	rdr, err := flight.NewRecordReader(s)
	if err != nil {
		return err
	}
	defer rdr.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "error", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	w := flight.NewRecordWriter(s, ipc.WithSchema(schema))
	defer w.Close()
	for rdr.Next() {
		n := int(rdr.RecordBatch().NumRows())
		time.Sleep(f.delay)
		if f.drop {
			n--
		}
		for left := n; left > 0; {
			k := left
			if f.part > 0 {
				k = min(k, f.part)
			}
			b := array.NewStringBuilder(memory.DefaultAllocator)
			b.AppendNulls(k)
			col := b.NewArray()
			rec := array.NewRecordBatch(schema, []arrow.Array{col}, int64(k))
			err := w.Write(rec)
			rec.Release()
			col.Release()
			b.Release()
			if err != nil {
				return err
			}
			left -= k
		}
		f.rows.Add(int64(n))
	}
	if err := rdr.Err(); err != nil && err != io.EOF {
		return err
	}
	return nil
}

func serveFake(t *testing.T, f *fake) string {
	l, loc, err := server.Listen("grpc+unix://" + filepath.Join(t.TempDir(), "fake.sock"))
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	flight.RegisterFlightServiceServer(g, f)
	go g.Serve(l)
	t.Cleanup(g.Stop)
	return loc
}

func TestBackendMix(t *testing.T) {
	f := &fake{}
	f.rows.Store(5)
	loc := serveFake(t, f)
	rep, err := Run(context.Background(), Config{Endpoint: loc, Streams: 1, RowsPerBatch: 4, Count: 10, Command: Command{Op: "x"}, Images: [][]byte{{1}}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.BackendMix["cpu"] != 10 || rep.BackendMix["gpu"] != 0 || len(rep.BackendMix) != 2 {
		t.Errorf("backend mix %v, want cpu 10, gpu 0", rep.BackendMix)
	}
}

func TestLostRowsFail(t *testing.T) {
	loc := serveFake(t, &fake{drop: true})
	_, err := Run(context.Background(), Config{Endpoint: loc, Streams: 1, RowsPerBatch: 4, Count: 10, Command: Command{Op: "x"}, Images: [][]byte{{1}}})
	if err == nil || !strings.Contains(err.Error(), "rows lost or duplicated") {
		t.Errorf("error %v, want one about lost rows", err)
	}
}

// TestResultsInParts: a batch answered in several parts (as the server
// writes results when memory is short) counts once, with all its rows.
func TestResultsInParts(t *testing.T) {
	loc := serveFake(t, &fake{part: 3})
	rep, err := Run(context.Background(), Config{Endpoint: loc, Streams: 2, RowsPerBatch: 8, Count: 64, Command: Command{Op: "x"}, Images: [][]byte{{1}}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Images != 64 || rep.Batches != 8 {
		t.Errorf("%d images in %d batches, want 64 in 8", rep.Images, rep.Batches)
	}
}

func TestParseStats(t *testing.T) {
	st, err := parseStats([]byte(`{"rows": 3, "streams_total": 1}`))
	if err != nil || st.RowsByBackend != nil || st.HostCPUSeconds != nil || st.Stages != nil {
		t.Errorf("without rows_by_backend: %+v %v", st, err)
	}
	st, err = parseStats([]byte(`{"rows": 3, "rows_by_backend": {"cpu": 2, "gpu": 1}}`))
	if err != nil || st.RowsByBackend["cpu"] != 2 || st.RowsByBackend["gpu"] != 1 {
		t.Errorf("with rows_by_backend: %+v %v", st, err)
	}
	if _, err := parseStats([]byte(`[1]`)); err == nil {
		t.Error("an answer that is not an object")
	}
}

// TestFigures: the host CPU per image and each stage's work are the
// differences of the server's stats over the run.
func TestFigures(t *testing.T) {
	st := func(cpu, up float64, rows int64, busy float64) api.Stats {
		s, err := parseStats(fmt.Appendf(nil, `{"host_cpu_seconds": %g, "stages": {"uptime_seconds": %g, "cores": 2,
			"decode": {"rows": %d, "busy_seconds": %g, "cpu_seconds": 1}, "encode": {"rows": 0, "busy_seconds": 0},
			"backends": [{"name": "sim", "lanes": 2, "max_batch": 8, "rows": %d, "batches": %d, "busy_seconds": %g}]}}`,
			cpu, up, rows, busy, rows, rows/4, busy))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	rep := Report{Images: 400}
	rep.figures(st(1, 10, 100, 1), st(3, 12, 500, 3))
	if rep.HostCPUUSPerImage != 5000 {
		t.Errorf("host CPU per image %g µs, want 5000", rep.HostCPUUSPerImage)
	}
	d, g := rep.Stages["decode"], rep.Stages["sim"]
	if d.Rows != 400 || d.BusySeconds != 2 || d.BusyFraction != 0.5 || d.USPerRow != 5000 || d.CPUUSPerRow != 0 ||
		g.Rows != 400 || g.Batches != 100 || g.BatchFill != 0.5 || g.BusyFraction != 0.5 {
		t.Errorf("stages %+v", rep.Stages)
	}
}

func TestLatencyPercentiles(t *testing.T) {
	var d []time.Duration
	for i := 100; i >= 1; i-- {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	if l := latency(d); l.P50 != 50 || l.P90 != 90 || l.P99 != 99 || l.Max != 100 {
		t.Errorf("latency %+v", l)
	}
	if l := latency(nil); l.Max != 0 || l.Per != "batch" {
		t.Errorf("latency of nothing %+v", l)
	}
}

func TestGenerate(t *testing.T) {
	a, err := Generate(64, 48, 3)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Generate(64, 48, 3)
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			t.Errorf("image %d differs between calls", i)
		}
		if i > 0 && bytes.Equal(a[i], a[0]) {
			t.Errorf("image %d is image 0", i)
		}
		img, err := png.Decode(bytes.NewReader(a[i]))
		if err != nil {
			t.Fatal(err)
		}
		if _, gray := img.(*image.Gray); !gray || img.Bounds() != image.Rect(0, 0, 64, 48) {
			t.Errorf("image %d: %T %v, want 64x48 gray", i, img, img.Bounds())
		}
	}
	if _, err := Generate(0, 5, 1); err == nil {
		t.Error("0x5: no error")
	}
}

func TestReadImages(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"b.png", "a.JPG", "notes.txt", "sub/c.png"} {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	files, names, err := ReadImages(dir)
	if err != nil || strings.Join(names, ",") != "a.JPG,b.png" || string(files[1]) != "b.png" {
		t.Errorf("read %q %v", names, err)
	}
	if _, _, err := ReadImages(filepath.Join(dir, "sub", "..", "none")); err == nil {
		t.Error("missing dir: no error")
	}
	empty := t.TempDir()
	if _, _, err := ReadImages(empty); err == nil || !strings.Contains(err.Error(), "no .png") {
		t.Errorf("empty dir: %v", err)
	}
}

// A timed run shorter than one batch's latency: every row is answered
// after the window, so none counts towards images_per_s, and the report
// says so (images_in_window 0) beside the wall time the run took.
func TestDurationShorterThanABatch(t *testing.T) {
	loc := serveFake(t, &fake{delay: 150 * time.Millisecond})
	report := func(cfg Config) map[string]any {
		t.Helper()
		cfg.Endpoint, cfg.Command, cfg.Images = loc, Command{Op: "echo"}, testImages(t, 1)
		rep, err := Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(rep)
		var m map[string]any
		json.Unmarshal(b, &m)
		return m
	}
	m := report(Config{Streams: 2, RowsPerBatch: 4, Duration: 30 * time.Millisecond})
	wall, _ := m["wall_seconds"].(float64)
	if m["images"] == 0.0 || m["images_in_window"] != 0.0 || m["images_per_s"] != 0.0 || m["seconds"] != 0.03 || wall < 0.15 {
		t.Errorf("report %v: want images answered, none within the 30ms window, seconds 0.03 and wall_seconds >= 0.15", m)
	}
	// A counted run: its window is the whole run.
	m = report(Config{Streams: 1, RowsPerBatch: 2, Count: 4})
	wall, _ = m["wall_seconds"].(float64)
	if m["images"] != 4.0 || m["images_in_window"] != 4.0 || m["seconds"] != wall || wall < 0.3 {
		t.Errorf("counted run %v: want 4 images, all in the window, seconds = wall_seconds >= 0.3", m)
	}
}
