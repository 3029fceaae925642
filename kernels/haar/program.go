package haar

import "unsafe"

// program is a cascade laid out for one integral-image layout: every
// feature's rectangles as offsets from a window's top-left corner.
//
// Two layouts: plain (half 0), rows stride elements apart, column x at x;
// and split (half = stride/2), each row's even columns first, its odd
// columns from half on, for the levels scanned every 2 pixels: there the
// window at x = 2k has its corner at element k of its row and every
// feature corner at a fixed offset from it, so that neighbouring windows
// are neighbouring elements whichever the layout (8 of them, one vector).
type program struct {
	c            *Cascade
	stride, rows int
	half         int      // 0: plain layout; else split, even columns then odd from half
	norm         [4]int32 // the variance rectangle (the window less a 1-pixel border), in elements
	span         int      // elements past a window's corner that features and norm read
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
	first, n int // first tree, trees
	thr      float32
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
//
// For the vector path, which evaluates both nodes in every lane, other is
// the root's leaf (lr0[0] when down is 1 or 2, lr0[1] when 0) and flip is
// -1 when down is 0, else 0: a window goes to node 1 when its root
// comparison (-1 at or above, 0 below) xor flip is set, else gets other.
// A root with two leaves (down 2) gets node 1 = the root and lr1 = lr0,
// which the scalar path never reads.
type pair struct {
	f        [2]opt
	thr      [2]float32
	down     int32
	lr0, lr1 [2]float32
	other    float32
	flip     int32
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
			switch p.down {
			case 2:
				p.f[1], p.thr[1], p.lr1, p.other = p.f[0], p.thr[0], p.lr0, p.lr0[0]
			default: // Parse makes node 1's children leaves in a tree of two
				one := t.Nodes[1]
				p.f[1], p.thr[1] = feats[one.Feature], one.Threshold
				p.lr1 = [2]float32{t.Leaves[-one.Left], t.Leaves[-one.Right]}
				p.other = p.lr0[1-p.down]
				if p.down == 0 {
					p.flip = -1
				}
			}
			ps = append(ps, p)
		}
	}
	return ps
}

// compile lays c out for the plain layout.
func compile(c *Cascade, stride, rows int) *program { return compileLayout(c, stride, rows, false) }

// compileLayout lays c out for the plain or (split, stride even) the
// split layout.
func compileLayout(c *Cascade, stride, rows int, split bool) *program {
	g := &program{c: c, stride: stride, rows: rows}
	if split {
		if stride%2 != 0 {
			panic("haar: split layout with an odd stride")
		}
		g.half = stride / 2
	}
	for i, o := range g.sumOfs(Rect{X: 1, Y: 1, W: c.W - 2, H: c.H - 2}) {
		g.norm[i] = o / 4
		g.span = max(g.span, int(o/4)+1)
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
				feats[i].o[j] = g.tiltOfs(r, tofs)
			} else {
				feats[i].o[j] = g.sumOfs(r)
			}
			for _, o := range feats[i].o[j] {
				g.span = max(g.span, int(o/4)+1)
			}
		}
	}
	first := 0
	for _, st := range c.Stages {
		g.stages = append(g.stages, pstage{first: first, n: len(st.Trees), thr: st.Threshold})
		first += len(st.Trees)
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
func (g *program) sumOfs(r Rect) [4]int32 {
	return [4]int32{g.ofs(r.X, r.Y), g.ofs(r.X+r.W, r.Y), g.ofs(r.X, r.Y+r.H), g.ofs(r.X+r.W, r.Y+r.H)}
}

func (g *program) tiltOfs(r Rect, tofs int32) [4]int32 {
	return [4]int32{
		4*tofs + g.ofs(r.X, r.Y), 4*tofs + g.ofs(r.X-r.H, r.Y+r.H),
		4*tofs + g.ofs(r.X+r.W, r.Y+r.W), 4*tofs + g.ofs(r.X+r.W-r.H, r.Y+r.W+r.H),
	}
}

// ofs is the byte offset of column x, row y of a window from the window's
// corner (x and y inside the window; in the split layout, the window's
// column is even).
func (g *program) ofs(x, y int) int32 {
	return 4 * int32(y*g.stride+col(x, g.half))
}

// col is column x's element in its row: x in the plain layout (half 0),
// else even columns first, odd ones from half on.
func col(x, half int) int {
	if half == 0 {
		return x
	}
	return x&1*half + x>>1
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
func (g *program) run(w unsafe.Pointer, vnf float32) int { return g.runFrom(w, vnf, 0) }

// runFrom is run from stage from on (the earlier ones passed).
func (g *program) runFrom(w unsafe.Pointer, vnf float32, from int) int {
	if from >= len(g.stages) {
		return 1
	}
	k := g.stages[from].first
	if g.stumps != nil {
		for si := from; si < len(g.stages); si++ {
			st := &g.stages[si]
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
		for si := from; si < len(g.stages); si++ {
			st := &g.stages[si]
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
	for si := from; si < len(g.stages); si++ {
		st := &g.stages[si]
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
