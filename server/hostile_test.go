package server

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Hostile requests: each fails clearly (a specific code and message),
// with bounded memory, and the server goes on serving.

// wantStatus checks err's code and that its message holds every want.
func wantStatus(t *testing.T, what string, err error, code codes.Code, want ...string) {
	t.Helper()
	st := status.Convert(err)
	ok := err != nil && st.Code() == code
	for _, w := range want {
		ok = ok && strings.Contains(st.Message(), w)
	}
	if !ok {
		t.Errorf("%s: got %v (%v); want %v with %q", what, st.Code(), err, code, want)
	}
}

// stillServes sends a good request and checks its answer.
func stillServes(t *testing.T, f *fixture) {
	t.Helper()
	mem := memory.NewGoAllocator()
	img := pngBytes(t, 6, 5)
	rec := imageBatch(mem, "content", img)
	defer rec.Release()
	out, err := exchange(t, f.client, `{"op": "info"}`, rec)
	if err != nil || len(out) != 1 || out[0].NumRows() != 1 {
		t.Fatalf("the server no longer serves: %d batches, %v", len(out), err)
	}
	defer out[0].Release()
	if w := out[0].Column(1).(*array.Int32).Value(0); w != 6 || !out[0].Column(4).IsNull(0) {
		t.Fatalf("the server no longer serves: width %d, error %v", w, out[0].Column(4))
	}
}

// allocated runs f and returns the bytes it allocated (all goroutines:
// client and server both run in this process).
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A message over Config.MaxMessageBytes (--max-message-bytes) is refused
// by gRPC before it is buffered whole: RESOURCE_EXHAUSTED naming the
// limit. (The same holds for 2 GiB under the 256 MiB default; 2 MiB
// against 1 MiB shows it without sending gigabytes.)
func TestMessageOverLimit(t *testing.T) {
	f := startWith(t, "grpc://127.0.0.1:0", Config{Workers: 2, MaxMessageBytes: 1 << 20})
	mem := memory.NewGoAllocator()
	big := imageBatch(mem, "content", make([]byte, 2<<20))
	defer big.Release()
	var err error
	n := allocated(func() { _, err = exchange(t, f.client, `{"op": "echo"}`, big) })
	wantStatus(t, "2 MiB batch", err, codes.ResourceExhausted, "larger than max", "vs. 1048576")
	t.Logf("refused with %v; %d KiB allocated in all", err, n>>10)
	// The limit applies to the first message too.
	huge := &flight.FlightData{FlightDescriptor: &flight.FlightDescriptor{Type: flight.DescriptorCMD,
		Cmd: []byte(`{"op": "echo", "column": "` + strings.Repeat("x", 2<<20) + `"}`)}}
	_, err = exchangeAny(t, f.client, huge, nil)
	wantStatus(t, "2 MiB command", err, codes.ResourceExhausted, "larger than max", "vs. 1048576")
	// Just under the limit passes.
	ok := imageBatch(mem, "content", make([]byte, 1<<20-4096))
	defer ok.Release()
	out, err := exchange(t, f.client, `{"op": "echo"}`, ok)
	if err != nil || len(out) != 1 {
		t.Fatalf("a batch under the limit: %v", err)
	}
	out[0].Release()
	stillServes(t, f)
}

// mangler lets f change each message a RecordWriter sends.
type mangler struct {
	flight.FlightService_DoExchangeClient
	f func(*flight.FlightData)
}

func (m mangler) Send(d *flight.FlightData) error {
	m.f(d)
	return m.FlightService_DoExchangeClient.Send(d)
}

