package haar

// What another backend (package cuda: detection on a GPU) needs to give
// back exactly Detect's boxes: the pyramid, the resize tables, a raw
// detection's box, and the grouping. The cascade itself is read from
// Cascade's exported fields.

// Level is one level of detectMultiScale's pyramid: the image resized to
// W×H and scanned with the cascade's window every Step pixels, positions
// (x, y) with x < W+1-c.W and y < H+1-c.H.
type Level struct {
	F          float32 // scale factor
	W, H       int
	Step       int
	WinW, WinH int // the window in image pixels
}

// Pyramid lists the levels Detect scans for a w×h image, in Detect's
// order (largest first). Empty: no level (Detect returns no faces).
func (c *Cascade) Pyramid(w, h int, p Params) []Level {
	ss := c.scales(w, h, p)
	out := make([]Level, len(ss))
	for i, s := range ss {
		out[i] = Level{F: s.f, W: s.w, H: s.h, Step: s.step, WinW: s.winW, WinH: s.winH}
	}
	return out
}

// Raw is the raw detection (before grouping) of the window at (x, y) of
// level l, as Detect records it.
func (l Level) Raw(x, y int) Face {
	return Face{X: roundEven(float64(float32(x) * l.F)), Y: roundEven(float64(float32(y) * l.F)), W: l.WinW, H: l.WinH}
}

// ResizeAxis is one axis of the exact bilinear resize from src to dst
// samples (INTER_LINEAR_EXACT): output v < lo repeats input 0, v >= hi
// repeats input src-1, and otherwise blends inputs ofs[v] and ofs[v]+1
// with weights 256-c1[v] and c1[v].
func ResizeAxis(src, dst int) (ofs []int32, c1 []uint32, lo, hi int) {
	var a axis
	a.set(src, dst)
	return a.ofs, a.c1, a.lo, a.hi
}

// Group merges raw detections (in Detect's order: by level, then row,
// then column) as Detect does: cv::groupRectangles and clipping to the
// w×h image.
func Group(raw []Face, minNeighbors, w, h int) []Face { return group(raw, minNeighbors, w, h) }
