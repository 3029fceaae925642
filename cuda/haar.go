package cuda

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/pixelflight/pixelflight/kernels/haar"
	"github.com/pixelflight/pixelflight/sched"
	"github.com/pixelflight/pixelflight/udf"
)

// detect_faces on the GPU: the pyramid, the integral images and the
// cascade per window run on the device (kernels.cu.h: pf_resize,
// pf_integral_rows, pf_tilted_a/b, pf_integral_cols, pf_haar_stage0,
// pf_haar_scan); the raw detections come back as (image, level, y, x)
// and are sorted into the CPU's order, turned into boxes and grouped on
// the host with package haar's own code, so that the rows are the CPU's,
// box for box.

// Layout of the flattened cascade's header (PF_H_* in kernels.cu.h).
const (
	hStages = iota
	hFeat
	hNode
	hTree
	hStage
	hFW
	hNThr
	hSThr
	hLeaf
	hW
	hH
	hLen
	featInts = 25 // PF_FEAT
)

// flatCascade is a cascade as the kernels read it: ints then floats (see
// kernels.cu.h), as one little-endian byte array: ci at 0, cf at cfOff.
func flatCascade(c *haar.Cascade) (b []byte, cfOff int) {
	ci := make([]int32, hLen)
	var cf []float32
	ci[hStages], ci[hW], ci[hH] = int32(len(c.Stages)), int32(c.W), int32(c.H)
	ci[hFeat] = int32(len(ci))
	ci[hFW] = 0
	for _, f := range c.Features {
		var e [featInts]int32
		for j, r := range f.Rects {
			cf = append(cf, r.Weight)
			if r.Weight == 0 {
				continue // corners all zero: its sum is 0, as the CPU's
			}
			var k [8]int
			if f.Tilted {
				k = [8]int{r.X, r.Y, r.X - r.H, r.Y + r.H, r.X + r.W, r.Y + r.W, r.X + r.W - r.H, r.Y + r.W + r.H}
			} else {
				k = [8]int{r.X, r.Y, r.X + r.W, r.Y, r.X, r.Y + r.H, r.X + r.W, r.Y + r.H}
			}
			for i, v := range k {
				e[8*j+i] = int32(v)
			}
		}
		if f.Tilted {
			e[24] = 1
		}
		ci = append(ci, e[:]...)
	}
	ci[hNode] = int32(len(ci))
	ci[hNThr] = int32(len(cf))
	var trees []int32
	nodes, leaves := 0, 0
	for _, st := range c.Stages {
		for _, t := range st.Trees {
			trees = append(trees, int32(nodes), int32(leaves))
			for _, nd := range t.Nodes {
				ci = append(ci, nd.Feature, nd.Left, nd.Right)
				cf = append(cf, nd.Threshold)
			}
			nodes += len(t.Nodes)
			leaves += len(t.Leaves)
		}
	}
	ci[hTree] = int32(len(ci))
	ci = append(ci, trees...)
	ci[hStage] = int32(len(ci))
	ci[hSThr] = int32(len(cf))
	for _, st := range c.Stages {
		ci = append(ci, int32(len(st.Trees)))
		cf = append(cf, st.Threshold)
	}
	ci[hLeaf] = int32(len(cf))
	for _, st := range c.Stages {
		for _, t := range st.Trees {
			cf = append(cf, t.Leaves...)
		}
	}
	cfOff = (4*len(ci) + 255) &^ 255
	b = make([]byte, cfOff+4*len(cf))
	for i, v := range ci {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(v))
	}
	for i, v := range cf {
		binary.LittleEndian.PutUint32(b[cfOff+4*i:], math.Float32bits(v))
	}
	return b, cfOff
}

type cascadeEntry struct {
	c     *haar.Cascade
	p     devPtr
	cfOff int
}

const maxCascades = 4

// cascade returns c flattened on the device, uploaded once per lane and
// kept (the most recent maxCascades).
func (l *lane) cascade(c *haar.Cascade) (ci, cf devPtr, err error) {
	for i, e := range l.cascades {
		if e.c == c {
			copy(l.cascades[1:i+1], l.cascades[:i])
			l.cascades[0] = e
			return e.p, e.p + devPtr(e.cfOff), nil
		}
	}
	b, cfOff := flatCascade(c)
	p, err := l.s.alloc(len(b))
	if err != nil {
		return 0, 0, fmt.Errorf("cuda: cascade: %w", err)
	}
	if err := l.s.upload(p, b); err != nil {
		return 0, 0, errors.Join(err, l.s.free(p))
	}
	if err := l.s.sync(); err != nil { // b is Go memory: the copy must be done
		return 0, 0, errors.Join(err, l.s.free(p))
	}
	if len(l.cascades) >= maxCascades {
		last := l.cascades[len(l.cascades)-1]
		l.cascades = l.cascades[:len(l.cascades)-1]
		if err := l.s.free(last.p); err != nil {
			return 0, 0, err
		}
	}
	l.cascades = append([]cascadeEntry{{c, p, cfOff}}, l.cascades...)
	return p, p + devPtr(cfOff), nil
}

