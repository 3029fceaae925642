package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/pixelflight/pixelflight/udf"
)

// Field is one result column as the clients build it: Type is one of
// FieldTypes; a "list<struct>" is a list of (nullable) structs whose
// Fields are non-null columns of the other types.
type Field struct {
	Name     string  `json:"name"`
	Type     string  `json:"type"`
	Nullable bool    `json:"nullable"`
	Fields   []Field `json:"fields,omitempty"`
}

// FieldTypes are the Arrow types the clients build (python/pixelflight/
// client.py's _ARROW, OpSchema.java's field), by their names here.
var FieldTypes = map[arrow.Type]string{
	arrow.INT32:   "int32",
	arrow.FLOAT32: "float32",
	arrow.FLOAT64: "float64",
	arrow.STRING:  "string",
	arrow.BINARY:  "binary",
}

// ListOfStruct names a list of structs (ListOfStruct in FieldTypes' terms).
const ListOfStruct = "list<struct>"

// Output is one op's result columns (the last one "error"), as the
// clients find them without asking a sidecar: either Fields, whatever the
// params, or chosen by the value of one param, Param (of type ParamType,
// "string" or "bool"): Values maps each of its values ("true" and "false"
// for a bool) to its columns, Default is the value an absent, null or ""
// Param means (a bool's is "false": the clients read a bool as true or
// not).
type Output struct {
	Fields    []Field            `json:"fields,omitempty"`
	Param     string             `json:"param,omitempty"`
	ParamType string             `json:"param_type,omitempty"`
	Default   string             `json:"default,omitempty"`
	Values    map[string][]Field `json:"values,omitempty"`
}

// Outputs is every op's Output, by op name.
type Outputs map[string]Output

// BuildOutputs reads each op's result schema from the registry, by
// preparing calls of it (Registry.Prepare: the code a stream's command
// goes through), and fails where the schema varies in a way the clients'
// rule (Output) cannot express.
func BuildOutputs() (Outputs, error) {
	// detect_faces prepares only with its default cascade at hand. Its
	// schema does not depend on the cascade.
	reg, err := registry()
	if err != nil {
		return nil, err
	}
	out := Outputs{}
	for _, op := range reg.Ops() {
		prepare := func(params json.RawMessage) (*arrow.Schema, error) {
			t, err := reg.Prepare(udf.Command{Op: op.Name, Params: params})
			if err != nil {
				return nil, err
			}
			return t.Schema, nil
		}
		o, err := opOutput(op.Name, op.Params, op.Outputs, prepare)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", op.Name, err)
		}
		out[op.Name] = o
	}
	return out, nil
}

// opOutput is the Output of an op with these params and output variants
// (udf.Op's), prepare giving the schema of a call with the given params.
//
// The param that selects is the one the variants' params name (none:
// fixed fields). Its values are its choices (a string) or false and true
// (a bool); each must prepare, the default must be its Default and give
// what no params give, and so must null and "". Every other param that
// takes a few values (choices, bools) is tried with each value of the
// selecting one: where the call prepares, the schema must be the same.
func opOutput(op string, params []udf.Param, variants map[string]json.RawMessage, prepare func(json.RawMessage) (*arrow.Schema, error)) (Output, error) {
	base, err := prepare(json.RawMessage(`{}`))
	if err != nil {
		return Output{}, fmt.Errorf("no params do not prepare: %w", err)
	}
	selectors := map[string]bool{}
	for _, label := range slices.Sorted(maps.Keys(variants)) {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(variants[label], &m); err != nil {
			return Output{}, fmt.Errorf("output %s: params %s: %w", label, variants[label], err)
		}
		for name := range m {
			selectors[name] = true
		}
	}
	if len(selectors) > 1 {
		return Output{}, fmt.Errorf("the output variants set params %v: the clients choose the columns by one param (python/pixelflight/client.py result_schema, OpSchema.java)", slices.Sorted(maps.Keys(selectors)))
	}
	values := map[string]json.RawMessage{"": nil} // the fixed columns: no params
	var sel *udf.Param
	out := Output{}
	if len(selectors) == 1 {
		for i := range params {
			if selectors[params[i].Name] {
				sel = &params[i]
			}
		}
		if sel == nil {
			return Output{}, fmt.Errorf("the output variants set %v, not a param of the op", slices.Sorted(maps.Keys(selectors)))
		}
		if values, err = valuesOf(*sel); err != nil {
			return Output{}, err
		}
		if values == nil {
			return Output{}, fmt.Errorf("the output variants are chosen by %s, a %s: the clients choose by a string with choices or a bool", sel.Name, sel.Type)
		}
		if _, ok := values[sel.Default]; !ok {
			return Output{}, fmt.Errorf("%s's default %q is not one of its values %v", sel.Name, sel.Default, slices.Sorted(maps.Keys(values)))
		}
		if sel.Type == "bool" && sel.Default != "false" {
			return Output{}, fmt.Errorf("%s defaults to %s: the clients read a bool that selects as true or not, absent being false", sel.Name, sel.Default)
		}
		out = Output{Param: sel.Name, ParamType: sel.Type, Default: sel.Default, Values: map[string][]Field{}}
	}
	call := func(v json.RawMessage, name string, w json.RawMessage) json.RawMessage {
		m := map[string]json.RawMessage{}
		if sel != nil {
			m[sel.Name] = v
		}
		if name != "" {
			m[name] = w
		}
		b, _ := json.Marshal(m)
		return b
	}
	schemas := map[string]*arrow.Schema{}
	for _, key := range slices.Sorted(maps.Keys(values)) {
		s, err := prepare(call(values[key], "", nil))
		if err != nil {
			return Output{}, fmt.Errorf("%s does not prepare: %w", call(values[key], "", nil), err)
		}
		schemas[key] = s
		fields, err := fieldsOf(s)
		if err != nil {
			return Output{}, fmt.Errorf("%s: %w", call(values[key], "", nil), err)
		}
		if sel == nil {
			out.Fields = fields
		} else {
			out.Values[key] = fields
		}
		// No other param changes the columns.
		for _, p := range params {
			if sel != nil && p.Name == sel.Name {
				continue
			}
			others, err := valuesOf(p)
			if err != nil {
				return Output{}, err
			}
			for _, w := range slices.Sorted(maps.Keys(others)) {
				c := call(values[key], p.Name, others[w])
				if s2, err := prepare(c); err == nil && !s2.Equal(s) {
					return Output{}, fmt.Errorf("%s gives other columns than %s: the clients choose the columns by one param (%s)", c, call(values[key], "", nil), cmp.Or(out.Param, "none"))
				}
			}
		}
	}
	if sel != nil {
		if !base.Equal(schemas[sel.Default]) {
			return Output{}, fmt.Errorf("no params give other columns than %s's default %s", sel.Name, sel.Default)
		}
		absent := []json.RawMessage{json.RawMessage("null")}
		if sel.Type == "string" {
			absent = append(absent, json.RawMessage(`""`))
		}
		for _, v := range absent {
			if s, err := prepare(call(v, "", nil)); err != nil || !s.Equal(base) {
				return Output{}, fmt.Errorf("%s does not give the default columns (%v): the clients take it for %s's default", call(v, "", nil), err, sel.Name)
			}
		}
	}
	for _, label := range slices.Sorted(maps.Keys(variants)) {
		s, err := prepare(variants[label])
		if err != nil {
			return Output{}, fmt.Errorf("output %s (%s) does not prepare: %w", label, variants[label], err)
		}
		if !slices.ContainsFunc(slices.Collect(maps.Values(schemas)), s.Equal) {
			return Output{}, fmt.Errorf("output %s (%s) gives columns no value of the selecting param gives", label, variants[label])
		}
	}
	return out, nil
}