// exchangeMangled sends cmd, then rec through f.
func exchangeMangled(t *testing.T, c flight.Client, cmd string, rec arrow.RecordBatch, f func(*flight.FlightData)) ([]arrow.RecordBatch, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stream, err := c.DoExchange(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sent := make(chan struct{})
	defer func() { cancel(); <-sent }()
	go func() {
		defer close(sent)
		if stream.Send(cmdData(cmd)) != nil {
			return
		}
		w := flight.NewRecordWriter(mangler{stream, f}, ipc.WithSchema(rec.Schema()))
		w.Write(rec)
		w.Close()
		stream.CloseSend()
	}()
	rdr, err := flight.NewRecordReader(stream)
	if err != nil {
		return nil, err
	}
	defer rdr.Release()
	var out []arrow.RecordBatch
	for rdr.Next() {
		r := rdr.RecordBatch()
		r.Retain()
		out = append(out, r)
	}
	if err := rdr.Err(); err != nil && !errors.Is(err, io.EOF) {
		return out, err
	}
	return out, nil
}

// Arrow IPC whose buffers lie (offsets past the data or decreasing, views
// into buffers that are not there, a body cut short): each is refused with
// INVALID_ARGUMENT before a row is read. Before NewColumn validated its
// array, the first one crashed the whole server (a panic reading a row in
// the stream's reader goroutine).
func TestCorruptIPC(t *testing.T) {
	f := startWith(t, "grpc://127.0.0.1:0", Config{Workers: 2})
	mem := memory.NewGoAllocator()
	bin := imageBatch(mem, "content", []byte("abc"), []byte("defg"), []byte("hi"))
	defer bin.Release()
	// Offsets [0, 3, 7, 9] are the body's first 16 bytes (no validity buffer).
	put := func(off int, v uint32) func(*flight.FlightData) {
		return func(d *flight.FlightData) {
			if len(d.DataBody) >= 16 {
				binary.LittleEndian.PutUint32(d.DataBody[off:], v)
			}
		}
	}
	// A binary view column: one 20-byte value, its 16-byte view (length,
	// prefix, buffer index, offset) first in the body.
	vb := array.NewBinaryViewBuilder(mem)
	vb.Append([]byte("twenty bytes of data"))
	vcol := vb.NewArray()
	vb.Release()
	defer vcol.Release()
	view := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "content", Type: vcol.DataType()}}, nil), []arrow.Array{vcol}, 1)
	defer view.Release()
	// A Spark struct whose data field's offsets [0, 16] are corrupted.
	fields := []arrow.Field{{Name: "origin", Type: arrow.BinaryTypes.String}, {Name: "height", Type: arrow.PrimitiveTypes.Int32},
		{Name: "width", Type: arrow.PrimitiveTypes.Int32}, {Name: "nChannels", Type: arrow.PrimitiveTypes.Int32},
		{Name: "mode", Type: arrow.PrimitiveTypes.Int32}, {Name: "data", Type: arrow.BinaryTypes.Binary}}
	sb := array.NewStructBuilder(mem, arrow.StructOf(fields...))
	sb.Append(true)
	sb.FieldBuilder(0).(*array.StringBuilder).Append("a")
	for i, v := range []int32{4, 4, 1, 0} {
		sb.FieldBuilder(1 + i).(*array.Int32Builder).Append(v)
	}
	sb.FieldBuilder(5).(*array.BinaryBuilder).Append([]byte("0123456789abcdef"))
	scol := sb.NewArray()
	sb.Release()
	defer scol.Release()
	spark := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "content", Type: scol.DataType()}}, nil), []arrow.Array{scol}, 1)
	defer spark.Release()
	replace := func(old, new []byte) func(*flight.FlightData) {
		return func(d *flight.FlightData) {
			if i := bytes.Index(d.DataBody, old); i >= 0 && len(d.DataBody) > 0 {
				copy(d.DataBody[i:], new)
			}
		}
	}
	for _, c := range []struct {
		name string
		rec  arrow.RecordBatch
		f    func(*flight.FlightData)
		want string
	}{
		{"offset past the data", bin, put(12, 1000), "out of bounds of data buffer"},
		{"offset far past the data", bin, put(8, 0x7fffffff), "binary offsets are not monotonically non-decreasing"},
		{"offsets decreasing", bin, put(8, 1), "binary offsets are not monotonically non-decreasing at index 2: 1 < 3"},
		{"negative offset", bin, put(4, 0xffffff00), "binary offsets are not monotonically non-decreasing at index 1: -256 < 0"},
		{"view into a missing buffer", view, put(8, 5), "binary view 0 (length 20, buffer 5, offset 0) is outside the 1 data buffers"},
		{"view past its buffer", view, put(12, 1000), "binary view 0 (length 20, buffer 0, offset 1000)"},
		{"view of negative length", view, put(0, 0xfffffff0), "binary view 0 (length -16"},
		{"struct data offsets past the data", spark, replace([]byte{0, 0, 0, 0, 16, 0, 0, 0}, []byte{0, 0, 0, 0, 0xff, 0xff, 0, 0}), "out of bounds of data buffer"},
		{"body cut short", bin, func(d *flight.FlightData) {
			if len(d.DataBody) > 0 {
				d.DataBody = d.DataBody[:4]
			}
		}, "reading input: arrow/ipc"},
	} {
		out, err := exchangeMangled(t, f.client, `{"op": "echo"}`, c.rec, c.f)
		wantStatus(t, c.name, err, codes.InvalidArgument, c.want)
		for _, o := range out {
			o.Release()
		}
	}
	// Unmangled, each goes through.
	for _, rec := range []arrow.RecordBatch{bin, view, spark} {
		out, err := exchangeMangled(t, f.client, `{"op": "echo"}`, rec, func(*flight.FlightData) {})
		if err != nil || len(out) != 1 || out[0].NumRows() != rec.NumRows() {
			t.Fatalf("%s: %d batches, %v", rec.Schema(), len(out), err)
		}
		out[0].Release()
	}
	stillServes(t, f)
}

