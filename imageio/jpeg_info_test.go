package imageio

import (
	"bytes"
	"image/jpeg"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// configInfo is the Info image/jpeg's DecodeConfig reads from b.
func configInfo(b []byte) (Info, error) {
	cfg, err := jpeg.DecodeConfig(bytes.NewReader(b))
	return Info{Format: "jpeg", W: cfg.Width, H: cfg.Height, Channels: modelChannels(cfg.ColorModel)}, err
}

// The JPEGs of Pillow, Go and libjpeg-turbo's encoders take the fast
// header path, and read there what DecodeConfig reads; CMYK is left to it.
func TestJPEGInfoReadsWhatDecodeConfigReads(t *testing.T) {
	files, err := filepath.Glob("testdata/jpeg/*.jpg")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/jpeg/*.jpg: %v", err)
	}
	inputs := map[string][]byte{
		"go gray": encode(t, "jpeg", gradient(16, 16, 90)), "go colour": encode(t, "jpeg", randomNRGBA(17, 9, 92)),
		"progressive": progressiveJPEG(24, 16, 3), "zero height": progressiveJPEG(8, 8, 100),
	}
	for _, name := range files {
		if inputs[filepath.Base(name)], err = os.ReadFile(name); err != nil {
			t.Fatal(err)
		}
	}
	for name, b := range inputs {
		got, ok := jpegInfo(b)
		if strings.Contains(name, "cmyk") {
			if ok {
				t.Errorf("%s: read on the fast path", name)
			}
			continue
		}
		want, err := configInfo(b)
		if !ok || err != nil || got != want {
			t.Errorf("%s: fast path %+v (%v), DecodeConfig %+v (%v)", name, got, ok, want, err)
		}
	}
}

// FuzzJPEGInfo: what the fast header path reads, DecodeConfig reads
// alike, without error.
func FuzzJPEGInfo(f *testing.F) {
	files, _ := filepath.Glob("testdata/jpeg/*.jpg")
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b[:min(len(b), 700)]) // the header and a little of the scan
	}
	f.Add(encode(f, "jpeg", gradient(16, 16, 90)))
	f.Add([]byte{0xff, 0xd8, 0xff, 0xc0, 0x00, 0x0b, 0x08, 0x00, 0x01, 0x00, 0x01, 0x01, 0x01, 0x44, 0x00, 0xff, 0xda})
	f.Fuzz(func(t *testing.T, b []byte) {
		got, ok := jpegInfo(b)
		if !ok {
			return
		}
		if want, err := configInfo(b); err != nil || got != want {
			t.Fatalf("fast path %+v, DecodeConfig %+v (%v)", got, want, err)
		}
	})
}

// TestJPEGLuma: the test JPEGs whose gray is their coded Y plane, and
// those whose is not (RGB-coded, CMYK), and bytes that are no JPEG.
func TestJPEGLuma(t *testing.T) {
	for name, want := range map[string]bool{
		"astronaut-420.jpg": true, "astronaut-420-progressive.jpg": true, "astronaut-444-progressive.jpg": true,
		"coffee-422-restart.jpg": true, "coffee-gray.jpg": true, "coffee-rgb.jpg": false, "coffee-cmyk.jpg": false,
	} {
		b, err := os.ReadFile(filepath.Join("testdata", "jpeg", name))
		if err != nil {
			t.Fatal(err)
		}
		if got := JPEGLuma(b); got != want {
			t.Errorf("%s: JPEGLuma %v, want %v", name, got, want)
		}
		if got := JPEGProgressive(b); got != strings.Contains(name, "progressive") {
			t.Errorf("%s: JPEGProgressive %v", name, got)
		}
		if JPEGLuma(b[:len(b)/50]) {
			t.Errorf("%s cut before its SOS: JPEGLuma true", name)
		}
	}
	for _, b := range [][]byte{nil, {0xff}, []byte("\x89PNG\r\n\x1a\n"), {0xff, 0xd8, 0xff, 0xda, 0, 2}} {
		if JPEGLuma(b) {
			t.Errorf("%q: JPEGLuma true", b)
		}
	}
}
