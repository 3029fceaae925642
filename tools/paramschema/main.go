// Command paramschema writes the ops' parameters, as the sidecar's
// registry (package udf) documents them, as JSON: the file the Python
// client ships (python/pixelflight/params.json) and checks map_images'
// and image_udf's parameters against on the driver, before any task runs.
//
//	go run ./tools/paramschema > python/pixelflight/params.json
//
// Each op maps to its parameters in the registry's order, each with its
// name, type, default, doc and the constraints Prepare holds it to on its
// own: choices (strings), min and max ({"value", "exclusive", "limit"}:
// numbers, each element of a [w, h] pair; a bound with a limit is the
// default of that flag of `pixelflight serve`, which a sidecar may change). The types
// are the registry's words; only those the client knows how to check are
// taken (Types), and bounds only on numbers, choices only on strings, so a
// new kind of parameter fails here until the client learns it. The test
// fails when the shipped file and the registry differ; udf's tests prove
// Prepare refuses exactly what the constraints refuse.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/pixelflight/pixelflight/udf"
)

// Types are the parameter types python/pixelflight/params.py checks.
var Types = []string{"string", "float", "int", "bool", "list of rows of floats", "[w, h] or int"}

// Schema is every op's parameters, by op name.
type Schema map[string][]udf.Param

// Build reads the schema from the registry.
func Build() (Schema, error) {
	s := Schema{}
	for _, op := range udf.NewRegistry(udf.DefaultLimits(), nil).Ops() {
		params := []udf.Param{}
		for _, p := range op.Params {
			if !slices.Contains(Types, p.Type) {
				return nil, fmt.Errorf("%s.%s: type %q is not one the client checks (%q): teach python/pixelflight/params.py and Types", op.Name, p.Name, p.Type, Types)
			}
			if (p.Min != nil || p.Max != nil) && p.Type != "float" && p.Type != "int" && p.Type != "[w, h] or int" {
				return nil, fmt.Errorf("%s.%s: a bound on a %s: the client bounds numbers only", op.Name, p.Name, p.Type)
			}
			if p.Choices != nil && p.Type != "string" {
				return nil, fmt.Errorf("%s.%s: choices for a %s: the client checks them on strings only", op.Name, p.Name, p.Type)
			}
			params = append(params, p)
		}
		s[op.Name] = params
	}
	return s, nil
}

// Write writes s as indented JSON (object keys sorted) with a final newline.
func Write(w io.Writer, s Schema) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(s)
}

func main() {
	s, err := Build()
	if err == nil {
		err = Write(os.Stdout, s)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "paramschema: %v\n", err)
		os.Exit(1)
	}
}
