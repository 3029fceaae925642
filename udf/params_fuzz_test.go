package udf

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/pixelflight/pixelflight/kernels/haar"
)

// tinyCascade is a valid two-stage 4x4 Haar cascade (kernels/haar's
// test fixture), so that detect_faces runs quickly on tiny images.
const tinyCascade = `<?xml version="1.0"?>
<opencv_storage>
<cascade type_id="opencv-cascade-classifier"><stageType>BOOST</stageType>
  <featureType>HAAR</featureType><height>4</height><width>4</width>
  <featureParams><maxCatCount>0</maxCatCount></featureParams>
  <stages>
    <_><stageThreshold>-1.</stageThreshold><weakClassifiers>
      <_><internalNodes>0 -1 0 0.5</internalNodes><leafValues>-1. 1.</leafValues></_></weakClassifiers></_>
    <_><stageThreshold>0.</stageThreshold><weakClassifiers>
      <_><internalNodes>1 0 1 0. -1 -2 0 0.1</internalNodes><leafValues>0.5 -0.5 1.</leafValues></_></weakClassifiers></_>
  </stages>
  <features>
    <_><rects><_>0 0 4 2 -1.</_><_>0 2 4 2 1.</_></rects></_>
    <_><rects><_>2 0 2 2 -1.</_><_>1 1 1 1 2.</_></rects><tilted>1</tilted></_>
  </features></cascade>
</opencv_storage>
`

// tinyLibrary is a cascade library holding tinyCascade as "tiny".
func tinyLibrary(tb testing.TB) *haar.Library {
	dir := tb.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tiny.xml"), []byte(tinyCascade), 0o644); err != nil {
		tb.Fatal(err)
	}
	lib, err := haar.OpenLibrary(dir)
	if err != nil {
		tb.Fatal(err)
	}
	return lib
}

