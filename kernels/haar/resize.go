package haar

import "math"

// axis holds one dimension of OpenCV's bit-exact bilinear resize
// (INTER_LINEAR_EXACT on 8-bit images, what CascadeClassifier uses to build
// its pyramid): for each output index the first input index and the weight
// of the next input sample in 1/256ths. Outputs before lo repeat the first
// sample, outputs from hi on the last.
type axis struct {
	ofs    []int32
	c1     []uint32
	lo, hi int
}

func (a *axis) set(src, dst int) {
	a.ofs = grow(a.ofs, dst)
	a.c1 = grow(a.c1, dst)
	a.lo, a.hi = 0, dst
	scale := 1 / (float64(dst) / float64(src))
	for v := range dst {
		f := float64(scale*(float64(v)+0.5)) - 0.5
		iv := int(math.Floor(f))
		switch {
		case iv < 0 || src == 1:
			a.lo = max(a.lo, v+1)
		case iv < src-1:
			a.ofs[v] = int32(iv)
			a.c1[v] = uint32(math.RoundToEven(float64((f - float64(iv)) * 256)))
		default:
			a.ofs[v] = int32(src - 1)
			a.hi = min(a.hi, v)
		}
	}
}

// resizer scales 8-bit images exactly as OpenCV's INTER_LINEAR_EXACT does.
type resizer struct {
	x, y   axis
	r0, r1 []uint32 // horizontally resized rows, 8 fraction bits
	row0   int      // input rows held in r0 and r1 (-1: none)
}

// resize writes the dw×dh resize of the sw×sh image src into dst.
func (z *resizer) resize(src []uint8, sw, sh int, dst []uint8, dw, dh int) {
	if sw == dw && sh == dh {
		copy(dst, src[:sw*sh])
		return
	}
	z.x.set(sw, dw)
	z.y.set(sh, dh)
	z.r0, z.r1 = grow(z.r0, dw), grow(z.r1, dw)
	z.row0 = -2
	for y := range dh {
		out := dst[y*dw : (y+1)*dw]
		switch {
		case y < z.y.lo || y >= z.y.hi:
			sy := 0
			if y >= z.y.hi {
				sy = sh - 1
			}
			z.hline(src[sy*sw:(sy+1)*sw], z.r0)
			z.row0 = -2
			for i, v := range z.r0 {
				out[i] = uint8((v + 128) >> 8)
			}
		default:
			sy := int(z.y.ofs[y])
			switch sy {
			case z.row0:
			case z.row0 + 1:
				z.r0, z.r1 = z.r1, z.r0
				z.hline(src[(sy+1)*sw:(sy+2)*sw], z.r1)
			default:
				z.hline(src[sy*sw:(sy+1)*sw], z.r0)
				z.hline(src[(sy+1)*sw:(sy+2)*sw], z.r1)
			}
			z.row0 = sy
			c1 := z.y.c1[y]
			c0 := 256 - c1
			r1 := z.r1[:len(z.r0)]
			for i, v := range z.r0 {
				out[i] = uint8((v*c0 + r1[i]*c1 + 1<<15) >> 16)
			}
		}
	}
}

// hline resizes one row horizontally into out (8 fraction bits).
func (z *resizer) hline(src []uint8, out []uint32) {
	a := &z.x
	first, last := uint32(src[0])<<8, uint32(src[len(src)-1])<<8
	for i := 0; i < a.lo; i++ {
		out[i] = first
	}
	for i := a.lo; i < a.hi; i++ {
		o := a.ofs[i]
		c1 := a.c1[i]
		out[i] = (256-c1)*uint32(src[o]) + c1*uint32(src[o+1])
	}
	for i := a.hi; i < len(out); i++ {
		out[i] = last
	}
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}
