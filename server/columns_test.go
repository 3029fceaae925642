package server

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// A command's columns list: only those result columns (and error) come
// back, with the same values and row errors as without the list.
func TestResultColumns(t *testing.T) {
	f := start(t, "grpc://127.0.0.1:0")
	mem := memory.NewGoAllocator()
	img := pngBytes(t, 9, 6)
	rec := imageBatch(mem, "content", img, []byte("junk"), nil)
	defer rec.Release()
	results := func(cmd string) arrow.RecordBatch {
		t.Helper()
		out, err := exchange(t, f.client, cmd, rec)
		if err != nil || len(out) != 1 {
			t.Fatalf("%s: %d batches, %v", cmd, len(out), err)
		}
		t.Cleanup(out[0].Release)
		return out[0]
	}
	all := results(`{"op": "info"}`)
	for _, c := range []struct {
		columns string
		want    []string
	}{
		{`["height", "format"]`, []string{"format", "height", "error"}}, // the op's order
		{`["error"]`, []string{"error"}},
		{`[]`, []string{"error"}},
		{`null`, fieldNames(all.Schema())},
	} {
		got := results(`{"op": "info", "columns": ` + c.columns + `}`)
		if names := fieldNames(got.Schema()); strings.Join(names, ",") != strings.Join(c.want, ",") {
			t.Errorf("columns %s: got %v, want %v", c.columns, names, c.want)
			continue
		}
		for i, name := range c.want {
			full := all.Column(all.Schema().FieldIndices(name)[0])
			if !array.Equal(got.Column(i), full) {
				t.Errorf("columns %s: %s = %v, want %v", c.columns, name, got.Column(i), full)
			}
		}
	}
	_, err := exchange(t, f.client, `{"op": "info", "columns": ["width", "mean"]}`, rec)
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), `the result has no column "mean"`) {
		t.Errorf("unknown column: %v", err)
	}
}