// peakHeap runs f while sampling the live heap every 5 ms and returns the
// highest sample above the heap before f. The samples (HeapAlloc) count
// garbage not yet collected too: with the collector at GOGC=25 while f
// runs, at most a quarter more than the heap live at the last collection,
// where the default (100) let it double and the peak swing by a third
// from run to run with when the collections fell.
func peakHeap(f func()) uint64 {
	defer debug.SetGCPercent(debug.SetGCPercent(25))
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base, peak := ms.HeapAlloc, ms.HeapAlloc
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapAlloc)
			}
		}
	}()
	f()
	close(done)
	<-sampled
	return peak - base
}

// tinyBatch is n 1-byte rows, row i holding byte(first+i).
func tinyBatch(mem memory.Allocator, first, n int) arrow.RecordBatch {
	b := array.NewBinaryBuilder(mem, arrow.BinaryTypes.Binary)
	defer b.Release()
	b.Reserve(n)
	for i := range n {
		b.Append([]byte{byte(first + i)})
	}
	col := b.NewArray()
	defer col.Release()
	return array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "content", Type: arrow.BinaryTypes.Binary}}, nil), []arrow.Array{col}, int64(n))
}

// A million 1-byte rows in eight batches of two streams (a tenth under
// the race detector): every row comes back, in order.
// The input's share of the memory budget counts each row (rowBytes)
// beside its bytes, so the live heap stays within a few shares, and a
// batch of more rows than the share holds is refused: before, rows cost the budget nothing and
// one 256 MiB message of 64 million empty rows would have held some 25 GiB.
func TestMillionTinyRows(t *testing.T) {
	const budget = 256 << 20 // a quarter of it for the input
	f := startWith(t, "grpc+unix://"+t.TempDir()+"/s.sock", Config{Workers: 2, MemoryBudget: budget})
	mem := memory.NewGoAllocator()
	// Two streams of four batches of 125,000 rows each.
	const streams, batches = 2, 4
	perBatch := 125_000
	if race {
		perBatch /= 10
	}
	var in []arrow.RecordBatch
	for k := range batches {
		in = append(in, tinyBatch(mem, k*perBatch, perBatch))
	}
	defer func() {
		for _, r := range in {
			r.Release()
		}
	}()
	var outs [streams][]arrow.RecordBatch
	var errs [streams]error
	start := time.Now()
	peak := peakHeap(func() {
		var wg sync.WaitGroup
		for s := range streams {
			wg.Go(func() { outs[s], errs[s] = exchange(t, f.client, `{"op": "echo"}`, in...) })
		}
		wg.Wait()
	})
	t.Logf("%d rows in %v, live heap peak %d MiB", streams*batches*perBatch, time.Since(start), peak>>20)
	for s, out := range outs {
		if errs[s] != nil || len(out) != batches {
			t.Fatalf("stream %d: %d batches back, %v", s, len(out), errs[s])
		}
		for k, rec := range out {
			data, nerr := rec.Column(0).(*array.Binary), rec.Column(1)
			if rec.NumRows() != int64(perBatch) || nerr.NullN() != perBatch {
				t.Errorf("stream %d batch %d: %d rows, %d without error", s, k, rec.NumRows(), nerr.NullN())
			}
			for i := range int(rec.NumRows()) {
				if v := data.Value(i); len(v) != 1 || v[0] != byte(k*perBatch+i) {
					t.Fatalf("stream %d batch %d row %d: %v", s, k, i, v)
				}
			}
			rec.Release()
		}
	}
	// HeapAlloc counts garbage not yet collected too: allow three times
	// the input's share (the share, each stream's last batch, garbage).
	if peak > 3*budget/4 {
		t.Errorf("live heap peaked %d MiB above the start, want < %d MiB (three times the input's share)", peak>>20, 3*budget/4>>20)
	}
	// One row more than the input's share of the budget holds (64 MiB /
	// 512 bytes) is refused.
	most := budget / 4 / rowBytes
	over := tinyBatch(mem, 0, most+1)
	defer over.Release()
	_, err := exchange(t, f.client, `{"op": "info"}`, over)
	wantStatus(t, "too many rows", err, codes.InvalidArgument, fmt.Sprintf("a batch of %d rows: at most %d fit the input's share of the memory budget (%d bytes, 512 per row)", most+1, most, budget/4))
	full := tinyBatch(mem, 0, most)
	defer full.Release()
	out, err := exchange(t, f.client, `{"op": "echo"}`, full)
	if err != nil || len(out) != 1 || out[0].NumRows() != int64(most) {
		t.Fatalf("a batch of %d rows: %v", most, err)
	}
	out[0].Release()
	stillServes(t, f)
}

