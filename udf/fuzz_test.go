package udf

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
)

// FuzzCommand feeds arbitrary bytes through command parsing and op
// preparation: never a panic, and every refusal is ErrBadCommand, in
// JSON's terms.
func FuzzCommand(f *testing.F) {
	for _, s := range []string{
		`{"op": "fft_convolve", "params": {"kernel": "gaussian", "sigma": 2.5, "size": 9}}`,
		`{"op": "fft_convolve", "column": "image", "strict": true, "params": {"matrix": [[1, 2], [3, 4]], "mode": "valid", "boundary": "wrap", "output": "png"}}`,
		`{"op": "fft_convolve", "params": {"kernel": "box", "size": 3, "output": "stats", "boundary": "reflect"}}`,
		`{"op": "info"}`, `{"op": "echo", "params": null}`, `{"op": 1}`, `[[[[[[[[]]]]]]]]`, ``,
	} {
		f.Add([]byte(s))
	}
	reg := NewRegistry(Limits{MaxPixels: 1 << 20, MaxKernelSide: 64}, nil)
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseCommand(b)
		if err == nil {
			var task *Task
			task, err = reg.Prepare(c)
			if err == nil {
				if task.Schema == nil || task.Schema.Field(task.Schema.NumFields()-1).Name != "error" {
					t.Fatalf("%s: schema %v has no trailing error column", b, task.Schema)
				}
				if _, jerr := json.Marshal(c); jerr != nil {
					t.Fatal(jerr)
				}
				return
			}
		}
		if !errors.Is(err, ErrBadCommand) {
			t.Fatalf("%q: error %v is not ErrBadCommand", b, err)
		}
		// In JSON's terms, never Go's (unless the command said it).
		if w := goWord.FindString(err.Error()); w != "" && !bytes.Contains(b, []byte(w)) && !bytes.Contains(b, []byte(`\`)) {
			t.Fatalf("%q: error %q says %q", b, err, w)
		}
	})
}
