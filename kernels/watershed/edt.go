package watershed

// rowLimit is the largest offset the brute-force row pass tries before it
// hands the row to the envelope: a step (two offsets) costs a few vector
// operations per 16 pixels, the envelope a few tens of scalar ones per
// pixel. It is even, so the vector and scalar searches give up alike.
const rowLimit = 128

// edt thresholds the image (foreground is pix > t) and writes into d2 the
// squared Euclidean distance from each foreground pixel to the nearest
// background pixel: scipy.ndimage.distance_transform_edt squared
// (background pixels get 0; outside the image is not background). It also
// leaves one bit per foreground pixel in s.bits (rows of s.words words) and
// says whether the image has background at all.
//
// The column pass is an exact 1D scan (distance to the nearest background
// pixel above or below, straight from the pixels); the row pass finds, for
// each pixel q of a row, the least (q-p)² + g[p]² over the row's column
// distances g. Squared distances are integers, so sqrt(d2) is bit for bit
// the value scipy returns.
//
// Where the row loops run in vectors (vectorized), the row pass tries
// offsets p = q±1, q±2, ... while their k² is below the best so far, 16
// pixels at a time (see rows.go and vec_simd.go), which ends after about
// the distance itself. A row with some pixel farther than rowLimit from the
// background, an image too large for the int32 sums, and every row of the
// portable build get the Felzenszwalb–Huttenlocher lower envelope instead,
// in exact integer arithmetic, on each run of foreground pixels with its
// bounding background pixels (a parabola beyond a background pixel, g = 0
// and nearer, is never the lower one). Both give the least value, which is
// unique, so they agree exactly.
//
// An image with no background at all has no distances; scipy then measures
// from the virtual point (-1, 0), and so do we.
func (s *Segmenter) edt(pix []uint8, t, h, w int, d2 []int32) (hasBG bool) {
	bw := (w + 63) / 64
	s.words = bw
	bm := growUint64(&s.bits, h*bw)
	clear(bm)
	// Columns, all at once row by row: g is the distance to the nearest
	// background pixel in the same column, far (more than any distance in
	// the image, which has one when it has background) where the column
	// has none. First downwards, from a row of far-1 above the image.
	far := int32(h + w)
	above := growInt32(&s.farRow, w)
	for x := range above {
		above[x] = far - 1
	}
	g := d2 // reused: the row pass overwrites g in place
	for y := range h {
		prev := above
		if y > 0 {
			prev = g[(y-1)*w : y*w]
		}
		colDown(g[y*w:(y+1)*w], prev, pix[y*w:], int32(t), far, bm[y*bw:(y+1)*bw])
	}
	// Then upwards.
	for y := h - 2; y >= 0; y-- {
		colUp(g[y*w:(y+1)*w], g[(y+1)*w:(y+2)*w])
	}
	// A column with background has g < far on its first row.
	for _, v := range g[:w] {
		if v < far {
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
		return false
	}
	// Rows. The brute-force pass sums squares in int32: far² + rowLimit²
	// must fit. Its row of squares is padded with far², which no term
	// beats: every foreground pixel has a distance below far.
	brute := vectorized() && far <= 1<<15
	pad := rowLimit + 1
	sq := growInt32(&s.sq, 2*pad+w)
	if brute {
		for i := range pad {
			sq[i], sq[pad+w+i] = far*far, far*far
		}
	}
	src := growInt32(&s.gRow, w)
	if cap(s.env) < w {
		s.env = make([]parabola, w)
	}
	env := s.env[:w]
	for y := range h {
		b := bm[y*bw : (y+1)*bw]
		if isZero(b) {
			continue // background: g is 0, and so is d2
		}
		row := g[y*w : (y+1)*w]
		if brute {
			squares(sq[pad:pad+w], row)
			if rowMin(row, sq, pad, rowLimit) {
				continue
			}
			// row is partly written: the envelope reads the squares.
			for a := firstSet(b, 0, w); a >= 0; a = firstSet(b, a, w) {
				e := firstClear(b, a, w)
				dt1(sq[pad:pad+w], true, row, max(a-1, 0), min(e, w-1), a, e, env)
				a = e
			}
			continue
		}
		copy(src, row)
		for a := firstSet(b, 0, w); a >= 0; a = firstSet(b, a, w) {
			e := firstClear(b, a, w)
			dt1(src, false, row, max(a-1, 0), min(e, w-1), a, e, env)
			a = e
		}
	}
	return true
}

// dt1 is the 1D squared distance transform dst[q] = min_p (q-p)² + g[p]²
// over p in lo..hi, written for q in a..b-1, by the lower envelope of the
// parabolas. src holds g, or g² if squared. env is scratch of hi-lo+1
// entries.
func dt1(src []int32, squared bool, dst []int32, lo, hi, a, b int, env []parabola) {
	f := func(p int) int64 {
		if squared {
			return int64(src[p]) + int64(p*p)
		}
		return int64(src[p])*int64(src[p]) + int64(p*p)
	}
	k := 0
	env[0] = parabola{p: int64(lo), f: f(lo)}
	for q := lo + 1; q <= hi; q++ {
		fq := f(q)
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
		dst[q] = int32(int64(q)*(int64(q)-2*e.p) + e.f)
	}
}

// parabola is one parabola (x-p)² + g² of a lower envelope: f is g² + p²,
// and the envelope follows it from x = zn/zd (zd > 0) on.
type parabola struct {
	p, f, zn, zd int64
}
