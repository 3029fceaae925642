package imageio

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestSparkImageGray(t *testing.T) {
	// 3x1 BGR: pure red, (10,200,30) and white, stored B,G,R.
	bgr := []byte{0, 0, 255, 30, 200, 10, 255, 255, 255}
	var g Gray
	if err := SparkImageGray(1, 3, 3, 16, bgr, testLimit, &g); err != nil {
		t.Fatal(err)
	}
	if want := []uint8{76, 124, 255}; g.W != 3 || g.H != 1 || !bytes.Equal(g.Pix, want) {
		t.Errorf("BGR: got %dx%d %v, want 3x1 %v", g.W, g.H, g.Pix, want)
	}

	// BGRA: alpha ignored.
	bgra := []byte{0, 0, 255, 0, 30, 200, 10, 128, 255, 0, 0, 255, 0, 255, 0, 7}
	if err := SparkImageGray(2, 2, 4, 24, bgra, testLimit, &g); err != nil {
		t.Fatal(err)
	}
	if want := []uint8{76, 124, 29, 150}; g.W != 2 || g.H != 2 || !bytes.Equal(g.Pix, want) {
		t.Errorf("BGRA: got %v, want %v", g.Pix, want)
	}

	// One channel is copied, into the existing buffer, without allocating.
	gray := []byte{1, 2, 3, 4, 5, 6}
	if err := SparkImageGray(2, 3, 1, 0, gray, testLimit, &g); err != nil {
		t.Fatal(err)
	}
	if g.W != 3 || g.H != 2 || !bytes.Equal(g.Pix, gray) {
		t.Errorf("gray: got %dx%d %v", g.W, g.H, g.Pix)
	}
	if n := testing.AllocsPerRun(20, func() { _ = SparkImageGray(2, 3, 1, 0, gray, testLimit, &g) }); n != 0 {
		t.Errorf("1-channel into a big enough dst allocates %v times", n)
	}

	// A bigger random BGR image against the reference rule.
	r := newRand(90)
	big := make([]byte, 31*17*3)
	for i := range big {
		big[i] = uint8(r.UintN(256))
	}
	if err := SparkImageGray(17, 31, 3, 16, big, testLimit, &g); err != nil {
		t.Fatal(err)
	}
	for i := range g.Pix {
		if want := rule(big[3*i+2], big[3*i+1], big[3*i]); g.Pix[i] != want {
			t.Fatalf("pixel %d = %d, want %d", i, g.Pix[i], want)
		}
	}
}

func TestSparkImageGrayErrors(t *testing.T) {
	ok := make([]byte, 2*3*3)
	cases := []struct {
		name          string
		h, w, c, mode int32
		data          []byte
		lim           Limits
		want          error
	}{
		{"zero height", 0, 3, 3, 16, nil, testLimit, ErrBadDims},
		{"negative width", 2, -3, 3, 16, ok, testLimit, ErrBadDims},
		{"unknown mode", 2, 3, 3, 17, ok, testLimit, ErrBadStruct},
		{"float mode CV_32FC1", 2, 3, 1, 5, ok, testLimit, ErrBadStruct},
		{"channels 2", 2, 3, 2, 16, ok, testLimit, ErrBadStruct},
		{"channels vs mode", 2, 3, 4, 16, ok, testLimit, ErrBadStruct},
		{"channels 1 mode 8UC3", 2, 3, 1, 16, ok, testLimit, ErrBadStruct},
		{"data short", 2, 3, 3, 16, ok[:17], testLimit, ErrBadStruct},
		{"data long", 2, 3, 3, 16, append(ok, 0), testLimit, ErrBadStruct},
		{"data for 4 channels", 2, 3, 3, 16, make([]byte, 24), testLimit, ErrBadStruct},
		{"over limit", 2, 3, 3, 16, ok, Limits{MaxPixels: 5}, ErrTooLarge},
		{"huge claim", 1 << 30, 1 << 30, 4, 24, nil, testLimit, ErrTooLarge},
		{"unreadable file", -1, -1, -1, -1, nil, testLimit, ErrBadDims},
	}
	for _, c := range cases {
		var g Gray
		if err := SparkImageGray(c.h, c.w, c.c, c.mode, c.data, c.lim, &g); !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
		if g.Pix != nil {
			t.Errorf("%s: dst changed on error", c.name)
		}
		// SparkImageInfo says the same, but for the pixel limit.
		if _, err := SparkImageInfo(c.h, c.w, c.c, c.mode, c.data); c.want != ErrTooLarge && !errors.Is(err, c.want) {
			t.Errorf("%s: info: got %v, want %v", c.name, err, c.want)
		}
	}
}

func TestSparkImageInfo(t *testing.T) {
	info, err := SparkImageInfo(2, 3, 4, 24, make([]byte, 24))
	if want := (Info{Format: "spark_image", W: 3, H: 2, Channels: 4}); err != nil || info != want {
		t.Errorf("got %+v, %v; want %+v", info, err, want)
	}
	// Spark's image source, dropInvalid false, for a file it cannot read.
	_, err = SparkImageInfo(-1, -1, -1, -1, nil)
	if want := "bad image dimensions: spark struct says -1x-1"; !errors.Is(err, ErrBadDims) || !strings.Contains(err.Error(), want) {
		t.Errorf("unreadable file: %v, want ErrBadDims containing %q", err, want)
	}
}
