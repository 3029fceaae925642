package watershed

import "testing"

// BenchmarkSegment runs the whole pipeline on the reference images; the
// discs-512 image is the one scripts/watershedref.py times skimage on
// (python_ms_discs_512 in the JSON).
func BenchmarkSegment(b *testing.B) {
	doc := loadRef(b)
	for _, name := range []string{"discs-512", "coins"} {
		im := doc.Images[name]
		pix := unpack(b, im.Pixels)
		b.Run(name, func(b *testing.B) {
			s := NewSegmenter()
			labels := make([]int32, len(pix))
			p := DefaultParams()
			b.SetBytes(int64(len(pix)))
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := s.Segment(pix, im.H, im.W, p, labels); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Logf("skimage pipeline on discs-512 (scripts/watershedref.py, one core): %.1f ms", doc.PythonMS)
}
