package watershed

import (
	"cmp"
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
// lowest float. Inside the box a peak is a pixel equal to the maximum of its
// (2md+1)² window (edges replicated, box edges count as image edges) and
// above the minimum of dist. If every foreground pixel of the box is such a
// maximum (a "trivial" image), only foreground pixels removed by a binary
// opening with the 4-connected cross qualify. Candidates are sorted by
// value, highest first, raster order among equals; when md > 1 a candidate
// is dropped if an earlier kept one is closer than md in Chebyshev
// distance.
func (s *Segmenter) peaks(d2 []int32, h, w, md int) []int32 {
	out := s.peakIdx[:0]
	defer func() { s.peakIdx = out }()

	// Bounding box of the foreground inside the excluded border.
	if h <= 2*md || w <= 2*md {
		return out
	}
	y0, y1, x0, x1 := h, -1, w, -1
	for y := md; y < h-md; y++ {
		b := s.bits[y*s.words : (y+1)*s.words]
		l := firstSet(b, md, w-md)
		if l < 0 {
			continue
		}
		y0, y1 = min(y0, y), y
		x0, x1 = min(x0, l), max(x1, lastSet(b, md, w-md))
	}
	if y1 < 0 {
		return out
	}
	// Inside the box, background (0 here, the lowest float in skimage) is
	// below every foreground distance, so it never decides whether a
	// foreground pixel is the maximum of its window. Such a pixel is also
	// the maximum of its 3x3 window: keep those first (edges replicated is
	// the window clamped to the box), then test them on the whole window.
	// vm holds the maxima over three rows, the box's edge columns repeated.
	list := s.peakList[:0]
	trivial := true
	cw := x1 - x0 + 1
	vm := growInt32(&s.vmax, cw+2)
	for y := y0; y <= y1; y++ {
		up, row, dn := d2[max(y-1, y0)*w+x0:], d2[y*w+x0:y*w+x1+1], d2[min(y+1, y1)*w+x0:]
		max3(vm[1:cw+1], up, row, dn)
		vm[0], vm[cw+1] = vm[1], vm[cw]
		var fail bool
		list, fail = peaks3(list, row, vm, int32(y*w+x0))
		trivial = trivial && !fail
	}
	n3 := len(list)
	list = s.maxima(d2, w, y0, y1, x0, x1, md, list)
	if trivial && len(list) == n3 {
		list = s.isolatedPeaks(d2, w, y0, y1, x0, x1, list)
	}
	threshold := int32(0) // the minimum of dist: 0 wherever there is background
	if !s.hasBG {
		threshold = slices.Min(d2)
	}
	list = slices.DeleteFunc(list, func(c peakCand) bool { return c.v <= threshold })
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

// maxima keeps the candidates (raster order, kept) that equal the maximum
// of their (2md+1)² window clamped to the box y0..y1, x0..x1: one by one
// when they are few, else through the separable maximum filter.
func (s *Segmenter) maxima(d2 []int32, w, y0, y1, x0, x1, md int, list []peakCand) []peakCand {
	k, ch, cw := 2*md+1, y1-y0+1, x1-x0+1
	if !s.forceMaxFilter && len(list)*k*k <= 4*ch*cw {
		return slices.DeleteFunc(list, func(c peakCand) bool {
			y, x := int(c.idx)/w, int(c.idx)%w
			for yy := max(y-md, y0); yy <= min(y+md, y1); yy++ {
				for _, u := range d2[yy*w+max(x-md, x0) : yy*w+min(x+md, x1)+1] {
					if u > c.v {
						return true
					}
				}
			}
			return false
		})
	}
	img := growInt32(&s.crop, ch*cw)
	for y := range ch {
		copy(img[y*cw:(y+1)*cw], d2[(y0+y)*w+x0:])
	}
	mx := s.maxFilter(img, ch, cw, md)
	return slices.DeleteFunc(list, func(c peakCand) bool {
		y, x := int(c.idx)/w-y0, int(c.idx)%w-x0
		return mx[y*cw+x] != c.v
	})
}

// isolatedPeaks replaces list by the foreground pixels of the box that a
// binary opening removes, in raster order: skimage's candidates for a
// "trivial" image, where every foreground pixel is its window's maximum.
func (s *Segmenter) isolatedPeaks(d2 []int32, w, y0, y1, x0, x1 int, list []peakCand) []peakCand {
	ch, cw := y1-y0+1, x1-x0+1
	mask := growBool(&s.cropMask, ch*cw)
	for y := range ch {
		for x, v := range d2[(y0+y)*w+x0 : (y0+y)*w+x1+1] {
			mask[y*cw+x] = v != 0 // foreground: distance at least 1
		}
	}
	cand := growBool(&s.cand, ch*cw)
	isolated(mask, ch, cw, cand)
	list = list[:0]
	for y := range ch {
		for x := range cw {
			if cand[y*cw+x] {
				i := (y0+y)*w + x0 + x
				list = append(list, peakCand{d2[i], int32(i)})
			}
		}
	}
	return list
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
