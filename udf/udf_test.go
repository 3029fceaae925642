package udf

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/png"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/pixelflight/pixelflight/imageio"
	"github.com/pixelflight/pixelflight/kernels"
)

func grayPNG(t testing.TB, h, w int, pix []uint8) []byte {
	t.Helper()
	img := image.NewGray(image.Rect(0, 0, w, h))
	copy(img.Pix, pix)
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// run prepares op with params and runs it over rows (nil is a null row).
func run(t *testing.T, op, params string, strict bool, rows ...[]byte) (arrow.RecordBatch, error) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	task, err := NewRegistry(DefaultLimits(), nil).Prepare(Command{Op: op, Params: json.RawMessage(params)})
	if err != nil {
		t.Fatalf("prepare %s %s: %v", op, params, err)
	}
	b := array.NewBinaryBuilder(mem, arrow.BinaryTypes.Binary)
	defer b.Release()
	for _, r := range rows {
		if r == nil {
			b.AppendNull()
		} else {
			b.Append(r)
		}
	}
	arr := b.NewArray()
	defer arr.Release()
	col, err := NewColumn(arr)
	if err != nil {
		t.Fatal(err)
	}
	w := NewWorker()
	out, errs := make([]Row, col.Len()), make([]error, col.Len())
	for i := range col.Len() {
		out[i], errs[i] = task.Run(w, col.Row(i))
	}
	res, err := task.Build(out, errs, strict, mem)
	if err != nil {
		return nil, err
	}
	t.Cleanup(res.Release)
	if len(res.Records) != 1 {
		t.Fatalf("%s: %d record batches for %d rows", op, len(res.Records), len(rows))
	}
	return res.Records[0], nil
}

// hugeRow claims a result over what one Arrow binary value holds.
type hugeRow struct{}

func (hugeRow) Append(*array.RecordBuilder) { panic("a row over MaxResultBytes appended") }
func (hugeRow) Bytes() int64                { return MaxResultBytes + 1 }

