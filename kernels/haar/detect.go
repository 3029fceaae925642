package haar

import (
	"errors"
	"fmt"
	"math"
	"unsafe"
)

// Params are cv2.CascadeClassifier.detectMultiScale's.
type Params struct {
	ScaleFactor  float64 // pyramid step, > 1 (OpenCV's default 1.1)
	MinNeighbors int     // a face needs more than this many raw detections (3)
	MinW, MinH   int     // smallest face; 0: the cascade's window
	MaxW, MaxH   int     // largest face; 0: the image
}

// DefaultParams are detectMultiScale's defaults.
func DefaultParams() Params { return Params{ScaleFactor: 1.1, MinNeighbors: 3} }

// Validate reports the first bad parameter.
func (p Params) Validate() error {
	switch {
	case !(p.ScaleFactor >= 1.01 && p.ScaleFactor <= 10):
		return fmt.Errorf("scale_factor %v: want 1.01 to 10", p.ScaleFactor)
	case p.MinNeighbors < 0 || p.MinNeighbors > 1000:
		return fmt.Errorf("min_neighbors %d: want 0 to 1000", p.MinNeighbors)
	case p.MinW < 0 || p.MinH < 0 || p.MaxW < 0 || p.MaxH < 0:
		return errors.New("min_size and max_size must not be negative")
	}
	return nil
}

// Face is one detection in image pixels, with the number of raw detections
// grouped into it (OpenCV's numDetections).
type Face struct {
	X, Y, W, H int
	Neighbors  int
}

// Detector runs cascades over images. Its buffers grow to the largest image
// seen and are reused; one Detector must not be used by two goroutines.
type Detector struct {
	rs    resizer
	small []uint8
	sum   []int32 // sum, then the tilted sums when the cascade has them
	sq    []uint32
	plain *program // for levels scanned every pixel
	split *program // for levels scanned every 2 pixels
	cands []Face
}

// NewDetector returns a Detector with no buffers yet.
func NewDetector() *Detector { return &Detector{} }

// scale is one pyramid level: the image is resized to w×h and scanned with
// the cascade's window every step pixels.
type scale struct {
	f    float32
	w, h int
	step int
	winW int
	winH int
}

// scales lists detectMultiScale's pyramid for a w×h image.
func (c *Cascade) scales(w, h int, p Params) []scale {
	maxW, maxH := p.MaxW, p.MaxH
	if maxW == 0 || maxH == 0 {
		maxW, maxH = w, h
	}
	var out []scale
	for f := 1.0; ; f *= p.ScaleFactor {
		ww, wh := roundEven(float64(c.W)*f), roundEven(float64(c.H)*f)
		if ww > w || wh > h || ww > maxW || wh > maxH {
			break
		}
		if ww < p.MinW || wh < p.MinH {
			continue
		}
		sf := float32(f)
		s := scale{f: sf, step: 2,
			w: roundEven(float64(float32(w) / sf)), h: roundEven(float64(float32(h) / sf)),
			winW: roundEven(float64(float32(c.W) * sf)), winH: roundEven(float64(float32(c.H) * sf)),
		}
		if sf >= 2 {
			s.step = 1
		}
		out = append(out, s)
	}
	return out
}

