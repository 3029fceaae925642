// Command paramschema writes what the sidecar's registry (package udf)
// says of each op that the clients must know without asking a sidecar, as
// two JSON files in python/pixelflight/, which the Python client ships and
// the plugin jar packs (spark-plugin/pom.xml):
//
//	go run ./tools/paramschema
//
// params.json is the ops' parameters, which map_images, image_udf and the
// data source check on the driver, before any task runs
// (python/pixelflight/params.py, ParamCheck.java). outputs.json is each
// op's result columns, by which Spark plans a job (client.py's
// result_schema, OpSchema.java): see Output, and BuildOutputs for how it
// is read from the registry.
//
// In params.json each op maps to its parameters in the registry's order,
// each with its name, type, default, doc and the constraints Prepare holds it to on its
// own: choices (strings), min and max ({"value", "exclusive", "limit"}:
// numbers, each element of a [w, h] pair; a bound with a limit is the
// default of that flag of `pixelflight serve`, which a sidecar may change)
// and names ({"known", "flag"}: the cascades of Debian's opencv-data,
// which a sidecar has unless that flag adds directories). The types
// are the registry's words; only those the client knows how to check are
// taken (Types), and bounds only on numbers, choices only on strings, so a
// new kind of parameter fails here until the client learns it; so does a
// result column of a type the clients do not build (FieldTypes), or an op
// whose columns vary with its params otherwise than by one param's value.
// The test fails when the shipped files and the registry differ; udf's
// tests prove Prepare refuses exactly what the constraints refuse.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pixelflight/pixelflight/kernels/haar"
	"github.com/pixelflight/pixelflight/udf"
)

// Types are the parameter types python/pixelflight/params.py checks.
var Types = []string{"string", "float", "int", "bool", "list of rows of floats", "[w, h] or int"}

// Schema is every op's parameters, by op name.
type Schema map[string][]udf.Param

// registry is a sidecar's registry with its defaults: serve's limits and
// the cascades of Debian's opencv-data (the Makefile installs it), which a
// sidecar started without --cascade-dir has (params' Names).
func registry() (*udf.Registry, error) {
	lib, err := haar.OpenLibrary(haar.DebianDir)
	if err != nil {
		return nil, fmt.Errorf("%w (install Debian's opencv-data: make debs)", err)
	}
	if len(lib.Names()) == 0 {
		return nil, fmt.Errorf("no cascades in %s (install Debian's opencv-data: make debs)", haar.DebianDir)
	}
	return udf.NewRegistry(udf.DefaultLimits(), lib), nil
}

// Build reads the schema from the registry.
func Build() (Schema, error) {
	reg, err := registry()
	if err != nil {
		return nil, err
	}
	s := Schema{}
	for _, op := range reg.Ops() {
		params := []udf.Param{}
		for _, p := range op.Params {
			if !slices.Contains(Types, p.Type) {
				return nil, fmt.Errorf("%s.%s: type %q is not one the client checks (%q): teach python/pixelflight/params.py and Types", op.Name, p.Name, p.Type, Types)
			}
			if (p.Min != nil || p.Max != nil) && p.Type != "float" && p.Type != "int" && p.Type != "[w, h] or int" {
				return nil, fmt.Errorf("%s.%s: a bound on a %s: the client bounds numbers only", op.Name, p.Name, p.Type)
			}
			if (p.Choices != nil || p.Names != nil) && p.Type != "string" {
				return nil, fmt.Errorf("%s.%s: choices or names for a %s: the client checks them on strings only", op.Name, p.Name, p.Type)
			}
			params = append(params, p)
		}
		s[op.Name] = params
	}
	return s, nil
}

// Write writes v as indented JSON (object keys sorted) with a final newline.
func Write(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// Files are the files written, by name, each with what builds it.
var Files = map[string]func() (any, error){
	"params.json":  func() (any, error) { return Build() },
	"outputs.json": func() (any, error) { return BuildOutputs() },
}

func main() {
	dir := flag.String("dir", "python/pixelflight", "the directory to write "+strings.Join(slices.Sorted(maps.Keys(Files)), " and ")+" in")
	flag.Parse()
	err := writeFiles(*dir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "paramschema: %v\n", err)
		os.Exit(1)
	}
}

// writeFiles builds every file, then writes them into dir, which must
// exist: none is written unless all build.
func writeFiles(dir string) error {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return fmt.Errorf("%s is not a directory (run from the repository's root, or give -dir)", dir)
	}
	out := map[string][]byte{}
	for name, build := range Files {
		v, err := build()
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		var b bytes.Buffer
		if err := Write(&b, v); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		out[name] = b.Bytes()
	}
	for _, name := range slices.Sorted(maps.Keys(out)) {
		if err := os.WriteFile(filepath.Join(dir, name), out[name], 0o644); err != nil {
			return err
		}
	}
	return nil
}
