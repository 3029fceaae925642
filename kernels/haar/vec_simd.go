//go:build goexperiment.simd && amd64

package haar

import (
	"math"
	"math/bits"
	"simd/archsimd"
	"unsafe"
)

// The vector scan: 8 neighbouring windows of a row at once (elements k to
// k+7 of the row in the program's layout, so every feature corner is one
// 8-wide load), each lane computing exactly what run computes for its
// window, in the same types and order (float32 feature values, products
// rounded before the sums, float64 stage sums): the same stage rejects
// each window. A bit mask keeps the windows still in the cascade; the
// batch leaves when none is, and hands its last few windows to run when
// too few are left for the vector to pay.

type (
	i32x8 = archsimd.Int32x8
	f32x8 = archsimd.Float32x8
	f64x4 = archsimd.Float64x4
)

func vectorized() bool { return archsimd.X86.AVX2() }

// scalarBelow: a batch with fewer windows left than this finishes them one
// by one with runFrom.
const scalarBelow = 2

func ld8(p unsafe.Pointer, off int32) i32x8 {
	return archsimd.LoadInt32x8((*[8]int32)(unsafe.Add(p, off)))
}

func bc(x float32) f32x8 { return archsimd.BroadcastFloat32x8(x) }

// rect8 is at4 in 8 lanes, as float32.
func rect8(w unsafe.Pointer, o *[4]int32) f32x8 {
	return ld8(w, o[0]).Sub(ld8(w, o[1])).Sub(ld8(w, o[2])).Add(ld8(w, o[3])).ConvertToFloat32()
}

// norm8 is normalise for the 8 windows from element p: their vnf and a
// bit per window that is scanned.
func (g *program) norm8(sum []int32, sq []uint32, p int32) (f32x8, uint8) {
	n := &g.norm
	ps, pq := unsafe.Pointer(&sum[p]), unsafe.Pointer(&sq[p])
	vs := ld8(ps, 4*n[0]).Sub(ld8(ps, 4*n[1])).Sub(ld8(ps, 4*n[2])).Add(ld8(ps, 4*n[3]))
	// The squares' sum is a uint32: flip its sign bit, convert, add 2^31.
	vq := ld8(pq, 4*n[0]).Sub(ld8(pq, 4*n[1])).Sub(ld8(pq, 4*n[2])).Add(ld8(pq, 4*n[3])).
		Xor(archsimd.BroadcastInt32x8(math.MinInt32))
	area := archsimd.BroadcastFloat64x4(float64((g.c.W - 2) * (g.c.H - 2)))
	lo, okLo := norm4(vs.GetLo(), vq.GetLo(), area)
	hi, okHi := norm4(vs.GetHi(), vq.GetHi(), area)
	return f32x8{}.SetLo(lo).SetHi(hi), okLo | okHi<<4
}

// norm4 is normalise's arithmetic for 4 windows' sum s and sum of
// squares q (sign bit flipped), in float64 as there.
func norm4(s, q archsimd.Int32x4, area f64x4) (archsimd.Float32x4, uint8) {
	sf, qf := s.ConvertToFloat64(), q.ConvertToFloat64().Add(archsimd.BroadcastFloat64x4(1<<31))
	nf := area.Mul(qf).Sub(sf.Mul(sf))
	vnf := archsimd.BroadcastFloat64x4(1).Div(nf.Sqrt()).ConvertToFloat32()
	return vnf, nf.Greater(archsimd.Float64x4{}).ToBits() &
		area.Mul(vnf.ConvertToFloat64()).Less(archsimd.BroadcastFloat64x4(0.1)).ToBits()
}

// stage8 evaluates stage si in 8 lanes: a bit per lane that it rejects.
func (g *program) stage8(w unsafe.Pointer, si int, vnf f32x8) uint8 {
	st := &g.stages[si]
	var a0, a1 f64x4
	if g.stumps != nil {
		a0, a1 = stumps8(w, g.stumps[st.first:st.first+st.n], vnf)
	} else {
		a0, a1 = pairs8(w, g.pairs[st.first:st.first+st.n], vnf)
	}
	thr := archsimd.BroadcastFloat64x4(float64(st.thr))
	return a0.Less(thr).ToBits() | a1.Less(thr).ToBits()<<4
}

