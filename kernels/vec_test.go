package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestVecMatchesScalar checks the (possibly vector) element-wise loops
// against the scalar ones, over lengths with and without a tail.
func TestVecMatchesScalar(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{1, 7, 8, 9, 31, 64, 271} {
		rows := make([][]float32, 8)
		for i := range rows {
			rows[i] = make([]float32, n)
			for j := range rows[i] {
				rows[i][j] = rng.Float32()*2 - 1
			}
		}
		cp := func() [][]float32 {
			out := make([][]float32, len(rows))
			for i := range rows {
				out[i] = append([]float32(nil), rows[i]...)
			}
			return out
		}
		a, b := cp(), cp()
		w := pairTwiddles(0.6, -0.8, -0.6, -0.8)
		pairs(a[0], a[1], a[2], a[3], w)
		pairsScalar(b[0], b[1], b[2], b[3], w)
		mulSpectrum(a[4], a[5], a[6], a[7])
		mulScalar(b[4], b[5], b[6], b[7])
		for i := range a {
			for j := range a[i] {
				if d := a[i][j] - b[i][j]; d > 1e-5 || d < -1e-5 {
					t.Fatalf("n=%d row %d [%d]: %g vs scalar %g", n, i, j, a[i][j], b[i][j])
				}
			}
		}
	}
}

func BenchmarkPairs(b *testing.B) {
	n := 540
	kr, ki, jr, ji := make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
	b.SetBytes(int64(16 * n))
	w := pairTwiddles(0.6, -0.8, -0.6, -0.8)
	for b.Loop() {
		pairs(kr, ki, jr, ji, w)
	}
}

// TestTranspose checks transpose against its definition, for sizes with
// and without edges past the 8×8 blocks and 32×32 tiles, strides wider
// than the block, and that nothing outside the block is written.
func TestTranspose(t *testing.T) {
	for _, sz := range [][2]int{{1, 1}, {8, 8}, {7, 9}, {9, 7}, {16, 40}, {33, 65}, {64, 64}, {100, 37}, {271, 540}} {
		rows, cols := sz[0], sz[1]
		ss, ds := cols+3, rows+5
		src := make([]float32, rows*ss)
		for i := range src {
			src[i] = float32(i)
		}
		dst := make([]float32, cols*ds)
		for i := range dst {
			dst[i] = -1
		}
		transpose(dst, ds, src, ss, rows, cols)
		for c := range cols {
			for r := range ds {
				want := float32(-1)
				if r < rows {
					want = src[r*ss+c]
				}
				if got := dst[c*ds+r]; got != want {
					t.Fatalf("%dx%d: dst[%d][%d] = %g, want %g", rows, cols, c, r, got, want)
				}
			}
		}
	}
}

func BenchmarkTranspose(b *testing.B) {
	for _, sz := range [][2]int{{577, 1944}, {271, 540}} {
		rows, cols := sz[0], sz[1]
		src, dst := make([]float32, rows*cols), make([]float32, rows*cols)
		b.Run(fmt.Sprintf("%dx%d", rows, cols), func(b *testing.B) {
			b.SetBytes(int64(8 * rows * cols))
			for b.Loop() {
				transpose(dst, rows, src, cols, rows, cols)
			}
		})
	}
}

// TestWiden: widen against widenScalar over lengths around its 16-byte
// blocks.
func TestWiden(t *testing.T) {
	src := make([]uint8, 1000)
	for i := range src {
		src[i] = uint8(i*37 + i/256)
	}
	for _, n := range []int{0, 1, 15, 16, 17, 31, 32, 33, 63, 1000} {
		a, b := make([]float32, n+1), make([]float32, n+1)
		a[n], b[n] = -1, -1
		widen(a[:n], src[:n])
		widenScalar(b[:n], src[:n])
		for i := range a {
			if a[i] != b[i] {
				t.Fatalf("n=%d [%d]: %g, want %g", n, i, a[i], b[i])
			}
		}
	}
}