// Commands that are too deep, too big, or ask for too much: each is
// INVALID_ARGUMENT naming the problem, before any row is read.
func TestHostileCommands(t *testing.T) {
	f := startWith(t, "grpc://127.0.0.1:0", Config{Workers: 2})
	mem := memory.NewGoAllocator()
	rec := imageBatch(mem, "content", pngBytes(t, 4, 4))
	defer rec.Release()
	deep := func(open, close string, n int) string { return strings.Repeat(open, n) + strings.Repeat(close, n) }
	matrix := func(rows, cols int) string {
		row := "[" + strings.TrimSuffix(strings.Repeat("0,", cols), ",") + "]"
		return `{"op": "fft_convolve", "params": {"matrix": [` + strings.TrimSuffix(strings.Repeat(row+",", rows), ",") + `]}}`
	}
	for _, c := range []struct {
		name, cmd string
		want      []string
	}{
		{"100k nested arrays", deep("[", "]", 100_000), []string{"command is not valid JSON", "exceeded max depth"}},
		{"100k nested arrays in params", `{"op": "fft_convolve", "params": {"matrix": ` + deep("[", "]", 100_000) + `}}`, []string{"exceeded max depth"}},
		{"100k nested objects in params", `{"op": "echo", "params": ` + deep(`{"a":`, "}", 100_000) + `}`, []string{"exceeded max depth"}},
		{"17 MiB command", `{"op": "echo", "column": "` + strings.Repeat("x", 17<<20) + `"}`, []string{"command is 178258", " bytes, over the limit of 16777216"}},
		{"4097x4097 kernel (33 MB of JSON)", matrix(4097, 4097), []string{"over the limit of 16777216"}},
		{"4097x1 kernel", matrix(4097, 1), []string{"op fft_convolve", "matrix has 4097 rows", "kernel size 4097: want 1 to 1024"}},
		{"1x1025 kernel", matrix(1, 1025), []string{"matrix has 1025 columns", "kernel size 1025: want 1 to 1024"}},
		{"ragged kernel", `{"op": "fft_convolve", "params": {"matrix": [[1, 2], [3]]}}`, []string{"matrix row 1 has 1 values, row 0 has 2"}},
		{"kernel beyond float32", `{"op": "fft_convolve", "params": {"matrix": [[1e39]]}}`, []string{"magnitudes sum to 1e+39, above 1e+20"}},
		{"box of 2^31", `{"op": "fft_convolve", "params": {"kernel": "box", "size": 2147483648}}`, []string{"kernel size 2147483648: want 1 to 1024"}},
		{"trailing data", `{"op": "echo"} {"op": "echo"}`, []string{"trailing data"}},
		{"a stray brace after", `{"op": "echo"}}`, []string{"trailing data after the JSON value"}},
		{"a stray bracket after", `{"op": "echo"}]`, []string{"trailing data after the JSON value"}},
		{"unknown field", `{"op": "echo", "opp": 1}`, []string{`unknown field "opp"`}},
		{"op of the wrong type", `{"op": ["echo"]}`, []string{`field "op" must be a string, got an array`}},
		{"null command", `null`, []string{"command names no op"}},
		{"not UTF-8", "{\"op\": \"ec\xffho\"}", []string{"unknown op \"ec\ufffdho\""}},
		{"NaN, bare", `{"op": "fft_convolve", "params": {"sigma": NaN}}`, []string{"invalid character 'N' looking for beginning of value at byte 44"}},
	} {
		var err error
		n := allocated(func() { _, err = exchange(t, f.client, c.cmd, rec) })
		wantStatus(t, c.name, err, codes.InvalidArgument, c.want...)
		// Refused before any kernel or matrix is built: the command's own
		// bytes (client and server copies) are most of it.
		if limit := uint64(8*len(c.cmd)) + 16<<20; n > limit {
			t.Errorf("%s: %d MiB allocated for a %d KiB command", c.name, n>>20, len(c.cmd)>>10)
		}
	}
	// A 1024x1 kernel, at the limit, runs.
	out, err := exchange(t, f.client, matrix(1024, 1)[:len(matrix(1024, 1))-2]+`, "output": "stats"}}`, rec)
	if err != nil || len(out) != 1 || out[0].Column(4).IsValid(0) {
		t.Fatalf("1024x1 kernel: %v", err)
	}
	out[0].Release()
	stillServes(t, f)
}

