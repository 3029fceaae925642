package watershed

import (
	"cmp"
	"math"
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
func (s *Segmenter) flood(d2 []int32, fg []bool, h, w int, peaks, labels []int32) {
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
		hist = growInt32(&s.bucketStart, int(top)+2)
		clear(hist)
	}
	// One state per pixel, on a copy padded by one background pixel all
	// round, as skimage does: no edge tests, neighbours are fixed offsets.
	// The state is 0 for background, the label once labelled, and ^d2
	// (negative) for foreground not labelled yet. hist[d+1] counts the
	// foreground pixels at d <= top.
	pw := w + 2
	st := growInt32(&s.state, (h+2)*pw)
	clear(st[:pw])
	clear(st[(h+1)*pw:])
	for y := range h {
		row, d, f := st[(y+1)*pw:(y+2)*pw], d2[y*w:(y+1)*w], fg[y*w:(y+1)*w]
		row[0], row[w+1] = 0, 0
		for x, in := range f {
			v := int32(0)
			if in {
				v = ^d[x]
				if hist != nil && d[x] <= top {
					hist[d[x]+1]++
				}
			}
			row[x+1] = v
		}
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
		if v := s.lowestTie(st, pw, m, tie); v >= 0 {
			stop = key(v, 0)
		}
	}
	left, cur := s.floodHeap(st, nb, m, stop, top)
	if buckets {
		s.floodBuckets(st, nb, hist, cur, left)
	}
	for y := range h {
		row, l := st[(y+1)*pw+1:(y+2)*pw-1], labels[y*w:(y+1)*w]
		for x := range l {
			l[x] = max(row[x], 0)
		}
	}
}

// lowestTie returns the lowest value shared by two markers (in peak
// order) in one 4-connected foreground component, or -1 if there is none
// (or tie says no two markers share a value). Only there can the order of
// tied markers decide labels, since the flood never crosses background.
// It fills the components of tied markers run by run; pw is the padded
// row length.
func (s *Segmenter) lowestTie(st []int32, pw int, markers []peakCand, tie bool) int32 {
	if !tie {
		return -1
	}
	tied := func(k int) bool {
		return k > 0 && markers[k-1].v == markers[k].v || k+1 < len(markers) && markers[k+1].v == markers[k].v
	}
	floor := int32(-1) // the lowest tied value: no need to look further once found
	for k := range markers {
		if tied(k) {
			floor = markers[k].v
		}
	}
	done := growBool(&s.compDone, len(st))
	clear(done)
	seen := growInt32(&s.compSeen, int(markers[0].v)+1) // component that has a marker at this value
	clear(seen)
	stack := growInt32(&s.queue, len(st))[:0]
	id, low := int32(0), int32(-1)
	for k, m := range markers {
		if !tied(k) || done[m.idx] {
			continue
		}
		id++
		stack = append(stack[:0], m.idx)
		for len(stack) > 0 {
			i := int(stack[len(stack)-1])
			stack = stack[:len(stack)-1]
			if done[i] {
				continue
			}
			a, b := i, i // the run through i: the padding stops it
			for st[a-1] != 0 {
				a--
			}
			for st[b+1] != 0 {
				b++
			}
			for x := a; x <= b; x++ {
				done[x] = true
				if l := st[x]; l > 0 {
					v := markers[l-1].v
					if seen[v] == id && (low < 0 || v < low) {
						if low = v; low == floor {
							return low
						}
					}
					seen[v] = id
				}
				for _, y := range [2]int{x - pw, x + pw} { // one push per run above and below
					if st[y] != 0 && !done[y] && (x == a || st[y-1] == 0) {
						stack = append(stack, int32(y))
					}
				}
			}
		}
	}
	return low
}

// floodHeap and floodBuckets work on the padded states; nb holds the
// neighbour offsets.
//
// floodHeap runs the flood on a copy of skimage's binary heap while its
// smallest key is at most stop. Keys pack (value, age) into one uint64
// (see key). Markers enter in raster order, as skimage pushes them. It
// returns the entries left, in heap order, and the squared distance of the
// last pop (top, the highest marker's, if none).
func (s *Segmenter) floodHeap(st []int32, nb [4]int, markers []peakCand, stop uint64, top int32) ([]item, int32) {
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
	return hp, value(last)
}

// key packs a squared distance d and an age into a heap key: the high half
// is MaxInt32 - d (a lower distance is a higher value), the low half the age.
func key(d int32, age uint64) uint64 { return uint64(math.MaxInt32-d)<<32 | age }

// value is the squared distance of a key.
func value(k uint64) int32 { return math.MaxInt32 - int32(k>>32) }

// floodBuckets continues the flood at squared distance cur with one FIFO
// per squared distance, from cur down: no push is above the value popped.
// pending holds the entries not yet popped (markers at least), at cur or
// below. Pushes at a lower value than the current one are pixels at their
// own distance, each at most once, so every such FIFO gets its own slice
// of seg, placed by the histogram count (count[d+1] pixels at d); the
// current value's FIFO continues in q.
func (s *Segmenter) floodBuckets(st []int32, nb [4]int, count []int32, cur int32, pending []item) {
	start := count
	for b := 1; b < len(start); b++ {
		start[b] += start[b-1]
	}
	top := len(start) - 2
	fill := growInt32(&s.bucketFill, top+1)
	copy(fill, start)
	seg := growInt32(&s.bucketSeg, int(start[top+1]))
	q := growInt32(&s.queue, len(st))[:0]
	// Pending entries in pop order; tied markers among them lie in
	// different components, so their order does not matter.
	slices.SortFunc(pending, func(a, b item) int { return cmp.Compare(a.key, b.key) })
	for _, e := range pending {
		if v := value(e.key); v == cur {
			q = append(q, e.idx)
		} else {
			seg[fill[v]] = e.idx
			fill[v]++
		}
	}
	for ; cur >= 0; cur-- {
		q = append(q, seg[start[cur]:fill[cur]]...)
		for k := 0; k < len(q); k++ {
			i := int(q[k])
			l := st[i]
			for _, j := range [4]int{i + nb[0], i + nb[1], i + nb[2], i + nb[3]} {
				v := st[j]
				if v >= 0 {
					continue
				}
				st[j] = l
				if d := ^v; d < cur {
					seg[fill[d]] = int32(j)
					fill[d]++
				} else {
					q = append(q, int32(j))
				}
			}
		}
		q = q[:0]
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
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m, k := i, e.key
		if a[l].key < k {
			m, k = l, a[l].key
		}
		if r := l + 1; r < n && a[r].key < k {
			m = r
		}
		if m == i {
			break
		}
		a[i] = a[m]
		i = m
	}
	a[i] = e
	return top
}
