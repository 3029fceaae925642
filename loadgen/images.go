package loadgen

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/png"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// imageExts are the file names ReadImages takes.
var imageExts = []string{".png", ".jpg", ".jpeg", ".pgm", ".bmp", ".tif", ".tiff", ".webp"}

// ReadImages reads the image files directly in dir (not its
// subdirectories), in name order, and returns their contents and names.
// It is an error when there are none.
func ReadImages(dir string) ([][]byte, []string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("images: %w", err)
	}
	var files [][]byte
	var names []string
	for _, e := range ents {
		ext := strings.ToLower(filepath.Ext(e.Name()))
		if !e.Type().IsRegular() || !slices.Contains(imageExts, ext) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, nil, fmt.Errorf("images: %w", err)
		}
		files = append(files, b)
		names = append(names, e.Name())
	}
	if len(files) == 0 {
		return nil, nil, fmt.Errorf("images: no %s files in %s", strings.Join(imageExts, " "), dir)
	}
	return files, names, nil
}

// Generate makes n distinct 8-bit grayscale PNGs of w x h pixels, the same
// ones every time: a gradient with seeded noise, a few dark rectangles
// and bright discs, so that detection ops (blobs, watershed) find
// something and the encoder cannot shrink them to nothing.
func Generate(w, h, n int) ([][]byte, error) {
	if w < 1 || h < 1 || n < 1 {
		return nil, errors.New("generate: width, height and count must be positive")
	}
	if int64(w)*int64(h) > 1<<28 {
		return nil, fmt.Errorf("generate: %dx%d is over 2^28 pixels", w, h)
	}
	out := make([][]byte, n)
	for i := range out {
		rng := rand.New(rand.NewPCG(uint64(i)+1, 0x5eed))
		img := image.NewGray(image.Rect(0, 0, w, h))
		for y := range h {
			for x := range w {
				img.Pix[y*img.Stride+x] = uint8(40 + 60*x/w + 40*y/h + rng.IntN(24))
			}
		}
		side := min(w, h)
		for range 2 + rng.IntN(3) {
			x0, y0 := rng.IntN(w), rng.IntN(h)
			r := image.Rect(x0, y0, x0+1+rng.IntN(max(w/3, 1)), y0+1+rng.IntN(max(h/3, 1))).Intersect(img.Rect)
			for y := r.Min.Y; y < r.Max.Y; y++ {
				for x := r.Min.X; x < r.Max.X; x++ {
					img.Pix[y*img.Stride+x] = uint8(10 + rng.IntN(20))
				}
			}
		}
		for range 4 + rng.IntN(8) {
			r := max(2, side/24+rng.IntN(max(side/12, 1)))
			cx, cy := rng.IntN(w), rng.IntN(h)
			v := uint8(180 + rng.IntN(60))
			for y := max(cy-r, 0); y < min(cy+r+1, h); y++ {
				for x := max(cx-r, 0); x < min(cx+r+1, w); x++ {
					if (x-cx)*(x-cx)+(y-cy)*(y-cy) <= r*r {
						img.Pix[y*img.Stride+x] = v + uint8(rng.IntN(16))
					}
				}
			}
		}
		var buf bytes.Buffer
		if err := png.Encode(&buf, img); err != nil {
			return nil, fmt.Errorf("generate: %w", err)
		}
		out[i] = buf.Bytes()
	}
	return out, nil
}
