package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
)

// reference is the convolution by its definition in float64, with the
// boundary rule: out[y][x] = Σ k[a][b]·image[lo+y-a][lo+x-b].
func reference(pix []uint8, h, w int, k *Kernel, mode Mode, b Boundary) ([]float64, int, int) {
	oh, ow, err := OutputSize(h, w, k, mode)
	if err != nil {
		return nil, 0, 0
	}
	ly, lx := first(mode, k.H), first(mode, k.W)
	out := make([]float64, oh*ow)
	for y := range oh {
		for x := range ow {
			var s float64
			for a := range k.H {
				iy := extIndex(ly+y-a, h, b)
				if iy < 0 {
					continue
				}
				for c := range k.W {
					if ix := extIndex(lx+x-c, w, b); ix >= 0 {
						s += float64(k.Data[a*k.W+c]) * float64(pix[iy*w+ix])
					}
				}
			}
			out[y*ow+x] = s
		}
	}
	return out, oh, ow
}

// separableKernel is a random rank-1 kernel with its factors.
func separableKernel(rng *rand.Rand, h, w int) *Kernel {
	col, row := make([]float32, h), make([]float32, w)
	for i := range col {
		col[i] = rng.Float32()*2 - 1
	}
	for i := range row {
		row[i] = rng.Float32()*2 - 1
	}
	k := &Kernel{H: h, W: w, Data: make([]float32, h*w), Col: col, Row: row}
	for y := range h {
		for x := range w {
			k.Data[y*w+x] = col[y] * row[x]
		}
	}
	return k
}

// TestMethodsAgree: every method, for every mode and boundary, on images
// from 1×1 to wider than a vector block with odd tails, kernels from 1×1
// to larger than the image, equals the definition within scipy's
// tolerance of the op, 1e-4·(1 + max|reference|).
func TestMethodsAgree(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	c := NewConvolver()
	sizes := [][2]int{{1, 1}, {1, 9}, {9, 1}, {5, 8}, {7, 5}, {16, 33}, {37, 70}, {3, 100}, {20, 300}}
	ks := [][2]int{{1, 1}, {1, 5}, {5, 1}, {2, 2}, {3, 3}, {4, 7}, {9, 9}, {13, 2}, {3, 19}, {1, 16}, {2, 17}, {5, 15}}
	// Separable and Direct by the Go loops and by each vector width the
	// CPU has.
	type run struct {
		m     Method
		lanes int
	}
	runs := []run{{FFT, 0}, {Direct, 0}, {Separable, 0}}
	for _, l := range []int{8, 16} {
		if l <= cLanes() {
			runs = append(runs, run{Separable, l}, run{Direct, l})
		} else {
			t.Logf("Separable and Direct at %d lanes not run: this CPU does not have them", l)
		}
	}
	for _, s := range sizes {
		pix := randImage(rng, s[0], s[1])
		var kernels []*Kernel
		for _, ksz := range ks {
			kernels = append(kernels, separableKernel(rng, ksz[0], ksz[1]))
		}
		// Symmetric ones too, odd and even (the vector loops add mirrored
		// taps first), and boxes (running sums), one taller than any image.
		kernels = append(kernels, Gaussian(1, 7), Gaussian(0.8, 4), Gaussian(8, 49), Box(2), Box(5), Box(33), SobelX(), SobelY())
		// Kernels of higher rank (FFT and Direct only): dense, sparse (a
		// random third of the taps zero, and the named ones, whose rows
		// put taps on one output row of Direct's pair, the other or both),
		// and all zeros.
		kernels = append(kernels, Laplacian(), Sharpen(), &Kernel{H: 3, W: 4, Data: make([]float32, 12)})
		for _, ksz := range [][2]int{{2, 3}, {5, 5}, {7, 4}, {3, 17}} {
			dense, sparse := randKernel(rng, ksz[0], ksz[1]), randKernel(rng, ksz[0], ksz[1])
			for i := range sparse.Data {
				if rng.IntN(3) == 0 {
					sparse.Data[i] = 0
				}
			}
			kernels = append(kernels, dense, sparse)
		}
		for _, k := range kernels {
			ksz := [2]int{k.H, k.W}
			for _, mode := range []Mode{Same, Full, Valid} {
				for _, b := range []Boundary{Zero, Reflect, Wrap} {
					want, wh, ww := reference(pix, s[0], s[1], k, mode, b)
					peak := 0.0
					for _, v := range want {
						peak = max(peak, math.Abs(v))
					}
					for _, r := range runs {
						m := r.m
						if m == Separable && k.Col == nil {
							continue
						}
						name := fmt.Sprintf("%dx%d image, %dx%d kernel, mode %d, boundary %d, %s", s[1], s[0], ksz[1], ksz[0], mode, b, m)
						if m != FFT {
							name += fmt.Sprintf(" (%d lanes)", r.lanes)
						}
						c.lanes = r.lanes
						got, gh, gw, err := c.ConvolveBy(m, nil, pix, s[0], s[1], k, mode, b)
						if want == nil {
							if err == nil {
								t.Errorf("%s: no error for no output", name)
							}
							continue
						}
						if err != nil {
							t.Fatalf("%s: %v", name, err)
						}
						if gh != wh || gw != ww {
							t.Fatalf("%s: %dx%d, want %dx%d", name, gw, gh, ww, wh)
						}
						for i, v := range want {
							if d := math.Abs(float64(got[i]) - v); d > 1e-4*(1+peak) {
								t.Fatalf("%s: [%d] = %g, want %g", name, i, got[i], v)
							}
						}
					}
				}
			}
		}
	}
}

