package haar

import "unsafe"

// program is a cascade laid out for one integral-image stride: every
// feature's rectangles as offsets from a window's top-left corner.
type program struct {
	c            *Cascade
	stride, rows int
	norm         [4]int32 // the variance rectangle (the window less a 1-pixel border), in elements
	span         int      // elements past a window's corner that features read
	stages       []pstage
	stumps       []stump // when every tree is a stump
	pairs        []pair  // else when every tree is a pair
	trees        []ptree
	nodes        []pnode
	leaves       []float32
}

type ptree struct{ node, leaf int32 } // first node and leaf in nodes and leaves

type pnode struct {
	f    opt // the node's feature, copied for locality
	thr  float32
	next [2]int32 // child when the value is below thr, at or above; <= 0: leaf
}

type pstage struct {
	n   int // trees
	thr float32
}

// opt is a feature as integral-image offsets and weights.
type opt struct {
	o [3][4]int32
	w [3]float32
}

type stump struct {
	f   opt
	thr float32
	lr  [2]float32 // leaves: below thr, at or above
}

// pair is a tree of at most two nodes, as all of alt2's and the eye
// 2-splits cascades' are: the root, whose child on side down (0 below its
// threshold, 1 at or above; 2: neither) is node 1 and whose other
// children are leaves lr0 (lr0[down] unused), and node 1, whose children
// are leaves lr1.
type pair struct {
	f        [2]opt
	thr      [2]float32
	down     int32
	lr0, lr1 [2]float32
}

// toPairs lays out c's trees as pairs, or returns nil if one is not: it
// has more than two nodes, or both of its root's children are node 1.
func toPairs(c *Cascade, feats []opt) []pair {
	if c.maxNodes > 2 {
		return nil
	}
	var ps []pair
	for _, st := range c.Stages {
		for _, t := range st.Trees {
			root := t.Nodes[0]
			p := pair{f: [2]opt{feats[root.Feature]}, thr: [2]float32{root.Threshold}, down: 2}
			for side, ch := range [2]int32{root.Left, root.Right} {
				switch {
				case ch <= 0:
					p.lr0[side] = t.Leaves[-ch]
				case p.down != 2:
					return nil
				default:
					p.down = int32(side)
				}
			}
			if p.down != 2 { // Parse makes node 1's children leaves in a tree of two
				one := t.Nodes[1]
				p.f[1], p.thr[1] = feats[one.Feature], one.Threshold
				p.lr1 = [2]float32{t.Leaves[-one.Left], t.Leaves[-one.Right]}
			}
			ps = append(ps, p)
		}
	}
	return ps
}

func compile(c *Cascade, stride, rows int) *program {
	g := &program{c: c, stride: stride, rows: rows}
	for i, o := range sumOfs(Rect{X: 1, Y: 1, W: c.W - 2, H: c.H - 2}, stride) {
		g.norm[i] = o / 4
	}
	tofs := int32(stride * rows)
	feats := make([]opt, len(c.Features))
	for i, f := range c.Features {
		for j, r := range f.Rects {
			if r.Weight == 0 {
				continue
			}
			feats[i].w[j] = r.Weight
			if f.Tilted {
				feats[i].o[j] = tiltOfs(r, stride, tofs)
			} else {
				feats[i].o[j] = sumOfs(r, stride)
			}
			for _, o := range feats[i].o[j] {
				g.span = max(g.span, int(o/4)+1)
			}
		}
	}
	for _, st := range c.Stages {
		g.stages = append(g.stages, pstage{n: len(st.Trees), thr: st.Threshold})
	}
	if c.maxNodes == 1 {
		for _, st := range c.Stages {
			for _, t := range st.Trees {
				nd := t.Nodes[0]
				// A stump's children are leaves: left <= 0, right <= 0.
				g.stumps = append(g.stumps, stump{f: feats[nd.Feature], thr: nd.Threshold,
					lr: [2]float32{t.Leaves[-nd.Left], t.Leaves[-nd.Right]}})
			}
		}
		return g
	}
	if g.pairs = toPairs(c, feats); g.pairs != nil {
		return g
	}
	for _, st := range c.Stages {
		for _, t := range st.Trees {
			g.trees = append(g.trees, ptree{node: int32(len(g.nodes)), leaf: int32(len(g.leaves))})
			for _, nd := range t.Nodes {
				g.nodes = append(g.nodes, pnode{f: feats[nd.Feature], thr: nd.Threshold, next: [2]int32{nd.Left, nd.Right}})
			}
			g.leaves = append(g.leaves, t.Leaves...)
		}
	}
	return g
}

