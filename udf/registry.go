package udf

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/pixelflight/pixelflight/internal/clip"
	"github.com/pixelflight/pixelflight/kernels/haar"
)

// Limits bound what one row or call may ask of the server.
type Limits struct {
	MaxPixels     int64 // per image, checked from the header before decoding
	MaxKernelSide int   // largest kernel height or width
}

// DefaultLimits are the server's defaults.
func DefaultLimits() Limits { return Limits{MaxPixels: 100_000_000, MaxKernelSide: 1024} }

// Param documents one parameter of an op, with the ranges and choices its
// op's Prepare holds it to on its own (rules that join two parameters, such
// as max_sigma >= min_sigma, are in Doc only). The client checks these on
// the driver (python/pixelflight/params.json); a test proves Prepare
// refuses exactly what they refuse.
type Param struct {
	Name    string `json:"name"`
	Type    string `json:"type"`
	Default string `json:"default,omitempty"`
	Doc     string `json:"doc"`
	// Choices are the values a string takes; "" is its default.
	Choices []string `json:"choices,omitempty"`
	// Min and Max bound a number (each element of a [w, h] pair).
	Min *Bound `json:"min,omitempty"`
	Max *Bound `json:"max,omitempty"`
	// Names are the values a string names among the server's files, where
	// it does (detect_faces' cascade).
	Names *Names `json:"names,omitempty"`
}

// Names are the files a param may name: Known, those of this registry
// (its cascade library's, sorted), and Flag, serve's flag that adds
// directories of more. A client that knows the sidecars run without Flag
// checks a value against Known (the driver, under the executor plugin).
type Names struct {
	Known []string `json:"known"`
	Flag  string   `json:"flag"`
}

// Bound is one end of a parameter's range.
type Bound struct {
	Value     float64 `json:"value"`
	Exclusive bool    `json:"exclusive,omitempty"` // Value itself is outside
	// Limit names the flag of `pixelflight serve` that sets Value
	// ("max-kernel": Limits.MaxKernelSide); Value is the registry's.
	Limit string `json:"limit,omitempty"`
}

// at is an inclusive bound.
func at(v float64) *Bound { return &Bound{Value: v} }

// kernelSide is the registry's MaxKernelSide, inclusive.
func kernelSide() *Bound { return &Bound{Limit: "max-kernel"} }

// withNames returns params with each Names' Known set to names (none
// for nil).
func withNames(params []Param, names []string) []Param {
	out := slices.Clone(params)
	for i, p := range out {
		if p.Names != nil {
			n := *p.Names
			n.Known = append([]string{}, names...)
			out[i].Names = &n
		}
	}
	return out
}

// withLimits returns params with each Limit bound's Value set from lim.
func withLimits(params []Param, lim Limits) []Param {
	out := slices.Clone(params)
	for i, p := range out {
		if p.Max != nil && p.Max.Limit == "max-kernel" {
			b := *p.Max
			b.Value = float64(lim.MaxKernelSide)
			out[i].Max = &b
		}
	}
	return out
}

// Op is one operation the server offers.
type Op struct {
	Name    string
	Summary string
	Params  []Param
	// Outputs names each output variant by the params that give it, for
	// capabilities.
	Outputs map[string]json.RawMessage
	// Prepare validates params and returns the call's Spec and key: the
	// params as parsed (parseParams' result), the same for equal calls
	// whatever their JSON spelling. An error wraps ErrBadCommand and
	// names the problem.
	Prepare func(params json.RawMessage, lim Limits) (spec Spec, key string, err error)
}

// Registry maps op names to ops. It holds no mutable state after New.
type Registry struct {
	ops    map[string]*Op
	limits Limits
}

// NewRegistry returns the registry of every built-in op. detect_faces reads
// its cascades from cascades (nil: none).
func NewRegistry(lim Limits, cascades *haar.Library) *Registry {
	r := &Registry{ops: make(map[string]*Op), limits: lim}
	for _, op := range []*Op{echoOp(), infoOp(), convolveOp(), blobsOp(), watershedOp(), facesOp(cascades)} {
		op.Params = withLimits(op.Params, lim)
		r.ops[op.Name] = op
	}
	return r
}

