package watershed

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestRowsMatchScalar checks the (possibly vector) row loops against the
// scalar ones, over lengths with and without a tail. In the portable build
// both sides are the scalar loops.
func TestRowsMatchScalar(t *testing.T) {
	t.Logf("vectorized: %v", vectorized())
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 5, 8, 9, 15, 16, 17, 31, 64, 100, 271} {
		for rep := range 20 {
			pix := make([]uint8, n+r.IntN(20)) // pixels may run on past the row
			for i := range pix {
				pix[i] = uint8(r.IntN(4) * 80)
			}
			t8, far := int32(r.IntN(256)), int32(5+r.IntN(50))
			prev := randRow(r, n, 0, far-1)
			a, b := make([]int32, n), make([]int32, n)
			ba, bb := make([]uint64, (n+63)/64), make([]uint64, (n+63)/64)
			colDown(a, prev, pix, t8, far, ba)
			colDownScalar(b, prev, pix, t8, far, bb)
			if !slices.Equal(a, b) || !slices.Equal(ba, bb) {
				t.Fatalf("colDown n=%d: %v %v, scalar %v %v", n, a, ba, b, bb)
			}
			next := randRow(r, n, 0, far)
			copy(b, a)
			colUp(a, next)
			colUpScalar(b, next)
			if !slices.Equal(a, b) {
				t.Fatalf("colUp n=%d differs", n)
			}
			squares(a, next)
			squaresScalar(b, next)
			if !slices.Equal(a, b) {
				t.Fatalf("squares n=%d differs", n)
			}

			// rowMin: squared column distances, some background, padded
			// with far²; near or far from the background (rep).
			const pad, limit = 9, 8
			sq := make([]int32, 2*pad+n)
			hi := int32(3)
			if rep%2 == 1 {
				hi = 12 // some pixels farther than limit: both give up
			}
			for i := range sq {
				sq[i] = 400
			}
			for x := range n {
				g := int32(r.IntN(int(hi)))
				sq[pad+x] = g * g
			}
			oa, ob := make([]int32, n), make([]int32, n)
			okA, okB := rowMin(oa, sq, pad, limit), rowMinScalar(ob, sq, pad, limit)
			if okA != okB || okA && !slices.Equal(oa, ob) {
				t.Fatalf("rowMin n=%d: %v %v, scalar %v %v", n, okA, oa, okB, ob)
			}
			if okA {
				for q := range n { // the least (q-p)² + sq[p] over the padded row
					want := int32(1 << 30)
					for p := -pad; p < n+pad; p++ {
						want = min(want, int32((q-p)*(q-p))+sq[pad+p])
					}
					if oa[q] != want {
						t.Fatalf("rowMin n=%d [%d] = %d, want %d", n, q, oa[q], want)
					}
				}
			}

			up, row, dn := randRow(r, n, 0, 9), randRow(r, n, 0, 9), randRow(r, n, 0, 9)
			vm, wm := make([]int32, n+2), make([]int32, n+2)
			max3(vm[1:n+1], up, row, dn)
			max3Scalar(wm[1:n+1], up, row, dn)
			if !slices.Equal(vm, wm) {
				t.Fatalf("max3 n=%d differs", n)
			}
			vm[0], vm[n+1] = vm[1], vm[n]
			la, fa := peaks3(nil, row, vm, 1000)
			lb, fb := peaks3Scalar(nil, row, vm, 1000)
			if fa != fb || !slices.Equal(la, lb) {
				t.Fatalf("peaks3 n=%d: %v %v, scalar %v %v", n, la, fa, lb, fb)
			}

			top := int32(r.IntN(10))
			ha, hb := make([]int32, int(top)+2+histSpare), make([]int32, int(top)+2+histSpare)
			stateRow(a, row, ha, top)
			stateRowScalar(b, row, hb, top)
			if !slices.Equal(a, b) || !slices.Equal(ha[:top+2], hb[:top+2]) {
				t.Fatalf("stateRow n=%d: %v %v, scalar %v %v", n, a, ha, b, hb)
			}
			st := randRow(r, n, -20, 20)
			labelsRow(a, st)
			labelsRowScalar(b, st)
			if !slices.Equal(a, b) {
				t.Fatalf("labelsRow n=%d differs", n)
			}
		}
	}
}

