package udf

import (
	"encoding/json"
	"github.com/pixelflight/pixelflight/kernels"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestMemoryTableIsTheModels: docs/ops.md's Memory table states each op's
// bytes per pixel as the models here have them.
func TestMemoryTableIsTheModels(t *testing.T) {
	doc, err := os.ReadFile("../docs/ops.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(doc), "\n## Memory\n")
	if !ok {
		t.Fatal("docs/ops.md has no Memory section")
	}
	rows := map[string]string{}
	for _, m := range regexp.MustCompile("(?m)^\\| `(\\w+)`(, [^|]*)? \\| ([^|]+) \\|$").FindAllStringSubmatch(table, -1) {
		rows[m[1]+m[2]] = strings.TrimSpace(m[3])
	}
	reg := NewRegistry(DefaultLimits(), tinyLibrary(t))
	perPixel := func(op, params string) int64 {
		task, err := reg.Prepare(Command{Op: op, Params: json.RawMessage(params)})
		if err != nil {
			t.Fatal(err)
		}
		return task.Spec.PerPixel(1500, 1500)
	}
	// fft_convolve's rows: the bytes per pixel, and by FFT the transform's
	// bytes and half again (a random 31×31 matrix goes by FFT at 1500²).
	random := make([][]float64, 31)
	for i := range random {
		random[i] = make([]float64, 31)
		for j := range random[i] {
			random[i][j] = float64((i*31+j)*7919%101) / 100
		}
	}
	matrix, _ := json.Marshal(random)
	task, err := reg.Prepare(Command{Op: "fft_convolve", Params: json.RawMessage(`{"matrix": ` + string(matrix) + `}`)})
	if err != nil {
		t.Fatal(err)
	}
	k := task.Spec.(*ConvolveSpec).Kernel
	if kernels.Choose(1500, 1500, k, kernels.Same, kernels.Zero) != kernels.FFT {
		t.Fatal("the 31×31 matrix does not go by FFT")
	}
	extra := (3*kernels.FFTBytes(1500, 1500, k, kernels.Same, kernels.Zero)/2 + 1500*1500 - 1) / (1500 * 1500)
	for _, out := range []string{"f32", "png", "stats"} {
		row := "fft_convolve, `output` `" + out + "`"
		per := perPixel("fft_convolve", `{"output": "`+out+`"}`)
		if fft := perPixel("fft_convolve", `{"output": "`+out+`", "matrix": `+string(matrix)+`}`); fft != per+extra {
			t.Errorf("%s: %d B/px by FFT at 1500², want %d and %d", out, fft, per, extra)
		}
		want := strconv.FormatInt(per, 10) + ", and by FFT its transform's planes"
		if rows[row] != want {
			t.Errorf("docs/ops.md says %q for %s, the models %s", rows[row], row, want)
		}
	}
	for _, c := range []struct {
		row, op, params string
	}{
		{"watershed", "watershed", `{}`},
		{"detect_blobs", "detect_blobs", `{}`},
		{"detect_blobs", "detect_blobs", `{"num_sigma": 1}`},
		{"detect_blobs", "detect_blobs", `{"num_sigma": 100}`},
	} {
		got := strconv.FormatInt(perPixel(c.op, c.params), 10)
		if c.op == "detect_blobs" {
			got += " where its transforms' lengths are the image's sides, and more elsewhere"
		}
		if rows[c.row] != got {
			t.Errorf("docs/ops.md says %q for %s, the model %s", rows[c.row], c.row, got)
		}
	}
	// detect_blobs' other sizes, as the text below the table gives them.
	blobs, err := reg.Prepare(Command{Op: "detect_blobs", Params: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		w, h int
		say  string
	}{{1151, 1151, "a 1151² image 58 B per pixel"}, {1024, 768, "1024×768 46"}, {384, 303, "coins 60"},
		{100000, 7, "a 100,000×7 image 594"}, {7, 100000, "a 7×100,000\none 1,431"}, {89, 97, "an 89×97 image 284"}} {
		if !strings.Contains(string(doc), c.say) {
			t.Errorf("docs/ops.md does not say %q", c.say)
		}
		said, got := strings.ReplaceAll(c.say, ",", ""), " "+strconv.FormatInt(blobs.Spec.PerPixel(c.w, c.h), 10)
		if !strings.Contains(said, got+" ") && !strings.HasSuffix(said, got) {
			t.Errorf("detect_blobs at %d×%d: the model is%s B/px, docs/ops.md says %q", c.w, c.h, got, c.say)
		}
	}
	faces := strconv.FormatInt(perPixel("detect_faces", `{"cascade": "tiny"}`), 10) + ", " +
		strconv.FormatInt(perPixel("detect_faces", `{"cascade": "tiny", "annotate": true}`), 10) + " with `annotate`"
	if rows["detect_faces"] != faces {
		t.Errorf("docs/ops.md says %q for detect_faces, the model %s", rows["detect_faces"], faces)
	}
}