// stumps8 and pairs8 are a stage's sums of leaves in 8 lanes, as run's.
// The feature values are written out (a function would not be inlined).
//
// They step a pointer from tree to tree (indexing the slice makes the
// compiler recompute every field's address), stopping at the last (a
// pointer past it would leave the allocation), and test the third
// weight's bits (a weight is +0 where compile leaves a rectangle out).
func stumps8(w unsafe.Pointer, ss []stump, vnf f32x8) (a0, a1 f64x4) {
	n := len(ss)
	if n == 0 {
		return a0, a1
	}
	for t := &ss[0]; ; t = (*stump)(unsafe.Add(unsafe.Pointer(t), unsafe.Sizeof(*t))) {
		f := &t.f
		v := rect8(w, &f.o[0]).Mul(bc(f.w[0])).Add(rect8(w, &f.o[1]).Mul(bc(f.w[1])))
		if math.Float32bits(f.w[2]) != 0 {
			v = v.Add(rect8(w, &f.o[2]).Mul(bc(f.w[2])))
		}
		c := v.Mul(vnf).GreaterEqual(bc(t.thr))
		leaf := bc(t.lr[1]).Merge(bc(t.lr[0]), c)
		a0 = a0.Add(leaf.GetLo().ConvertToFloat64())
		a1 = a1.Add(leaf.GetHi().ConvertToFloat64())
		if n--; n == 0 {
			return a0, a1
		}
	}
}

func pairs8(w unsafe.Pointer, ps []pair, vnf f32x8) (a0, a1 f64x4) {
	n := len(ps)
	if n == 0 {
		return a0, a1
	}
	for t := &ps[0]; ; t = (*pair)(unsafe.Add(unsafe.Pointer(t), unsafe.Sizeof(*t))) {
		f := &t.f[0]
		v := rect8(w, &f.o[0]).Mul(bc(f.w[0])).Add(rect8(w, &f.o[1]).Mul(bc(f.w[1])))
		if math.Float32bits(f.w[2]) != 0 {
			v = v.Add(rect8(w, &f.o[2]).Mul(bc(f.w[2])))
		}
		c0 := v.Mul(vnf).GreaterEqual(bc(t.thr[0]))
		f = &t.f[1]
		v = rect8(w, &f.o[0]).Mul(bc(f.w[0])).Add(rect8(w, &f.o[1]).Mul(bc(f.w[1])))
		if math.Float32bits(f.w[2]) != 0 {
			v = v.Add(rect8(w, &f.o[2]).Mul(bc(f.w[2])))
		}
		c1 := v.Mul(vnf).GreaterEqual(bc(t.thr[1]))
		go1 := c0.ToInt32x8().Xor(archsimd.BroadcastInt32x8(t.flip)).ToMask()
		leaf := bc(t.lr1[1]).Merge(bc(t.lr1[0]), c1).Merge(bc(t.other), go1)
		a0 = a0.Add(leaf.GetLo().ConvertToFloat64())
		a1 = a1.Add(leaf.GetHi().ConvertToFloat64())
		if n--; n == 0 {
			return a0, a1
		}
	}
}

// scanVec is scan's loop 8 windows at a time, where the CPU and the
// cascade (stumps or pairs) allow; false where it did nothing.
func (d *Detector) scanVec(g *program, s scale, ww, wh int) bool {
	if !vectorized() || (g.stumps == nil && g.pairs == nil) || len(g.stages) == 0 {
		return false
	}
	nw := (ww-1)/s.step + 1 // windows per row
	sum, sq := d.sum, d.sq
	var lanes [8]float32
	for y := 0; y < wh; y += s.step {
		skip := uint8(0) // 1: the window before was rejected by stage 0
		for k := 0; k < nw; k += 8 {
			p := int32(y*g.stride + k)
			vnf, ok := g.norm8(sum, sq, p)
			if nw-k < 8 {
				ok &= uint8(1)<<(nw-k) - 1
			}
			w := unsafe.Pointer(&sum[p])
			var fail uint8
			if ok != 0 {
				fail = g.stage8(w, 0, vnf)
			}
			// Which windows scan reaches: not the one after a window that
			// stage 0 rejected.
			var eval uint8
			for i := range 8 {
				e := ok >> i & 1 &^ skip
				eval |= e << i
				skip = e & (fail >> i)
			}
			live := eval &^ fail
			for si := 1; si < len(g.stages) && live != 0; si++ {
				if bits.OnesCount8(live) < scalarBelow {
					vnf.Store(&lanes)
					archsimd.ClearAVXUpperBits()
					for m := live; m != 0; m &= m - 1 {
						i := bits.TrailingZeros8(m)
						if g.runFrom(unsafe.Add(w, 4*i), lanes[i], si) <= 0 {
							live &^= 1 << i
						}
					}
					break
				}
				live &^= g.stage8(w, si, vnf)
			}
			for ; live != 0; live &= live - 1 {
				x := (k + bits.TrailingZeros8(live)) * s.step
				d.cands = append(d.cands, Face{
					X: roundEven(float64(float32(x) * s.f)), Y: roundEven(float64(float32(y) * s.f)),
					W: s.winW, H: s.winH,
				})
			}
		}
	}
	archsimd.ClearAVXUpperBits()
	return true
}