// FuzzParams reaches every op's Prepare with arbitrary params (FuzzCommand
// would have to guess the op names), then runs what it accepts over a
// PNG, a Spark struct, a null and a corrupt row:
//   - a refusal wraps ErrBadCommand, names the op and says no Go names;
//   - an accepted task has a schema ending in "error", the same Key when
//     prepared again, and one result row per input row;
//   - no row panics (ErrInternal), and results are sane: finite numbers,
//     boxes and blobs inside the image.
func FuzzParams(f *testing.F) {
	lib := tinyLibrary(f)
	lim := Limits{MaxPixels: 1 << 16, MaxKernelSide: 64}
	reg := NewRegistry(lim, lib)
	var ops []string
	for _, op := range reg.Ops() {
		ops = append(ops, op.Name)
	}
	seeds := map[string][]string{
		"echo": {`{}`, `null`, `{"x": 1}`},
		"info": {`{}`, `[]`},
		"fft_convolve": {
			`{}`, `{"kernel": "gaussian", "sigma": 2.5, "size": 9, "output": "stats"}`,
			`{"kernel": "box", "size": 3, "mode": "valid", "boundary": "wrap", "output": "png"}`,
			`{"matrix": [[1, -1], [2, 0.5]], "mode": "full", "boundary": "reflect"}`,
			`{"kernel": "sobel_x"}`, `{"kernel": "laplacian", "output": "stats"}`, `{"kernel": "sharpen", "mode": "valid"}`,
			`{"sigma": 1e-320}`, `{"sigma": 64}`, `{"matrix": [[3e38, 3e38]], "output": "stats"}`, `{"size": 64, "kernel": "box"}`,
		},
		"detect_blobs": {
			`{}`, `{"min_sigma": 0.5, "max_sigma": 3, "num_sigma": 4, "threshold": 0.01, "overlap": 0.3}`,
			`{"log_scale": true, "exclude_border": true, "min_sigma": 1, "max_sigma": 64, "num_sigma": 100}`,
			`{"min_sigma": 1e-6, "max_sigma": 1e-6}`, `{"threshold": 0}`,
		},
		"watershed": {`{}`, `{"threshold": 100, "min_distance": 1}`, `{"threshold": 0, "min_distance": 9223372036854775807}`},
		"detect_faces": {
			`{"cascade": "tiny"}`, `{"cascade": "tiny", "annotate": true, "scale_factor": 1.01, "min_neighbors": 0}`,
			`{"cascade": "tiny", "min_size": [2, 3], "max_size": 6}`, `{"cascade": "../tiny"}`, `{}`,
		},
	}
	for i, op := range ops {
		for _, p := range seeds[op] {
			f.Add(uint8(i), []byte(p))
		}
	}
	const w, h = 13, 9
	pix := make([]uint8, w*h)
	for i := range pix {
		pix[i] = uint8((i%w)*19 + (i/w)*7 + (i*i)%23)
	}
	img := grayPNG(f, h, w, pix)
	bgr := make([]byte, 5*4*3)
	for i := range bgr {
		bgr[i] = uint8(i * 11)
	}
	rows := []Input{
		{Bytes: img},
		{Image: &SparkImage{Height: 4, Width: 5, NChannels: 3, Mode: 16, Data: bgr}},
		{Null: true},
		{Bytes: img[:len(img)/2]},
	}
	dims := [][2]int{{w, h}, {5, 4}}
	mem := memory.NewGoAllocator()
	f.Fuzz(func(t *testing.T, opIndex uint8, params []byte) {
		op := ops[int(opIndex)%len(ops)]
		task, err := reg.Prepare(Command{Op: op, Params: params})
		if err != nil {
			if !errors.Is(err, ErrBadCommand) || !strings.HasPrefix(err.Error(), "op "+op+": ") {
				t.Fatalf("%s %s: refused with %v, not a bad command naming the op", op, params, err)
			}
			// In JSON's terms, never Go's (unless the params said it).
			if w := goWord.FindString(err.Error()); w != "" && !strings.Contains(string(params), w) && !strings.Contains(string(params), `\`) {
				t.Fatalf("%s %s: refused with %q, which says %q", op, params, err, w)
			}
			return
		}
		if n := task.Schema.NumFields(); task.Schema.Field(n-1).Name != "error" {
			t.Fatalf("%s %s: schema %v", op, params, task.Schema)
		}
		if again, err := reg.Prepare(Command{Op: op, Params: params}); err != nil || again.Key != task.Key {
			t.Fatalf("%s %s: prepared again: key %q, %v; first %q", op, params, again.Key, err, task.Key)
		}
		// The typed spec: device ops are DeviceSpecs, the others not.
		onDevice := map[string]bool{"fft_convolve": true, "detect_blobs": true, "detect_faces": true}[op]
		if task.Spec == nil || task.OnDevice() != onDevice || (task.Spec.Decode() == DecodeNone) != (op == "echo" || op == "info") {
			t.Fatalf("%s %s: spec %T, on a device %v", op, params, task.Spec, task.OnDevice())
		}
		wk := NewWorker()
		out, errs := make([]Row, len(rows)), make([]error, len(rows))
		for i, in := range rows {
			out[i], errs[i] = task.Run(wk, in)
			if errors.Is(errs[i], ErrInternal) {
				t.Fatalf("%s %s row %d: %v", op, params, i, errs[i])
			}
		}
		// The null row fails; the corrupt one too, but for echo and info
		// (its header is whole).
		if errs[2] == nil || errs[3] == nil && op != "echo" && op != "info" {
			t.Fatalf("%s %s: the null or corrupt row succeeded: %v", op, params, errs)
		}
		res, err := task.Build(out, errs, false, mem)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Records[0].Release()
		if res.Records[0].NumRows() != int64(len(rows)) {
			t.Fatalf("%s %s: %d rows for %d", op, params, res.Records[0].NumRows(), len(rows))
		}
		for r := range 2 {
			if errs[r] != nil {
				continue
			}
			checkRow(t, op, string(params), res.Records[0], r, dims[r][0], dims[r][1])
		}
	})
}

// checkRow checks row r of an op's result for an image of w x h.
func checkRow(t *testing.T, op, params string, rec arrow.RecordBatch, r, w, h int) {
	t.Helper()
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	switch op {
	case "fft_convolve":
		if _, stats := rec.Column(0).(*array.Float64); stats {
			for c := range 4 {
				if v := rec.Column(c).(*array.Float64).Value(r); !finite(v) {
					t.Fatalf("%s %s row %d: stat %d is %v", op, params, r, c, v)
				}
			}
		}
		if name := rec.Schema().Field(2).Name; name == "data" {
			b := rec.Column(2).(*array.Binary).Value(r)
			for _, v := range floats(b) {
				if !finite(float64(v)) {
					t.Fatalf("%s %s row %d: output holds %v", op, params, r, v)
				}
			}
		}
	case "detect_blobs":
		l := rec.Column(0).(*array.List)
		st := l.ListValues().(*array.Struct)
		ys, xs, ss := st.Field(0).(*array.Float32), st.Field(1).(*array.Float32), st.Field(2).(*array.Float32)
		start, end := l.ValueOffsets(r)
		for i := int(start); i < int(end); i++ {
			y, x, s := ys.Value(i), xs.Value(i), ss.Value(i)
			if !(y >= 0 && int(y) < h && x >= 0 && int(x) < w && s > 0 && finite(float64(s))) {
				t.Fatalf("%s %s row %d: blob y=%v x=%v sigma=%v outside %dx%d", op, params, r, y, x, s, w, h)
			}
		}
	case "detect_faces":
		l := rec.Column(0).(*array.List)
		st := l.ListValues().(*array.Struct)
		start, end := l.ValueOffsets(r)
		for i := int(start); i < int(end); i++ {
			var v [5]int32
			for k := range v {
				v[k] = st.Field(k).(*array.Int32).Value(i)
			}
			if v[0] < 0 || v[1] < 0 || v[2] <= 0 || v[3] <= 0 || int(v[0]+v[2]) > w || int(v[1]+v[3]) > h {
				t.Fatalf("%s %s row %d: face %v outside %dx%d", op, params, r, v, w, h)
			}
		}
	case "watershed":
		if n := rec.Column(0).(*array.Int32).Value(r); n < 0 || int(n) > w*h {
			t.Fatalf("%s %s row %d: %d segments", op, params, r, n)
		}
	case "info":
		if got := rec.Column(1).(*array.Int32).Value(r); int(got) != w {
			t.Fatalf("%s row %d: width %d, want %d", op, r, got, w)
		}
	}
}