// sumOfs and tiltOfs give a rectangle's four corners as byte offsets
// into the integral images, as OpenCV's CV_SUM_OFS and CV_TILTED_OFS.
func sumOfs(r Rect, stride int) [4]int32 {
	return [4]int32{
		4 * int32(r.X+stride*r.Y), 4 * int32(r.X+r.W+stride*r.Y),
		4 * int32(r.X+stride*(r.Y+r.H)), 4 * int32(r.X+r.W+stride*(r.Y+r.H)),
	}
}

func tiltOfs(r Rect, stride int, tofs int32) [4]int32 {
	return [4]int32{
		4 * (tofs + int32(r.X+stride*r.Y)), 4 * (tofs + int32(r.X-r.H+stride*(r.Y+r.H))),
		4 * (tofs + int32(r.X+r.W+stride*(r.Y+r.W))), 4 * (tofs + int32(r.X+r.W-r.H+stride*(r.Y+r.W+r.H))),
	}
}

// at4 is the rectangle sum s[o0] - s[o1] - s[o2] + s[o3] at the window
// whose top-left sum is at w. The offsets are byte offsets that Parse and
// scan keep inside the integral images, so it reads without bounds checks:
// this is the innermost loop. A feature's value is
// w0*at4(o0) + w1*at4(o1) [+ w2*at4(o2)] in float32, in OpenCV's order.
func at4(w unsafe.Pointer, o *[4]int32) int32 {
	return *(*int32)(unsafe.Add(w, o[0])) - *(*int32)(unsafe.Add(w, o[1])) -
		*(*int32)(unsafe.Add(w, o[2])) + *(*int32)(unsafe.Add(w, o[3]))
}

// run evaluates the cascade at the window at p with variance normalisation
// vnf: 1 if every stage passes, else minus the index of the stage that
// rejected it (so 0 for the first).
func (g *program) run(w unsafe.Pointer, vnf float32) int {
	k := 0
	if g.stumps != nil {
		for si, st := range g.stages {
			var acc float64
			ss := g.stumps[k : k+st.n]
			for i := range ss {
				t := &ss[i]
				v := float32(t.f.w[0]*float32(at4(w, &t.f.o[0]))) + float32(t.f.w[1]*float32(at4(w, &t.f.o[1])))
				if t.f.w[2] != 0 {
					v += float32(t.f.w[2] * float32(at4(w, &t.f.o[2])))
				}
				// Branch-free: the comparison is a coin toss for the
				// branch predictor.
				acc += float64(t.lr[b2i(v*vnf >= t.thr)])
			}
			if acc < float64(st.thr) {
				return -si
			}
			k += st.n
		}
		return 1
	}
	if g.pairs != nil {
		for si, st := range g.stages {
			var acc float64
			ps := g.pairs[k : k+st.n]
			for i := range ps {
				t := &ps[i]
				f := &t.f[0]
				v := float32(f.w[0]*float32(at4(w, &f.o[0]))) + float32(f.w[1]*float32(at4(w, &f.o[1])))
				if f.w[2] != 0 {
					v += float32(f.w[2] * float32(at4(w, &f.o[2])))
				}
				c := b2i(v*vnf >= t.thr[0])
				if int32(c) != t.down {
					acc += float64(t.lr0[c])
					continue
				}
				f = &t.f[1]
				v = float32(f.w[0]*float32(at4(w, &f.o[0]))) + float32(f.w[1]*float32(at4(w, &f.o[1])))
				if f.w[2] != 0 {
					v += float32(f.w[2] * float32(at4(w, &f.o[2])))
				}
				acc += float64(t.lr1[b2i(v*vnf >= t.thr[1])])
			}
			if acc < float64(st.thr) {
				return -si
			}
			k += st.n
		}
		return 1
	}
	for si, st := range g.stages {
		var acc float64
		ts := g.trees[k : k+st.n]
		for i := range ts {
			t := &ts[i]
			idx := int32(0)
			for {
				nd := &g.nodes[t.node+idx]
				f := &nd.f
				v := float32(f.w[0]*float32(at4(w, &f.o[0]))) + float32(f.w[1]*float32(at4(w, &f.o[1])))
				if f.w[2] != 0 {
					v += float32(f.w[2] * float32(at4(w, &f.o[2])))
				}
				idx = nd.next[b2i(v*vnf >= nd.thr)]
				if idx <= 0 {
					break
				}
			}
			acc += float64(g.leaves[t.leaf-idx])
		}
		if acc < float64(st.thr) {
			return -si
		}
		k += st.n
	}
	return 1
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
