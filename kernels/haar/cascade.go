package haar

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Bounds on what a cascade file may hold. OpenCV's own cascades are far
// inside them (the largest, frontalface_alt_tree, has 8468 nodes).
const (
	maxWindow   = 256
	maxStages   = 1000
	maxNodes    = 200_000
	maxFeatures = 200_000
	maxTreeSize = 64
)

// thresholdEps is subtracted from every stage threshold, as OpenCV does
// when it reads one.
const thresholdEps = float32(1e-5)

// Cascade is a boosted Haar cascade read from OpenCV's XML format. It is
// immutable and may be shared by goroutines.
type Cascade struct {
	W, H     int // the detection window the cascade was trained on
	Stages   []Stage
	Features []Feature
	Tilted   bool // some features are rotated 45°
	maxNodes int  // the largest tree; 1 means every tree is a stump
}

// Stage is one boosted stage: a window passes it when the sum of its trees'
// leaves is at least Threshold.
type Stage struct {
	Threshold float32
	Trees     []Tree
}

// Tree is a weak classifier: Nodes[0] is the root; a node sends a window
// to Left when the feature value is below Threshold, else to Right. A child
// > 0 is a node index, a child <= 0 is leaf -child.
type Tree struct {
	Nodes  []Node
	Leaves []float32
}

// Node is one split of a Tree.
type Node struct {
	Left, Right int32
	Feature     int32
	Threshold   float32
}

// Feature is two or three weighted rectangles in window coordinates.
type Feature struct {
	Rects  [3]Rect // unused rects have Weight 0
	Tilted bool
}

// Rect is one weighted rectangle of a Feature. A tilted rectangle has its
// top corner at (X, Y) and sides of W and H pixels going down-right and
// down-left at 45°.
type Rect struct {
	X, Y, W, H int
	Weight     float32
}

// xmlCascade is the layout of OpenCV's "opencv-cascade-classifier" files.
type xmlCascade struct {
	TypeID      string `xml:"type_id,attr"`
	StageType   string `xml:"stageType"`
	FeatureType string `xml:"featureType"`
	Height      int    `xml:"height"`
	Width       int    `xml:"width"`
	MaxCatCount int    `xml:"featureParams>maxCatCount"`
	Stages      []struct {
		Threshold float64 `xml:"stageThreshold"`
		Weak      []struct {
			Internal string `xml:"internalNodes"`
			Leaves   string `xml:"leafValues"`
		} `xml:"weakClassifiers>_"`
	} `xml:"stages>_"`
	Features []struct {
		Rects  []string `xml:"rects>_"`
		Tilted int      `xml:"tilted"`
	} `xml:"features>_"`
}

// errOldFormat is Parse's error for a cascade in the old format.
var errOldFormat = errors.New("haar: old-format cascade (opencv-haar-classifier) is not supported; use a file in the opencv_traincascade format, as opencv-data ships")

// Parse reads a cascade in OpenCV's XML format (the one `opencv_traincascade`
// writes and opencv-data ships: a top-level node with stageType BOOST and
// featureType HAAR). It checks everything it reads: indices, rectangle
// bounds, tree shapes and sizes, so a hostile file gives an error and never
// an out-of-range read later.
func Parse(r io.Reader) (*Cascade, error) {
	d := xml.NewDecoder(r)
	var x xmlCascade
	depth := 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return nil, errors.New("haar: no cascade node in the file")
		}
		if err != nil {
			return nil, fmt.Errorf("haar: %w", err)
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			if _, end := tok.(xml.EndElement); end {
				depth--
			}
			continue
		}
		if depth == 0 {
			if se.Name.Local != "opencv_storage" {
				return nil, fmt.Errorf("haar: top element <%s>, want <opencv_storage>", se.Name.Local)
			}
			depth++
			continue
		}
		if err := d.DecodeElement(&x, &se); err != nil {
			return nil, fmt.Errorf("haar: %w", err)
		}
		break
	}
	if x.TypeID == "opencv-haar-classifier" {
		return nil, errOldFormat
	}
	if x.StageType != "BOOST" || x.FeatureType != "HAAR" {
		return nil, fmt.Errorf("haar: stageType %q featureType %q: want BOOST and HAAR", x.StageType, x.FeatureType)
	}
	if x.MaxCatCount != 0 {
		return nil, fmt.Errorf("haar: maxCatCount %d: categorical features are not Haar features", x.MaxCatCount)
	}
	if x.Width < 3 || x.Height < 3 || x.Width > maxWindow || x.Height > maxWindow {
		return nil, fmt.Errorf("haar: window %dx%d: want 3 to %d pixels a side", x.Width, x.Height, maxWindow)
	}
	if len(x.Stages) == 0 || len(x.Stages) > maxStages {
		return nil, fmt.Errorf("haar: %d stages: want 1 to %d", len(x.Stages), maxStages)
	}
	if len(x.Features) == 0 || len(x.Features) > maxFeatures {
		return nil, fmt.Errorf("haar: %d features: want 1 to %d", len(x.Features), maxFeatures)
	}
	c := &Cascade{W: x.Width, H: x.Height}
	for i, xf := range x.Features {
		f, err := parseFeature(xf.Rects, xf.Tilted != 0, c.W, c.H)
		if err != nil {
			return nil, fmt.Errorf("haar: feature %d: %w", i, err)
		}
		c.Tilted = c.Tilted || f.Tilted
		c.Features = append(c.Features, f)
	}
	nodes := 0
	for si, xs := range x.Stages {
		if len(xs.Weak) == 0 {
			return nil, fmt.Errorf("haar: stage %d has no weak classifiers", si)
		}
		st := Stage{Threshold: float32(xs.Threshold) - thresholdEps, Trees: make([]Tree, len(xs.Weak))}
		for wi, xw := range xs.Weak {
			t, err := parseTree(xw.Internal, xw.Leaves, len(c.Features))
			if err != nil {
				return nil, fmt.Errorf("haar: stage %d tree %d: %w", si, wi, err)
			}
			if nodes += len(t.Nodes); nodes > maxNodes {
				return nil, fmt.Errorf("haar: more than %d nodes", maxNodes)
			}
			c.maxNodes = max(c.maxNodes, len(t.Nodes))
			st.Trees[wi] = t
		}
		c.Stages = append(c.Stages, st)
	}
	return c, nil
}

