package watershed

import "fmt"

// maxSide keeps squared distances (h² + w² at most) inside int32.
const maxSide = 32767

// Segmenter holds the scratch buffers of one pipeline run. Reuse one per
// worker goroutine; a Segmenter is not safe for concurrent use.
type Segmenter struct {
	bits        []uint64 // foreground, one bit per pixel, rows of words words
	words       int
	hasBG       bool
	d2          []int32
	farRow      []int32
	sq          []int32
	gRow        []int32
	env         []parabola
	vmax        []int32
	crop        []int32
	cropMask    []bool
	cand        []bool
	maxLineG    []int32
	maxLineH    []int32
	maxTmp      []int32
	maxG        []int32
	maxH        []int32
	maxOut      []int32
	peakList    []peakCand
	peakIdx     []int32
	gridHead    []int32
	gridNext    []int32
	state       []int32
	markers     []peakCand
	heap        heap
	bucketStart []int32
	bucketFill  []int32
	bucketSeg   []int32
	byAge       []int32
	runStart    []int32
	runA        []int32
	runB        []int32
	runParent   []int32
	runSeen     []int32

	forceHeap      bool // tests: always use the exact heap
	forceMaxFilter bool // tests: always find peaks with the maximum filter
}

// NewSegmenter returns a Segmenter with no buffers yet; they grow to the
// largest image it has seen and are kept.
func NewSegmenter() *Segmenter { return &Segmenter{} }

// Segment labels an 8-bit grayscale image (row-major, h*w pixels):
// threshold, Euclidean distance transform, distance peaks as markers,
// watershed of the negated distance inside the foreground. labels[i] is 0
// for background (and for foreground with no marker in reach), 1..segments
// otherwise, numbered as peak_local_max orders the peaks. The labels slice
// is reused when it has room (pass nil to allocate); the result is returned.
func (s *Segmenter) Segment(pix []uint8, h, w int, p Params, labels []int32) (out []int32, segments int, err error) {
	if err := p.Validate(); err != nil {
		return nil, 0, err
	}
	if h <= 0 || w <= 0 {
		return nil, 0, fmt.Errorf("watershed: image size %dx%d: both sides must be positive", h, w)
	}
	if h > maxSide || w > maxSide || h*w > 1<<31-1 {
		return nil, 0, fmt.Errorf("watershed: image size %dx%d too large: sides up to %d, under 2^31 pixels", h, w, maxSide)
	}
	n := h * w
	if len(pix) != n {
		return nil, 0, fmt.Errorf("watershed: %d pixels for a %dx%d image: want %d", len(pix), h, w, n)
	}
	t := p.Threshold
	if t < 0 {
		t = otsu(pix)
	}
	d2 := growInt32(&s.d2, n)
	s.hasBG = s.edt(pix, t, h, w, d2)
	peaks := s.peaks(d2, h, w, p.MinDistance)

	if cap(labels) < n {
		labels = make([]int32, n)
	}
	labels = labels[:n]
	s.flood(d2, h, w, peaks, labels)
	return labels, len(peaks), nil
}

func growBool(b *[]bool, n int) []bool {
	if cap(*b) < n {
		*b = make([]bool, n)
	}
	*b = (*b)[:n]
	return *b
}

func growInt32(b *[]int32, n int) []int32 {
	if cap(*b) < n {
		*b = make([]int32, n)
	}
	*b = (*b)[:n]
	return *b
}

func growUint64(b *[]uint64, n int) []uint64 {
	if cap(*b) < n {
		*b = make([]uint64, n)
	}
	*b = (*b)[:n]
	return *b
}
