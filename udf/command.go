package udf

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// MaxCommandBytes bounds the JSON command of one call.
const MaxCommandBytes = 16 << 20

// ErrBadCommand marks a command or parameters that cannot be run: the
// caller's mistake, reported before any row is read.
var ErrBadCommand = errors.New("bad command")

// Command is what a client asks for: the JSON carried in the Flight
// descriptor, e.g. {"op": "fft_convolve", "column": "content", "params": {...}}.
// Columns, when given, names the result columns to send (the op still
// runs on every row; error is always sent); absent or null: all of them.
type Command struct {
	Op      string          `json:"op"`
	Column  string          `json:"column"`
	Params  json.RawMessage `json:"params"`
	Strict  bool            `json:"strict"`
	Columns []string        `json:"columns"`
}

// commandFields are Command's fields, by their JSON names.
var commandFields = []string{"op", "column", "params", "strict", "columns"}

// ParseCommand decodes and checks a command. Column defaults to "content",
// the binaryFile source's column.
func ParseCommand(b []byte) (Command, error) {
	var c Command
	if len(b) > MaxCommandBytes {
		return c, fmt.Errorf("%w: command is %d bytes, over the limit of %d", ErrBadCommand, len(b), MaxCommandBytes)
	}
	if err := decodeStrict(b, &c); err != nil {
		err = explainJSON(err, &c, wording{what: "command", field: "field", names: commandFields})
		return c, fmt.Errorf("%w: command is not valid JSON of the form {\"op\": ..., \"column\": ..., \"params\": {...}}: %w", ErrBadCommand, err)
	}
	if c.Op == "" {
		return c, fmt.Errorf("%w: command names no op", ErrBadCommand)
	}
	if c.Column == "" {
		c.Column = "content"
	}
	return c, nil
}

var errTrailing = errors.New("trailing data after the JSON value")

// decodeStrict decodes exactly one JSON value into v, refusing unknown
// fields and trailing data.
func decodeStrict(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	// Only white space may follow (More would let a stray ']' or '}' through).
	if _, err := d.Token(); err != io.EOF {
		return errTrailing
	}
	return nil
}