// valuesOf is the JSON of each value p takes, by its key in Output.Values,
// where it takes a few: a string's choices, a bool's false and true; nil
// for others.
func valuesOf(p udf.Param) (map[string]json.RawMessage, error) {
	switch {
	case p.Type == "bool":
		return map[string]json.RawMessage{"false": json.RawMessage("false"), "true": json.RawMessage("true")}, nil
	case p.Type == "string" && len(p.Choices) > 0:
		m := map[string]json.RawMessage{}
		for _, c := range p.Choices {
			b, err := json.Marshal(c)
			if err != nil {
				return nil, err
			}
			m[c] = b
		}
		return m, nil
	}
	return nil, nil
}

// fieldsOf is s's fields in the clients' terms, failing on a type they do
// not build or a schema whose last column is not a nullable string "error".
func fieldsOf(s *arrow.Schema) ([]Field, error) {
	if s.HasMetadata() {
		return nil, fmt.Errorf("schema metadata %v: the clients build none", s.Metadata())
	}
	n := s.NumFields()
	if n == 0 || !s.Field(n-1).Equal(arrow.Field{Name: "error", Type: arrow.BinaryTypes.String, Nullable: true}) {
		return nil, fmt.Errorf("schema %v: the last column must be a nullable string, error", s)
	}
	fields := make([]Field, n)
	for i, f := range s.Fields() {
		var err error
		if fields[i], err = fieldOf(f, true); err != nil {
			return nil, err
		}
	}
	return fields, nil
}

// fieldOf is f in the clients' terms: one of FieldTypes, or at the top
// a list of nullable structs of non-null fields of those.
func fieldOf(f arrow.Field, top bool) (Field, error) {
	if f.HasMetadata() {
		return Field{}, fmt.Errorf("column %s: metadata %v: the clients build none", f.Name, f.Metadata)
	}
	if name, ok := FieldTypes[f.Type.ID()]; ok {
		return Field{Name: f.Name, Type: name, Nullable: f.Nullable}, nil
	}
	teach := "teach python/pixelflight/client.py's result_schema and OpSchema.java, then FieldTypes"
	l, ok := f.Type.(*arrow.ListType)
	if !top || !ok {
		return Field{}, fmt.Errorf("column %s: type %v is not one the clients build: %s", f.Name, f.Type, teach)
	}
	elem := l.ElemField()
	st, ok := elem.Type.(*arrow.StructType)
	if !ok || !elem.Nullable || elem.HasMetadata() || elem.Name != "item" {
		return Field{}, fmt.Errorf("column %s: type %v is not a list of nullable structs named item, the one list the clients build: %s", f.Name, f.Type, teach)
	}
	out := Field{Name: f.Name, Type: ListOfStruct, Nullable: f.Nullable}
	for _, c := range st.Fields() {
		if c.Nullable {
			return Field{}, fmt.Errorf("column %s: struct field %s is nullable: the clients build a list's struct of non-null fields", f.Name, c.Name)
		}
		cf, err := fieldOf(c, false)
		if err != nil {
			return Field{}, fmt.Errorf("column %s: %w", f.Name, err)
		}
		out.Fields = append(out.Fields, cf)
	}
	return out, nil
}
