package blob

import (
	"math"
	"math/bits"
)

// fftMinRadius is the kernel radius from which the LoG of one scale is done
// by FFT (per line, on the reflect-extended line) instead of directly. The
// FFT result differs from scipy's direct sums by ~1e-16 relative, which only
// matters for exact ties between neighbouring responses.
const fftMinRadius = 24

// fftConv holds the FFT plans and line buffers of the large-kernel path.
type fftConv struct {
	plans  []*fftPlan
	z, zy  []complex128 // one line (or column pair) and its second copy
	kk     []complex128 // kernel spectra scratch
	k0, k2 []float64    // kernel spectra (real: the kernels are symmetric)
	idx    []int32      // reflect index of each extended line position
}

// reflectIndex fills f.idx with reflect(i-r, n) for i < n+2r.
func (f *fftConv) reflectIndex(n, r int) []int32 {
	f.idx = f.idx[:0]
	for i := range n + 2*r {
		f.idx = append(f.idx, int32(reflect(i-r, n)))
	}
	return f.idx
}

// fftPlan is a radix-2 complex FFT of size n.
type fftPlan struct {
	n   int
	fw  []complex128 // per stage of size m: exp(-2*pi*i*k/m), k < m/2
	iw  []complex128 // the same, conjugated (inverse transform)
	rev []int32
}

func (f *fftConv) use(h, w, r int) bool { return r >= fftMinRadius }

func (f *fftConv) plan(n int) *fftPlan {
	for _, p := range f.plans {
		if p.n == n {
			return p
		}
	}
	p := &fftPlan{n: n, rev: make([]int32, n)}
	for m := 2; m <= n; m <<= 1 {
		for k := range m / 2 {
			s, c := math.Sincos(-2 * math.Pi * float64(k) / float64(m))
			p.fw = append(p.fw, complex(c, s))
			p.iw = append(p.iw, complex(c, -s))
		}
	}
	shift := 64 - bits.TrailingZeros(uint(n))
	for i := range p.rev {
		p.rev[i] = int32(bits.Reverse64(uint64(i)) >> shift)
	}
	f.plans = append(f.plans, p)
	return p
}

// transform is an in-place FFT (inverse: conjugate twiddles, no 1/n).
func (p *fftPlan) transform(a []complex128, inverse bool) {
	a = a[:p.n]
	for i, j := range p.rev {
		if i < int(j) {
			a[i], a[j] = a[j], a[i]
		}
	}
	for i := 0; i < p.n; i += 2 { // size-2 stage: twiddle 1
		a[i], a[i+1] = a[i]+a[i+1], a[i]-a[i+1]
	}
	tw := p.fw
	if inverse {
		tw = p.iw
	}
	off := 1
	for size := 4; size <= p.n; size <<= 1 {
		half := size / 2
		t := tw[off : off+half]
		for start := 0; start < p.n; start += size {
			lo, hi := a[start:start+half], a[start+half:start+size]
			hi = hi[:len(lo)]
			t := t[:len(lo)]
			for k, w := range t {
				v := hi[k] * w
				lo[k], hi[k] = lo[k]+v, lo[k]-v
			}
		}
		off += half
	}
}

// spectra puts the spectra of the symmetric kernels k0, k2 (k[j]: weight at
// ±j), wrapped circularly to size n and scaled by 1/n, in f.k0, f.k2.
func (f *fftConv) spectra(p *fftPlan, k0, k2 []float64) {
	n := p.n
	f.kk = growC(f.kk, n)
	f.k0, f.k2 = grow(f.k0, n), grow(f.k2, n)
	for i := range f.kk[:n] {
		f.kk[i] = 0
	}
	for j := range k0 { // both kernels at once: k0 real, k2 imaginary
		c := complex(k0[j], k2[j])
		f.kk[j] = c
		if j > 0 {
			f.kk[n-j] = c
		}
	}
	p.transform(f.kk, false)
	// Both kernels are real and even, so their spectra are real and even;
	// Z = K0 + i*K2 with K0, K2 real gives them directly.
	inv := 1 / float64(n)
	for i, z := range f.kk[:n] {
		f.k0[i], f.k2[i] = real(z)*inv, imag(z)*inv
	}
}

func growC(b []complex128, n int) []complex128 {
	if cap(b) < n {
		return make([]complex128, n)
	}
	return b[:n]
}

// log is Detector.log for large kernels: a = order 2 along y and b = order
// 0 along y, then out = -(order0_x(a) + order2_x(b)) * s2.
func (f *fftConv) log(out, img, a, b []float64, h, w int, k0, k2 []float64, s2 float64) {
	r := len(k0) - 1
	// y pass, two columns per transform (real and imaginary parts).
	p := f.plan(1 << bits.Len(uint(h+2*r-1)))
	f.spectra(p, k0, k2)
	n := p.n
	f.z, f.zy = growC(f.z, n), growC(f.zy, n)
	z, zy := f.z[:n], f.zy[:n]
	idx := f.reflectIndex(h, r)
	for x := 0; x < w; x += 2 {
		x2 := min(x+1, w-1)
		for i, q := range idx {
			q := int(q) * w
			z[i] = complex(img[q+x], img[q+x2])
		}
		clear(z[len(idx):])
		p.transform(z, false)
		for i, v := range z {
			zy[i] = scale(v, f.k0[i])
			z[i] = scale(v, f.k2[i])
		}
		p.transform(z, true)
		p.transform(zy, true)
		for y := range h {
			a[y*w+x], b[y*w+x] = real(z[y+r]), real(zy[y+r])
			if x2 != x {
				a[y*w+x2], b[y*w+x2] = imag(z[y+r]), imag(zy[y+r])
			}
		}
	}
	// x pass: z = a_row + i*b_row; split the spectrum, filter, sum; two
	// rows share the inverse transform (real and imaginary parts).
	p = f.plan(1 << bits.Len(uint(w+2*r-1)))
	f.spectra(p, k0, k2)
	n = p.n
	f.z, f.zy = growC(f.z, n), growC(f.zy, n)
	z, zy = f.z[:n], f.zy[:n]
	idx = f.reflectIndex(w, r)
	for y := 0; y < h; y += 2 {
		rows := min(2, h-y)
		for t := range rows {
			ar, br := a[(y+t)*w:(y+t)*w+w], b[(y+t)*w:(y+t)*w+w]
			for i, q := range idx {
				z[i] = complex(ar[q], br[q])
			}
			clear(z[len(idx):])
			p.transform(z, false)
			rot := complex(1, 0) // first row real, second imaginary
			if t == 1 {
				rot = complex(0, 1)
			}
			for k := range z {
				zk, zc := z[k], z[(n-k)&(n-1)]
				zc = complex(real(zc), -imag(zc))
				sa := (zk + zc) * 0.5              // spectrum of a_row
				sb := (zk - zc) * complex(0, -0.5) // spectrum of b_row
				v := (scale(sa, f.k0[k]) + scale(sb, f.k2[k])) * rot
				if t == 0 {
					zy[k] = v
				} else {
					zy[k] += v
				}
			}
		}
		p.transform(zy, true)
		o := out[y*w : y*w+w]
		for x := range o {
			o[x] = -real(zy[x+r]) * s2
		}
		if rows == 2 {
			o = out[(y+1)*w : (y+1)*w+w]
			for x := range o {
				o[x] = -imag(zy[x+r]) * s2
			}
		}
	}
}

func scale(v complex128, k float64) complex128 { return complex(real(v)*k, imag(v)*k) }
