package watershed

import (
	"os"
	"testing"
)

// benchDiscsFile is scripts/bench.py's watershed image (discs_512(): 40
// discs of 200 on 0), zlib-compressed 512x512 bytes, written by
//
//	.venv/bin/python -c "import sys, zlib; sys.path.insert(0, 'scripts'); import bench;
//	  open('kernels/watershed/testdata/bench_discs_512.zlib', 'wb').write(zlib.compress(bench.discs_512().tobytes(), 9))"
const benchDiscsFile = "testdata/bench_discs_512.zlib"

// BenchmarkSegment runs the whole pipeline on the reference images; the
// discs-512 image is the one scripts/watershedref.py times skimage on
// (python_ms_discs_512 in the JSON), bench-discs-512 the one
// scripts/bench.py times through the sidecar.
func BenchmarkSegment(b *testing.B) {
	doc := loadRef(b)
	type image struct {
		name string
		h, w int
		pix  []uint8
	}
	var images []image
	for _, name := range []string{"discs-512", "coins"} {
		im := doc.Images[name]
		images = append(images, image{name, im.H, im.W, unpack(b, im.Pixels)})
	}
	z, err := os.ReadFile(benchDiscsFile)
	if err != nil {
		b.Fatal(err)
	}
	images = append(images, image{"bench-discs-512", 512, 512, inflate(b, z)})
	for _, im := range images {
		b.Run(im.name, func(b *testing.B) {
			s := NewSegmenter()
			labels := make([]int32, len(im.pix))
			p := DefaultParams()
			b.SetBytes(int64(len(im.pix)))
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := s.Segment(im.pix, im.h, im.w, p, labels); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Logf("skimage pipeline on discs-512 (scripts/watershedref.py, one core): %.1f ms", doc.PythonMS)
}