// Detect finds c's objects in the w×h 8-bit image pix, as
// cv2.CascadeClassifier(c).detectMultiScale2(pix, p...) does. The result
// is valid until the next call.
func (d *Detector) Detect(c *Cascade, pix []uint8, w, h int, p Params) ([]Face, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if w <= 0 || h <= 0 || len(pix) < w*h {
		return nil, fmt.Errorf("image %dx%d with %d pixels", w, h, len(pix))
	}
	d.cands = d.cands[:0]
	scales := c.scales(w, h, p)
	if len(scales) == 0 {
		return nil, nil
	}
	// One stride (even, for the split layout) and buffer for every level:
	// the first level is the largest. The buffers run pad elements past the
	// images, which the vector path's last lanes may read.
	stride, rows := (scales[0].w+2)&^1, scales[0].h+1
	if d.split == nil || d.split.c != c || d.split.stride != stride || d.split.rows != rows {
		d.plain, d.split = nil, compileLayout(c, stride, rows, true)
	}
	n := stride * rows
	if c.Tilted {
		d.sum = grow(d.sum, 2*n+pad)
	} else {
		d.sum = grow(d.sum, n+pad)
	}
	d.sq = grow(d.sq, n+pad)
	d.small = grow(d.small, scales[0].w*scales[0].h)
	for _, s := range scales {
		img := d.small[:s.w*s.h]
		d.rs.resize(pix, w, h, img, s.w, s.h)
		var tilt []int32
		if c.Tilted {
			tilt = d.sum[n:]
		}
		g := d.split
		if s.step != 2 {
			if d.plain == nil {
				d.plain = compile(c, stride, rows)
			}
			g = d.plain
		}
		integralsSplit(img, s.w, s.h, stride, g.half, d.sum, d.sq, tilt)
		d.scan(g, s)
	}
	return group(d.cands, p.MinNeighbors, w, h), nil
}

// pad is how far the vector path may read past the last window's corner
// (plus the features' span): its 8 lanes.
const pad = 8

// scan runs the cascade at every window position of one level, as
// OpenCV's CascadeClassifierInvoker: a window rejected by the first stage
// also skips the next position. g is laid out split for a step of 2,
// plain for 1: either way the window at x (a multiple of step) of row y
// has its corner at element y·stride + x/step.
func (d *Detector) scan(g *program, s scale) {
	ww, wh := max(s.w+1-g.c.W, 0), max(s.h+1-g.c.H, 0)
	if ww == 0 || wh == 0 {
		return
	}
	if (g.half != 0) != (s.step == 2) || s.step > 2 {
		panic("haar: level scanned in the wrong layout")
	}
	sum, sq := d.sum, d.sq
	top := (wh-1)*g.stride + (ww-1)/s.step + pad // past the last corner the vector path reads from
	if top+g.span > len(sum) || top+int(g.norm[3])+1 > len(sq) {
		panic("haar: window features reach past the integral image") // Parse's bounds make this impossible
	}
	if d.scanVec(g, s, ww, wh) {
		return
	}
	for y := 0; y < wh; y += s.step {
		for x := 0; x < ww; x += s.step {
			p := int32(y*g.stride + x/s.step)
			vnf, ok := g.normalise(sum, sq, p)
			if !ok {
				continue
			}
			r := g.run(unsafe.Pointer(&sum[p]), vnf)
			if r > 0 {
				d.cands = append(d.cands, Face{
					X: roundEven(float64(float32(x) * s.f)), Y: roundEven(float64(float32(y) * s.f)),
					W: s.winW, H: s.winH,
				})
			}
			if r == 0 {
				x += s.step
			}
		}
	}
}

// normalise is the variance normalisation of the window at p, 1 over its
// area times its standard deviation, as OpenCV's, and whether the window
// is scanned: not when its standard deviation is under 10 gray levels.
func (g *program) normalise(sum []int32, sq []uint32, p int32) (float32, bool) {
	n := &g.norm
	area := float64((g.c.W - 2) * (g.c.H - 2))
	vs := sum[p+n[0]] - sum[p+n[1]] - sum[p+n[2]] + sum[p+n[3]]
	vq := sq[p+n[0]] - sq[p+n[1]] - sq[p+n[2]] + sq[p+n[3]]
	nf := area*float64(vq) - float64(vs)*float64(vs)
	if !(nf > 0) {
		return 0, false
	}
	vnf := float32(1 / math.Sqrt(nf))
	return vnf, area*float64(vnf) < 0.1
}

func roundEven(f float64) int { return int(math.RoundToEven(f)) }
