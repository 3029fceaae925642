package blob

import (
	"math"
	"slices"
)

// pruner removes overlapping blobs as skimage's _prune_blobs does; its
// buffers are reused between calls.
type pruner struct {
	y, x, s []float64  // blob rows, columns, sigmas (0 = removed)
	head    []int32    // grid cell -> first blob index (-1: none)
	next    []int32    // blob -> next blob in the same cell
	js      []int32    // candidate partners of one blob
	pr      [][2]int32 // pairs (i < j) in lexicographic order
	table   []int32    // CPython set table: index into pr, -1 empty
	spare   []int32    // second table buffer for resizes
}

// prune converts peaks (already in peak_local_max order) to blobs and, for
// every pair whose overlap fraction exceeds p.Overlap, zeroes the smaller
// sigma (the first of the pair on a tie). The result depends on the order
// the pairs are visited in; see pySetOrder. The peaks and pairs take
// their memory from mem.
func (pr *pruner) prune(peaks []Peak, sigmas []float64, p Params, mem *Memory) ([]Blob, error) {
	n := len(peaks)
	if !mem.take(int64(n) * peakBytes) {
		return nil, tooMany(n, 0, p.Threshold, mem.Free)
	}
	pr.y, pr.x, pr.s = grow(pr.y, n), grow(pr.x, n), grow(pr.s, n)
	maxS, maxY, maxX := 0.0, 0.0, 0.0
	for i, p := range peaks {
		pr.y[i], pr.x[i], pr.s[i] = float64(p.Y), float64(p.X), sigmas[p.K]
		maxS = max(maxS, pr.s[i])
		maxY, maxX = max(maxY, pr.y[i]), max(maxX, pr.x[i])
	}
	if n > 1 {
		if err := pr.pairs(n, maxS, maxY, maxX, p, mem); err != nil {
			return nil, err
		}
	}
	out := make([]Blob, 0, n)
	for i := range n {
		if pr.s[i] > 0 {
			out = append(out, Blob{float32(pr.y[i]), float32(pr.x[i]), float32(pr.s[i])})
		}
	}
	return out, nil
}

// pairs finds all pairs within 2*sqrt(2)*maxS (skimage's KD-tree query
// radius) through a uniform grid and applies the overlap rule to them in the
// order skimage does.
func (pr *pruner) pairs(n int, maxS, maxY, maxX float64, p Params, mem *Memory) error {
	dist := 2 * maxS * math.Sqrt2
	cell := max(dist, math.Sqrt((maxY+1)*(maxX+1)/float64(n)))
	gh, gw := int(maxY/cell)+1, int(maxX/cell)+1
	pr.head = slices.Grow(pr.head[:0], gh*gw)[:gh*gw]
	for i := range pr.head {
		pr.head[i] = -1
	}
	pr.next = slices.Grow(pr.next[:0], n)[:n]
	for i := n - 1; i >= 0; i-- {
		c := int(pr.y[i]/cell)*gw + int(pr.x[i]/cell)
		pr.next[i], pr.head[c] = pr.head[c], int32(i)
	}
	d2 := dist * dist
	pr.pr = pr.pr[:0]
	for i := range n {
		cy, cx := int(pr.y[i]/cell), int(pr.x[i]/cell)
		js := pr.js[:0]
		for gy := max(cy-1, 0); gy <= min(cy+1, gh-1); gy++ {
			for gx := max(cx-1, 0); gx <= min(cx+1, gw-1); gx++ {
				for j := pr.head[gy*gw+gx]; j >= 0; j = pr.next[j] {
					dy, dx := pr.y[j]-pr.y[i], pr.x[j]-pr.x[i]
					if int(j) > i && dy*dy+dx*dx <= d2 {
						js = append(js, j)
					}
				}
			}
		}
		slices.Sort(js)
		if m := len(pr.pr) + len(js); m > math.MaxInt32 || !mem.take(int64(n)*peakBytes+int64(m)*pairBytes) {
			return tooMany(n, len(pr.pr), p.Threshold, mem.Free)
		}
		for _, j := range js {
			pr.pr = append(pr.pr, [2]int32{int32(i), j})
		}
		pr.js = js
	}
	// skimage iterates the Python set query_pairs returns: replay CPython's
	// set table to visit the pairs in the same order.
	pr.table, pr.spare = pySetOrder(pr.table, pr.spare, pr.pr)
	for _, t := range pr.table {
		if t < 0 {
			continue
		}
		i, j := pr.pr[t][0], pr.pr[t][1]
		if blobOverlap(pr.y[i], pr.x[i], pr.s[i], pr.y[j], pr.x[j], pr.s[j]) > p.Overlap {
			if pr.s[i] > pr.s[j] {
				pr.s[j] = 0
			} else {
				pr.s[i] = 0
			}
		}
	}
	return nil
}

