package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/pixelflight/pixelflight/udf"
)

// errorInfoOf is the one ErrorInfo of err's status, or nil.
func errorInfoOf(t *testing.T, err error) *errdetails.ErrorInfo {
	t.Helper()
	var infos []*errdetails.ErrorInfo
	for _, d := range status.Convert(err).Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			infos = append(infos, info)
		} else {
			t.Errorf("%v: a detail that is not an ErrorInfo: %v", err, d)
		}
	}
	if len(infos) > 1 {
		t.Errorf("%v: %d ErrorInfos", err, len(infos))
	}
	if len(infos) == 0 {
		return nil
	}
	return infos[0]
}

// The status of a strict-mode failure and of a refused command carries an
// ErrorInfo (docs/protocol.md, Status codes), and its message is the one
// people read, unchanged.
func TestStatusDetails(t *testing.T) {
	f := start(t, "grpc://127.0.0.1:0")
	mem := memory.NewGoAllocator()
	img := pngBytes(t, 4, 4)
	long := strings.Repeat("n", 100000)
	for _, c := range []struct {
		name, cmd, column string
		rows              [][]byte
		reason            string
		meta              map[string]string
		msg               string // the status message
	}{
		{"strict", `{"op": "info", "strict": true}`, "content", [][]byte{img, img, []byte("bad")}, ReasonStrictRow,
			map[string]string{"row": "2", "message": "imageio: unknown image format: magic bytes 62 61 64"},
			"strict mode: row 2 of the batch failed: imageio: unknown image format: magic bytes 62 61 64"},
		{"bad params", `{"op": "fft_convolve", "params": {"sigma": -2}}`, "content", [][]byte{img}, ReasonBadCommand,
			map[string]string{"message": "sigma -2: want more than 0 and at most 1024"},
			"op fft_convolve: bad command: sigma -2: want more than 0 and at most 1024"},
		{"unknown op", `{"op": "sharpen_all"}`, "content", [][]byte{img}, ReasonBadCommand,
			map[string]string{"message": `unknown op "sharpen_all" (known: `}, `bad command: unknown op "sharpen_all" (known: `},
		{"no column", `{"op": "echo", "column": "image"}`, "content", [][]byte{img}, ReasonBadCommand,
			map[string]string{"message": `input has no column "image" (columns: [content])`},
			`bad command: input has no column "image" (columns: [content])`},
		// The status message after its leads, whatever comes between
		// the op and udf's refusal.
		{"context", `{"op": "fft_convolve", "params": {"matrix": [[` + strings.Repeat("1, ", 1999) + `1]]}}`, "content", [][]byte{img},
			ReasonBadCommand, map[string]string{"message": "matrix has 2000 columns: bad command: kernel size 2000: want 1 to 1024"},
			"op fft_convolve: matrix has 2000 columns: bad command: kernel size 2000: want 1 to 1024"},
		// Clipped as the message is: the name's first 128 bytes and its length.
		{"long name", `{"op": "echo", "params": {"` + long + `": 1}}`, "content", [][]byte{img}, ReasonBadCommand,
			map[string]string{"message": `unknown parameter "` + long[:128] + `"…(100000 bytes) (this op takes no parameters)`},
			`op echo: bad command: unknown parameter "` + long[:128] + `"…(100000 bytes) (this op takes no parameters)`},
	} {
		rec := imageBatch(mem, c.column, c.rows...)
		_, err := exchange(t, f.client, c.cmd, rec)
		rec.Release()
		st := status.Convert(err)
		if st.Code() != codes.InvalidArgument || !strings.HasPrefix(st.Message(), c.msg) {
			t.Errorf("%s: %v, want InvalidArgument %q", c.name, err, c.msg)
			continue
		}
		info := errorInfoOf(t, err)
		if info == nil || info.Reason != c.reason || info.Domain != ErrorDomain || len(info.Metadata) != len(c.meta) {
			t.Errorf("%s: detail %v, want reason %s, domain %s, metadata %v", c.name, info, c.reason, ErrorDomain, c.meta)
			continue
		}
		for k, v := range c.meta {
			if got := info.Metadata[k]; got != v && !(k == "message" && strings.HasPrefix(got, v) && strings.HasSuffix(st.Message(), got)) {
				t.Errorf("%s: metadata %s %q, want %q", c.name, k, got, v)
			}
		}
	}

	// The row of the batch that failed, not of the stream, after rows
	// answered.
	good := imageBatch(mem, "content", img, img)
	bad := imageBatch(mem, "content", img, []byte("bad"), img)
	out, err := exchange(t, f.client, `{"op": "info", "strict": true}`, good, bad)
	good.Release()
	bad.Release()
	for _, r := range out {
		r.Release()
	}
	if info := errorInfoOf(t, err); status.Code(err) != codes.InvalidArgument || info == nil || info.Metadata["row"] != "1" {
		t.Errorf("second batch: %v, detail %v: want row 1", err, info)
	}

	// No detail where there is nothing to act on: a row's own error is
	// a result, and other failures carry none.
	rec := imageBatch(mem, "content", []byte("bad"))
	out, err = exchange(t, f.client, `{"op": "info"}`, rec)
	rec.Release()
	for _, r := range out {
		r.Release()
	}
	if err != nil {
		t.Errorf("not strict: %v", err)
	}
	if info := errorInfo(fmt.Errorf("stopping: %w", errors.New("closed"))); info != nil {
		t.Errorf("an internal error's detail: %v", info)
	}
}

