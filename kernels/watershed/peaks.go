package watershed

import (
	"cmp"
	"math"
	"slices"
)

// peaks returns the flat indices of
// skimage.feature.peak_local_max(dist, min_distance=md, labels=fg) in the
// order skimage returns them (which is the marker numbering). It works on
// the squared distances d2: same order, same ties, integer compares.
//
// With one label, skimage works on the bounding box of the foreground
// pixels that lie at least md from every image edge (exclude_border
// defaults to min_distance), with the other pixels of that box set to the
// lowest float (-1 here). Inside the box a peak is a pixel equal to the maximum of its
// (2md+1)² window (edges replicated, box edges count as image edges) and
// above the minimum of dist. If every foreground pixel of the box is such a
// maximum (a "trivial" image), only foreground pixels removed by a binary
// opening with the 4-connected cross qualify. Candidates are sorted by
// value, highest first, raster order among equals; when md > 1 a candidate
// is dropped if an earlier kept one is closer than md in Chebyshev
// distance.
func (s *Segmenter) peaks(d2 []int32, fg []bool, h, w, md int) []int32 {
	out := s.peakIdx[:0]
	defer func() { s.peakIdx = out }()

	threshold := int32(math.MaxInt32)
	for _, d := range d2 {
		threshold = min(threshold, d)
	}
	// Bounding box of the foreground inside the excluded border.
	y0, y1, x0, x1 := h, -1, w, -1
	for y := md; y < h-md; y++ {
		row := fg[y*w : (y+1)*w]
		for x := md; x < w-md; x++ {
			if row[x] {
				y0, y1 = min(y0, y), max(y1, y)
				x0, x1 = min(x0, x), max(x1, x)
			}
		}
	}
	if y1 < 0 {
		return out
	}
	ch, cw := y1-y0+1, x1-x0+1
	img := growInt32(&s.crop, ch*cw)
	mask := growBool(&s.cropMask, ch*cw)
	for y := 0; y < ch; y++ {
		for x := 0; x < cw; x++ {
			i := (y0+y)*w + x0 + x
			mask[y*cw+x] = fg[i]
			if fg[i] {
				img[y*cw+x] = d2[i]
			} else {
				img[y*cw+x] = -1 // below every distance
			}
		}
	}
	mx := s.maxFilter(img, ch, cw, md)

	trivial := true
	for i, m := range mask {
		if m && img[i] != mx[i] {
			trivial = false
			break
		}
	}
	cand := growBool(&s.cand, ch*cw)
	if trivial {
		isolated(mask, ch, cw, cand)
	} else {
		for i := range cand {
			cand[i] = img[i] == mx[i]
		}
	}
	list := s.peakList[:0]
	for y := 0; y < ch; y++ {
		for x := 0; x < cw; x++ {
			i := y*cw + x
			if cand[i] && img[i] > threshold {
				list = append(list, peakCand{img[i], int32((y0+y)*w + x0 + x)})
			}
		}
	}
	s.peakList = list
	slices.SortStableFunc(list, func(a, b peakCand) int { return cmp.Compare(b.v, a.v) })

	if md == 1 {
		for _, c := range list {
			out = append(out, c.idx)
		}
		return out
	}
	// Greedy spacing on a grid of md×md cells: a kept peak closer than md
	// (Chebyshev) to a candidate lies in one of the 3×3 cells around it.
	gh, gw := h/md+1, w/md+1
	head := growInt32(&s.gridHead, gh*gw)
	for i := range head {
		head[i] = -1
	}
	next := s.gridNext[:0]
	for _, c := range list {
		y, x := int(c.idx)/w, int(c.idx)%w
		cy, cx := y/md, x/md
		ok := true
	search:
		for gy := max(cy-1, 0); gy <= min(cy+1, gh-1); gy++ {
			for gx := max(cx-1, 0); gx <= min(cx+1, gw-1); gx++ {
				for k := head[gy*gw+gx]; k >= 0; k = next[k] {
					py, px := int(out[k])/w, int(out[k])%w
					if abs(py-y) < md && abs(px-x) < md {
						ok = false
						break search
					}
				}
			}
		}
		if ok {
			next = append(next, head[cy*gw+cx])
			head[cy*gw+cx] = int32(len(out))
			out = append(out, c.idx)
		}
	}
	s.gridNext = next
	return out
}