func parseFeature(rects []string, tilted bool, w, h int) (Feature, error) {
	f := Feature{Tilted: tilted}
	if len(rects) < 1 || len(rects) > 3 {
		return f, fmt.Errorf("%d rects: want 1 to 3", len(rects))
	}
	for i, s := range rects {
		v, err := numbers(s, 5)
		if err != nil {
			return f, fmt.Errorf("rect %d: %w", i, err)
		}
		for _, n := range v[:4] {
			if n != float64(int(n)) || n < -maxWindow || n > maxWindow {
				return f, fmt.Errorf("rect %d: %q: coordinates must be integers inside the window", i, s)
			}
		}
		r := Rect{X: int(v[0]), Y: int(v[1]), W: int(v[2]), H: int(v[3]), Weight: float32(v[4])}
		if r.W <= 0 || r.H <= 0 {
			return f, fmt.Errorf("rect %d: %q: empty", i, s)
		}
		// Every corner the integral image is read at must lie in the window.
		var corners [][2]int
		if tilted {
			corners = [][2]int{{r.X, r.Y}, {r.X - r.H, r.Y + r.H}, {r.X + r.W, r.Y + r.W}, {r.X + r.W - r.H, r.Y + r.W + r.H}}
		} else {
			corners = [][2]int{{r.X, r.Y}, {r.X + r.W, r.Y + r.H}}
		}
		for _, p := range corners {
			if p[0] < 0 || p[1] < 0 || p[0] > w || p[1] > h {
				return f, fmt.Errorf("rect %d: %q: outside the %dx%d window", i, s, w, h)
			}
		}
		f.Rects[i] = r
	}
	return f, nil
}

func parseTree(internal, leaves string, nfeatures int) (Tree, error) {
	v, err := numbers(internal, -1)
	if err != nil {
		return Tree{}, fmt.Errorf("internalNodes: %w", err)
	}
	if len(v) == 0 || len(v)%4 != 0 || len(v)/4 > maxTreeSize {
		return Tree{}, fmt.Errorf("internalNodes: %d numbers: want 4 per node, 1 to %d nodes", len(v), maxTreeSize)
	}
	n := len(v) / 4
	lv, err := numbers(leaves, n+1)
	if err != nil {
		return Tree{}, fmt.Errorf("leafValues: %w", err)
	}
	t := Tree{Nodes: make([]Node, n), Leaves: make([]float32, n+1)}
	for i := range n {
		l, r, f := v[4*i], v[4*i+1], v[4*i+2]
		for _, c := range []float64{l, r} {
			// Children point forward (no loops) or to one of the n+1 leaves.
			if c != float64(int(c)) || (c > 0 && (c <= float64(i) || c >= float64(n))) || c < -float64(n) {
				return t, fmt.Errorf("node %d: child %v out of range", i, c)
			}
		}
		if f != float64(int(f)) || f < 0 || f >= float64(nfeatures) {
			return t, fmt.Errorf("node %d: feature %v of %d", i, f, nfeatures)
		}
		t.Nodes[i] = Node{Left: int32(l), Right: int32(r), Feature: int32(f), Threshold: float32(v[4*i+3])}
	}
	for i, x := range lv {
		t.Leaves[i] = float32(x)
	}
	return t, nil
}

// numbers parses space-separated numbers; want < 0 takes any count.
func numbers(s string, want int) ([]float64, error) {
	fs := strings.Fields(s)
	if want >= 0 && len(fs) != want {
		return nil, fmt.Errorf("%d numbers, want %d", len(fs), want)
	}
	v := make([]float64, len(fs))
	for i, f := range fs {
		x, err := strconv.ParseFloat(f, 64)
		if err != nil || x != x || x > 1e30 || x < -1e30 {
			return nil, fmt.Errorf("bad number %q", f)
		}
		v[i] = x
	}
	return v, nil
}
