package watershed

import "math"

// edt writes into d2 the squared Euclidean distance from each foreground
// pixel to the nearest background pixel: scipy.ndimage.distance_transform_edt
// squared (background pixels get 0; outside the image is not background).
//
// The column pass is an exact 1D scan (distance to the nearest background
// pixel above or below); the row pass is the Felzenszwalb–Huttenlocher lower
// envelope of parabolas in float64. Squared distances are exact integers,
// so sqrt(d2) is bit for bit the value scipy returns.
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
	// background pixel in the same column, noBG where the column has none.
	const noBG = math.MaxInt32
	g := d2 // reused: g is overwritten by the row pass one row at a time
	for x := 0; x < w; x++ {
		if fg[x] {
			g[x] = noBG
		} else {
			g[x] = 0
		}
	}
	for y := 1; y < h; y++ {
		prev, row, f := g[(y-1)*w:y*w], g[y*w:(y+1)*w], fg[y*w:(y+1)*w]
		for x := range row {
			switch {
			case !f[x]:
				row[x] = 0
			case prev[x] == noBG:
				row[x] = noBG
			default:
				row[x] = prev[x] + 1
			}
		}
	}
	for y := h - 2; y >= 0; y-- {
		next, row := g[(y+1)*w:(y+2)*w], g[y*w:(y+1)*w]
		for x := range row {
			if next[x] != noBG && next[x]+1 < row[x] {
				row[x] = next[x] + 1
			}
		}
	}
	// Rows: lower envelope of the parabolas (x-p)² + g[p]².
	f := grow(&s.lineF, w)
	d := grow(&s.lineD, w)
	v := growInt(&s.lineV, w)
	z := grow(&s.lineZ, w+1)
	for y := 0; y < h; y++ {
		row := g[y*w : (y+1)*w]
		for x, c := range row {
			if c == noBG {
				f[x] = math.Inf(1)
			} else {
				f[x] = float64(c) * float64(c)
			}
		}
		dt1(f, d, v, z)
		for x := range row {
			row[x] = int32(d[x]) // finite: the image has background
		}
	}
}

// dt1 is the 1D squared distance transform d[q] = min_p (q-p)² + f[p].
// Infinite samples take no part; if all are infinite, d is infinite.
// v and z are scratch of len(f) and len(f)+1.
func dt1(f, d []float64, v []int, z []float64) {
	n := len(f)
	k := -1
	for q := 0; q < n; q++ {
		if math.IsInf(f[q], 1) {
			continue
		}
		if k < 0 {
			k, v[0], z[0], z[1] = 0, q, math.Inf(-1), math.Inf(1)
			continue
		}
		fq := f[q] + float64(q*q)
		var s float64
		for { // z[0] is -Inf, so this stops at k = 0 at the latest
			p := v[k]
			s = (fq - (f[p] + float64(p*p))) / float64(2*(q-p))
			if s > z[k] {
				break
			}
			k--
		}
		k++
		v[k], z[k], z[k+1] = q, s, math.Inf(1)
	}
	if k < 0 {
		for q := range d {
			d[q] = math.Inf(1)
		}
		return
	}
	j := 0
	for q := 0; q < n; q++ {
		for z[j+1] < float64(q) {
			j++
		}
		p := v[j]
		d[q] = float64((q-p)*(q-p)) + f[p]
	}
}
