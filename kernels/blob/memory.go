package blob

import (
	"errors"
	"fmt"
)

// ErrTooMany is Detect's error when the peaks above the threshold and
// their overlapping pairs need more memory than Memory lets them take.
var ErrTooMany = errors.New("blob: too many peaks for the memory there is")

// Memory is what the peaks and their overlapping pairs may take. Their
// number depends on the image and the threshold, not on the size alone:
// coins (303x384) has 106 peaks and 631 pairs at threshold 0.2 but 4,907
// peaks and 4.45 million pairs (about 210 MB) at 0, since every pair of
// peaks closer than 2·sqrt(2)·max_sigma is one.
//
// Free bytes come with the call; beyond them Detect asks Grow for more
// (nil: no limit), and fails with ErrTooMany when Grow says no.
type Memory struct {
	Free int64
	Grow func(n int64) bool
}

// What the accounting counts per peak (the peak, the pruner's copy, its
// grid link and its blob) and per pair (the pair, its share of the two set
// tables and of the pair list's growth).
const (
	peakBytes = 64
	pairBytes = 48
)

// take makes sure the account covers need bytes.
func (m *Memory) take(need int64) bool {
	if m.Grow == nil || need <= m.Free {
		return true
	}
	more := max(need-m.Free, m.Free/2, 1<<20) // grow in steps, not per peak
	if !m.Grow(more) {
		if more = need - m.Free; !m.Grow(more) { // a step too many: just what it needs
			return false
		}
	}
	m.Free += more
	return true
}

// tooMany is ErrTooMany with what the image had when Detect stopped.
func tooMany(peaks, pairs int, threshold float64, have int64) error {
	what := fmt.Sprintf("%d peaks above threshold %g", peaks, threshold)
	if pairs > 0 {
		what += fmt.Sprintf(" and %d overlapping pairs (so far)", pairs)
	}
	return fmt.Errorf("%w: %s need more than %.1f MiB; raise threshold or lower max_sigma", ErrTooMany, what, float64(have)/(1<<20))
}

// ScaleSpaceBytes is what Detect's scale space takes for an h×w image under
// p, the peaks and pairs aside: the three response layers; the direct
// scales' rows of the image and line buffers, for the largest direct
// radius; and where a scale goes by the transform, the layers at the
// transform's row length, the image's spectrum at both transform lengths,
// a chunk of lines, eight rows of the image, the kernels' transforms and
// spectra, the twiddles and the plans. The transform's lengths reach the largest radius past a
// side unless a multiple of the side is a fast length, and its line
// buffers go with the longer length, so for a thin image (7×100,000,
// say) this is many times the image.
func ScaleSpaceBytes(h, w int, p Params) int64 {
	if h < 1 || w < 1 || p.Validate() != nil {
		return 0
	}
	rmax, rdir := radii(sigmaList(nil, p))
	H, W := int64(h), int64(w)
	n := 3 * H * W // float64s
	if rdir > 0 {
		n += min(H, int64(2*rdir+1))*W + 2*(W+int64(2*rdir))
	}
	var f fftConv
	if f.use(h, w, rmax) {
		my, mx := int64(dctLen(h, rmax)), int64(dctLen(w, rmax))
		cols, long := mx+mx%2, max(my, mx)
		n += 3*H*(cols-W) + my*cols + 4*fftChunk*long + 32*long + 8*W + 64*(my+mx) // plans: about 512 bytes a point
	}
	return 8 * n
}
