//go:build cgo

package cuda

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pixelflight/pixelflight/imageio"
	"github.com/pixelflight/pixelflight/kernels/haar"
	"github.com/pixelflight/pixelflight/udf"
)

// jpegRows are imageio's test JPEGs (scikit-image's photos: baseline,
// progressive, restart intervals, gray, RGB-coded, CMYK), generated
// baseline ones of two shapes (gray and colour, several of each shape, so
// that batches hold more than one), a truncated one and a null row.
func jpegRows(t *testing.T) (names []string, rows [][]byte) {
	t.Helper()
	files, err := filepath.Glob("../imageio/testdata/jpeg/*.jpg")
	if err != nil || len(files) < 5 {
		t.Fatalf("test JPEGs: %v, %v", files, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		names, rows = append(names, filepath.Base(f)), append(rows, b)
	}
	r := rand.New(rand.NewPCG(8, 9))
	for i := range 8 {
		w, h := 64, 48
		if i%2 == 1 {
			w, h = 40, 52
		}
		var img image.Image
		if i < 4 {
			g := image.NewGray(image.Rect(0, 0, w, h))
			for j := range g.Pix {
				g.Pix[j] = uint8(r.IntN(256))
			}
			img = g
		} else {
			c := image.NewRGBA(image.Rect(0, 0, w, h))
			for y := range h {
				for x := range w {
					c.Set(x, y, color.RGBA{uint8(x * 4), uint8(y * 4), uint8(r.IntN(256)), 255})
				}
			}
			img = c
		}
		var buf bytes.Buffer
		if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 90}); err != nil {
			t.Fatal(err)
		}
		names, rows = append(names, fmt.Sprintf("generated-%d", i)), append(rows, buf.Bytes())
	}
	names, rows = append(names, "truncated"), append(rows, rows[len(rows)-1][:400])
	names, rows = append(names, "null"), append(rows, nil)
	var n []string
	var all [][]byte
	for range 3 {
		n, all = append(n, names...), append(all, rows...)
	}
	return n, all
}

// TestJPEGOnDevice: every op the backend runs, over JPEGs, on the emulated
// device with a JPEG decoder gives exactly the rows it gives without one
// (results, errors, annotated PNGs): the rows it decoded itself, those its
// decoder refused at the lane (restart intervals, in the emulation) and
// the host decoded, those it never takes (progressive on the hardware
// engines, RGB-coded, CMYK, truncated; annotate), and the truncated one,
// whose error is the host decoder's. The device decoded rows itself, in batches; with
// a decoder that fails every batch, the rows are the same again.
func TestJPEGOnDevice(t *testing.T) {
	names, rows := jpegRows(t)
	col := binaryColumn(t, rows)
	lib, err := haar.OpenLibrary(haar.DebianDir)
	if err != nil {
		lib = nil
	}
	reg := udf.NewRegistry(testLimits, lib)
	calls := []udf.Command{
		{Op: "fft_convolve", Params: json.RawMessage(`{"output":"stats","sigma":2}`)},
		{Op: "fft_convolve", Params: json.RawMessage(`{"kernel":"sobel_x","mode":"valid"}`)},
		{Op: "fft_convolve", Params: json.RawMessage(`{"output":"png","kernel":"sharpen"}`)},
		{Op: "detect_blobs", Params: json.RawMessage(`{"threshold":0.1}`)},
	}
	if lib != nil && len(lib.Names()) > 0 {
		calls = append(calls, udf.Command{Op: "detect_faces"}, udf.Command{Op: "detect_faces", Params: json.RawMessage(`{"annotate":true}`)})
	} else {
		t.Logf("no OpenCV cascades in %s: detect_faces not run", haar.DebianDir)
	}
	for _, c := range calls {
		t.Run(c.Op+string(c.Params), func(t *testing.T) {
			task, err := reg.Prepare(c)
			if err != nil {
				t.Fatal(err)
			}
			cfg := Config{Lanes: 2, MaxBatch: 8}
			want, _ := runOn(t, newEmu(t, cfg), task, col)
			for _, failing := range []bool{false, true} {
				d := newEmuDevice(1 << 30)
				d.jpegs = true
				if failing {
					d.fail = func(op string) error {
						if op == "jpeg decode" {
							return errors.New("emulated nvJPEG failure")
						}
						return nil
					}
				}
				b, err := newBackend(d, cfg)
				if err != nil {
					t.Fatal(err)
				}
				s := schedFor(b)
				got, by := runSched(t, s, task, col)
				st := s.Stats().Backends[1]
				s.Close()
				decoded, batches := 0, 0
				for _, l := range b.lanes {
					if j, ok := l.jpeg.(*emuJPEG); ok {
						decoded, batches = decoded+j.decoded, batches+j.batches
					}
				}
				if err := b.Close(); err != nil {
					t.Error(err)
				}
				compareRecords(t, got, want, func(i int) string { return names[i] })
				annotate := bytes.Contains(c.Params, []byte("annotate"))
				switch {
				case annotate && (st.Decoded != 0 || batches != 0):
					t.Errorf("annotated faces: %d rows decoded on the device, want none", st.Decoded)
				case !annotate && !failing && (st.Decoded == 0 || int(st.Decoded) != decoded || st.Declined == 0):
					t.Errorf("the device decoded %d rows (its decoder %d in %d batches), gave back %d; want some of each",
						st.Decoded, decoded, batches, st.Declined)
				case failing && (st.Decoded != 0 || !annotate && batches == 0):
					t.Errorf("with a failing decoder: %d rows decoded on the device in %d batches", st.Decoded, batches)
				}
				t.Logf("failing %v: rows by backend %v; decoded on the device %d in %d batches, given back %d, share %.2f",
					failing, by, st.Decoded, batches, st.Declined, st.DecodeShare)
			}
		})
	}
}