// Ops returns the ops sorted by name.
func (r *Registry) Ops() []*Op {
	ops := make([]*Op, 0, len(r.ops))
	for _, op := range r.ops {
		ops = append(ops, op)
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].Name < ops[j].Name })
	return ops
}

// Prepare looks up c.Op and validates its params.
func (r *Registry) Prepare(c Command) (*Task, error) {
	op, ok := r.ops[c.Op]
	if !ok {
		names := make([]string, 0, len(r.ops))
		for _, o := range r.Ops() {
			names = append(names, o.Name)
		}
		return nil, fmt.Errorf("%w: unknown op %s (known: %s)", ErrBadCommand, clip.Quote(c.Op), strings.Join(names, ", "))
	}
	params := c.Params
	if len(params) == 0 || string(params) == "null" {
		params = json.RawMessage("{}")
	}
	spec, key, err := op.Prepare(params, r.limits)
	if err != nil {
		return nil, fmt.Errorf("op %s: %w", op.Name, err)
	}
	return &Task{Op: op.Name, Key: op.Name + " " + key, Spec: spec, Schema: spec.Schema(), limits: r.limits}, nil
}

// parseParams decodes params strictly into v, naming unknown parameters
// and those of the wrong type in JSON's terms, and returns v's JSON: the
// params as Prepare reads them, whatever their spelling, for Task.Key.
// Names must be spelled as documented: Go's decoder alone would also take
// "Sigma" or "ſigma" for sigma, the last of two spellings winning.
func parseParams(params json.RawMessage, v any, known []Param) (string, error) {
	names := make([]string, len(known))
	for i, p := range known {
		names[i] = p.Name
	}
	want := func(name string) string {
		for _, p := range known {
			if p.Name == name {
				return paramWant[p.Type]
			}
		}
		return ""
	}
	w := wording{what: "params", syntax: "params are not valid JSON: ", field: "parameter", names: names, want: want}
	var values map[string]json.RawMessage
	if json.Unmarshal(params, &values) == nil { // else decodeStrict says what is wrong
		for _, name := range slices.Sorted(maps.Keys(values)) {
			if !slices.Contains(names, name) {
				return "", fmt.Errorf("%w: %w", ErrBadCommand, &jsonError{msg: w.unknown(clip.Quote(name))})
			}
		}
	}
	if err := decodeStrict(params, v); err != nil {
		return "", fmt.Errorf("%w: %w", ErrBadCommand, explainJSON(err, v, w))
	}
	if err := checkChoices(values, known); err != nil {
		return "", err
	}
	key, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("%w: params: %w", ErrBadCommand, err)
	}
	return string(key), nil
}

// checkChoices refuses a string param whose value is not one of its
// Choices ("" is its default), so the table is what Prepare takes.
func checkChoices(values map[string]json.RawMessage, known []Param) error {
	for _, p := range known {
		var v string
		if len(p.Choices) == 0 || values[p.Name] == nil || json.Unmarshal(values[p.Name], &v) != nil {
			continue
		}
		if v != "" && !slices.Contains(p.Choices, v) {
			last := len(p.Choices) - 1
			return fmt.Errorf("%w: %s %s: want %s or %s", ErrBadCommand, p.Name, clip.Quote(v), strings.Join(p.Choices[:last], ", "), p.Choices[last])
		}
	}
	return nil
}

// pick maps a parameter's value (def when empty) to its choice.
func pick[T any](v, def, name string, choices map[string]T) (T, error) {
	if v == "" {
		v = def
	}
	c, ok := choices[v]
	if !ok {
		return c, fmt.Errorf("%w: %s %s: want one of %s", ErrBadCommand, name, clip.Quote(v), strings.Join(slices.Sorted(maps.Keys(choices)), ", "))
	}
	return c, nil
}

func set[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

func newSchema(fields ...arrow.Field) *arrow.Schema {
	return arrow.NewSchema(append(fields, arrow.Field{Name: "error", Type: arrow.BinaryTypes.String, Nullable: true}), nil)
}
