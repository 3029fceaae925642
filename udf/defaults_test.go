package udf

import (
	"encoding/json"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// TestDocumentedDefaults: every parameter's documented default (Param,
// published in capabilities and params.json) is the one Prepare applies
// (the call with it given explicitly is the same spec as the call without
// it), and docs/ops.md's tables state the same type and default.
func TestDocumentedDefaults(t *testing.T) {
	reg := NewRegistry(DefaultLimits(), tinyLibrary(t))
	// Defaults that are words, not values.
	words := map[string]bool{"fft_convolve.size": true, "fft_convolve.matrix": true, "detect_faces.min_size": true,
		"detect_faces.max_size": true, "watershed.threshold": true}
	doc, err := os.ReadFile("../docs/ops.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `(\\w+)` \\|([^|]+)\\|([^|]*)\\|")
	for _, op := range reg.Ops() {
		_, section, ok := strings.Cut(string(doc), "\n## `"+op.Name+"`\n")
		if len(op.Params) > 0 && !ok {
			t.Errorf("docs/ops.md has no section for %s", op.Name)
			continue
		}
		section, _, _ = strings.Cut(section, "\n## ")
		documented := map[string][2]string{}
		for _, m := range row.FindAllStringSubmatch(section, -1) {
			unquote := func(s string) string { return strings.ReplaceAll(strings.TrimSpace(s), "`", "") }
			documented[m[1]] = [2]string{unquote(m[2]), unquote(m[3])}
		}
		for _, p := range op.Params {
			name := op.Name + "." + p.Name
			d, ok := documented[p.Name]
			switch {
			case !ok:
				t.Errorf("%s: not in docs/ops.md's table", name)
			case d[0] != p.Type:
				t.Errorf("%s: docs/ops.md says type %q, the registry %q", name, d[0], p.Type)
			case d[1] != p.Default && !strings.HasPrefix(d[1], p.Default+" ("):
				t.Errorf("%s: docs/ops.md says default %q, the registry %q", name, d[1], p.Default)
			}
			if words[name] {
				continue
			}
			if name == "detect_faces.cascade" {
				continue // the test's library has only its tiny cascade
			}
			// What else a call needs for this parameter to apply.
			base := map[string]string{"detect_faces": `"cascade": "tiny"`, "fft_convolve.png_scale": `"output": "png"`}
			with := base[op.Name] + base[name]
			value := p.Default
			if p.Type == "string" {
				value = `"` + value + `"`
			}
			sep := ""
			if with != "" {
				sep = ", "
			}
			implicit, err1 := reg.Prepare(Command{Op: op.Name, Params: json.RawMessage(`{` + with + `}`)})
			explicit, err2 := reg.Prepare(Command{Op: op.Name, Params: json.RawMessage(`{` + with + sep + `"` + p.Name + `": ` + value + `}`)})
			if err1 != nil || err2 != nil {
				t.Errorf("%s: preparing without it: %v; with its default %s: %v", name, err1, value, err2)
				continue
			}
			if !reflect.DeepEqual(implicit.Spec, explicit.Spec) {
				t.Errorf("%s: its documented default %s is not what Prepare applies:\n without %+v\n with    %+v", name, value, implicit.Spec, explicit.Spec)
			}
		}
	}
}
