package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/pixelflight/pixelflight/udf"
)

const shipped = "../../python/pixelflight"

// The client's copies are the registry's: regenerate them when an op's
// params or result columns change.
func TestShippedFilesMatchRegistry(t *testing.T) {
	for name, build := range Files {
		v, err := build()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var want bytes.Buffer
		if err := Write(&want, v); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(shipped, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want.Bytes()) {
			t.Errorf("python/pixelflight/%s differs from the registry's: run `go run ./tools/paramschema`", name)
		}
	}
}

func TestSchema(t *testing.T) {
	s, err := Build()
	if err != nil {
		t.Fatal(err)
	}
	if len(s["fft_convolve"]) == 0 || len(s["echo"]) != 0 {
		t.Errorf("schema = %v: want fft_convolve's params and none for echo", s)
	}
}

func TestOutputs(t *testing.T) {
	o, err := BuildOutputs()
	if err != nil {
		t.Fatal(err)
	}
	names := func(fs []Field) string {
		var n []string
		for _, f := range fs {
			n = append(n, f.Name)
		}
		return strings.Join(n, " ")
	}
	if got := names(o["echo"].Fields); got != "data error" || o["echo"].Param != "" {
		t.Errorf("echo: %+v", o["echo"])
	}
	conv := o["fft_convolve"]
	if conv.Param != "output" || conv.ParamType != "string" || conv.Default != "f32" || conv.Fields != nil ||
		names(conv.Values["f32"]) != "height width data error" || names(conv.Values["stats"]) != "min max mean std error" || len(conv.Values) != 3 {
		t.Errorf("fft_convolve: %+v", conv)
	}
	faces := o["detect_faces"]
	if faces.Param != "annotate" || faces.ParamType != "bool" || faces.Default != "false" ||
		names(faces.Values["false"]) != "faces error" || names(faces.Values["true"]) != "faces annotated error" {
		t.Errorf("detect_faces: %+v", faces)
	}
	if f := faces.Values["false"][0]; f.Type != ListOfStruct || !f.Nullable || len(f.Fields) != 5 || !reflect.DeepEqual(f.Fields[0], Field{Name: "x", Type: "int32"}) {
		t.Errorf("faces column: %+v", f)
	}
	ops := 0
	for range udf.NewRegistry(udf.DefaultLimits(), nil).Ops() {
		ops++
	}
	if len(o) != ops {
		t.Errorf("%d ops' outputs, the registry has %d", len(o), ops)
	}
}

// The generator refuses what the clients cannot build or choose, so that
// they learn it first.
func TestOutputsRefused(t *testing.T) {
	str := func(name string) arrow.Field {
		return arrow.Field{Name: name, Type: arrow.BinaryTypes.String, Nullable: true}
	}
	errCol := str("error")
	for _, f := range []arrow.Field{
		{Name: "big", Type: arrow.BinaryTypes.LargeString, Nullable: true},
		{Name: "u8", Type: arrow.PrimitiveTypes.Uint8, Nullable: true},
		{Name: "ints", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true},
		{Name: "nullable", Type: arrow.ListOf(arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int32, Nullable: true})), Nullable: true},
		{Name: "nonnull", Type: arrow.ListOfNonNullable(arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int32})), Nullable: true},
		{Name: "deep", Type: arrow.ListOf(arrow.StructOf(arrow.Field{Name: "x", Type: arrow.ListOf(arrow.StructOf())})), Nullable: true},
		{Name: "struct", Type: arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int32}), Nullable: true},
		{Name: "meta", Type: arrow.BinaryTypes.Binary, Nullable: true, Metadata: arrow.NewMetadata([]string{"k"}, []string{"v"})},
	} {
		if _, err := fieldsOf(arrow.NewSchema([]arrow.Field{f, errCol}, nil)); err == nil {
			t.Errorf("%v: taken", f)
		}
	}
	for _, s := range [][]arrow.Field{{}, {str("x")}, {errCol, str("x")}, {{Name: "error", Type: arrow.BinaryTypes.String}}} {
		if _, err := fieldsOf(arrow.NewSchema(s, nil)); err == nil {
			t.Errorf("%v: taken without a last nullable string error", s)
		}
	}

	// A fake op: output (f32 or png) names the last column; annotate and
	// extra add one each.
	params := []udf.Param{
		{Name: "output", Type: "string", Default: "f32", Choices: []string{"f32", "png"}},
		{Name: "annotate", Type: "bool", Default: "false"},
		{Name: "extra", Type: "string", Choices: []string{"no", "yes"}},
		{Name: "sigma", Type: "float"},
	}
	prepare := func(raw json.RawMessage) (*arrow.Schema, error) {
		var p struct {
			Output   string
			Annotate bool
			Extra    string
		}
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, err
		}
		fs := []arrow.Field{str(cmp.Or(p.Output, "f32"))}
		if p.Annotate {
			fs = append(fs, str("annotated"))
		}
		if p.Extra == "yes" {
			fs = append(fs, str("extra"))
		}
		return arrow.NewSchema(append(fs, errCol), nil), nil
	}
	for _, c := range []struct {
		why      string
		params   []udf.Param
		variants map[string]json.RawMessage
	}{
		{"annotate adds a column", params[:2], map[string]json.RawMessage{"f32": json.RawMessage(`{"output":"f32"}`), "png": json.RawMessage(`{"output":"png"}`)}},
		{"two params select", params[:2], map[string]json.RawMessage{"f32": json.RawMessage(`{"output":"f32"}`), "annotate": json.RawMessage(`{"annotate":true}`)}},
		{"a fixed op's extra adds a column", params[2:3], map[string]json.RawMessage{"default": json.RawMessage(`{}`)}},
		{"selected by a float", params[3:], map[string]json.RawMessage{"s": json.RawMessage(`{"sigma":2}`)}},
		{"selected by no param of the op", params[:1], map[string]json.RawMessage{"x": json.RawMessage(`{"annotat":true}`)}},
		{"a bool defaulting to true", []udf.Param{{Name: "annotate", Type: "bool", Default: "true"}}, map[string]json.RawMessage{"a": json.RawMessage(`{"annotate":true}`)}},
		{"a default not among the choices", []udf.Param{{Name: "output", Type: "string", Default: "jpeg", Choices: []string{"f32", "png"}}}, map[string]json.RawMessage{"f32": json.RawMessage(`{"output":"f32"}`)}},
	} {
		if o, err := opOutput("fake", c.params, c.variants, prepare); err == nil {
			t.Errorf("%s: taken: %+v", c.why, o)
		} else {
			t.Logf("%s: %v", c.why, err)
		}
	}
	o, err := opOutput("fake", slices.Concat(params[:1], params[3:]), map[string]json.RawMessage{"f32": json.RawMessage(`{"output":"f32"}`), "png": json.RawMessage(`{"output":"png"}`)}, prepare)
	if err != nil || o.Param != "output" || len(o.Values) != 2 || o.Values["png"][0].Name != "png" {
		t.Errorf("output alone: %+v, %v", o, err)
	}
}

