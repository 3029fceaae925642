package imageio

import (
	"bytes"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/gif"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

var updateSeeds = flag.Bool("update-seeds", false, "rewrite testdata/fuzz/FuzzDecodeGray/gen-* from genSeeds")

// FuzzDecodeGray's seed corpus beyond its f.Add list, in
// testdata/fuzz/FuzzDecodeGray (go test replays every file there as a
// seed, and go test -fuzz starts from them):
//
//   - gen-*: genSeeds below, made here in Go: variants of every format the
//     list lacks, and small versions of bomb_test.go's bombs (kept current
//     by TestFuzzSeeds; -update-seeds rewrites them);
//   - pillow-*: what Go cannot write, made once with Pillow 12 (7x5 random
//     RGB): lossy WebP with and without alpha, TIFF with LZW (with and
//     without the horizontal predictor), PackBits, CCITT group 3 and 4
//     and a palette, 1-bit BMP, interlaced GIF; and flat 256x256 images
//     as compressed as Pillow makes them (*-flat-256: lossy WebP, TIFF
//     with LZW and CCITT group 3 and 4), near checkData's bounds.
func genSeeds(t *testing.T) map[string][]byte {
	const w, h = 7, 5
	gray := randomGray(w, h, 70)
	tr := randomPaletted(w, h, 71, 4)
	tr.Palette[2] = color.RGBA{}
	var anim bytes.Buffer
	if err := gif.EncodeAll(&anim, &gif.GIF{
		Image: []*image.Paletted{tr, randomPaletted(w, h, 72, 4)}, Delay: []int{1, 1},
	}); err != nil {
		t.Fatal(err)
	}
	samples := func(n, maxval int) []int {
		s := make([]int, n)
		for i := range s {
			s[i] = (i * 37) % (maxval + 1)
		}
		return s
	}
	jpg := encode(t, "jpeg", gradient(16, 16, 73))
	return map[string][]byte{
		"png-gray":           encode(t, "png", gray),
		"png-rgba64":         encode(t, "png", randomNRGBA64(w, h, 74)),
		"png-gray-1bit":      encode(t, "png", randomPaletted(w, h, 75, 2)),
		"gif-transparent":    encode(t, "gif", tr),
		"gif-animated":       anim.Bytes(),
		"bmp-rgba":           encode(t, "bmp", randomNRGBA(w, h, 76)),
		"bmp-gray":           encode(t, "bmp", gray),
		"tiff-gray16":        encode(t, "tiff", randomGray16(w, h, 77)),
		"tiff-rgba64":        encode(t, "tiff", randomNRGBA64(w, h, 78)),
		"tiff-tiled":         tiledGray(randomGray(32, 16, 79), 16, 16),
		"tiff-packbits":      tiffGray(w, h, h, tiffPackBits, packBitsLiteral(gray.Pix)),
		"tiff-rows-infinite": tiffGray(w, h, 1<<32-1, 8, zlibZeros(1)),
		"webp-vp8l-alpha":    encode(t, "webp", randomNRGBA(w, h, 80)),
		"pgm-plain":          pnm(w, h, 1, 1000, samples(w*h, 1000), true),
		"ppm-16bit":          pnm(w, h, 3, 65535, samples(3*w*h, 65535), false),
		"jpeg-quality-100":   encode(t, "jpeg", randomNRGBA(w, h, 81)),
		"jpeg-progressive":   progressiveJPEG(16, 16, 3),
		// Small bombs: the fuzzer starts next to each guard.
		"bomb-jpeg-101-scans": progressiveJPEG(16, 16, 100),
		"bomb-jpeg-huge":      setJPEGSize(t, jpg, 65535, 65535),
		"bomb-png-zlib":       pngWith(8, 8, 0, zlibZeros(2)),
		"bomb-png-huge":       pngHeader(100000, 100000, 6),
		"bomb-gif-lzw":        gifLZWBomb(t, 8, 8, 1),
		"bomb-tiff-packbits":  tiffGray(8, 8, 8, tiffPackBits, packBitsZeros(64)),
		"bomb-tiff-tile":      tiffTiled(16, 16, 65536, 65536, 8, zlibZeros(1)),
		"bomb-webp-canvas":    append([]byte("RIFF\x00\x00\x00\x00WEBPVP8X\x0a\x00\x00\x00\x00\x00\x00\x00\xff\xff\xff\xff\xff\xff"), webpVP8L(4, 4)[12:]...),
		"bomb-pgm-truncated":  []byte("P5 1000 1000 255\n\x00"),
		"bomb-webp-vp8-huge":  webpVP8(16383, 16383),
		// Lies within the limit, too short for their headers (checkData).
		"bomb-png-truncated":    pngWith(1024, 1024, 2, zlibZeros(1)[:40]),
		"bomb-bmp-truncated":    bmpSized(t, randomPaletted(w, h, 82, 16), 1000, 1000),
		"bomb-gif-truncated":    gifLZWBomb(t, 1024, 1024, 0),
		"bomb-tiff-truncated":   tiffGray(1000, 1000, 1000, 1, gray.Pix),
		"bomb-tiff-lzw-short":   tiffGray(1000, 1000, 1000, 5, []byte{0x80, 0, 0x20}),
		"bomb-tiff-ccitt-short": tiffCCITT(1000, 1000, 4, bytes.Repeat([]byte{0xff}, 124)),
		"bomb-webp-vp8-short":   webpVP8First(1024, 1024, 100, make([]byte, 100)),
		"bomb-ppm-plain-short":  []byte("P3 1000 1000 255\n0 0 0 0 0 0 0 0 0 0"),
		"bomb-bmp-huge-top-down": func() []byte {
			b := encode(t, "bmp", gray)
			copy(b[18:], []byte{0xa0, 0x86, 0x01, 0x00, 0x60, 0x79, 0xfe, 0xff}) // 100000 x -100000
			return b
		}(),
	}
}

// corpusFile is the go test fuzz v1 encoding of one []byte input.
func corpusFile(b []byte) []byte {
	return fmt.Appendf(nil, "go test fuzz v1\n[]byte(%s)\n", strconv.Quote(string(b)))
}

// readCorpus decodes a one-[]byte go test fuzz v1 file.
func readCorpus(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	body, ok := strings.CutPrefix(string(b), "go test fuzz v1\n[]byte(")
	body, ok2 := strings.CutSuffix(strings.TrimSpace(body), ")")
	s, err := strconv.Unquote(body)
	if !ok || !ok2 || err != nil {
		t.Fatalf("%s: not a go test fuzz v1 []byte file: %v", name, err)
	}
	return []byte(s)
}

// TestFuzzSeeds: the gen-* files hold genSeeds, every good seed decodes
// (the bombs are refused), and every format has seeds beyond f.Add's.
func TestFuzzSeeds(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzDecodeGray")
	seeds := genSeeds(t)
	names := make([]string, 0, len(seeds))
	for name := range seeds {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		path := filepath.Join(dir, "gen-"+name)
		if *updateSeeds {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, corpusFile(seeds[name]), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if got := readCorpus(t, path); !bytes.Equal(got, seeds[name]) {
			t.Errorf("%s is stale: go test ./imageio -run TestFuzzSeeds -update-seeds", path)
		}
	}
	files, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil {
		t.Fatal(err)
	}
	formats := map[string]int{}
	for _, path := range files {
		name := filepath.Base(path)
		b := readCorpus(t, path)
		var g Gray
		err := DecodeGray(b, fuzzLimit, &g)
		bomb := strings.HasPrefix(name, "gen-bomb-")
		switch {
		case strings.HasPrefix(name, "gen-") || strings.HasPrefix(name, "pillow-"):
			if bomb != (err != nil) {
				t.Errorf("%s: %v", name, err)
			}
			if f, _ := Sniff(b); !bomb {
				formats[f]++
			}
		}
	}
	for _, f := range []string{"png", "jpeg", "gif", "bmp", "tiff", "webp", "pnm"} {
		if formats[f] < 2 {
			t.Errorf("%d extra seeds of %s", formats[f], f)
		}
	}
}