// TestBuildSplitsLargeResults: a batch's results are split into record
// batches of at most MaxResultBatchBytes, in order, rows adding up; a row
// larger than that comes alone; a row over MaxResultBytes is its own error.
func TestBuildSplitsLargeResults(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	task, err := NewRegistry(DefaultLimits(), nil).Prepare(Command{Op: "echo"})
	if err != nil {
		t.Fatal(err)
	}
	const mib = 1 << 20
	sizes := []int{20 * mib, 20 * mib, 20 * mib, 20 * mib, 100 * mib, 1, -1, 10 * mib}
	rows, errs := make([]Row, len(sizes)), make([]error, len(sizes))
	for i, n := range sizes {
		if n < 0 {
			rows[i] = hugeRow{}
			continue
		}
		b := make([]byte, n)
		b[0] = byte(i)
		rows[i] = bytesRow(b)
	}
	res, err := task.Build(rows, errs, false, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Release()
	var got [][]int // each record batch's row sizes (-1: an error)
	for _, rec := range res.Records {
		var batch []int
		var bytes int64
		data, errCol := rec.Column(0).(*array.Binary), rec.Column(1).(*array.String)
		for r := range int(rec.NumRows()) {
			if errCol.IsValid(r) {
				if !strings.Contains(errCol.Value(r), "result too large") || !strings.Contains(errCol.Value(r), "--max-pixels") {
					t.Errorf("error row: %q", errCol.Value(r))
				}
				batch = append(batch, -1)
				continue
			}
			v := data.Value(r)
			bytes += int64(len(v))
			batch = append(batch, len(v))
		}
		if bytes > MaxResultBatchBytes && len(batch) > 1 {
			t.Errorf("a record batch of %d rows holds %d bytes, over %d", len(batch), bytes, MaxResultBatchBytes)
		}
		got = append(got, batch)
	}
	want := [][]int{{20 * mib, 20 * mib, 20 * mib}, {20 * mib}, {100 * mib}, {1, -1, 10 * mib}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("record batches' rows: got %v, want %v", got, want)
	}
	if res.RowErrors != 1 {
		t.Errorf("RowErrors %d, want 1", res.RowErrors)
	}
	for i := range rows {
		if rows[i] != nil {
			t.Errorf("row %d still held after Build", i)
		}
	}

	// strict: the huge row fails the batch, naming it.
	rows[6], errs[6] = hugeRow{}, nil
	var re *RowError
	if _, err := task.Build(rows[6:7], errs[6:7], true, mem); !errors.As(err, &re) || !errors.Is(err, ErrResultTooLarge) {
		t.Errorf("strict: %v", err)
	}
}

func floats(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

// TestScipyReference checks fft_convolve, params to output, against what
// scipy computed (scripts/convref.py): |ours - scipy| <= 1e-4 * (1 + max|scipy|)
// for every kernel, mode and boundary, on odd, even, 1x1 and non-square images;
// and each of the Convolver's methods alone (Separable where the kernel
// has factors) on the same cases, to the same tolerance.
func TestScipyReference(t *testing.T) {
	raw, err := os.ReadFile("testdata/fftconvolve_ref.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		Cases []struct {
			Params        map[string]any
			Height, Width int
			Pixels        []uint8
			WantHeight    int `json:"want_height"`
			WantWidth     int `json:"want_width"`
			Want          []float64
		}
	}
	if err := json.Unmarshal(raw, &ref); err != nil {
		t.Fatal(err)
	}
	if len(ref.Cases) < 400 {
		t.Fatalf("only %d reference cases", len(ref.Cases))
	}
	methods := map[kernels.Method]int{}
	for _, c := range ref.Cases {
		params, _ := json.Marshal(c.Params)
		rec, err := run(t, "fft_convolve", string(params), true, grayPNG(t, c.Height, c.Width, c.Pixels))
		if err != nil {
			t.Fatalf("%s on %dx%d: %v", params, c.Width, c.Height, err)
		}
		h := rec.Column(0).(*array.Int32).Value(0)
		w := rec.Column(1).(*array.Int32).Value(0)
		got := floats(rec.Column(2).(*array.Binary).Value(0))
		if int(h) != c.WantHeight || int(w) != c.WantWidth || len(got) != len(c.Want) {
			t.Fatalf("%s on %dx%d: got %dx%d (%d values), scipy %dx%d", params, c.Width, c.Height, w, h, len(got), c.WantWidth, c.WantHeight)
		}
		var peak float64
		for _, v := range c.Want {
			peak = max(peak, math.Abs(v))
		}
		tol := 1e-4 * (1 + peak)
		check := func(how string, got []float32) {
			t.Helper()
			for i, v := range c.Want {
				if d := math.Abs(float64(got[i]) - v); d > tol {
					t.Fatalf("%s on %dx%d, %s: value %d = %g, scipy %g (diff %.3g > %.3g)", params, c.Width, c.Height, how, i, got[i], v, d, tol)
				}
			}
		}
		check("chosen method", got)
		task, err := NewRegistry(DefaultLimits(), nil).Prepare(Command{Op: "fft_convolve", Params: params})
		if err != nil {
			t.Fatal(err)
		}
		spec := task.Spec.(*ConvolveSpec)
		for _, m := range []kernels.Method{kernels.FFT, kernels.Separable, kernels.Direct} {
			if m == kernels.Separable && spec.Kernel.Col == nil {
				continue
			}
			out, _, _, err := kernels.NewConvolver().ConvolveBy(m, nil, c.Pixels, c.Height, c.Width, spec.Kernel, spec.Mode, spec.Boundary)
			if err != nil {
				t.Fatalf("%s on %dx%d, %s: %v", params, c.Width, c.Height, m, err)
			}
			methods[m]++
			check(m.String(), out)
		}
	}
	if methods[kernels.Separable] < 200 || methods[kernels.Direct] < 400 {
		t.Errorf("cases by method %v: want most through each", methods)
	}
}

func TestParamErrors(t *testing.T) {
	reg := NewRegistry(DefaultLimits(), nil)
	for _, c := range []struct{ cmd, want string }{
		{`{"op": "nope"}`, `unknown op "nope" (known: detect_blobs, detect_faces, echo, fft_convolve, info, watershed`},
		{`{"op": "detect_faces", "params": {"scale_factor": 1}}`, "scale_factor 1: want 1.01 to 10"},
		{`{"op": "detect_faces", "params": {"min_neighbors": -2}}`, "min_neighbors -2"},
		{`{"op": "detect_faces", "params": {"min_size": [1.5, 2]}}`, `parameter "min_size" must be [width, height] or one integer, got [1.5, 2]`},
		{`{"op": "detect_faces", "params": {"max_size": -3}}`, "must not be negative"},
		{`{"op": "detect_faces"}`, "no cascade library"},
		{`{"op": "detect_blobs", "params": {"min_sigma": 0}}`, "min_sigma 0"},
		{`{"op": "detect_blobs", "params": {"min_sigma": 5, "max_sigma": 2}}`, "max_sigma below min_sigma"},
		{`{"op": "detect_blobs", "params": {"num_sigma": 1000}}`, "num_sigma 1000"},
		{`{"op": "detect_blobs", "params": {"overlap": 2}}`, "overlap 2"},
		{`{"op": "watershed", "params": {"min_distance": 0}}`, "min_distance 0: want at least 1"},
		{`{"op": "watershed", "params": {"threshold": -1}}`, "threshold -1: want 0 to 255"},
		{`{"op": "watershed", "params": {"threshold": 256}}`, "threshold 256"},
		{`{"op": "watershed", "params": {"markers": 3}}`, `unknown parameter "markers" (known parameters: threshold, min_distance)`},
		{`{}`, "names no op"},
		{`{"op": "echo", "extra": 1}`, `unknown field "extra" (known fields: op, column`},
		{`{"op": "echo"} {}`, "trailing data"},
		{`[1]`, "command must be a JSON object, got an array"},
		{`{"op": "echo", "params": {"x": 1}}`, `unknown parameter "x" (this op takes no parameters)`},
		{`{"op": "fft_convolve", "params": {"sigmaa": 2}}`, `unknown parameter "sigmaa" (known parameters: kernel, sigma`},
		{`{"op": "fft_convolve", "params": {"kernel": "blur"}}`, `kernel "blur": want gaussian, box`},
		{`{"op": "fft_convolve", "params": {"sigma": 0}}`, "sigma 0: want more than 0"},
		{`{"op": "fft_convolve", "params": {"sigma": -1}}`, "sigma -1"},
		{`{"op": "fft_convolve", "params": {"sigma": 1e308}}`, "sigma 1e+308"},
		{`{"op": "fft_convolve", "params": {"sigma": "2"}}`, `parameter "sigma" must be a number, got a string`},
		{`{"op": "fft_convolve", "params": {"kernel": "box", "sigma": 2}}`, "sigma applies only to kernel gaussian"},
		{`{"op": "fft_convolve", "params": {"kernel": "sobel_x", "size": 5}}`, "size applies only to kernels gaussian and box"},
		{`{"op": "fft_convolve", "params": {"kernel": "box", "size": 0}}`, "kernel size 0: want 1 to 1024"},
		{`{"op": "fft_convolve", "params": {"kernel": "box", "size": 4097}}`, "kernel size 4097"},
		{`{"op": "fft_convolve", "params": {"sigma": 400}}`, "sigma 400: its default size, 2*ceil(3*sigma)+1 = 2401, passes 1024: give a size (1 to 1024)"},
		{`{"op": "fft_convolve", "params": {"mode": "middle"}}`, `mode "middle": want same, full or valid`},
		{`{"op": "fft_convolve", "params": {"boundary": "mirror"}}`, `boundary "mirror": want zero, reflect or wrap`},
		{`{"op": "fft_convolve", "params": {"output": "jpeg"}}`, `output "jpeg": want f32, png or stats`},
		{`{"op": "fft_convolve", "params": {"matrix": []}}`, "non-empty list of non-empty rows"},
		{`{"op": "fft_convolve", "params": {"matrix": [[]]}}`, "non-empty list of non-empty rows"},
		{`{"op": "fft_convolve", "params": {"matrix": [[1, 2], [3]]}}`, "matrix row 1 has 1 values, row 0 has 2"},
		{`{"op": "fft_convolve", "params": {"matrix": [[1e300]]}}`, "would overflow float32"},
		{`{"op": "fft_convolve", "params": {"matrix": [[1e37]]}}`, "would overflow float32"},
		{`{"op": "fft_convolve", "params": {"matrix": [[NaN]]}}`, "not valid JSON"},
		{`{"op": "fft_convolve", "params": {"kernel": "box", "matrix": [[1]]}}`, `kernel must be "matrix" or omitted`},
	} {
		cmd, err := ParseCommand([]byte(c.cmd))
		if err == nil {
			_, err = reg.Prepare(cmd)
		}
		if err == nil {
			t.Errorf("%s: no error, want %q", c.cmd, c.want)
			continue
		}
		if !errors.Is(err, ErrBadCommand) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %q, want ErrBadCommand containing %q", c.cmd, err, c.want)
		}
	}
}

