package udf

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"

	"github.com/pixelflight/pixelflight/internal/clip"
)

// jsonError is a decoding error of a command or its params told in the
// client's terms: JSON types and parameter names, never Go's. It wraps the
// decoder's error.
type jsonError struct {
	msg string
	err error
}

func (e *jsonError) Error() string { return e.msg }
func (e *jsonError) Unwrap() error { return e.err }

// wording is what explainJSON says of one kind of document.
type wording struct {
	what   string   // the document: "params", "command"
	syntax string   // said before a syntax error: "params are not valid JSON: "
	field  string   // one of its fields: "parameter", "field"
	names  []string // its fields, in order
	// want describes a field's value ("a number"); "" derives it from its
	// Go type.
	want func(name string) string
}

// explainJSON rewrites err, from decoding a JSON document into v (a
// pointer to a struct), in w's terms. Errors it does not know are kept.
func explainJSON(err error, v any, w wording) error {
	var typ *json.UnmarshalTypeError
	var syn *json.SyntaxError
	switch {
	case errors.As(err, &typ):
		return &jsonError{explainType(typ, v, w), err}
	case errors.Is(err, errTrailing):
		return &jsonError{w.syntax + err.Error(), err}
	case errors.Is(err, io.ErrUnexpectedEOF):
		return &jsonError{w.syntax + "unexpected end of JSON input", err}
	case errors.As(err, &syn):
		// Offset counts the bytes read, the bad one included: its
		// position counting from 1.
		return &jsonError{fmt.Sprintf("%s%s at byte %d", w.syntax, syn.Error(), syn.Offset), err}
	}
	// The decoder's DisallowUnknownFields error has no type of its own.
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return &jsonError{w.unknown(clip.String(name)), err}
	}
	if msg, ok := strings.CutPrefix(err.Error(), "json: "); ok {
		return &jsonError{msg, err}
	}
	return err
}

// unknown words a field not among w.names; name is quoted. It names the
// closest known one where one is close: "...; did you mean "sigma"?".
func (w wording) unknown(name string) string {
	if len(w.names) == 0 {
		return fmt.Sprintf("unknown %s %s (this op takes no %ss)", w.field, name, w.field)
	}
	msg := fmt.Sprintf("unknown %s %s (known %ss: %s)", w.field, name, w.field, strings.Join(w.names, ", "))
	if raw, err := strconv.Unquote(name); err == nil {
		if near := closest(raw, w.names); near != "" {
			msg += fmt.Sprintf("; did you mean %q?", near)
		}
	}
	return msg
}

// closest is the name nearest s by edit distance (case aside), where it
// is within a third of s's length (at least 1); else "".
func closest(s string, names []string) string {
	best, most := "", max(1, len(s)/3)
	for _, n := range names {
		if d := editDistance(strings.ToLower(s), strings.ToLower(n)); d <= most {
			best, most = n, d-1
			if d == 0 {
				break
			}
		}
	}
	return best
}

// editDistance is the edits (insert, delete, replace, or swap two
// neighbours: "sigam" is one from "sigma") from a to b, in bytes.
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// explainType words a value of the wrong type: `parameter "sigma" must be
// a number, got a string`.
func explainType(e *json.UnmarshalTypeError, v any, w wording) string {
	name, _, _ := strings.Cut(e.Field, ".")
	if name == "" {
		return fmt.Sprintf("%s must be a JSON object, got %s", w.what, got(e.Value))
	}
	top, found := fieldType(v, name)
	want := ""
	if w.want != nil {
		want = w.want(name)
	}
	if want == "" {
		want = jsonType(top)
	}
	subject := fmt.Sprintf("%s %s", w.field, clip.Quote(name))
	// What the value that failed had to be, where more than its type.
	need, hint := "", ""
	if n, ok := strings.CutPrefix(e.Value, "number "); ok {
		switch e.Type.Kind() {
		case reflect.Float32, reflect.Float64:
			need = fmt.Sprintf("a finite number (at most %.1e in magnitude)", math.MaxFloat64)
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			f, err := strconv.ParseFloat(n, 64)
			switch {
			case !strings.ContainsAny(n, ".eE"):
				need = fmt.Sprintf("an integer from %d to %d", math.MinInt64, math.MaxInt64)
			case err == nil && f == math.Trunc(f):
				hint = " (integers are written without a fraction or exponent)"
			}
		}
	}
	if found && e.Type != top {
		// An element of a list, or a field of an object, inside it.
		return fmt.Sprintf("%s must be %s: it holds %s where %s belongs%s", subject, want, got(e.Value), cmp.Or(need, jsonType(e.Type)), hint)
	}
	return fmt.Sprintf("%s must be %s, got %s%s", subject, cmp.Or(need, want), got(e.Value), hint)
}

// fieldType is the type (pointers taken off) of the field of the struct v
// points to whose JSON name is name.
func fieldType(v any, name string) (reflect.Type, bool) {
	t := reflect.TypeOf(v)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil, false
	}
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == name || tag == "" && strings.EqualFold(f.Name, name) {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			return ft, true
		}
	}
	return nil, false
}

// jsonType names the JSON values a Go type takes, with an article.
func jsonType(t reflect.Type) string {
	if t == nil {
		return "a valid value"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Bool:
		return "a boolean (true or false)"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		if el := jsonType(t.Elem()); el != "a valid value" {
			// "an array of strings", "an array of booleans (true or false)"
			noun, rest, _ := strings.Cut(strings.SplitN(el, " ", 2)[1], " ")
			return "an array of " + noun + "s" + strings.TrimSuffix(" "+rest, " ")
		}
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return "a valid value"
}

// got words the decoder's description of a value ("string", "number 1e3",
// "array") or, failing that, the value's JSON itself.
func got(value string) string {
	switch value {
	case "string", "number", "array", "object":
		return article(value) + " " + value
	case "bool":
		return "a boolean"
	case "null":
		return "null"
	}
	if n, ok := strings.CutPrefix(value, "number "); ok {
		return n
	}
	const max = 40
	if len(value) > max {
		value = value[:max] + "..."
	}
	return value
}

func article(s string) string {
	if strings.ContainsRune("aeiou", rune(s[0])) {
		return "an"
	}
	return "a"
}

// paramWant describes, in JSON terms, a value of each type of Param.
var paramWant = map[string]string{
	"string":                 "a string",
	"float":                  "a number",
	"int":                    "an integer",
	"bool":                   "a boolean (true or false)",
	"list of rows of floats": "a list of rows of numbers",
	"[w, h] or int":          "[width, height] or one integer",
}