// TestFactor finds the factors of rank-1 kernels, named and given as a
// matrix, and none for kernels of higher rank.
func TestFactor(t *testing.T) {
	for _, k := range []*Kernel{Gaussian(2, 13), Gaussian(0.8, 4), Box(5), SobelX(), SobelY()} {
		if k.Col == nil {
			t.Fatalf("%dx%d named kernel without factors", k.W, k.H)
		}
		m := Factor(&Kernel{H: k.H, W: k.W, Data: k.Data})
		if m.Col == nil {
			t.Errorf("%dx%d: Factor finds no factors of a separable kernel", k.W, k.H)
			continue
		}
		for y := range k.H {
			for x := range k.W {
				if d := math.Abs(float64(m.Col[y]*m.Row[x] - k.Data[y*k.W+x])); d > 1e-6 {
					t.Errorf("%dx%d: factors off by %g at (%d, %d)", k.W, k.H, d, x, y)
				}
			}
		}
	}
	for _, k := range []*Kernel{Laplacian(), Sharpen(), {H: 2, W: 2, Data: []float32{1, 2, 3, 4}}} {
		if Factor(&Kernel{H: k.H, W: k.W, Data: k.Data}).Col != nil {
			t.Errorf("%v: factors of a kernel of rank 2", k.Data)
		}
	}
	zero := Factor(&Kernel{H: 2, W: 3, Data: make([]float32, 6)})
	if zero.Col == nil {
		t.Error("no factors of the zero kernel")
	}
	// Off rank 1 by more than float32 rounding: not separable.
	near := separableKernel(rand.New(rand.NewPCG(1, 2)), 5, 5)
	near.Data[7] += 1e-3
	if Factor(&Kernel{H: 5, W: 5, Data: near.Data}).Col != nil {
		t.Error("factors of a kernel 1e-3 off rank 1")
	}
}

// TestChoose: the methods each build's cost model picks where the choice
// is plain or measured (the throwaway sweeps of BENCHMARKS.md): the C
// loops at 16 lanes (AVX-512) and 8 (AVX2), and the portable build.
func TestChoose(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	models := []struct {
		name string
		c    methodCost
	}{{"16 lanes", modelFor(true, 16)}, {"8 lanes", modelFor(true, 8)}, {"portable", modelFor(false, 0)}}
	for _, c := range []struct {
		h, w int
		k    *Kernel
		want [3]Method
	}{
		{512, 512, Gaussian(2, 13), [3]Method{Separable, Separable, FFT}},
		{512, 512, Gaussian(8, 49), [3]Method{Separable, Separable, FFT}},
		{512, 512, Gaussian(24, 145), [3]Method{FFT, FFT, FFT}},
		{1080, 1920, Box(31), [3]Method{Separable, Separable, Separable}}, // by running sums
		{512, 512, Box(3), [3]Method{Separable, Separable, Separable}},
		{6, 9, Box(5), [3]Method{Separable, Separable, Separable}}, // server's TestExchangeBothTransports
		{512, 512, SobelX(), [3]Method{Separable, Separable, Separable}},
		{512, 512, Laplacian(), [3]Method{Direct, Direct, Direct}},
		{512, 512, Factor(&Kernel{H: 31, W: 31, Data: make([]float32, 31*31)}), [3]Method{Direct, Direct, Separable}}, // a box of zeros: no taps for the C
		{512, 512, separableKernel(rng, 31, 31), [3]Method{Separable, Separable, FFT}},
		{512, 512, randKernel(rng, 31, 31), [3]Method{FFT, FFT, FFT}},
		{512, 512, randKernel(rng, 9, 9), [3]Method{Direct, Direct, FFT}},
		{512, 512, randKernel(rng, 11, 11), [3]Method{Direct, FFT, FFT}},
		{1080, 1920, randKernel(rng, 13, 13), [3]Method{FFT, FFT, FFT}},
		{512, 512, randKernel(rng, 3, 3), [3]Method{Direct, Direct, Direct}},
	} {
		for i, m := range models {
			if got := choose(m.c, c.h, c.w, c.k, Same, Zero); got != c.want[i] {
				t.Errorf("%s: %dx%d image, %dx%d kernel (factors %v): %s, want %s", m.name, c.w, c.h, c.k.W, c.k.H, c.k.Col != nil, got, c.want[i])
			}
		}
	}
}