func TestHugeMatrixRefused(t *testing.T) {
	row := "[" + strings.Repeat("1,", 4096) + "1]"
	cmd := `{"op": "fft_convolve", "params": {"matrix": [` + row + `]}}`
	c, err := ParseCommand([]byte(cmd))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewRegistry(DefaultLimits(), nil).Prepare(c); err == nil || !strings.Contains(err.Error(), "4097 columns") {
		t.Fatalf("4097-wide matrix: %v", err)
	}
}

func TestRowContract(t *testing.T) {
	good := grayPNG(t, 3, 4, []uint8{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
	// A PNG header claiming 60000x60000 pixels and no data.
	huge := grayPNG(t, 1, 1, []uint8{0})[:33]
	binary.BigEndian.PutUint32(huge[16:], 60000)
	binary.BigEndian.PutUint32(huge[20:], 60000)
	fixCRC(huge)
	rows := [][]byte{good, nil, {}, []byte("not an image"), good[:len(good)/2], huge, good}
	rec, err := run(t, "fft_convolve", `{"kernel": "box"}`, false, rows...)
	if err != nil {
		t.Fatal(err)
	}
	if rec.NumRows() != int64(len(rows)) {
		t.Fatalf("%d rows out, %d in", rec.NumRows(), len(rows))
	}
	errCol := rec.Column(3).(*array.String)
	wantErr := []string{"", "null", "empty", "unknown image format", "corrupt", "60000x60000", ""}
	for i, want := range wantErr {
		switch {
		case want == "" && (errCol.IsValid(i) || rec.Column(2).IsNull(i)):
			t.Errorf("row %d: error %q, want a result", i, errCol.Value(i))
		case want != "" && (!strings.Contains(errCol.Value(i), want) || rec.Column(2).IsValid(i)):
			t.Errorf("row %d: error %q and data valid=%v, want null data and an error containing %q", i, errCol.Value(i), rec.Column(2).IsValid(i), want)
		}
	}
	if _, err := run(t, "fft_convolve", `{}`, true, good, []byte("bad"), good); err == nil || !strings.Contains(err.Error(), "row 1") {
		t.Errorf("strict: %v, want row 1 failing the call", err)
	}
}

func TestEchoAndInfo(t *testing.T) {
	img := grayPNG(t, 5, 7, make([]uint8, 35))
	rec, err := run(t, "echo", `{}`, false, img, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := rec.Column(0).(*array.Binary).Value(0); !bytes.Equal(got, img) {
		t.Error("echo changed the bytes")
	}
	if !strings.Contains(rec.Column(1).(*array.String).Value(1), "null") {
		t.Error("echo of a null row: no error")
	}
	rec, err = run(t, "info", `null`, false, img)
	if err != nil {
		t.Fatal(err)
	}
	got := []any{rec.Column(0).(*array.String).Value(0), rec.Column(1).(*array.Int32).Value(0), rec.Column(2).(*array.Int32).Value(0), rec.Column(3).(*array.Int32).Value(0)}
	if want := []any{"png", int32(7), int32(5), int32(1)}; !equalAny(got, want) {
		t.Errorf("info = %v, want %v", got, want)
	}
}

func TestOutputs(t *testing.T) {
	pix := []uint8{0, 100, 200, 255, 50, 10}
	img := grayPNG(t, 2, 3, pix)
	// A 1x1 identity kernel returns the image itself.
	rec, err := run(t, "fft_convolve", `{"matrix": [[1]], "output": "stats"}`, true, img)
	if err != nil {
		t.Fatal(err)
	}
	var mean, ss float64
	for _, p := range pix {
		mean += float64(p) / 6
	}
	for _, p := range pix {
		ss += (float64(p) - mean) * (float64(p) - mean)
	}
	want := []float64{0, 255, mean, math.Sqrt(ss / 6)}
	for i, w := range want {
		if got := rec.Column(i).(*array.Float64).Value(0); math.Abs(got-w) > 1e-3 {
			t.Errorf("stats[%d] = %g, want %g", i, got, w)
		}
	}
	rec, err = run(t, "fft_convolve", `{"matrix": [[2]], "output": "png"}`, true, img)
	if err != nil {
		t.Fatal(err)
	}
	out, err := png.Decode(bytes.NewReader(rec.Column(2).(*array.Binary).Value(0)))
	if err != nil {
		t.Fatal(err)
	}
	g := out.(*image.Gray)
	for i, p := range pix {
		if want := uint8(min(2*int(p), 255)); g.Pix[i] != want {
			t.Errorf("png pixel %d = %d, want %d (doubled, clipped)", i, g.Pix[i], want)
		}
	}
}

func equalAny(a, b []any) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return len(a) == len(b)
}

// fixCRC recomputes the IHDR chunk's CRC of a PNG prefix.
func fixCRC(b []byte) {
	binary.BigEndian.PutUint32(b[29:], crc32IEEE(b[12:29]))
}

func TestPanicIsRowError(t *testing.T) {
	task := &Task{Op: "boom", Spec: boomSpec{}}
	_, err := task.Run(NewWorker(), Input{Bytes: []byte("x")})
	if !errors.Is(err, ErrInternal) || !strings.Contains(err.Error(), "index out of range") || ErrorKind(err) != "internal" {
		t.Fatalf("panic gave %v (kind %s)", err, ErrorKind(err))
	}
}

// boomSpec is an echo whose computation panics.
type boomSpec struct{ echoSpec }

func (boomSpec) Compute(*Worker, Input, *imageio.Gray) (Row, error) { panic("index out of range") }

func TestTaskKeyIgnoresSpelling(t *testing.T) {
	reg := NewRegistry(DefaultLimits(), nil)
	key := func(params string) string {
		task, err := reg.Prepare(Command{Op: "fft_convolve", Params: json.RawMessage(params)})
		if err != nil {
			t.Fatal(err)
		}
		return task.Key
	}
	a, b, c := key(`{"sigma": 2, "kernel": "gaussian"}`), key(`{"kernel":"gaussian","sigma":2.0}`), key(`{"sigma":3}`)
	if a != b || a == c {
		t.Fatalf("keys: %q %q %q", a, b, c)
	}
}

// Parameter names are taken as spelled in the docs only: Go's decoder
// would also match "Sigma", "SIGMA", "ſigma" (long s) or "\u212Aernel"
// (Kelvin sign), and the last of two spellings would win.
func TestParamNamesExact(t *testing.T) {
	reg := NewRegistry(DefaultLimits(), nil)
	for _, c := range []struct{ op, params, name string }{
		{"fft_convolve", `{"sigma": 1, "Sigma": 5}`, "Sigma"},
		{"fft_convolve", `{"Sigma": 5, "sigma": 1}`, "Sigma"},
		{"fft_convolve", `{"SIGMA": 5}`, "SIGMA"},
		{"fft_convolve", `{"ſigma": 5}`, "ſigma"},
		{"fft_convolve", `{"\u212Aernel": "box"}`, "\u212Aernel"},
		{"detect_blobs", `{"Min_Sigma": 2}`, "Min_Sigma"},
		{"watershed", `{"min_distance": 3, "MIN_DISTANCE": 1}`, "MIN_DISTANCE"},
	} {
		_, err := reg.Prepare(Command{Op: c.op, Params: json.RawMessage(c.params)})
		if want := `unknown parameter "` + c.name + `" (known parameters: `; !errors.Is(err, ErrBadCommand) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s %s: %v, want ErrBadCommand containing %q", c.op, c.params, err, want)
		}
	}
}

// Calls whose params differ get different keys, even where float64
// would round them alike.
func TestTaskKeyExact(t *testing.T) {
	reg := NewRegistry(DefaultLimits(), nil)
	key := func(params string) string {
		task, err := reg.Prepare(Command{Op: "watershed", Params: json.RawMessage(params)})
		if err != nil {
			t.Fatal(err)
		}
		return task.Key
	}
	a, b := key(`{"min_distance": 9007199254740993}`), key(`{"min_distance": 9007199254740992}`)
	if a == b {
		t.Fatalf("min_distance 2^53+1 and 2^53: one key %q", a)
	}
	if a, b := key(`{}`), key(`null`); a != b {
		t.Fatalf("no params: keys %q and %q", a, b)
	}
	// Every op's Prepare sets the params' part.
	all := NewRegistry(DefaultLimits(), tinyLibrary(t))
	for _, op := range all.Ops() {
		params := `{}`
		if op.Name == "detect_faces" {
			params = `{"cascade": "tiny"}`
		}
		task, err := all.Prepare(Command{Op: op.Name, Params: json.RawMessage(params)})
		if err != nil || !strings.HasPrefix(task.Key, op.Name+" {") {
			t.Errorf("%s: key %q, %v", op.Name, task.Key, err)
		}
	}
}

// info checks Spark's image struct as the other ops do: Spark's image
// source gives -1 for height, width and nChannels (and no data) for a
// file it could not read.
func TestInfoSparkStruct(t *testing.T) {
	task, err := NewRegistry(DefaultLimits(), nil).Prepare(Command{Op: "info"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		im   SparkImage
		want error
		msg  string
	}{
		{SparkImage{Height: -1, Width: -1, NChannels: -1, Mode: -1}, imageio.ErrBadDims, "spark struct says -1x-1"},
		{SparkImage{Height: 1, Width: 2, NChannels: 3, Mode: 17, Data: make([]byte, 6)}, imageio.ErrBadStruct, "mode 17"},
		{SparkImage{Height: 1, Width: 2, NChannels: 3, Mode: 16, Data: make([]byte, 5)}, imageio.ErrBadStruct, "len(data) is 5"},
		{SparkImage{Height: 1, Width: 2, NChannels: 3, Mode: 16, Data: make([]byte, 6)}, nil, ""},
	} {
		row, err := task.Run(NewWorker(), Input{Image: &c.im})
		if !errors.Is(err, c.want) || err != nil && !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%+v: %v, want %v containing %q", c.im, err, c.want, c.msg)
		}
		if want := (infoRow{Format: "spark_image", W: 2, H: 1, Channels: 3}); err == nil && row != want {
			t.Errorf("%+v: %+v, want %+v", c.im, row, want)
		}
	}
}
