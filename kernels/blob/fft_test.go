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

// TestVectorMatchesScalar checks that the vector code (GOEXPERIMENT=simd on
// an AVX2 CPU) gives the scalar code's responses bit for bit, on sizes
// that leave remainders everywhere (odd rows, lone last rows, widths and
// chunks that are not multiples of 4) and on direct and transform scales.
func TestVectorMatchesScalar(t *testing.T) {
	if !simdOK() {
		t.Log("no vector code in this build or on this CPU: scalar against scalar")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	ps := []Params{DefaultParams(), {MinSigma: 1, MaxSigma: 30, NumSigma: 8, Threshold: 0.05, Overlap: 0.3, LogScale: true}}
	for _, sz := range [][2]int{{1, 1}, {3, 5}, {9, 13}, {37, 53}, {64, 64}, {101, 67}, {303, 384}, {130, 257}} {
		h, w := sz[0], sz[1]
		pix := make([]uint8, h*w)
		for i := range pix {
			pix[i] = uint8(rng.IntN(256))
		}
		for _, p := range ps {
			scalarOnly = true
			want, err := NewDetector().Responses(pix, h, w, p)
			scalarOnly = false
			if err != nil {
				t.Fatal(err)
			}
			got, err := NewDetector().Responses(pix, h, w, p)
			if err != nil {
				t.Fatal(err)
			}
			diff := 0
			for k := range want {
				for i, v := range want[k] {
					if math.Float64bits(got[k][i]) != math.Float64bits(v) {
						diff++
					}
				}
			}
			if diff > 0 {
				t.Errorf("%dx%d %+v: %d responses differ from the scalar code's", h, w, p, diff)
			}
		}
	}
}