// The detail is what the error says, whatever its text: a cause that
// reads like another row, a problem that reads like another op's.
func TestErrorInfoNotFromText(t *testing.T) {
	err := &udf.RowError{Row: 5, Err: errors.New("strict mode: row 0 of the batch failed: decoy")}
	info := errorInfo(err)
	if info.Reason != ReasonStrictRow || info.Metadata["row"] != "5" || info.Metadata["message"] != "strict mode: row 0 of the batch failed: decoy" {
		t.Errorf("row error: %v", info)
	}
	if st := newStatus(codes.InvalidArgument, err); st.Message() != err.Error() || len(st.Details()) != 1 {
		t.Errorf("row error's status: %q, %v", st.Message(), st.Details())
	}
	bad := fmt.Errorf("op blur: %w", fmt.Errorf("%w: %w", udf.ErrBadCommand, errors.New("op other: bad command: decoy")))
	if info := errorInfo(bad); info.Reason != ReasonBadCommand || info.Metadata["message"] != "op other: bad command: decoy" {
		t.Errorf("bad command: %v", info)
	}
	if opLead("matrix: ") || opLead("op : ") || opLead("op a b: ") || !opLead("op detect_faces: ") {
		t.Error("opLead")
	}
	// Not udf's form: the whole message.
	odd := fmt.Errorf("%w (at the end)", udf.ErrBadCommand)
	if info := errorInfo(odd); info.Metadata["message"] != "bad command (at the end)" {
		t.Errorf("bad command not leading: %v", info)
	}
}

// Where a call's response headers are empty, pyarrow's client middleware
// gets its trailers instead, and with them the ErrorInfo: pyarrow raises
// INVALID_ARGUMENT without it (docs/protocol.md, Status codes). So an
// exchange sends no headers of its own, also after results.
func TestExchangeSendsNoHeaders(t *testing.T) {
	f := start(t, "grpc://127.0.0.1:0")
	mem := memory.NewGoAllocator()
	img := pngBytes(t, 4, 4)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	stream, err := f.client.DoExchange(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(cmdData(`{"op": "info", "strict": true}`)); err != nil {
		t.Fatal(err)
	}
	good := imageBatch(mem, "content", img)
	bad := imageBatch(mem, "content", []byte("bad"))
	defer good.Release()
	defer bad.Release()
	w := flight.NewRecordWriter(stream, ipc.WithSchema(good.Schema()))
	if err := w.Write(good); err != nil {
		t.Fatal(err)
	}
	rdr, err := flight.NewRecordReader(stream)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	if !rdr.Next() {
		t.Fatalf("no result: %v", rdr.Err())
	}
	if err := w.Write(bad); err != nil {
		t.Fatal(err)
	}
	w.Close()
	stream.CloseSend()
	for rdr.Next() {
	}
	if info := errorInfoOf(t, rdr.Err()); info == nil || info.Metadata["row"] != "0" {
		t.Fatalf("%v: detail %v, want row 0", rdr.Err(), info)
	}
	h, err := stream.Header()
	if err != nil {
		t.Fatal(err)
	}
	delete(h, "content-type") // gRPC's own
	if len(h) > 0 {
		t.Errorf("response headers %v: pyarrow's middleware would not see the trailers", h)
	}
}
