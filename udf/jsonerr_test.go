package udf

import (
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"
)

// goWord finds what a parameter error must not say: Go's names for types
// and fields, which mean nothing to a Spark or Python user (as whole
// words: "decimal point in" is fine).
var goWord = regexp.MustCompile(`Go struct|Go value|[pP]arams\.|Command\.|\b(u?int(8|16|32|64)?|float64)\b|json: |struct \{|udf\.`)

func noGoWords(t *testing.T, what string, err error) {
	t.Helper()
	if w := goWord.FindString(err.Error()); w != "" {
		t.Errorf("%s: %q says %q", what, err, w)
	}
}

// wrongTyped are values of the wrong JSON type (or beyond its range) for a
// parameter of each of the registry's types.
var wrongTyped = map[string][]string{
	"string":                 {`1`, `1.5`, `true`, `[1]`, `["gaussian"]`, `{}`},
	"float":                  {`"1"`, `"NaN"`, `true`, `[1]`, `{}`, `1e999`, `-1e999`},
	"int":                    {`"1"`, `true`, `[1]`, `{}`, `1.5`, `1e3`, `5.0`, `99999999999999999999`, `-1e999`},
	"bool":                   {`"true"`, `1`, `0`, `[true]`, `{}`},
	"list of rows of floats": {`"x"`, `1`, `true`, `{}`, `[1]`, `[[1, "a"]]`, `[[1e999]]`, `[{}]`, `[[[1]]]`, `[[true]]`},
	"[w, h] or int":          {`"x"`, `1.5`, `true`, `{}`, `[1]`, `[1, 2, 3]`, `[1, "a"]`, `[1e999, 1]`, `[1.5, 2]`, `[[1], 2]`},
}

// Every parameter of every op, given a value of the wrong type: a bad
// command naming the op and the parameter in JSON's terms, never Go's.
func TestParamTypeErrorsSayJSON(t *testing.T) {
	reg := NewRegistry(DefaultLimits(), tinyLibrary(t))
	checked := 0
	for _, op := range reg.Ops() {
		for _, p := range op.Params {
			values, ok := wrongTyped[p.Type]
			if !ok {
				t.Errorf("%s.%s: type %q has no wrong values here: add them to wrongTyped", op.Name, p.Name, p.Type)
				continue
			}
			if paramWant[p.Type] == "" {
				t.Errorf("%s.%s: type %q has no wording in paramWant", op.Name, p.Name, p.Type)
			}
			want := `parameter "` + p.Name + `" must be `
			for _, v := range values {
				params := `{"` + p.Name + `": ` + v + `}`
				_, err := reg.Prepare(Command{Op: op.Name, Params: json.RawMessage(params)})
				checked++
				if err == nil {
					t.Errorf("%s %s: taken", op.Name, params)
					continue
				}
				var typ *json.UnmarshalTypeError
				if !errors.Is(err, ErrBadCommand) || !errors.As(err, &typ) {
					t.Errorf("%s %s: %v does not wrap ErrBadCommand and the decoder's error", op.Name, params, err)
				}
				if !strings.HasPrefix(err.Error(), "op "+op.Name+": ") || !strings.Contains(err.Error(), want) {
					t.Errorf("%s %s: %q, want it to say %q", op.Name, params, err, want)
				}
				noGoWords(t, op.Name+" "+params, err)
			}
		}
		// Params that are no object, and a parameter it does not have.
		for _, params := range []string{`[]`, `"x"`, `1`, `true`} {
			_, err := reg.Prepare(Command{Op: op.Name, Params: json.RawMessage(params)})
			if err == nil || !errors.Is(err, ErrBadCommand) || !strings.Contains(err.Error(), "params must be a JSON object, got ") {
				t.Errorf("%s %s: %v", op.Name, params, err)
			} else {
				noGoWords(t, op.Name+" "+params, err)
			}
		}
		_, err := reg.Prepare(Command{Op: op.Name, Params: json.RawMessage(`{"bogus": 1}`)})
		want := `unknown parameter "bogus" (this op takes no parameters)`
		if len(op.Params) > 0 {
			want = `unknown parameter "bogus" (known parameters: ` + op.Params[0].Name + ", "
		}
		if err == nil || !errors.Is(err, ErrBadCommand) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s bogus: %v, want %q", op.Name, err, want)
		} else {
			noGoWords(t, op.Name+" bogus", err)
		}
	}
	if checked < 100 {
		t.Errorf("%d wrong values checked: the registry lost its params", checked)
	}
}

