package watershed

import "math"

// flood is skimage.segmentation.watershed(-dist, markers, mask=fg) as
// scikit-image 0.25 runs it: default 4-connectivity, no compactness, no
// watershed line. labels holds the marker labels (0 elsewhere) on entry.
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
// pops in exactly skimage's order, provided no two markers share a value:
// markers tie at age 0, and skimage's binary heap orders such ties by its
// internal layout. When markers do tie, flood runs a copy of that heap
// (heap_general.pxi, step for step) instead, which is slower but exact.
func (s *Segmenter) flood(d2 []int32, fg []bool, h, w int, labels []int32) {
	// Work on a copy padded by one background pixel all round, as skimage
	// does: no edge tests, neighbours are fixed offsets.
	pw := w + 2
	pn := (h + 2) * pw
	pd := growInt32(&s.padD2, pn)
	pm := growBool(&s.padFG, pn)
	pl := growInt32(&s.padLabels, pn)
	clear(pm)
	clear(pl)
	maxD2 := int32(0)
	for y := 0; y < h; y++ {
		o := (y+1)*pw + 1
		copy(pd[o:o+w], d2[y*w:(y+1)*w])
		copy(pm[o:o+w], fg[y*w:(y+1)*w])
		copy(pl[o:o+w], labels[y*w:(y+1)*w])
		for _, d := range d2[y*w : (y+1)*w] {
			maxD2 = max(maxD2, d)
		}
	}
	nb := [4]int{-pw, -1, 1, pw} // up, left, right, down
	if !s.forceHeap && int(maxD2) <= 4*len(d2)+1024 && !markersTie(pd, pl, maxD2, s) {
		s.floodBuckets(pd, pm, pl, nb, maxD2)
	} else {
		s.floodHeap(pd, pm, pl, nb)
	}
	for y := 0; y < h; y++ {
		o := (y+1)*pw + 1
		copy(labels[y*w:(y+1)*w], pl[o:o+w])
	}
}

// markersTie reports whether two markers have the same squared distance.
func markersTie(d2, labels []int32, maxD2 int32, s *Segmenter) bool {
	seen := growBool(&s.seen, int(maxD2)+1)
	clear(seen)
	for i, l := range labels {
		if l != 0 {
			if seen[d2[i]] {
				return true
			}
			seen[d2[i]] = true
		}
	}
	return false
}

// floodBuckets and floodHeap work on padded arrays; nb holds the
// neighbour offsets.
//
// floodBuckets runs the flood on one FIFO list per squared distance,
// served from the highest distance down. Each pixel is pushed at most
// once, so one next-link per pixel holds every list.
func (s *Segmenter) floodBuckets(d2 []int32, fg []bool, labels []int32, nb [4]int, maxD2 int32) {
	head := growInt32(&s.bucketHead, int(maxD2)+1)
	tail := growInt32(&s.bucketTail, int(maxD2)+1)
	next := growInt32(&s.bucketNext, len(d2))
	for i := range head {
		head[i] = -1
	}
	push := func(b int32, i int) {
		next[i] = -1
		if head[b] < 0 {
			head[b] = int32(i)
		} else {
			next[tail[b]] = int32(i)
		}
		tail[b] = int32(i)
	}
	for i, l := range labels {
		if l != 0 {
			push(d2[i], i)
		}
	}
	for cur := maxD2; cur >= 0; {
		i := int(head[cur])
		if i < 0 {
			cur--
			continue
		}
		head[cur] = next[i]
		l := labels[i]
		for _, o := range nb {
			j := i + o
			if !fg[j] || labels[j] != 0 {
				continue
			}
			labels[j] = l
			push(min(d2[j], cur), j)
		}
	}
}

// floodHeap runs the flood on a copy of skimage's binary heap. Keys pack
// (value, age) into one uint64: the high half is MaxInt32 - d2 (a lower
// distance is a higher value), the low half the age.
func (s *Segmenter) floodHeap(d2 []int32, fg []bool, labels []int32, nb [4]int) {
	hp := s.heap[:0]
	for i, l := range labels {
		if l != 0 {
			hp.push(item{key: uint64(math.MaxInt32-d2[i]) << 32, idx: int32(i)})
		}
	}
	age := uint64(1)
	for len(hp) > 0 {
		e := hp.pop()
		i := int(e.idx)
		cur := e.key >> 32
		l := labels[i]
		for _, o := range nb {
			j := i + o
			if !fg[j] || labels[j] != 0 {
				continue
			}
			age++
			labels[j] = l
			v := max(uint64(math.MaxInt32-d2[j]), cur)
			hp.push(item{key: v<<32 | age, idx: int32(j)})
		}
	}
	s.heap = hp
}

// item is one heap entry: packed (value, age) key and flat index.
type item struct {
	key uint64
	idx int32
}

// heap is the binary heap of skimage's heap_general.pxi, operation for
// operation, so that equal keys (tied markers) come out in the same order.
type heap []item

func (h *heap) push(e item) {
	a := append(*h, e)
	*h = a
	c := len(a) - 1
	for c > 0 {
		p := (c+1)/2 - 1
		if a[c].key >= a[p].key {
			break
		}
		a[c], a[p] = a[p], a[c]
		c = p
	}
}

func (h *heap) pop() item {
	a := *h
	top := a[0]
	n := len(a) - 1
	a[0] = a[n]
	a = a[:n]
	*h = a
	i := 0
	for {
		l, r := 2*i+1, 2*i+2
		if l >= n {
			break
		}
		m := i
		if a[l].key < a[i].key {
			m = l
		}
		if r < n && a[r].key < a[m].key {
			m = r
		}
		if m == i {
			break
		}
		a[i], a[m] = a[m], a[i]
		i = m
	}
	return top
}
