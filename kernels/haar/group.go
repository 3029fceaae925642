package haar

import "math"

// groupEps is detectMultiScale's GROUP_EPS.
const groupEps = 0.2

// group merges raw detections as cv::groupRectangles(rects, weights,
// minNeighbors, 0.2) and then clips them to the w×h image as
// CascadeClassifier does: similar rectangles are clustered, each cluster
// with more than minNeighbors members becomes its mean rectangle, and a
// cluster inside a bigger, better supported one is dropped. With
// minNeighbors 0 the raw detections come back, each with 1 neighbour.
func group(rects []Face, minNeighbors, w, h int) []Face {
	var out []Face
	if minNeighbors <= 0 {
		for _, r := range rects {
			r.Neighbors = 1
			out = appendClipped(out, r, w, h)
		}
		return out
	}
	labels, n := partition(rects)
	sums := make([]Face, n)
	for i, r := range rects {
		s := &sums[labels[i]]
		s.X += r.X
		s.Y += r.Y
		s.W += r.W
		s.H += r.H
		s.Neighbors++
	}
	for i := range sums {
		s := &sums[i]
		k := 1 / float32(s.Neighbors)
		s.X, s.Y = roundEven(float64(float32(s.X)*k)), roundEven(float64(float32(s.Y)*k))
		s.W, s.H = roundEven(float64(float32(s.W)*k)), roundEven(float64(float32(s.H)*k))
	}
	for i, r1 := range sums {
		n1 := r1.Neighbors
		if n1 <= minNeighbors {
			continue
		}
		inside := false
		for j, r2 := range sums {
			n2 := r2.Neighbors
			if j == i || n2 <= minNeighbors {
				continue
			}
			dx, dy := roundEven(float64(r2.W)*groupEps), roundEven(float64(r2.H)*groupEps)
			if r1.X >= r2.X-dx && r1.Y >= r2.Y-dy &&
				r1.X+r1.W <= r2.X+r2.W+dx && r1.Y+r1.H <= r2.Y+r2.H+dy &&
				(n2 > max(3, n1) || n1 < 3) {
				inside = true
				break
			}
		}
		if !inside {
			out = appendClipped(out, r1, w, h)
		}
	}
	return out
}

// partition clusters rects by OpenCV's SimilarRects(0.2) (union-find over
// every pair), numbering clusters in order of first appearance.
func partition(rects []Face) ([]int, int) {
	parent := make([]int, len(rects))
	rank := make([]int, len(rects))
	for i := range parent {
		parent[i] = -1
	}
	root := func(i int) int {
		for parent[i] >= 0 {
			i = parent[i]
		}
		return i
	}
	for i := range rects {
		ri := root(i)
		for j := range rects {
			if i == j || !similar(rects[i], rects[j]) {
				continue
			}
			rj := root(j)
			if rj == ri {
				continue
			}
			if rank[ri] > rank[rj] {
				parent[rj] = ri
			} else {
				parent[ri] = rj
				if rank[ri] == rank[rj] {
					rank[rj]++
				}
				ri = rj
			}
		}
	}
	labels := make([]int, len(rects))
	class := make(map[int]int)
	for i := range rects {
		r := root(i)
		c, ok := class[r]
		if !ok {
			c = len(class)
			class[r] = c
		}
		labels[i] = c
	}
	return labels, len(class)
}

func similar(a, b Face) bool {
	delta := groupEps * float64(min(a.W, b.W)+min(a.H, b.H)) * 0.5
	return math.Abs(float64(a.X-b.X)) <= delta && math.Abs(float64(a.Y-b.Y)) <= delta &&
		math.Abs(float64(a.X+a.W-b.X-b.W)) <= delta && math.Abs(float64(a.Y+a.H-b.Y-b.H)) <= delta
}

// appendClipped appends r cut to the image, unless nothing is left.
func appendClipped(out []Face, r Face, w, h int) []Face {
	x0, y0 := max(r.X, 0), max(r.Y, 0)
	x1, y1 := min(r.X+r.W, w), min(r.Y+r.H, h)
	if x1 <= x0 || y1 <= y0 {
		return out
	}
	return append(out, Face{X: x0, Y: y0, W: x1 - x0, H: y1 - y0, Neighbors: r.Neighbors})
}
