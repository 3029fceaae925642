package watershed

import "math/bits"

// The row loops of the pipeline. vec_simd.go runs them 8 wide where the
// build and the CPU allow (AVX2); these scalar versions are the portable
// build's and the vector loops' tails, and the tests check one against the
// other.

// colDownScalar is one row of the downward column scan, straight from the
// pixels: row[x] = min(prev[x]+1, far) where pix[x] > t, else 0. It also
// sets bit x of bits (cleared by the caller) for each foreground pixel.
func colDownScalar(row, prev []int32, pix []uint8, t, far int32, bits []uint64) {
	prev, pix = prev[:len(row)], pix[:len(row)]
	for x := range row {
		v := int32(0)
		if int32(pix[x]) > t {
			v = min(prev[x]+1, far)
			bits[x>>6] |= 1 << (x & 63)
		}
		row[x] = v
	}
}

// colUpScalar is one row of the upward column scan: row[x] = min(row[x],
// next[x]+1).
func colUpScalar(row, next []int32) {
	next = next[:len(row)]
	for x := range row {
		row[x] = min(row[x], next[x]+1)
	}
}

// squaresScalar writes dst[x] = src[x]².
func squaresScalar(dst, src []int32) {
	src = src[:len(dst)]
	for x, v := range src {
		dst[x] = v * v
	}
}

// rowMinScalar is the row pass of the distance transform by brute force:
// out[q] = min over k of sq[pad+q±k] + k², where sq holds the squared
// column distances of one row from pad on, padded on both sides with
// values no term beats. Offset k can only lower out[q] while k² is below
// the value so far, so the search stops there: after about the distance
// itself. It gives up (false, out partly written) if some pixel needs
// offsets beyond limit, where the envelope is the cheaper way.
func rowMinScalar(out, sq []int32, pad, limit int) bool {
	for q := range out {
		c := sq[pad+q]
		for k := 1; k*k < int(c); k++ {
			if k > limit {
				return false
			}
			kk := int32(k * k)
			c = min(c, sq[pad+q-k]+kk, sq[pad+q+k]+kk)
		}
		out[q] = c
	}
	return true
}

// peaks3Scalar appends the 3x3 maxima of one row of the peak search box:
// row holds the box's distances on this row, vm the maxima over the rows
// above, here and below, one per column with the box's edge columns
// repeated at both ends (len(row)+2). A candidate is foreground (not 0)
// and at least the maximum of vm around it; base is the flat index of
// row[0]. fail says whether some foreground pixel was not a candidate.
func peaks3Scalar(list []peakCand, row, vm []int32, base int32) ([]peakCand, bool) {
	fail := false
	vm = vm[:len(row)+2]
	for x, v := range row {
		if v == 0 {
			continue
		}
		if v < max(vm[x], vm[x+1], vm[x+2]) {
			fail = true
			continue
		}
		list = append(list, peakCand{v, base + int32(x)})
	}
	return list, fail
}

// max3Scalar writes dst[x] = max(a[x], b[x], c[x]).
func max3Scalar(dst, a, b, c []int32) {
	a, b, c = a[:len(dst)], b[:len(dst)], c[:len(dst)]
	for x := range dst {
		dst[x] = max(a[x], b[x], c[x])
	}
}

// stateRowScalar writes the flood's states for one row of distances:
// st[x] = ^d[x] (negative) for foreground, 0 for background; and with a
// histogram, hist[min(d, top)+1]++ for each foreground d. hist has
// histSpare entries past top+1 that the vector loop may count into.
func stateRowScalar(st, d []int32, hist []int32, top int32) {
	d = d[:len(st)]
	for x, v := range d {
		s := int32(0)
		if v != 0 {
			s = ^v
			if hist != nil {
				hist[min(v, top)+1]++
			}
		}
		st[x] = s
	}
}

// histSpare is the room past a histogram's end for stateRow's spare counts.
const histSpare = 8

// labelsRowScalar writes l[x] = max(st[x], 0): the labels of one row of
// states.
func labelsRowScalar(l, st []int32) {
	st = st[:len(l)]
	for x, v := range st {
		l[x] = max(v, 0)
	}
}

// firstSet returns the first set bit of b in lo..hi-1, or -1.
func firstSet(b []uint64, lo, hi int) int {
	for i := lo; i < hi; {
		w := b[i>>6] >> (i & 63)
		if w != 0 {
			if i += bits.TrailingZeros64(w); i < hi {
				return i
			}
			return -1
		}
		i = (i | 63) + 1
	}
	return -1
}

// lastSet returns the last set bit of b in lo..hi-1, or -1.
func lastSet(b []uint64, lo, hi int) int {
	for i := hi - 1; i >= lo; {
		w := b[i>>6] << (63 - i&63)
		if w != 0 {
			if i -= bits.LeadingZeros64(w); i >= lo {
				return i
			}
			return -1
		}
		i = (i &^ 63) - 1
	}
	return -1
}

// firstClear returns the first clear bit of b in lo..hi-1, or hi.
func firstClear(b []uint64, lo, hi int) int {
	for i := lo; i < hi; {
		w := ^b[i>>6] >> (i & 63)
		if w != 0 {
			return min(i+bits.TrailingZeros64(w), hi)
		}
		i = (i | 63) + 1
	}
	return hi
}

func isZero(b []uint64) bool {
	for _, v := range b {
		if v != 0 {
			return false
		}
	}
	return true
}
