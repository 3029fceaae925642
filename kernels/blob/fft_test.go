package blob

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestFFTPath checks the DCT path against the direct sums on sizes that
// cover odd, periodic (M a multiple of n) and padded (M >= n+R) lengths and
// kernels wider than the image.
func TestFFTPath(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	sigmas := []float64{6, 12.5, 30} // radii 24, 50, 120
	for _, sz := range [][2]int{{1, 1}, {1, 7}, {5, 3}, {17, 30}, {31, 24}, {40, 41}, {303, 64}} {
		h, w := sz[0], sz[1]
		d := NewDetector()
		d.pix = make([]uint8, h*w)
		for i := range d.pix {
			d.pix[i] = uint8(rng.IntN(256))
		}
		d.fft.reset(int(4*sigmas[len(sigmas)-1] + 0.5))
		want, got := make([]float64, h*w), make([]float64, h*w, d.layerCap(h, w))
		for _, sigma := range sigmas {
			k0, k2, r := kernels(nil, nil, sigma)
			d.direct(want, h, w, k0[r:], k2[r:], sigma*sigma)
			d.fft.log(got, d.pix, h, w, k0[r:], k2[r:], sigma*sigma)
			worst := 0.0
			for i := range want {
				worst = max(worst, math.Abs(got[i]-want[i]))
			}
			if worst > 1e-13 {
				t.Errorf("%dx%d sigma %v (DCT %dx%d): max |fft - direct| = %.3g", h, w, sigma, d.fft.my, d.fft.mx, worst)
			}
		}
	}
}