func TestParamErrorWording(t *testing.T) {
	reg := NewRegistry(DefaultLimits(), tinyLibrary(t))
	for _, c := range []struct{ op, params, want string }{
		{"fft_convolve", `{"sigma": "NaN"}`, `op fft_convolve: bad command: parameter "sigma" must be a number, got a string`},
		{"fft_convolve", `{"sigma": 1e999}`, `parameter "sigma" must be a finite number (at most 1.8e+308 in magnitude), got 1e999`},
		{"fft_convolve", `{"size": 3.5}`, `parameter "size" must be an integer, got 3.5`},
		{"fft_convolve", `{"size": 5.0}`, `parameter "size" must be an integer, got 5.0 (integers are written without a fraction or exponent)`},
		{"fft_convolve", `{"size": 99999999999999999999}`, `parameter "size" must be an integer from -9223372036854775808 to 9223372036854775807, got 99999999999999999999`},
		{"fft_convolve", `{"matrix": [[1, "a"]]}`, `parameter "matrix" must be a list of rows of numbers: it holds a string where a number belongs`},
		{"fft_convolve", `{"matrix": [1, 2]}`, `parameter "matrix" must be a list of rows of numbers: it holds a number where an array of numbers belongs`},
		{"fft_convolve", `{"kernel": ["box"]}`, `parameter "kernel" must be a string, got an array`},
		{"detect_blobs", `{"log_scale": "yes"}`, `parameter "log_scale" must be a boolean (true or false), got a string`},
		{"detect_faces", `{"max_size": [1e999, 1]}`, `parameter "max_size" must be [width, height] or one integer, got [1e999, 1]`},
		{"watershed", `{"min_distance": {}}`, `parameter "min_distance" must be an integer, got an object`},
		{"info", `[]`, `op info: bad command: params must be a JSON object, got an array`},
		{"echo", `{"sigma": 1}`, `op echo: bad command: unknown parameter "sigma" (this op takes no parameters)`},
		{"watershed", `{"min_distanc": 1}`, `unknown parameter "min_distanc" (known parameters: threshold, min_distance); did you mean "min_distance"?`},
		{"fft_convolve", `{"sigam": 3}`, `unknown parameter "sigam" (known parameters: kernel, sigma, size, matrix, mode, boundary, output, png_scale); did you mean "sigma"?`},
		{"fft_convolve", `{"Sigma": 3}`, `; did you mean "sigma"?`},
		{"detect_faces", `{"minneighbours": 3}`, `; did you mean "min_neighbors"?`},
		{"watershed", `{} {}`, `params are not valid JSON: trailing data after the JSON value`},
		{"watershed", `{"threshold": 1`, `params are not valid JSON: unexpected end of JSON input`},
		{"watershed", `{"threshold": x}`, `params are not valid JSON: invalid character 'x' looking for beginning of value at byte 15`},
	} {
		_, err := reg.Prepare(Command{Op: c.op, Params: json.RawMessage(c.params)})
		if err == nil || !errors.Is(err, ErrBadCommand) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s: %v, want %q", c.op, c.params, err, c.want)
			continue
		}
		if w := goWord.FindString(err.Error()); w != "" {
			t.Errorf("%s %s: %q says %q", c.op, c.params, err, w)
		}
	}
}

// A command's fields of the wrong type are told in JSON's terms too.
func TestCommandTypeErrorsSayJSON(t *testing.T) {
	for _, c := range []struct{ cmd, want string }{
		{`{"op": ["echo"]}`, `field "op" must be a string, got an array`},
		{`{"op": "echo", "column": 1}`, `field "column" must be a string, got a number`},
		{`{"op": "echo", "strict": "yes"}`, `field "strict" must be a boolean (true or false), got a string`},
		{`{"op": "echo", "columns": "data"}`, `field "columns" must be an array of strings, got a string`},
		{`{"op": "echo", "columns": [1]}`, `field "columns" must be an array of strings: it holds a number where a string belongs`},
		{`{"op": "echo", "opp": 1}`, `unknown field "opp" (known fields: op, column, params, strict, columns)`},
		{`[]`, `command must be a JSON object, got an array`},
		{`{"op": "echo"`, `unexpected end of JSON input`},
		{`{"op": NaN}`, `invalid character 'N' looking for beginning of value at byte 8`},
	} {
		_, err := ParseCommand([]byte(c.cmd))
		if err == nil || !errors.Is(err, ErrBadCommand) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.cmd, err, c.want)
			continue
		}
		noGoWords(t, c.cmd, err)
	}
}

// TestNoFarGuess: a name far from every known one gets no "did you mean".
func TestNoFarGuess(t *testing.T) {
	_, err := NewRegistry(DefaultLimits(), nil).Prepare(Command{Op: "fft_convolve", Params: json.RawMessage(`{"bogus": 1}`)})
	if err == nil || strings.Contains(err.Error(), "did you mean") {
		t.Errorf("%v", err)
	}
	if got := closest("x", []string{"kernel", "size"}); got != "" {
		t.Errorf("closest(x) = %q", got)
	}
}
