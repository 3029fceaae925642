//go:build cgo

package cuda

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/pixelflight/pixelflight/imageio"
	"github.com/pixelflight/pixelflight/sched"
	"github.com/pixelflight/pixelflight/udf"
)

// The GPU's JPEG decoding, where the binary is the cuda build (on a GPU
// machine: `make test-cuda-gpu`, the GPU kit). Elsewhere they skip: the
// emulated tests (decode_test.go) cover the same paths.

// nvjpegTolerance bounds |nvJPEG - libjpeg-turbo| per pixel of the luma
// of one image: two IDCTs round differently (libjpeg-turbo's islow is
// exact to the integer; others are within 1, rarely 2).
const (
	nvjpegMaxDiff  = 3
	nvjpegMeanDiff = 0.25
)

// gpuJPEGs are the photos the GPU tests decode: imageio's test JPEGs and
// the benchmarks' 512² photos.
func gpuJPEGs(t *testing.T) (names []string, data [][]byte) {
	t.Helper()
	for _, glob := range []string{"../imageio/testdata/jpeg/*.jpg", "../build/images/photo512/jpg/*.jpg"} {
		files, _ := filepath.Glob(glob)
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			names, data = append(names, filepath.Base(f)), append(data, b)
		}
	}
	if len(names) < 8 {
		t.Fatalf("%d test JPEGs; want imageio's and build/images/photo512 (make data)", len(names))
	}
	return names, data
}

// TestNVJPEGGray: nvJPEG's luma of real photos, one at a time and all in
// one batch, against the host's decoder (libjpeg-turbo where it loads),
// within nvjpegMaxDiff and nvjpegMeanDiff; it logs each image's figures.
func TestNVJPEGGray(t *testing.T) {
	if !Built {
		t.Skip("needs the cuda build (-tags cuda) and a GPU")
	}
	b, err := Open(Config{Lanes: 1})
	if err != nil {
		t.Fatalf("the GPU backend cannot start: %v", err)
	}
	defer b.Close()
	desc, ok := b.Decoder()
	if !ok {
		t.Fatalf("no nvJPEG: %s", desc)
	}
	t.Logf("decoder: %s", desc)
	t.Logf("nvjpeg tolerance: max %d, mean %g", nvjpegMaxDiff, nvjpegMeanDiff)
	names, data := gpuJPEGs(t)
	l := b.lanes[0]
	unbind, err := l.s.bind()
	if err != nil {
		t.Fatal(err)
	}
	defer unbind()
	dec, err := l.s.jpegDecoder()
	if err != nil || dec == nil {
		t.Fatalf("lane decoder: %v", err)
	}
	defer dec.close()
	var want []imageio.Gray
	var jpegs [][]byte
	var which []string
	for i, d := range data {
		var g imageio.Gray
		if err := imageio.DecodeGray(d, imageio.Limits{MaxPixels: 1 << 28}, &g); err != nil {
			t.Fatalf("%s on the host: %v", names[i], err)
		}
		if !imageio.JPEGLuma(d) || !dec.supported(d) {
			t.Logf("%s: not for the GPU (JPEGLuma %v), to the host decoders", names[i], imageio.JPEGLuma(d))
			continue
		}
		want, jpegs, which = append(want, g), append(jpegs, d), append(which, names[i])
	}
	if len(jpegs) == 0 {
		t.Fatal("the GPU decoder takes none of the photos")
	}
	decode := func(set []int) [][]byte {
		total := 0
		for _, i := range set {
			total += want[i].W * want[i].H
		}
		p, err := l.s.alloc(total)
		if err != nil {
			t.Fatal(err)
		}
		defer l.s.free(p)
		var in [][]byte
		var dst []devPtr
		var pitch []int
		at := 0
		for _, i := range set {
			in, dst, pitch = append(in, jpegs[i]), append(dst, p+devPtr(at)), append(pitch, want[i].W)
			at += want[i].W * want[i].H
		}
		if err := l.s.sync(); err != nil {
			t.Fatal(err)
		}
		if err := dec.decode(in, dst, pitch); err != nil {
			t.Fatalf("decoding %d images: %v", len(in), err)
		}
		host := make([]byte, total)
		if err := l.s.download(host, p); err != nil {
			t.Fatal(err)
		}
		if err := l.s.sync(); err != nil {
			t.Fatal(err)
		}
		var out [][]byte
		for _, i := range set {
			n := want[i].W * want[i].H
			out, host = append(out, host[:n]), host[n:]
		}
		return out
	}
	check := func(how string, i int, got []byte) {
		worst, sum := 0, 0
		for k, v := range want[i].Pix[:len(got)] {
			d := int(got[k]) - int(v)
			if d < 0 {
				d = -d
			}
			worst, sum = max(worst, d), sum+d
		}
		mean := float64(sum) / float64(len(got))
		t.Logf("nvjpeg gray %s %s %dx%d: max |diff| %d, mean %.4f", how, which[i], want[i].W, want[i].H, worst, mean)
		if worst > nvjpegMaxDiff || mean > nvjpegMeanDiff || math.IsNaN(mean) {
			t.Errorf("%s %s: max |nvJPEG - host| %d, mean %.4f; want <= %d and <= %g", how, which[i], worst, mean, nvjpegMaxDiff, nvjpegMeanDiff)
		}
	}
	all := make([]int, len(jpegs))
	for i := range jpegs {
		all[i] = i
		check("alone", i, decode([]int{i})[0])
	}
	for i, got := range decode(all) {
		check("batched", i, got)
	}
}

// TestJPEGOnGPU: JPEG rows through the scheduler with the GPU backend
// decoding them: every row comes back, errors exactly where the CPU
// backend has them, and the GPU decoded rows itself.
func TestJPEGOnGPU(t *testing.T) {
	if !Built {
		t.Skip("needs the cuda build (-tags cuda) and a GPU")
	}
	b, err := Open(Config{MaxBatch: 16})
	if err != nil {
		t.Fatalf("the GPU backend cannot start: %v", err)
	}
	defer b.Close()
	names, rows := jpegRows(t)
	col := binaryColumn(t, rows)
	task, err := udf.NewRegistry(testLimits, nil).Prepare(udf.Command{Op: "fft_convolve", Params: json.RawMessage(`{"output":"stats","sigma":2}`)})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := runOn(t, sched.NewCPU(2), task, col)
	s := schedFor(b)
	got, by := runSched(t, s, task, col)
	st := s.Stats().Backends[1]
	s.Close()
	we, ge := want.Column(int(want.Schema().FieldIndices("error")[0])), got.Column(int(got.Schema().FieldIndices("error")[0]))
	for i := range int(want.NumRows()) {
		if we.IsNull(i) != ge.IsNull(i) {
			t.Errorf("row %d (%s): error %v on the GPU, %v on the CPU", i, names[i], ge.ValueStr(i), we.ValueStr(i))
		}
	}
	desc, _ := b.Decoder()
	if st.Decoded == 0 {
		t.Errorf("the GPU decoded no row itself (decoder %s)", desc)
	}
	t.Logf("rows by backend %v; decoded on the GPU %d, given back %d, share %.2f; %s", by, st.Decoded, st.Declined, st.DecodeShare, desc)
}