type peakCand struct {
	v   int32
	idx int32
}

// maxFilter is scipy.ndimage.maximum_filter with a (2r+1)² square and
// mode "nearest", by van Herk/Gil-Werman: block prefix and suffix maxima,
// first along rows, then along columns (a whole row at a time).
func (s *Segmenter) maxFilter(img []int32, h, w, r int) []int32 {
	k := 2*r + 1
	n := max(h, w)
	g := growInt32(&s.maxLineG, n)
	hh := growInt32(&s.maxLineH, n)
	tmp := growInt32(&s.maxTmp, h*w)
	for y := 0; y < h; y++ {
		window1(img[y*w:(y+1)*w], tmp[y*w:(y+1)*w], g, hh, r, k)
	}
	// Columns: G and H hold the prefix and suffix maxima of whole rows.
	G := growInt32(&s.maxG, h*w)
	H := growInt32(&s.maxH, h*w)
	for y := 0; y < h; y++ {
		src, dst := tmp[y*w:(y+1)*w], G[y*w:(y+1)*w]
		if y%k == 0 {
			copy(dst, src)
		} else {
			prev := G[(y-1)*w : y*w]
			for x := range dst {
				dst[x] = max(prev[x], src[x])
			}
		}
	}
	for y := h - 1; y >= 0; y-- {
		src, dst := tmp[y*w:(y+1)*w], H[y*w:(y+1)*w]
		if y == h-1 || (y+1)%k == 0 {
			copy(dst, src)
		} else {
			prev := H[(y+1)*w : (y+2)*w]
			for x := range dst {
				dst[x] = max(prev[x], src[x])
			}
		}
	}
	out := growInt32(&s.maxOut, h*w)
	for y := 0; y < h; y++ {
		a, b := max(y-r, 0), min(y+r, h-1)
		dst := out[y*w : (y+1)*w]
		switch {
		case a/k == b/k && a%k == 0:
			copy(dst, G[b*w:(b+1)*w])
		case a/k == b/k:
			copy(dst, H[a*w:(a+1)*w])
		default:
			ga, hb := H[a*w:(a+1)*w], G[b*w:(b+1)*w]
			for x := range dst {
				dst[x] = max(ga[x], hb[x])
			}
		}
	}
	return out
}

// window1 writes dst[i] = max(src[i-r .. i+r]) clamped to the line.
func window1(src, dst, g, hh []int32, r, k int) {
	n := len(src)
	for i := 0; i < n; i++ {
		if i%k == 0 {
			g[i] = src[i]
		} else {
			g[i] = max(g[i-1], src[i])
		}
	}
	for i := n - 1; i >= 0; i-- {
		if i == n-1 || (i+1)%k == 0 {
			hh[i] = src[i]
		} else {
			hh[i] = max(hh[i+1], src[i])
		}
	}
	for i := 0; i < n; i++ {
		a, b := i-r, i+r
		if a >= 0 && b < n { // interior: a and b in adjacent blocks, or a block exactly
			dst[i] = max(hh[a], g[b])
			continue
		}
		a, b = max(a, 0), min(b, n-1)
		switch {
		case a/k == b/k && a%k == 0:
			dst[i] = g[b]
		case a/k == b/k:
			dst[i] = hh[a]
		default:
			dst[i] = max(hh[a], g[b])
		}
	}
}

// isolated sets out to mask minus its binary opening with the 4-connected
// cross (scipy.ndimage.binary_opening defaults: outside counts as false).
func isolated(mask []bool, h, w int, out []bool) {
	in := func(y, x int) bool { return y >= 0 && y < h && x >= 0 && x < w && mask[y*w+x] }
	eroded := func(y, x int) bool {
		return in(y, x) && in(y-1, x) && in(y+1, x) && in(y, x-1) && in(y, x+1)
	}
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			opened := eroded(y, x) || eroded(y-1, x) || eroded(y+1, x) || eroded(y, x-1) || eroded(y, x+1)
			out[y*w+x] = mask[y*w+x] && !opened
		}
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}
