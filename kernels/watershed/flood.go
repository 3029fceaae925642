package watershed

import (
	"cmp"
	"math"
	"math/bits"
	"slices"
)

// flood is skimage.segmentation.watershed(-dist, markers, mask=fg) as
// scikit-image 0.25 runs it: default 4-connectivity, no compactness, no
// watershed line, markers numbered 1, 2, ... in the order of peaks; the
// result goes to labels.
//
// skimage keeps a priority queue ordered by (value, age). Markers enter
// with their own value and age 0; a popped pixel pushes each unlabelled
// foreground neighbour (up, left, right, down: the order of skimage's
// raveled offsets) with the next age and max(its value, the popped value),
// labelling it at once with the popped pixel's label. Values here are
// squared distances (a higher distance is a lower value), which order
// exactly like -dist.
//
// Because a push is never below the value just popped, the queue is
// monotone and, within one value, first in first out. A bucket queue then
// pops in exactly skimage's order as long as no two entries share a key.
// Only markers can (they tie at age 0), and skimage's binary heap orders
// such ties by its internal layout. Tied markers in different foreground
// components do not matter: the order of pops within each component is all
// that decides its labels. So when two markers in one 4-connected
// component share a value, flood runs a copy of skimage's heap
// (heap_general.pxi, step for step) until the lowest such tie has been
// popped, then hands what is left in the heap, in key order, to the bucket
// queue.
func (s *Segmenter) flood(d2 []int32, h, w int, peaks, labels []int32) {
	if len(peaks) == 0 {
		clear(labels)
		return
	}
	// peak_local_max lists peaks by value, so tied markers are neighbours.
	top, tie := d2[peaks[0]], false
	for k := 1; k < len(peaks); k++ {
		tie = tie || d2[peaks[k]] == d2[peaks[k-1]]
	}
	buckets := !s.forceHeap && int(top) <= 4*len(d2)+1024
	var hist []int32
	if buckets {
		hist = growInt32(&s.bucketStart, int(top)+2+histSpare)
		clear(hist)
	}
	// One state per pixel, on a copy padded by one background pixel all
	// round, as skimage does: no edge tests, neighbours are fixed offsets.
	// The state is 0 for background, the label once labelled, and ^d2
	// (negative) for foreground not labelled yet. hist[d+1] counts the
	// foreground pixels at d, those above top at top.
	pw := w + 2
	st := growInt32(&s.state, (h+2)*pw)
	clear(st[:pw])
	clear(st[(h+1)*pw:])
	for y := range h {
		row := st[(y+1)*pw : (y+2)*pw]
		row[0], row[w+1] = 0, 0
		if isZero(s.bits[y*s.words : (y+1)*s.words]) {
			clear(row[1 : w+1])
			continue
		}
		stateRow(row[1:w+1], d2[y*w:(y+1)*w], hist, top)
	}
	m := s.markers[:0]
	for k, i := range peaks {
		p := (int(i)/w+1)*pw + int(i)%w + 1
		st[p] = int32(k + 1)
		m = append(m, peakCand{d2[i], int32(p)})
	}
	s.markers = m
	nb := [4]int{-pw, -1, 1, pw}   // up, left, right, down
	stop := uint64(math.MaxUint64) // the heap runs to the end
	if buckets {
		stop = 0 // the heap only takes the markers
		if v := s.lowestTie(h, w, peaks, m, tie); v >= 0 {
			stop = key(v, 0)
		}
	}
	left, cur, ages := s.floodHeap(st, nb, m, stop, top)
	if buckets {
		s.floodBuckets(st, nb, hist[:top+2], cur, left, ages)
	}
	for y := range h {
		labelsRow(labels[y*w:(y+1)*w], st[(y+1)*pw+1:(y+2)*pw-1])
	}
}