// TestSeparableNeedsFactors: asking for Separable without them is an error.
func TestSeparableNeedsFactors(t *testing.T) {
	k := &Kernel{H: 2, W: 2, Data: []float32{1, 2, 3, 4}}
	if _, _, _, err := NewConvolver().ConvolveBy(Separable, nil, make([]uint8, 16), 4, 4, k, Same, Zero); err == nil {
		t.Error("no error")
	}
}

func BenchmarkMethods(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range [][2]int{{512, 512}, {1080, 1920}} {
		pix := randImage(rng, n[0], n[1])
		for _, k := range []struct {
			name string
			k    *Kernel
		}{{"gauss13", Gaussian(2, 13)}, {"gauss31", Gaussian(5, 31)}, {"sobel", SobelX()}, {"laplacian", Laplacian()}, {"rand31", randKernel(rng, 31, 31)}} {
			for _, m := range []Method{FFT, Separable, Direct} {
				if m == Separable && k.k.Col == nil || m == Direct && k.k.H > 13 && n[0] > 600 {
					continue
				}
				c := NewConvolver()
				dst := make([]float32, n[0]*n[1])
				b.Run(fmt.Sprintf("%dx%d-%s-%s", n[1], n[0], k.name, m), func(b *testing.B) {
					b.SetBytes(int64(n[0] * n[1]))
					for b.Loop() {
						if _, _, _, err := c.ConvolveBy(m, dst, pix, n[0], n[1], k.k, Same, Zero); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}

// BenchmarkTargets: Convolve with the method Choose takes, for the kernels
// of the CPU targets (scripts/convbench.py runs it on one core beside
// OpenCV and scipy): Gaussians σ 1 to 8, boxes 3 to 31, Sobel, a random
// 31×31 matrix, and the laplacian; 512×512 and 1920×1080, mode same, zero
// boundary.
func BenchmarkTargets(b *testing.B) {
	rng := rand.New(rand.NewPCG(11, 12))
	type named struct {
		name string
		k    *Kernel
	}
	ks := []named{{"gauss-s1", Gaussian(1, 7)}, {"gauss-s2", Gaussian(2, 13)}, {"gauss-s4", Gaussian(4, 25)}, {"gauss-s8", Gaussian(8, 49)},
		{"box-3", Box(3)}, {"box-9", Box(9)}, {"box-31", Box(31)}, {"sobel_x", SobelX()}, {"laplacian", Laplacian()}, {"random-31", randKernel(rng, 31, 31)}}
	for _, n := range [][2]int{{512, 512}, {1080, 1920}} {
		pix := randImage(rng, n[0], n[1])
		for _, k := range ks {
			c := NewConvolver()
			dst := make([]float32, n[0]*n[1])
			m := Choose(n[0], n[1], k.k, Same, Zero)
			b.Run(fmt.Sprintf("%dx%d/%s/%s", n[1], n[0], k.name, m), func(b *testing.B) {
				b.SetBytes(int64(n[0] * n[1]))
				for b.Loop() {
					if _, _, _, _, err := c.Convolve(dst, pix, n[0], n[1], k.k, Same, Zero); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkSeparableWidths: Separable on BenchmarkTargets' separable
// kernels (boxes by their taps) at each vector width of the C passes the
// CPU has and by the Go loops (lanes 0), so that a CPU with AVX-512 also
// measures what one with only AVX2 gets.
func BenchmarkSeparableWidths(b *testing.B) {
	rng := rand.New(rand.NewPCG(11, 12))
	ks := []struct {
		name string
		k    *Kernel
	}{{"gauss-s1", Gaussian(1, 7)}, {"gauss-s2", Gaussian(2, 13)}, {"gauss-s4", Gaussian(4, 25)}, {"gauss-s8", Gaussian(8, 49)}, {"sobel_x", SobelX()}}
	widths := []int{0}
	for _, l := range []int{8, 16} {
		if l <= cLanes() {
			widths = append(widths, l)
		}
	}
	for _, n := range [][2]int{{512, 512}, {1080, 1920}} {
		pix := randImage(rng, n[0], n[1])
		for _, k := range ks {
			for _, l := range widths {
				c := NewConvolver()
				c.lanes = l
				dst := make([]float32, n[0]*n[1])
				b.Run(fmt.Sprintf("%dx%d/%s/lanes-%d", n[1], n[0], k.name, l), func(b *testing.B) {
					b.SetBytes(int64(n[0] * n[1]))
					for b.Loop() {
						if _, _, _, err := c.ConvolveBy(Separable, dst, pix, n[0], n[1], k.k, Same, Zero); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}

// TestStats: Stats against the two-pass definition in float64, for
// lengths around the vector blocks and a large image's.
func TestStats(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, n := range []int{1, 2, 7, 15, 16, 17, 31, 33, 100, 1 << 20} {
		v := make([]float32, n)
		for i := range v {
			v[i] = (rng.Float32() - 0.3) * 1000
		}
		lo, hi, sum := math.Inf(1), math.Inf(-1), 0.0
		for _, x := range v {
			lo, hi, sum = min(lo, float64(x)), max(hi, float64(x)), sum+float64(x)
		}
		mean := sum / float64(n)
		ss := 0.0
		for _, x := range v {
			ss += (float64(x) - mean) * (float64(x) - mean)
		}
		std := math.Sqrt(ss / float64(n))
		gl, gh, gm, gs := Stats(v)
		if gl != lo || gh != hi || math.Abs(gm-mean) > 1e-9*(1+math.Abs(mean)) || math.Abs(gs-std) > 1e-9*(1+std) {
			t.Errorf("n %d: Stats %g %g %g %g, want %g %g %g %g", n, gl, gh, gm, gs, lo, hi, mean, std)
		}
	}
}

func BenchmarkStats(b *testing.B) {
	v := make([]float32, 1920*1080)
	for i := range v {
		v[i] = float32(i % 251)
	}
	b.SetBytes(int64(4 * len(v)))
	for b.Loop() {
		Stats(v)
	}
}

// TestFFTStrips: the FFT method on images wide and tall enough for its
// transforms to run in several strips, the last one narrower, with the
// output's rows and columns wrapping around the transform (reflect and
// wrap boundaries), equals the definition as TestMethodsAgree states it.
func TestFFTStrips(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	c := NewConvolver()
	for _, s := range [][2]int{{130, 300}, {261, 77}} {
		pix := randImage(rng, s[0], s[1])
		for _, k := range []*Kernel{randKernel(rng, 9, 9), randKernel(rng, 31, 7)} {
			for _, mode := range []Mode{Same, Full, Valid} {
				for _, b := range []Boundary{Zero, Reflect, Wrap} {
					want, wh, ww := reference(pix, s[0], s[1], k, mode, b)
					got, gh, gw, err := c.ConvolveBy(FFT, nil, pix, s[0], s[1], k, mode, b)
					name := fmt.Sprintf("%dx%d image, %dx%d kernel, mode %d, boundary %d", s[1], s[0], k.W, k.H, mode, b)
					if err != nil || gh != wh || gw != ww {
						t.Fatalf("%s: %dx%d, %v; want %dx%d", name, gw, gh, err, ww, wh)
					}
					peak := 0.0
					for _, v := range want {
						peak = max(peak, math.Abs(v))
					}
					for i, v := range want {
						if d := math.Abs(float64(got[i]) - v); d > 1e-4*(1+peak) {
							t.Fatalf("%s: [%d] = %g, want %g", name, i, got[i], v)
						}
					}
				}
			}
		}
	}
}

// TestFFTTiles: the FFT method in tiles, last tiles moved back over their
// neighbours, for every mode and boundary, equals the definition as
// TestMethodsAgree states it; and fftTiles tiles a large image's
// transform, not a small one's.
func TestFFTTiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	c := NewConvolver()
	h, w := 130, 300
	pix := randImage(rng, h, w)
	for _, k := range []*Kernel{randKernel(rng, 9, 9), randKernel(rng, 31, 7)} {
		for _, mode := range []Mode{Same, Full, Valid} {
			for _, b := range []Boundary{Zero, Reflect, Wrap} {
				want, oh, ow := reference(pix, h, w, k, mode, b)
				peak := 0.0
				for _, v := range want {
					peak = max(peak, math.Abs(v))
				}
				for _, ts := range [][2]int{{17, 40}, {oh, 64}, {50, ow}, {oh - 1, ow - 1}} {
					th, tw := min(ts[0], oh), min(ts[1], ow)
					got := make([]float32, oh*ow)
					g := fftGeometry{th, tw, tileLength(th + k.H - 1), tileLength(tw + k.W - 1), true}
					if err := c.fftTiled(got, pix, h, w, k, mode, b, oh, ow, g); err != nil {
						t.Fatal(err)
					}
					for i, v := range want {
						if d := math.Abs(float64(got[i]) - v); d > 1e-4*(1+peak) {
							t.Fatalf("%dx%d kernel, mode %d, boundary %d, tiles %dx%d: [%d] = %g, want %g", k.W, k.H, mode, b, tw, th, i, got[i], v)
						}
					}
				}
			}
		}
	}
	k := randKernel(rng, 31, 31)
	if g := fftTiles(512, 512, k, 512, 512, Same, Zero); g.tiled {
		t.Errorf("512x512: tiles %dx%d, want the whole image", g.tw, g.th)
	}
	if g := fftTiles(1080, 1920, k, 1080, 1920, Same, Zero); !g.tiled || g.th >= 1080 && g.tw >= 1920 {
		t.Errorf("1920x1080: tiles %dx%d, want smaller ones", g.tw, g.th)
	}
}

// TestFFTBytesBounded: FFTBytes counts what a fresh Convolver allocates
// for a convolution by FFT (all but the plans' and spectra's headers,
// which a row's fixed MiB holds), thin images included; it stays within
// maxFFTBytes for kernels up to 255 taps a side, whatever the image's
// size and shape (large and thin images go in tiles; kernels too large
// for any tile within it would take the smallest); and tiled convolution
// allocates nothing per image in steady state.
func TestFFTBytesBounded(t *testing.T) {
	row := &Kernel{H: 1, W: 255, Data: make([]float32, 255)}
	for i := range row.Data {
		row.Data[i] = float32(i%7) - 3 // rank 1, but asked for by FFT below
	}
	for _, c := range []struct {
		h, w int
		k    *Kernel
		mode Mode
		b    Boundary
	}{
		{512, 512, Box(15), Same, Zero}, {1080, 1920, Box(31), Same, Zero}, {300, 2000, Box(255), Full, Wrap},
		{1, 90000, row, Same, Zero}, {2, 90000, row, Valid, Reflect},
	} {
		pix := make([]uint8, c.h*c.w)
		oh, ow, _ := OutputSize(c.h, c.w, c.k, c.mode)
		dst := make([]float32, oh*ow)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if _, _, _, err := NewConvolver().ConvolveBy(FFT, dst, pix, c.h, c.w, c.k, c.mode, c.b); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		got, want := int64(after.TotalAlloc-before.TotalAlloc), FFTBytes(c.h, c.w, c.k, c.mode, c.b)
		if got > want+(1<<20) {
			t.Errorf("%dx%d image, %dx%d kernel: %.1f MiB allocated, FFTBytes %.1f", c.w, c.h, c.k.W, c.k.H, float64(got)/(1<<20), float64(want)/(1<<20))
		}
	}
	for _, k := range []*Kernel{Box(3), Box(31), Box(255), {H: 255, W: 1, Data: make([]float32, 255)}, row} {
		for _, n := range [][2]int{{1, 1}, {32, 32}, {300, 300}, {512, 512}, {1080, 1920}, {4000, 4000}, {32, 20000}, {30000, 32}, {1, 90000}, {2, 90000}, {90000, 1}} {
			for _, mode := range []Mode{Same, Full, Valid} {
				if got := FFTBytes(n[0], n[1], k, mode, Reflect); got > maxFFTBytes {
					t.Errorf("%dx%d image, %dx%d kernel, mode %d: %.1f MiB", n[1], n[0], k.W, k.H, mode, float64(got)/(1<<20))
				}
			}
		}
	}
	if got := FFTBytes(4000, 4000, Box(301), Same, Zero); got > 12<<20 {
		t.Errorf("4000x4000 image, 301x301 kernel: %.1f MiB, want it tiled", float64(got)/(1<<20))
	}
	rng := rand.New(rand.NewPCG(13, 14))
	pix, k := randImage(rng, 1080, 1920), randKernel(rng, 31, 31)
	c, dst := NewConvolver(), make([]float32, 1080*1920)
	c.ConvolveBy(FFT, dst, pix, 1080, 1920, k, Same, Zero)
	if n := testing.AllocsPerRun(2, func() { c.ConvolveBy(FFT, dst, pix, 1080, 1920, k, Same, Zero) }); n > 0 {
		t.Errorf("%.0f allocations per tiled convolution", n)
	}
}
