package blob

import "fmt"

// What another implementation of Detect (package cuda's GPU backend)
// needs to give back the same blobs: the scales and their 1D kernels, the
// responses to compare with, the order of peaks and the pruning.

// Scale is one sigma of the scale space and its separable kernels.
type Scale struct {
	Sigma float64
	// K0 and K2 are the Gaussian and its second derivative at offsets
	// 0..r (both symmetric), as gaussian_filter1d with truncate=4.
	K0, K2 []float64
	// Exact: Detect sums this scale directly in scipy's order (y pass,
	// then x pass; the centre tap, then the pairs from the outermost in,
	// each pair added before it is weighted, and every product rounded
	// before its sum: no fused multiply-add), so an implementation doing
	// the same gets its responses bit for bit. Otherwise (radius >= 24)
	// Detect filters in the DCT domain, and a direct sum differs from it by
	// ~1e-15.
	Exact bool
}

// Scales returns the scales of p (p must be valid).
func Scales(p Params) []Scale {
	sigmas := sigmaList(nil, p)
	out := make([]Scale, len(sigmas))
	for i, s := range sigmas {
		k0, k2, r := kernels(nil, nil, s)
		out[i] = Scale{Sigma: s, K0: k0[r:], K2: k2[r:], Exact: r < fftMinRadius}
	}
	return out
}

// Prune turns peaks, in SortPeaks' order, into blobs as Detect does
// (sigmas are the Scales' Sigma by index), their pairs taking memory from
// mem as Detect's do.
func Prune(peaks []Peak, sigmas []float64, p Params, mem Memory) ([]Blob, error) {
	var pr pruner
	return pr.prune(peaks, sigmas, p, &mem)
}

// Responses returns Detect's scale space for pix: one h*w layer of
// -sigma² · LoG per scale, for comparison with another implementation.
func (d *Detector) Responses(pix []uint8, h, w int, p Params) ([][]float64, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("blob: %w", err)
	}
	if h < 1 || w < 1 || len(pix) != h*w {
		return nil, fmt.Errorf("%w: %d pixels for %dx%d", ErrSize, len(pix), h, w)
	}
	d.prepare(pix, h, w, p)
	defer d.release()
	out := make([][]float64, len(d.sigmas))
	for k := range out {
		out[k] = make([]float64, h*w, d.layerCap(h, w))
		d.log(out[k], h, w, k)
		out[k] = out[k][: h*w : h*w]
	}
	return out, nil
}