// lowestTie returns the lowest value shared by two markers (in peak
// order) in one 4-connected foreground component, or -1 if there is none
// (or tie says no two markers share a value). Only there can the order of
// tied markers decide labels, since the flood never crosses background.
// peaks are the markers' flat indices, markers their values in the same
// order. Components come from the runs of foreground of each row (s.bits),
// joined where runs of neighbouring rows overlap.
func (s *Segmenter) lowestTie(h, w int, peaks []int32, markers []peakCand, tie bool) int32 {
	if !tie {
		return -1
	}
	// Runs, row by row: row y's are start[y]..start[y+1]-1, [ra, rb).
	start := growInt32(&s.runStart, h+1)
	ra, rb := s.runA[:0], s.runB[:0]
	for y := range h {
		start[y] = int32(len(ra))
		b := s.bits[y*s.words : (y+1)*s.words]
		for a := firstSet(b, 0, w); a >= 0; a = firstSet(b, a, w) {
			e := firstClear(b, a, w)
			ra, rb = append(ra, int32(a)), append(rb, int32(e))
			a = e
		}
	}
	start[h] = int32(len(ra))
	s.runA, s.runB = ra, rb
	parent := growInt32(&s.runParent, len(ra))
	for i := range parent {
		parent[i] = int32(i)
	}
	find := func(i int32) int32 {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	for y := 1; y < h; y++ {
		i, ie, j, je := start[y-1], start[y], start[y], start[y+1]
		for i < ie && j < je {
			if ra[i] < rb[j] && ra[j] < rb[i] { // 4-connected: the runs share a column
				if a, b := find(i), find(j); a != b {
					parent[max(a, b)] = min(a, b)
				}
			}
			if rb[i] <= rb[j] {
				i++
			} else {
				j++
			}
		}
	}
	comp := func(p int32) int32 {
		y, x := int(p)/w, int32(int(p)%w)
		lo, hi := start[y], start[y+1]-1 // the run holding x: the last starting at or before it
		for lo < hi {
			mid := (lo + hi + 1) / 2
			if ra[mid] <= x {
				lo = mid
			} else {
				hi = mid - 1
			}
		}
		return find(lo)
	}
	seen := growInt32(&s.runSeen, len(ra)) // first marker (+1) of the group seen in this component
	clear(seen)
	low := int32(-1)
	for k := 0; k < len(markers); {
		e := k + 1
		for e < len(markers) && markers[e].v == markers[k].v {
			e++
		}
		if e-k > 1 { // markers k..e-1 share a value: peaks are sorted by value
			for _, p := range peaks[k:e] {
				c := comp(p)
				if seen[c] == int32(k+1) {
					low = markers[k].v // the lowest so far: values fall along the list
					break
				}
				seen[c] = int32(k + 1)
			}
		}
		k = e
	}
	return low
}

// floodHeap and floodBuckets work on the padded states; nb holds the
// neighbour offsets.
//
// floodHeap runs the flood on a copy of skimage's binary heap while its
// smallest key is at most stop. Keys pack (value, age) into one uint64
// (see key). Markers enter in raster order, as skimage pushes them. It
// returns the entries left, in heap order, the squared distance of the
// last pop (top, the highest marker's, if none) and the last age given.
func (s *Segmenter) floodHeap(st []int32, nb [4]int, markers []peakCand, stop uint64, top int32) ([]item, int32, uint64) {
	slices.SortFunc(markers, func(a, b peakCand) int { return cmp.Compare(a.idx, b.idx) })
	hp := s.heap[:0]
	for _, m := range markers {
		hp.push(item{key: key(m.v, 0), idx: m.idx})
	}
	last, age := key(top, 0), uint64(1)
	for len(hp) > 0 && hp[0].key <= stop {
		e := hp.pop()
		i := int(e.idx)
		last = e.key
		l := st[i]
		for _, o := range nb {
			j := i + o
			if st[j] >= 0 {
				continue
			}
			age++
			v := max(uint64(math.MaxInt32-^st[j]), e.key>>32)
			st[j] = l
			hp.push(item{key: v<<32 | age, idx: int32(j)})
		}
	}
	s.heap = hp
	return hp, value(last), age
}

// noKey is above every key (values are at most MaxInt32 - 1, keys below
// 1<<63).
const noKey = 1<<63 - 1

// key packs a squared distance d and an age into a heap key: the high half
// is MaxInt32 - d (a lower distance is a higher value), the low half the age.
func key(d int32, age uint64) uint64 { return uint64(math.MaxInt32-d)<<32 | age }

// value is the squared distance of a key.
func value(k uint64) int32 { return math.MaxInt32 - int32(k>>32) }

// floodBuckets continues the flood at squared distance cur with one FIFO
// per squared distance, from cur down: no push is above the value popped.
// pending holds the entries not yet popped (markers at least), at cur or
// below, with ages up to ages. Pushes at a lower value than the current
// one are pixels at their own distance, each at most once, so every such
// FIFO gets its own slice of seg, placed by the histogram count
// (count[d+1] pixels at d); the current value's FIFO grows in place past
// its slice.
func (s *Segmenter) floodBuckets(st []int32, nb [4]int, count []int32, cur int32, pending []item, ages uint64) {
	start := count
	for b := 1; b < len(start); b++ {
		start[b] += start[b-1]
	}
	top := len(start) - 2
	fill := growInt32(&s.bucketFill, top+1)
	copy(fill, start)
	seg := growInt32(&s.bucketSeg, int(start[top+1]))
	// Pending entries go to their value's FIFO in pop order, which within
	// one value is age order. So they go in age order: the markers first
	// (age 0; tied ones among them lie in different components, so their
	// order does not matter), then the others, whose ages differ, through
	// a table by age rather than a sort.
	byAge := growInt32(&s.byAge, int(ages)+1)
	for i := range byAge {
		byAge[i] = -1
	}
	for k, e := range pending {
		if a := e.key & (1<<32 - 1); a > 0 {
			byAge[a] = int32(k)
			continue
		}
		v := value(e.key)
		seg[fill[v]] = e.idx
		fill[v]++
	}
	for _, k := range byAge[1:] {
		if k >= 0 {
			v := value(pending[k].key)
			seg[fill[v]] = pending[k].idx
			fill[v]++
		}
	}
	// The FIFO at cur grows in place past its slice: what it takes are
	// pixels at cur or above, each once, and seg has a slot for each of
	// those from start[cur] on (the FIFOs above cur are spent). Pending
	// entries at cur above their own distance, and pixels above top
	// (counted at top), fit for the same reason.
	for ; cur >= 0; cur-- {
		floodLevel(st, nb, seg[start[cur]:fill[cur]], seg, fill, cur)
	}
}

// floodLevel pops the FIFO q at squared distance cur, pushing what it
// reaches onto q (at cur or above: q's spare capacity is seg's slots past
// it) or into its own FIFO in seg (below).
func floodLevel(st []int32, nb [4]int, q, seg, fill []int32, cur int32) {
	pw := nb[3]
	for k := 0; k < len(q); k++ {
		i := int(q[k])
		n := st[i-pw : i+pw+1]
		// The neighbours not labelled yet (negative states), as bits in
		// push order; usually exactly one.
		m := uint32(n[0])>>31 | uint32(n[pw-1])>>31<<1 | uint32(n[pw+1])>>31<<2 | uint32(n[2*pw])>>31<<3
		if m == 0 {
			continue
		}
		l := n[pw]
		for ; m != 0; m &= m - 1 {
			j := i + nb[bits.TrailingZeros32(m)&3]
			d := ^st[j]
			st[j] = l
			if d < cur {
				f := fill[d]
				seg[f] = int32(j)
				fill[d] = f + 1
			} else {
				q = append(q, int32(j))
			}
		}
	}
}

// item is one heap entry: packed (value, age) key and flat index.
type item struct {
	key uint64
	idx int32
}

// heap is the binary heap of skimage's heap_general.pxi, operation for
// operation, so that equal keys (tied markers) come out in the same order.
// The sifts carry the moving entry in hand instead of swapping it along:
// same compares, same layout.
type heap []item

func (h *heap) push(e item) {
	a := append(*h, e)
	*h = a
	c := len(a) - 1
	for c > 0 {
		p := (c+1)/2 - 1
		if e.key >= a[p].key {
			break
		}
		a[c] = a[p]
		c = p
	}
	a[c] = e
}

func (h *heap) pop() item {
	a := *h
	top := a[0]
	n := len(a) - 1
	e := a[n]
	a = a[:n]
	*h = a
	if n == 0 {
		return top
	}
	// skimage moves the last entry to the root and sifts it down: to the
	// lesser child (the left one when they are equal) while that child is
	// less than it. The child is picked without a branch (it is a coin
	// toss each level), reading a sentinel above every key at n when the
	// last parent has no right child; a[n] held e, which is in hand.
	a = a[:n+1]
	a[n].key = noKey
	i := 0
	for l := 1; l < n; l = 2*i + 1 {
		lk, rk := a[l].key, a[l+1].key
		c := l + int((rk-lk)>>63) // the right child if less: keys are below 1<<63
		if min(lk, rk) >= e.key {
			break
		}
		a[i] = a[c]
		i = c
	}
	a[i] = e
	return top
}
