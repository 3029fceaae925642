package fft

import (
	"math"
	"math/cmplx"
	"math/rand/v2"
	"testing"
)

// naive is the O(n²) DFT in float64, the reference.
func naive(x []complex128, inverse bool) []complex128 {
	n := len(x)
	out := make([]complex128, n)
	sign := -1.0
	if inverse {
		sign = 1
	}
	for k := range out {
		var s complex128
		for j, v := range x {
			s += v * cmplx.Rect(1, sign*2*math.Pi*float64(j*k%n)/float64(n))
		}
		out[k] = s
	}
	return out
}

func TestTransformMatchesNaiveDFT(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 2, 3, 4, 5, 6, 8, 9, 10, 12, 15, 16, 25, 27, 30, 32, 45, 60, 64, 75, 120, 125, 128, 270, 540} {
		for _, m := range []int{1, 3, 7, 8, 17} { // 8 and 17: the vector passes from the first stage, 17 with a tail
			p, err := NewPlan(n)
			if err != nil {
				t.Fatal(err)
			}
			for _, inverse := range []bool{false, true} {
				re, im := make([]float32, n*m), make([]float32, n*m)
				for i := range re {
					re[i], im[i] = rng.Float32()*2-1, rng.Float32()*2-1
				}
				want := make([][]complex128, m)
				for c := range m {
					col := make([]complex128, n)
					for r := range n {
						col[r] = complex(float64(re[r*m+c]), float64(im[r*m+c]))
					}
					want[c] = naive(col, inverse)
				}
				gr, gi := p.Transform(re, im, make([]float32, n*m), make([]float32, n*m), m, inverse)
				tol := 1e-5 * float64(n) // float32 error grows with n
				for c := range m {
					for r := range n {
						got := complex(float64(gr[r*m+c]), float64(gi[r*m+c]))
						if d := cmplx.Abs(got - want[c][r]); d > tol {
							t.Fatalf("n=%d m=%d inverse=%v: X[%d][%d]=%v, want %v (|diff| %.2g > %.2g)",
								n, m, inverse, r, c, got, want[c][r], d, tol)
						}
					}
				}
			}
		}
	}
}

func TestNewPlanRejectsLargePrimes(t *testing.T) {
	for _, n := range []int{0, 7, 14, 11 * 4, 97} {
		if _, err := NewPlan(n); err == nil {
			t.Errorf("NewPlan(%d): want error", n)
		}
	}
}

func TestNextFastLen(t *testing.T) {
	for n, want := range map[int]int{0: 1, 1: 1, 7: 8, 11: 12, 13: 15, 527: 540, 542: 576, 1000: 1000, 1001: 1024} {
		if got := NextFastLen(n); got != want {
			t.Errorf("NextFastLen(%d) = %d, want %d", n, got, want)
		}
	}
}

func BenchmarkTransform(b *testing.B) {
	for _, sz := range [][2]int{{270, 540}, {540, 271}, {512, 257}} {
		n, m := sz[0], sz[1]
		p, _ := NewPlan(n)
		re, im, wre, wim := make([]float32, n*m), make([]float32, n*m), make([]float32, n*m), make([]float32, n*m)
		b.Run(fmtSize(n, m), func(b *testing.B) {
			b.SetBytes(int64(n * m * 8))
			for b.Loop() {
				p.Transform(re, im, wre, wim, m, false)
			}
		})
	}
}

func fmtSize(n, m int) string {
	return "n" + itoa(n) + "xm" + itoa(m)
}

func itoa(v int) string {
	if v == 0 {
		return "0"
	}
	s := ""
	for ; v > 0; v /= 10 {
		s = string(rune('0'+v%10)) + s
	}
	return s
}