// Parameters JSON cannot hold as numbers (NaN, Inf), and numbers that
// overflow, underflow or are out of range: INVALID_ARGUMENT naming the
// parameter.
func TestHostileParams(t *testing.T) {
	f := startWith(t, "grpc://127.0.0.1:0", Config{Workers: 1})
	mem := memory.NewGoAllocator()
	rec := imageBatch(mem, "content", pngBytes(t, 8, 8))
	defer rec.Release()
	// Refused before any row: an empty batch shows it (and, were one
	// accepted, runs nothing: max_sigma 1e9 once hung a worker for minutes).
	empty := imageBatch(mem, "content")
	defer empty.Release()
	for _, c := range []struct{ op, params, want string }{
		{"fft_convolve", `{"sigma": 1e999}`, `parameter "sigma" must be a finite number (at most 1.8e+308 in magnitude), got 1e999`},
		{"fft_convolve", `{"sigma": -1e999}`, `parameter "sigma" must be a finite number`},
		{"fft_convolve", `{"sigma": "NaN"}`, `parameter "sigma" must be a number, got a string`},
		{"fft_convolve", `{"sigma": "Infinity"}`, `parameter "sigma" must be a number, got a string`},
		{"fft_convolve", `{"sigma": -0}`, "sigma -0: want more than 0"},
		{"fft_convolve", `{"sigma": 0}`, "sigma 0: want more than 0"},
		{"fft_convolve", `{"sigma": 1e-320}`, "sigma 1e-320: want at least 1e-06"},
		{"fft_convolve", `{"sigma": 1e-170}`, "sigma 1e-170: want at least 1e-06"},
		{"fft_convolve", `{"sigma": 1e300}`, "sigma 1e+300: want more than 0 and at most 1024"},
		{"fft_convolve", `{"size": 99999999999999999999}`, `parameter "size" must be an integer from -9223372036854775808 to 9223372036854775807, got 99999999999999999999`},
		{"fft_convolve", `{"size": 1e3}`, `parameter "size" must be an integer, got 1e3 (integers are written without a fraction or exponent)`},
		{"fft_convolve", `{"size": -9223372036854775808}`, "kernel size -9223372036854775808: want 1 to 1024"},
		{"fft_convolve", `{"size": 3.5}`, `parameter "size" must be an integer, got 3.5`},
		{"detect_blobs", `{"min_sigma": 1e-320}`, "min_sigma 1e-320: want at least 1e-06"},
		{"detect_blobs", `{"min_sigma": -0}`, "min_sigma -0: want > 0"},
		{"detect_blobs", `{"max_sigma": 1e9}`, "max_sigma 1e+09: want at most 1024"},
		{"detect_blobs", `{"max_sigma": 1e999}`, "max_sigma"},
		{"detect_blobs", `{"num_sigma": 9223372036854775807}`, "num_sigma 9223372036854775807: want 1..100"},
		{"detect_blobs", `{"threshold": -1e-320}`, "threshold -1e-320: want >= 0"},
		{"detect_blobs", `{"overlap": 1.0000001}`, "overlap 1.0000001: want in [0, 1]"},
		{"watershed", `{"threshold": 256}`, "threshold 256: want 0 to 255"},
		{"watershed", `{"threshold": -9223372036854775808}`, "threshold -9223372036854775808: want 0 to 255"},
		{"watershed", `{"min_distance": 0}`, "min_distance 0: want at least 1"},
		{"watershed", `{"min_distance": 1e20}`, "min_distance"},
		{"detect_faces", `{"scale_factor": 1e999}`, "scale_factor"},
		{"detect_faces", `{"scale_factor": 1}`, "scale_factor 1: want 1.01 to 10"},
		{"detect_faces", `{"min_neighbors": -1}`, "min_neighbors -1: want 0 to 1000"},
		{"detect_faces", `{"min_size": [1, -1]}`, "min_size and max_size must not be negative"},
		{"detect_faces", `{"max_size": [1e999, 1]}`, `parameter "max_size" must be [width, height] or one integer, got [1e999, 1]`},
		{"echo", `{"sigma": 1}`, `unknown parameter "sigma" (this op takes no parameters)`},
		{"info", `[]`, "params must be a JSON object, got an array"},
	} {
		cmd := `{"op": "` + c.op + `", "params": ` + c.params + `}`
		_, err := exchange(t, f.client, cmd, empty)
		wantStatus(t, cmd, err, codes.InvalidArgument, "op "+c.op, c.want)
		// In JSON's terms: no Go type or field names.
		if err != nil {
			if w := regexp.MustCompile(`Go struct|json: |\b(u?int(8|16|32|64)?|float64)\b|[pP]arams\.`).FindString(err.Error()); w != "" {
				t.Errorf("%s: %v says %q", cmd, err, w)
			}
		}
	}
	// Tiny but sound sigmas still run, and give finite results.
	for _, cmd := range []string{
		`{"op": "fft_convolve", "params": {"sigma": 1e-6, "output": "stats"}}`,
		`{"op": "detect_blobs", "params": {"min_sigma": 1e-6, "max_sigma": 1024, "num_sigma": 2}}`,
	} {
		out, err := exchange(t, f.client, cmd, rec)
		if err != nil || len(out) != 1 || out[0].Column(int(out[0].NumCols())-1).IsValid(0) {
			t.Fatalf("%s: %v", cmd, err)
		}
		if strings.Contains(cmd, "stats") {
			for c := range 4 {
				if v := out[0].Column(c).(*array.Float64).Value(0); v != v || v > 1e300 || v < -1e300 {
					t.Errorf("%s: column %d is %v", cmd, c, v)
				}
			}
		}
		out[0].Release()
	}
	stillServes(t, f)
}