// faceLevel is one pyramid level as the kernels scan it.
type faceLevel struct {
	haar.Level
	nx, ny             int // windows per row and rows of windows
	tab                int // byte offset of its resize tables in the input
	xlo, xhi, ylo, yhi int
}

// faceGeometry is one image shape's pyramid and device layout.
type faceGeometry struct {
	h, w    int
	levels  []faceLevel
	tables  []byte // every level's resize tables
	plane   int    // elements of the largest integral image
	small   int    // pixels of the largest level
	windows int    // windows of the largest level
	total   int    // windows of every level
}

func newFaceGeometry(c *haar.Cascade, p haar.Params, h, w int) *faceGeometry {
	g := &faceGeometry{h: h, w: w}
	for _, lv := range c.Pyramid(w, h, p) {
		fl := faceLevel{Level: lv, tab: len(g.tables)}
		fl.nx = ceilDiv(max(lv.W+1-c.W, 0), lv.Step)
		fl.ny = ceilDiv(max(lv.H+1-c.H, 0), lv.Step)
		xofs, xc1, xlo, xhi := haar.ResizeAxis(w, lv.W)
		yofs, yc1, ylo, yhi := haar.ResizeAxis(h, lv.H)
		fl.xlo, fl.xhi, fl.ylo, fl.yhi = xlo, xhi, ylo, yhi
		put := func(v uint32) { g.tables = binary.LittleEndian.AppendUint32(g.tables, v) }
		for _, v := range xofs {
			put(uint32(v))
		}
		for _, v := range xc1 {
			put(v)
		}
		for _, v := range yofs {
			put(uint32(v))
		}
		for _, v := range yc1 {
			put(v)
		}
		g.plane = max(g.plane, (lv.W+1)*(lv.H+1))
		g.small = max(g.small, lv.W*lv.H)
		g.windows = max(g.windows, fl.nx*fl.ny)
		g.total += fl.nx * fl.ny
		g.levels = append(g.levels, fl)
	}
	return g
}

// bytesPerImage is the device memory one image of a batch takes: its
// pixels, the level's image, three integral images, the window status
// and room for a hit at every window of every level.
func (g *faceGeometry) bytesPerImage() int64 {
	return int64(g.h*g.w) + int64(g.small) + 12*int64(g.plane) + int64(g.windows) + 16*int64(g.total)
}

// fits reports whether every launch of the pyramid keeps within CUDA's
// grid limits (y: rows, z: images).
func (g *faceGeometry) fits() bool {
	for _, lv := range g.levels {
		if lv.H > maxGridYZ || lv.ny > maxGridYZ {
			return false
		}
	}
	return true
}

// detectFaces runs the rows idx of items, all h×w, in parts that fit the
// lane's memory.
func (b *Backend) detectFaces(l *lane, s *udf.FacesSpec, items []*sched.Item, idx []int, h, w int) error {
	g := newFaceGeometry(s.Cascade, s.Params, h, w)
	if len(g.levels) == 0 {
		// No level fits the image: no faces, as the CPU.
		for _, i := range idx {
			items[i].Row = udf.FacesRow(nil, pixels(items[i]), w, h, s.Annotate)
		}
		return nil
	}
	fit := int(b.cfg.LaneMemory / max(g.bytesPerImage(), 1))
	if fit < 1 || !g.fits() {
		b.decline(items, idx)
		return nil
	}
	fit = min(fit, b.cfg.MaxBatch)
	for len(idx) > 0 {
		n := min(len(idx), fit)
		if err := b.facesPart(l, s, g, items, idx[:n]); err != nil {
			return err
		}
		idx = idx[n:]
	}
	return nil
}