// TestOpsDocNamesTheColumns: docs/ops.md's section of each op names each
// result column of each of its outputs with its type, in one code span
// ("`min, max, mean, std: float64`"; a list's struct fields inside its
// own: "`faces: list<struct<x, y, w, h, neighbors: int32>>`").
func TestOpsDocNamesTheColumns(t *testing.T) {
	doc, err := os.ReadFile("../../docs/ops.md")
	if err != nil {
		t.Fatal(err)
	}
	outs, err := BuildOutputs()
	if err != nil {
		t.Fatal(err)
	}
	words := map[string]string{"int32": "int32", "float32": "float32", "float64": "float64", "string": "(utf8|string)", "binary": "binary", "list<struct>": "list<struct<"}
	for op, out := range outs {
		_, section, ok := strings.Cut(string(doc), "\n## `"+op+"`\n")
		if !ok {
			t.Errorf("docs/ops.md has no section for %s", op)
			continue
		}
		section, _, _ = strings.Cut(section, "\n## ")
		spans := regexp.MustCompile("`[^`]+`").FindAllString(section, -1)
		var check func(fields []Field)
		check = func(fields []Field) {
			for _, f := range fields {
				if f.Name == "error" {
					continue
				}
				named := regexp.MustCompile(`\b` + regexp.QuoteMeta(f.Name) + `\b[^` + "`" + `]*` + words[f.Type])
				if !slices.ContainsFunc(spans, named.MatchString) {
					t.Errorf("docs/ops.md, %s: no code span names column %s with its type %s", op, f.Name, f.Type)
				}
				check(f.Fields)
			}
		}
		check(out.Fields)
		for _, fields := range out.Values {
			check(fields)
		}
	}
}

// TestNamesAreWhatPrepareTakes: a param's known names are what a sidecar
// started without their flag takes, and only those.
func TestNamesAreWhatPrepareTakes(t *testing.T) {
	reg, err := registry()
	if err != nil {
		t.Fatal(err)
	}
	s, err := Build()
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for op, params := range s {
		for _, p := range params {
			if p.Names == nil {
				continue
			}
			found++
			for _, name := range append(slices.Clone(p.Names.Known), "not_"+p.Names.Known[0]) {
				params, _ := json.Marshal(map[string]string{p.Name: name})
				_, err := reg.Prepare(udf.Command{Op: op, Params: params})
				if known := slices.Contains(p.Names.Known, name); (err == nil) != known {
					t.Errorf("%s %s=%q: known %v, Prepare: %v", op, p.Name, name, known, err)
				}
			}
		}
	}
	if found == 0 {
		t.Fatal("no param has names: detect_faces' cascade should")
	}
}