// Inputs of the wrong shape: INVALID_ARGUMENT naming the column and its
// type, or (empty batches, null rows) an answer of the same shape.
func TestHostileInputs(t *testing.T) {
	f := startWith(t, "grpc+unix://"+t.TempDir()+"/s.sock", Config{Workers: 2})
	mem := memory.NewGoAllocator()
	column := func(name string, a arrow.Array) arrow.RecordBatch {
		defer a.Release()
		return array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: name, Type: a.DataType(), Nullable: true}}, nil), []arrow.Array{a}, int64(a.Len()))
	}
	strs := array.NewStringBuilder(mem)
	strs.Append("\x89PNG")
	lists := array.NewListBuilder(mem, arrow.BinaryTypes.Binary)
	lists.Append(true)
	lists.ValueBuilder().(*array.BinaryBuilder).Append([]byte("x"))
	ints := array.NewInt64Builder(mem)
	ints.Append(1)
	nulls := array.NewNullBuilder(mem)
	nulls.AppendNull()
	half := array.NewStructBuilder(mem, arrow.StructOf(arrow.Field{Name: "origin", Type: arrow.BinaryTypes.String}, arrow.Field{Name: "data", Type: arrow.BinaryTypes.Binary}))
	half.AppendNull()
	sparkFields := func(data arrow.DataType) *arrow.StructType {
		return arrow.StructOf(arrow.Field{Name: "origin", Type: arrow.BinaryTypes.String}, arrow.Field{Name: "height", Type: arrow.PrimitiveTypes.Int32},
			arrow.Field{Name: "width", Type: arrow.PrimitiveTypes.Int32}, arrow.Field{Name: "nChannels", Type: arrow.PrimitiveTypes.Int32},
			arrow.Field{Name: "mode", Type: arrow.PrimitiveTypes.Int32}, arrow.Field{Name: "data", Type: data})
	}
	utf8Data := array.NewStructBuilder(mem, sparkFields(arrow.BinaryTypes.String))
	utf8Data.AppendNull()
	for _, b := range []array.Builder{strs, lists, ints, nulls, half, utf8Data} {
		defer b.Release()
	}
	for _, c := range []struct {
		name string
		rec  arrow.RecordBatch
		want string
	}{
		{"utf8", column("content", strs.NewArray()), `column "content" is utf8: want binary, large_binary or Spark's image struct`},
		{"list<binary>", column("content", lists.NewArray()), `column "content" is list<item: binary, nullable>`},
		{"int64", column("content", ints.NewArray()), `column "content" is int64`},
		{"null type", column("content", nulls.NewArray()), `column "content" is null`},
		{"struct of two fields", column("content", half.NewArray()), `column "content" is a struct without field "height"`},
		{"struct with utf8 data", column("content", utf8Data.NewArray()), `column "content" field "data" is utf8`},
		{"no columns", array.NewRecordBatch(arrow.NewSchema(nil, nil), nil, 3), `input has no column "content" (columns: [])`},
		{"another column", imageBatch(mem, "path", []byte("x")), `input has no column "content" (columns: [path])`},
	} {
		_, err := exchange(t, f.client, `{"op": "fft_convolve"}`, c.rec)
		wantStatus(t, c.name, err, codes.InvalidArgument, c.want)
		c.rec.Release()
	}
	// No schema at all, and no descriptor first.
	_, err := exchangeAny(t, f.client, cmdData(`{"op": "echo"}`), nil)
	wantStatus(t, "no schema", err, codes.InvalidArgument, "the stream ended before a schema was sent")
	_, err = exchangeAny(t, f.client, &flight.FlightData{}, nil)
	wantStatus(t, "no descriptor", err, codes.InvalidArgument, "the first message must carry a CMD descriptor")
	path := &flight.FlightData{FlightDescriptor: &flight.FlightDescriptor{Type: flight.DescriptorPATH, Path: []string{"/etc/passwd"}}}
	_, err = exchangeAny(t, f.client, path, nil)
	wantStatus(t, "a PATH descriptor", err, codes.InvalidArgument, "the first message must carry a CMD descriptor")

	// Empty batches answer with empty batches, in their place; null rows
	// with null results and their error.
	empty := imageBatch(mem, "content")
	defer empty.Release()
	allNull := imageBatch(mem, "content", nil, nil, nil)
	defer allNull.Release()
	img := imageBatch(mem, "content", pngBytes(t, 5, 4))
	defer img.Release()
	for _, op := range []string{`"echo"`, `"info"`, `"fft_convolve"`, `"detect_blobs"`, `"watershed"`} {
		in := []arrow.RecordBatch{empty, allNull, empty, img, empty}
		out, err := exchange(t, f.client, `{"op": `+op+`}`, in...)
		if err != nil || len(out) != len(in) {
			t.Fatalf("%s: %d batches back for %d: %v", op, len(out), len(in), err)
		}
		for i, rec := range out {
			errs := rec.Column(int(rec.NumCols()) - 1).(*array.String)
			if rec.NumRows() != in[i].NumRows() {
				t.Errorf("%s batch %d: %d rows back for %d", op, i, rec.NumRows(), in[i].NumRows())
			}
			for r := range int(rec.NumRows()) {
				good := in[i] == img
				if good != errs.IsNull(r) || !good && errs.Value(r) != "input row is null" {
					t.Errorf("%s batch %d row %d: error %q", op, i, r, errs.Value(r))
				}
				for c := range int(rec.NumCols()) - 1 {
					if !good && rec.Column(c).IsValid(r) {
						t.Errorf("%s batch %d row %d: column %d has a value for a null row", op, i, r, c)
					}
				}
			}
			rec.Release()
		}
	}
	// A stream of nothing but empty batches, and one with none at all.
	for _, in := range [][]arrow.RecordBatch{{empty, empty}, {}} {
		var out []arrow.RecordBatch
		var err error
		if len(in) == 0 {
			out, err = exchangeAny(t, f.client, cmdData(`{"op": "echo"}`), empty.Schema())
		} else {
			out, err = exchange(t, f.client, `{"op": "echo"}`, in...)
		}
		if err != nil || len(out) != len(in) {
			t.Errorf("%d empty batches: %d back, %v", len(in), len(out), err)
		}
		for _, rec := range out {
			if rec.NumRows() != 0 {
				t.Errorf("an empty batch answered with %d rows", rec.NumRows())
			}
			rec.Release()
		}
	}
	stillServes(t, f)
}