// blobOverlap is skimage's _blob_overlap for 2D blobs: the fraction of the
// smaller disk's area covered by the other, radii scaled to sigma*sqrt(2).
func blobOverlap(y1, x1, s1, y2, x2, s2 float64) float64 {
	if s1 == 0 && s2 == 0 {
		return 0
	}
	var ms, r1, r2 float64
	if s1 > s2 {
		ms, r1, r2 = s1, 1, s2/s1
	} else {
		ms, r1, r2 = s2, s1/s2, 1
	}
	den := ms * math.Sqrt2
	dy, dx := y2/den-y1/den, x2/den-x1/den
	d := math.Sqrt(dy*dy + dx*dx)
	if d > r1+r2 {
		return 0
	}
	if d <= math.Abs(r1-r2) {
		return 1
	}
	return diskOverlap(d, r1, r2)
}

// diskOverlap is skimage's _compute_disk_overlap.
func diskOverlap(d, r1, r2 float64) float64 {
	clip := func(v float64) float64 { return min(max(v, -1), 1) }
	acos1 := math.Acos(clip((d*d + r1*r1 - r2*r2) / (2 * d * r1)))
	acos2 := math.Acos(clip((d*d + r2*r2 - r1*r1) / (2 * d * r2)))
	a, b, c, e := -d+r2+r1, d-r2+r1, d+r2-r1, d+r2+r1
	area := float64(r1*r1*acos1) + float64(r2*r2*acos2) - 0.5*math.Sqrt(math.Abs(a*b*c*e))
	return area / (math.Pi * (min(r1, r2) * min(r1, r2)))
}

// pySetOrder returns the slot table CPython 3.11 builds when the tuples
// (i, j) of pairs are added, in the given order, to an empty set();
// iterating a set walks this table. Iteration order depends almost only on
// the tuple hashes, so adding the pairs in lexicographic order (not the
// KD-tree's order) reproduces skimage's order in practice. spare is a
// second buffer for the resizes.
func pySetOrder(table, spare []int32, pairs [][2]int32) (_, _ []int32) {
	const minSize = 8
	table = resetTable(table, minSize)
	for n := range pairs {
		pySetInsert(table, pairs, int32(n))
		fill, mask := n+1, len(table)-1
		if fill*5 < mask*3 {
			continue
		}
		minUsed := fill * 4
		if fill > 50000 {
			minUsed = fill * 2
		}
		size := minSize
		for size <= minUsed {
			size <<= 1
		}
		old := table
		table, spare = resetTable(spare, size), old
		for _, t := range old {
			if t >= 0 {
				pySetInsert(table, pairs, t)
			}
		}
	}
	return table, spare
}

func resetTable(t []int32, n int) []int32 {
	t = slices.Grow(t[:0], n)[:n]
	for i := range t {
		t[i] = -1
	}
	return t
}

// pySetInsert is CPython's set_insert_clean / set_add_entry probe: up to 10
// linear slots, then the perturbed jump.
func pySetInsert(table []int32, pairs [][2]int32, n int32) {
	const linearProbes, perturbShift = 9, 5
	h := pyTupleHash(pairs[n][0], pairs[n][1])
	mask := uint64(len(table) - 1)
	perturb, i := h, h&mask
	for {
		probes := uint64(0)
		if i+linearProbes <= mask {
			probes = linearProbes
		}
		for e := i; e <= i+probes; e++ {
			if table[e] < 0 {
				table[e] = n
				return
			}
		}
		perturb >>= perturbShift
		i = (i*5 + 1 + perturb) & mask
	}
}

// pyTupleHash is hash((i, j)) for small non-negative ints (CPython 3.8+,
// 64-bit: the xxHash-based tuplehash).
func pyTupleHash(i, j int32) uint64 {
	const p1, p2, p5 = 11400714785074694791, 14029467366897019727, 2870177450012600261
	acc := uint64(p5)
	for _, lane := range [2]uint64{uint64(i), uint64(j)} {
		acc += lane * p2
		acc = acc<<31 | acc>>33
		acc *= p1
	}
	acc += 2 ^ (p5 ^ 3527539)
	if acc == math.MaxUint64 { // -1 is reserved for errors
		return 1546275796
	}
	return acc
}