// DecodesOnDevice takes whole YCbCr and gray JPEGs, progressive ones only
// without hardware engines; never RGB-coded or CMYK JPEGs, truncated ones,
// other formats, annotated faces, or anything on a device without a
// decoder.
func TestDecodesOnDevice(t *testing.T) {
	d := newEmuDevice(1 << 30)
	d.jpegs = true
	b, err := newBackend(d, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	plain := newEmu(t, Config{})
	lib, _ := haar.OpenLibrary(haar.DebianDir)
	reg := udf.NewRegistry(testLimits, lib)
	stats, err := reg.Prepare(udf.Command{Op: "fft_convolve"})
	if err != nil {
		t.Fatal(err)
	}
	read := func(name string) (udf.Input, imageio.Info) {
		data, err := os.ReadFile(filepath.Join("../imageio/testdata/jpeg", name))
		if err != nil {
			t.Fatal(err)
		}
		hdr, err := imageio.DecodeInfo(data)
		if err != nil {
			t.Fatal(err)
		}
		return udf.Input{Bytes: data}, hdr
	}
	for name, want := range map[string][2]bool{ // hardware engines, CUDA decoder
		"astronaut-420.jpg": {true, true}, "coffee-gray.jpg": {true, true}, "coffee-422-restart.jpg": {true, true},
		"astronaut-420-progressive.jpg": {false, true}, "coffee-rgb.jpg": {false, false}, "coffee-cmyk.jpg": {false, false},
	} {
		in, hdr := read(name)
		for i, hw := range []bool{true, false} {
			b.jpeg.hardware = hw
			if got := b.DecodesOnDevice(stats, in, hdr); got != want[i] {
				t.Errorf("%s, hardware %v: DecodesOnDevice %v, want %v", name, hw, got, want[i])
			}
		}
		if plain.DecodesOnDevice(stats, in, hdr) {
			t.Errorf("%s: taken by a device without a decoder", name)
		}
	}
	in, hdr := read("astronaut-420.jpg")
	if cut := (udf.Input{Bytes: in.Bytes[:len(in.Bytes)-100]}); b.DecodesOnDevice(stats, cut, hdr) {
		t.Error("a truncated JPEG taken")
	}
	if png := (imageio.Info{Format: "png", W: hdr.W, H: hdr.H}); b.DecodesOnDevice(stats, in, png) {
		t.Error("a PNG header taken")
	}
	if lib != nil && len(lib.Names()) > 0 {
		annotate, err := reg.Prepare(udf.Command{Op: "detect_faces", Params: json.RawMessage(`{"annotate":true}`)})
		if err != nil {
			t.Fatal(err)
		}
		if annotate.Spec.Decode() != udf.DecodeGrayOnHost || b.DecodesOnDevice(annotate, in, hdr) {
			t.Error("annotated faces taken: they draw on the host's pixels")
		}
	}
	if desc, ok := plain.Decoder(); ok || !strings.HasPrefix(desc, "none: ") {
		t.Errorf("Decoder without one: %q, %v", desc, ok)
	}
	if desc, ok := b.Decoder(); !ok || desc == "" {
		t.Errorf("Decoder: %q, %v", desc, ok)
	}
}

// Each GPU's backend has its own name: "cuda" for device 0, "cudaN" for
// device N, in stats, metrics and rows_by_backend.
func TestBackendNames(t *testing.T) {
	for dev, want := range map[int]string{0: "cuda", 1: "cuda1", 3: "cuda3"} {
		if got := newEmu(t, Config{Device: dev}).Name(); got != want {
			t.Errorf("device %d: %q, want %q", dev, got, want)
		}
	}
}

// A lane whose JPEG decoder cannot start gives its rows back to the host,
// and the backend takes no more JPEGs, saying why in Decoder.
func TestJPEGDecoderCannotStart(t *testing.T) {
	names, rows := jpegRows(t)
	col := binaryColumn(t, rows)
	task, err := udf.NewRegistry(testLimits, nil).Prepare(udf.Command{Op: "fft_convolve", Params: json.RawMessage(`{"output":"stats"}`)})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := runOn(t, newEmu(t, Config{Lanes: 2, MaxBatch: 8}), task, col)
	d := newEmuDevice(1 << 30)
	d.jpegs = true
	d.fail = func(op string) error {
		if op == "jpegDecoder" {
			return errors.New("emulated: no JPEG decoder for this lane")
		}
		return nil
	}
	b, err := newBackend(d, Config{Lanes: 2, MaxBatch: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	s := schedFor(b)
	got, _ := runSched(t, s, task, col)
	st := s.Stats().Backends[1]
	s.Close()
	compareRecords(t, got, want, func(i int) string { return names[i] })
	desc, _ := b.Decoder()
	in, hdr := udf.Input{Bytes: rows[1]}, imageio.Info{Format: "jpeg", W: 64, H: 48}
	if st.Decoded != 0 || !strings.Contains(desc, "could not start") || b.DecodesOnDevice(task, in, hdr) {
		t.Errorf("decoded %d on the device; Decoder %q; still takes JPEGs %v", st.Decoded, desc, b.DecodesOnDevice(task, in, hdr))
	}
}