func randRow(r *rand.Rand, n int, lo, hi int32) []int32 {
	row := make([]int32, n)
	for i := range row {
		row[i] = lo + r.Int32N(hi-lo+1)
	}
	return row
}

func TestBitScans(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 200 {
		n := 1 + r.IntN(300)
		b := make([]uint64, (n+63)/64)
		for i := range n {
			if r.IntN(7) == 0 {
				b[i>>6] |= 1 << (i & 63)
			}
		}
		set := func(i int) bool { return b[i>>6]>>(i&63)&1 == 1 }
		lo := r.IntN(n)
		hi := lo + r.IntN(n-lo+1)
		first, last, clr := -1, -1, hi
		for i := lo; i < hi; i++ {
			if set(i) {
				if first < 0 {
					first = i
				}
				last = i
			} else if clr == hi {
				clr = i
			}
		}
		if got := firstSet(b, lo, hi); got != first {
			t.Fatalf("firstSet(%d, %d) = %d, want %d", lo, hi, got, first)
		}
		if got := lastSet(b, lo, hi); got != last {
			t.Fatalf("lastSet(%d, %d) = %d, want %d", lo, hi, got, last)
		}
		if got := firstClear(b, lo, hi); got != clr {
			t.Fatalf("firstClear(%d, %d) = %d, want %d", lo, hi, got, clr)
		}
	}
}

// TestEDTExact compares the distance transform with the definition (the
// least squared distance to a background pixel) on images that take each
// row pass: near background (brute force), far from it (the envelope after
// the brute force gives up) and too long for the int32 sums (the envelope
// only).
func TestEDTExact(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 9))
	type img struct {
		h, w int
		bg   float64 // share of background pixels
	}
	cases := []img{{40, 50, 0.2}, {64, 64, 0.01}, {300, 300, 0.0002}, {1, 70, 0.05}, {70, 1, 0.05}, {3, 32767, 0.0005}, {32767, 2, 0.0005}}
	for _, c := range cases {
		pix := make([]uint8, c.h*c.w)
		var bg [][2]int
		for i := range pix {
			pix[i] = 200
			if r.Float64() < c.bg {
				pix[i] = 0
				bg = append(bg, [2]int{i / c.w, i % c.w})
			}
		}
		if len(bg) == 0 {
			pix[0], bg = 0, [][2]int{{0, 0}}
		}
		s := NewSegmenter()
		d2 := make([]int32, len(pix))
		if !s.edt(pix, 100, c.h, c.w, d2) {
			t.Fatalf("%dx%d: no background found", c.h, c.w)
		}
		for i := 0; i < len(pix); i += 1 + len(pix)/5000 {
			y, x := i/c.w, i%c.w
			want := 1 << 62
			for _, p := range bg {
				want = min(want, (y-p[0])*(y-p[0])+(x-p[1])*(x-p[1]))
			}
			if int(d2[i]) != want {
				t.Fatalf("%dx%d: d2 at (%d, %d) = %d, want %d", c.h, c.w, y, x, d2[i], want)
			}
		}
	}
}

// TestNoAllocs checks that steady-state calls do not allocate, on images
// that take the heap and the hand-over to the buckets.
func TestNoAllocs(t *testing.T) {
	doc := loadRef(t)
	s := NewSegmenter()
	for _, name := range []string{"coins", "discs-512", "discs-256"} {
		im := doc.Images[name]
		pix := unpack(t, im.Pixels)
		labels := make([]int32, len(pix))
		if _, _, err := s.Segment(pix, im.H, im.W, DefaultParams(), labels); err != nil {
			t.Fatal(err)
		}
		if n := testing.AllocsPerRun(3, func() { s.Segment(pix, im.H, im.W, DefaultParams(), labels) }); n != 0 {
			t.Errorf("%s: %v allocations per call", name, n)
		}
	}
}