// facesPart detects faces in up to fit images of one shape on the device.
func (b *Backend) facesPart(l *lane, s *udf.FacesSpec, g *faceGeometry, items []*sched.Item, idx []int) error {
	start := time.Now()
	n := len(idx)
	c := s.Cascade
	ci, cf, err := l.cascade(c)
	if err != nil {
		return err
	}
	// In: the hit counter (zero), the resize tables, the pixels.
	const tabOff = 256
	pixOff := (tabOff + len(g.tables) + 255) &^ 255
	inBytes := pixOff + n*g.h*g.w
	hin, err := l.host(&l.hin, inBytes)
	if err != nil {
		return err
	}
	clear(hin[:tabOff])
	copy(hin[tabOff:], g.tables)
	din, err := l.buf(bufIn, inBytes)
	if err != nil {
		return err
	}
	// Integral images: sum, squares, tilted; each n planes of the largest
	// level (every level packs its n planes at the start).
	ib := n * g.plane * 4
	dint, err := l.buf(bufReal, 3*ib)
	if err != nil {
		return err
	}
	smallOff := (n*g.windows + 255) &^ 255
	dsmall, err := l.buf(bufSpec, smallOff+n*g.small)
	if err != nil {
		return err
	}
	hitBytes := 16 * n * g.total
	dhits, err := l.buf(bufOut, max(hitBytes, 16))
	if err != nil {
		return err
	}
	if err := b.uploadIn(l, din, hin, pixOff, g.h*g.w, items, idx); err != nil {
		return err
	}
	sum, sq, tilt := dint.at(0), dint.at(ib), dint.at(2*ib)
	if !c.Tilted {
		tilt = sum // never read
	}
	status, small := dsmall.at(0), dsmall.at(smallOff)
	for li, lv := range g.levels {
		if err := l.s.launch("pf_resize", dim3{ceilDiv(lv.W, blockX), lv.H, n}, dim3{blockX, 1, 1},
			din.at(pixOff), small, din.at(tabOff+lv.tab), i64(g.w), i64(g.h), i64(lv.W), i64(lv.H),
			i64(lv.xlo), i64(lv.xhi), i64(lv.ylo), i64(lv.yhi)); err != nil {
			return err
		}
		if err := l.s.launch("pf_integral_rows", dim3{ceilDiv(lv.H+1, blockX), 1, n}, dim3{blockX, 1, 1},
			small, sum, sq, i64(lv.H), i64(lv.W)); err != nil {
			return err
		}
		if c.Tilted {
			diag := dim3{ceilDiv(lv.W+lv.H+1, blockX), 1, n}
			if err := l.s.launch("pf_tilted_a", diag, dim3{blockX, 1, 1}, sum, tilt, i64(lv.H), i64(lv.W)); err != nil {
				return err
			}
			if err := l.s.launch("pf_tilted_b", diag, dim3{blockX, 1, 1}, sum, tilt, i64(lv.H), i64(lv.W)); err != nil {
				return err
			}
		}
		if err := l.s.launch("pf_integral_cols", dim3{ceilDiv(lv.W+1, blockX), 1, n}, dim3{blockX, 1, 1},
			sum, sq, i64(lv.H), i64(lv.W)); err != nil {
			return err
		}
		if lv.nx == 0 || lv.ny == 0 {
			continue
		}
		grid := dim3{ceilDiv(lv.nx, blockX), lv.ny, n}
		if err := l.s.launch("pf_haar_stage0", grid, dim3{blockX, 1, 1},
			sum, sq, tilt, status, ci.at(0), cf.at(0), i64(lv.H), i64(lv.W), i64(lv.nx), i64(lv.ny), i64(lv.Step)); err != nil {
			return err
		}
		if err := l.s.launch("pf_haar_scan", grid, dim3{blockX, 1, 1},
			sum, sq, tilt, status, ci.at(0), cf.at(0), dhits.at(0), din.at(0),
			i64(lv.H), i64(lv.W), i64(lv.nx), i64(lv.ny), i64(lv.Step), i64(li)); err != nil {
			return err
		}
	}
	hout, err := l.host(&l.hout, max(hitBytes, 4))
	if err != nil {
		return err
	}
	if err := l.s.download(hout[:4], din); err != nil {
		return err
	}
	if err := l.s.sync(); err != nil {
		return err
	}
	count := int(binary.LittleEndian.Uint32(hout))
	if count > n*g.total {
		return fmt.Errorf("cuda: pf_haar_scan counted %d hits in %d windows", count, n*g.total)
	}
	if count > 0 {
		if err := l.s.download(hout[:16*count], dhits); err != nil {
			return err
		}
		if err := l.s.sync(); err != nil {
			return err
		}
	}
	kernel := time.Since(start) / time.Duration(n)

	// The hits in the CPU's order (image, level, row, column), grouped per
	// image on the host.
	type hit struct{ b, l, y, x uint32 }
	hits := make([]hit, count)
	for i := range hits {
		q := hout[16*i:]
		hits[i] = hit{binary.LittleEndian.Uint32(q), binary.LittleEndian.Uint32(q[4:]),
			binary.LittleEndian.Uint32(q[8:]), binary.LittleEndian.Uint32(q[12:])}
	}
	slices.SortFunc(hits, func(a, b hit) int {
		if a.b != b.b {
			return int(a.b) - int(b.b)
		}
		if a.l != b.l {
			return int(a.l) - int(b.l)
		}
		if a.y != b.y {
			return int(a.y) - int(b.y)
		}
		return int(a.x) - int(b.x)
	})
	first := make([]int, n+1) // hits of image j: hits[first[j]:first[j+1]]
	for _, h := range hits {
		if int(h.b) >= n || int(h.l) >= len(g.levels) {
			return fmt.Errorf("cuda: pf_haar_scan wrote a hit for image %d level %d", h.b, h.l)
		}
		first[h.b+1]++
	}
	for j := range n {
		first[j+1] += first[j]
	}
	for j, i := range idx {
		it := items[i]
		it.Kernel = kernel
		raw := make([]haar.Face, 0, first[j+1]-first[j])
		for _, h := range hits[first[j]:first[j+1]] {
			raw = append(raw, g.levels[h.l].Raw(int(h.x), int(h.y)))
		}
		faces := haar.Group(raw, s.Params.MinNeighbors, g.w, g.h)
		it.Row = udf.FacesRow(faces, pixels(it), g.w, g.h, s.Annotate)
	}
	return nil
}
