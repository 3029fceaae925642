package watershed

// edt writes into d2 the squared Euclidean distance from each foreground
// pixel to the nearest background pixel: scipy.ndimage.distance_transform_edt
// squared (background pixels get 0; outside the image is not background).
//
// The column pass is an exact 1D scan (distance to the nearest background
// pixel above or below); the row pass is the Felzenszwalb–Huttenlocher lower
// envelope of parabolas in exact integer arithmetic. Squared distances are
// integers, so sqrt(d2) is bit for bit the value scipy returns.
//
// Along a row, a parabola beyond a background pixel (g = 0, and nearer) is
// never the lower one, so the row pass runs on each run of foreground
// pixels with its bounding background pixels only.
//
// An image with no background at all has no distances; scipy then measures
// from the virtual point (-1, 0), and so do we.
func (s *Segmenter) edt(fg []bool, h, w int, d2 []int32) {
	hasBG := false
	for _, f := range fg {
		if !f {
			hasBG = true
			break
		}
	}
	if !hasBG {
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				d2[y*w+x] = int32((y+1)*(y+1) + x*x)
			}
		}
		return
	}
	// Columns, all at once row by row: g is the distance to the nearest
	// background pixel in the same column, at least far (more than any
	// distance in the image) where the column has none. First downwards.
	far := int32(h + w)
	g := d2 // reused: the row pass overwrites g in place
	for x, f := range fg[:w] {
		g[x] = 0
		if f {
			g[x] = far
		}
	}
	for y := 1; y < h; y++ {
		prev, row, f := g[(y-1)*w:y*w], g[y*w:(y+1)*w], fg[y*w:(y+1)*w]
		for x := range row {
			v := int32(0)
			if f[x] {
				v = prev[x] + 1
			}
			row[x] = v
		}
	}
	// Then upwards.
	for y := h - 2; y >= 0; y-- {
		next, row := g[(y+1)*w:(y+2)*w], g[y*w:(y+1)*w]
		for x := range row {
			row[x] = min(row[x], next[x]+1)
		}
	}
	// Rows: lower envelope of the parabolas (x-p)² + g[p]², run by run.
	if cap(s.env) < w {
		s.env = make([]parabola, w)
	}
	env := s.env[:w]
	for y := range h {
		row, f := g[y*w:(y+1)*w], fg[y*w:(y+1)*w]
		for a := 0; a < w; {
			if !f[a] {
				a++
				continue
			}
			b := a + 1
			for b < w && f[b] {
				b++
			}
			dt1(row, max(a-1, 0), min(b, w-1), a, b, env)
			a = b
		}
	}
}

// dt1 is the 1D squared distance transform row[q] = min_p (q-p)² + row[p]²
// over p in lo..hi, written for q in a..b-1 (in place: the envelope keeps
// what it needs). env is scratch of hi-lo+1 entries.
func dt1(row []int32, lo, hi, a, b int, env []parabola) {
	k := 0
	env[0] = parabola{p: int64(lo), f: int64(row[lo])*int64(row[lo]) + int64(lo*lo)}
	for q := lo + 1; q <= hi; q++ {
		fq := int64(row[q])*int64(row[q]) + int64(q*q)
		for {
			e := &env[k]
			num, den := fq-e.f, 2*(int64(q)-e.p)
			if k == 0 || num*e.zd > e.zn*den { // intersection right of e's start
				k++
				env[k] = parabola{p: int64(q), f: fq, zn: num, zd: den}
				break
			}
			k--
		}
	}
	j := 0
	for q := a; q < b; q++ {
		for j < k && env[j+1].zn < int64(q)*env[j+1].zd {
			j++
		}
		e := &env[j]
		row[q] = int32(int64(q)*(int64(q)-2*e.p) + e.f)
	}
}

// parabola is one parabola (x-p)² + g² of a lower envelope: f is g² + p²,
// and the envelope follows it from x = zn/zd (zd > 0) on.
type parabola struct {
	p, f, zn, zd int64
}
