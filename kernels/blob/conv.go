package blob

import "math"

// kernels fills k0 and k2 (grown as needed) with scipy's
// _gaussian_kernel1d(sigma, 0 and 2, r) for x = -r..r, r = int(4*sigma+0.5)
// as gaussian_filter1d with truncate=4. Both are symmetric: k[r+j] is the
// weight at offset ±j.
func kernels(k0, k2 []float64, sigma float64) (_, _ []float64, r int) {
	r = int(4*sigma + 0.5)
	k0, k2 = grow(k0, 2*r+1), grow(k2, 2*r+1)
	s2 := sigma * sigma
	c := -0.5 / s2
	for i := range k0 { // full kernel, x = -r..r, for numpy's sum order
		x := float64((i - r) * (i - r))
		k0[i] = math.Exp(c * x)
	}
	sum := pairwiseSum(k0)
	for i := range k0 {
		k0[i] /= sum
	}
	p := 1.0 / -s2
	pp := p * p
	for i := range k2 {
		x := float64((i - r) * (i - r))
		k2[i] = float64(p+float64(x*pp)) * k0[i]
	}
	return k0, k2, r
}

// pairwiseSum is numpy's pairwise summation (np.sum of a float64 array).
func pairwiseSum(a []float64) float64 {
	n := len(a)
	switch {
	case n < 8:
		s := 0.0
		for _, v := range a {
			s += v
		}
		return s
	case n <= 128:
		var r [8]float64
		copy(r[:], a[:8])
		i := 8
		for ; i < n-n%8; i += 8 {
			for j := range r {
				r[j] += a[i+j]
			}
		}
		s := ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
		for ; i < n; i++ {
			s += a[i]
		}
		return s
	}
	n2 := n / 2
	n2 -= n2 % 8
	return pairwiseSum(a[:n2]) + pairwiseSum(a[n2:])
}

// reflect maps i into 0..n-1 with scipy's 'reflect' mode (d c b a | a b c d
// | d c b a), repeating for lines shorter than the kernel.
func reflect(i, n int) int {
	m := 2 * n
	i %= m
	if i < 0 {
		i += m
	}
	if i >= n {
		i = m - 1 - i
	}
	return i
}

// kernel is one scale's pair of 1D kernels, kept between Detect calls.
type kernel struct {
	sigma  float64
	k0, k2 []float64
}

// log writes -gaussian_laplace(img, sigma) * sigma**2 into out for scale k
// (sigma = d.sigmas[k]), summing in scipy's order (centre tap first, then
// outer to inner pairs).
func (d *Detector) log(out []float64, h, w, k int) {
	sigma := d.sigmas[k]
	if k >= len(d.kern) {
		d.kern = append(d.kern, make([]kernel, k+1-len(d.kern))...)
	}
	c := &d.kern[k]
	if c.k0 == nil || c.sigma != sigma {
		c.k0, c.k2, _ = kernels(c.k0, c.k2, sigma)
		c.sigma = sigma
	}
	r := len(c.k0) / 2
	k0, k2 := c.k0[r:], c.k2[r:] // k[j]: weight at offset ±j
	if d.fft.use(h, w, r) {
		d.fft.log(out, d.pix, h, w, k0, k2, sigma*sigma)
		return
	}
	d.direct(out, h, w, k0, k2, sigma*sigma)
}

// direct is log by direct sums: k0, k2 hold the weights at offsets 0..r.
// Each output row takes its y pass (order 2 and order 0 along y, sharing
// the pair sums) into the middle of the x pass's line buffers, then the x
// pass.
func (d *Detector) direct(out []float64, h, w int, k0, k2 []float64, s2 float64) {
	r := len(k0) - 1
	n := w + 2*r
	d.ext = grow(d.ext, 2*n)
	d.t = grow(d.t, 2*w)
	ea, eb := d.ext[:n], d.ext[n:]
	t1, t2 := d.t[:w], d.t[w:]
	d.win.reset(d.pix, w, min(h, 2*r+1))
	for y := range h {
		// y pass: a = order 2 along y, b = order 0 along y.
		ar, br := ea[r:r+w], eb[r:r+w]
		c2, c0 := k2[0], k0[0]
		for x, v := range d.win.row(y) {
			ar[x] = v * c2
			br[x] = v * c0
		}
		for j := r; j >= 1; j-- {
			rm, rp := d.win.row(reflect(y-j, h)), d.win.row(reflect(y+j, h))
			w2, w0 := k2[j], k0[j]
			rp = rp[:len(rm)]
			ar, br := ar[:len(rm)], br[:len(rm)]
			for x, u := range rm {
				s := u + rp[x]
				ar[x] += float64(s * w2)
				br[x] += float64(s * w0)
			}
		}
		// x pass: out = -(order0_x(a) + order2_x(b)) * sigma**2.
		for i := range r {
			ea[i], eb[i] = ar[reflect(i-r, w)], br[reflect(i-r, w)]
			q := r + w + i
			ea[q], eb[q] = ar[reflect(w+i, w)], br[reflect(w+i, w)]
		}
		for x := range w {
			t1[x] = ea[x+r] * k0[0]
			t2[x] = eb[x+r] * k2[0]
		}
		for j := r; j >= 1; j-- {
			w0, w2 := k0[j], k2[j]
			am, ap := ea[r-j:r-j+w], ea[r+j:r+j+w]
			bm, bp := eb[r-j:r-j+w], eb[r+j:r+j+w]
			for x := range t1 {
				t1[x] += float64((am[x] + ap[x]) * w0)
				t2[x] += float64((bm[x] + bp[x]) * w2)
			}
		}
		o := out[y*w : y*w+w]
		for x := range o {
			o[x] = -(t1[x] + t2[x]) * s2
		}
	}
}
