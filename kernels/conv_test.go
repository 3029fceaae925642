package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// direct is the textbook zero-boundary convolution in float64.
func direct(pix []uint8, h, w int, k *Kernel, mode Mode) ([]float64, int, int) {
	fh, fw := h+k.H-1, w+k.W-1
	full := make([]float64, fh*fw)
	for y := range h {
		for x := range w {
			v := float64(pix[y*w+x])
			for i := range k.H {
				for j := range k.W {
					full[(y+i)*fw+x+j] += v * float64(k.Data[i*k.W+j])
				}
			}
		}
	}
	oy, ox, oh, ow := 0, 0, fh, fw
	switch mode {
	case Same:
		oy, ox, oh, ow = (k.H-1)/2, (k.W-1)/2, h, w
	case Valid:
		oy, ox, oh, ow = k.H-1, k.W-1, h-k.H+1, w-k.W+1
	}
	out := make([]float64, oh*ow)
	for y := range oh {
		copy(out[y*ow:(y+1)*ow], full[(y+oy)*fw+ox:(y+oy)*fw+ox+ow])
	}
	return out, oh, ow
}

func randImage(rng *rand.Rand, h, w int) []uint8 {
	pix := make([]uint8, h*w)
	for i := range pix {
		pix[i] = uint8(rng.IntN(256))
	}
	return pix
}

func randKernel(rng *rand.Rand, h, w int) *Kernel {
	k := &Kernel{H: h, W: w, Data: make([]float32, h*w)}
	for i := range k.Data {
		k.Data[i] = rng.Float32()*2 - 1
	}
	return k
}

func TestConvolveMatchesDirect(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	c := NewConvolver()
	sizes := [][2]int{{1, 1}, {1, 7}, {7, 1}, {2, 2}, {5, 8}, {16, 9}, {33, 20}, {64, 64}}
	ks := [][2]int{{1, 1}, {2, 2}, {3, 3}, {1, 5}, {4, 3}, {7, 7}}
	for _, s := range sizes {
		for _, ksz := range ks {
			pix := randImage(rng, s[0], s[1])
			k := randKernel(rng, ksz[0], ksz[1])
			for _, mode := range []Mode{Same, Full, Valid} {
				got, gh, gw, err := c.ConvolveBy(FFT, nil, pix, s[0], s[1], k, mode, Zero)
				if mode == Valid && (k.H > s[0] || k.W > s[1]) {
					if err == nil {
						t.Errorf("%v kernel %v mode valid: want error", s, ksz)
					}
					continue
				}
				want, wh, ww := direct(pix, s[0], s[1], k, mode)
				if err != nil {
					t.Fatalf("%v %v %d: %v", s, ksz, mode, err)
				}
				if gh != wh || gw != ww {
					t.Fatalf("%v %v mode %d: size %dx%d, want %dx%d", s, ksz, mode, gh, gw, wh, ww)
				}
				for i := range want {
					if math.Abs(float64(got[i])-want[i]) > 2e-3 {
						t.Fatalf("%v kernel %v mode %d: [%d]=%g, want %g", s, ksz, mode, i, got[i], want[i])
					}
				}
			}
		}
	}
}

func BenchmarkConvolve(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{256, 512, 1024} {
		pix := randImage(rng, n, n)
		k := Gaussian(5, 31)
		c := NewConvolver()
		dst := make([]float32, n*n)
		b.Run("cpu-"+itoa(n), func(b *testing.B) {
			b.SetBytes(int64(n * n))
			for b.Loop() {
				if _, _, _, err := c.ConvolveBy(FFT, dst, pix, n, n, k, Same, Zero); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func itoa(v int) string {
	s := ""
	for ; v > 0; v /= 10 {
		s = string(rune('0'+v%10)) + s
	}
	return s
}

// TestConvolveSteadyStateAllocs: with plans, spectra and dst reused, a call
// allocates nothing.
func TestConvolveSteadyStateAllocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	pix := randImage(rng, 120, 90)
	k := Gaussian(3, 19)
	c := NewConvolver()
	for _, m := range []Method{FFT, Separable, Direct} {
		dst, _, _, err := c.ConvolveBy(m, nil, pix, 120, 90, k, Same, Reflect)
		if err != nil {
			t.Fatal(err)
		}
		if n := testing.AllocsPerRun(20, func() { c.ConvolveBy(m, dst, pix, 120, 90, k, Same, Reflect) }); n != 0 {
			t.Errorf("%s: %v allocations per call in steady state, want 0", m, n)
		}
	}
}

// TestSpectraShared: equal kernels of different calls share one cached
// spectrum, and big spectra are evicted beyond the byte cap.
func TestSpectraShared(t *testing.T) {
	c := NewConvolver()
	pix := make([]uint8, 64*64)
	for range 3 {
		if _, _, _, err := c.ConvolveBy(FFT, nil, pix, 64, 64, Gaussian(2, 13), Same, Zero); err != nil {
			t.Fatal(err)
		}
	}
	if len(c.spectra) != 1 {
		t.Fatalf("%d spectra for one kernel given three times", len(c.spectra))
	}
	big := make([]uint8, 1500*1500)
	for i := range 5 {
		n := 1400 + 20*i
		if _, _, _, err := c.ConvolveBy(FFT, nil, big[:n*n], n, n, Gaussian(2, 13), Same, Zero); err != nil {
			t.Fatal(err)
		}
	}
	total := 0
	for _, s := range c.spectra {
		total += 8 * len(s.p.re)
	}
	if total > maxSpectraBytes || len(c.spectra) < 2 {
		t.Fatalf("%d spectra of %d bytes in all, cap %d", len(c.spectra), total, maxSpectraBytes)
	}
}
