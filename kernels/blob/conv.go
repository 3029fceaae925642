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
// pass (ySum and xSum: scipy's order, every product rounded before its
// sum, whichever the build).
func (d *Detector) direct(out []float64, h, w int, k0, k2 []float64, s2 float64) {
	r := len(k0) - 1
	n := w + 2*r
	big := max(r, d.rdir) // made once, for the Detect's largest direct radius
	d.ext = growCap(d.ext, 2*n, 2*(w+2*big))
	ea, eb := d.ext[:n], d.ext[n:]
	d.win.reset(d.pix, w, min(h, 2*r+1), min(h, 2*big+1))
	if cap(d.rows) < 2*r+1 {
		d.rows = make([][]float64, 2*r+1)
	}
	rows := d.rows[:2*r+1]
	d.coef = grow(d.coef, 8*(r+1)) // k0[j] and k2[j], 4 times each
	for j := range r + 1 {
		for l := range 4 {
			d.coef[8*j+l], d.coef[8*j+4+l] = k0[j], k2[j]
		}
	}
	for y := range h {
		// y pass: a = order 2 along y, b = order 0 along y. The window
		// holds every row one output row reads at once.
		rows[0] = d.win.row(y)
		for j := r; j >= 1; j-- {
			i := 2*(r-j) + 1
			rows[i], rows[i+1] = d.win.row(reflect(y-j, h)), d.win.row(reflect(y+j, h))
		}
		ySum(ea[r:r+w], eb[r:r+w], rows, k0, k2, d.coef)
		// x pass: out = -(order0_x(a) + order2_x(b)) * sigma**2.
		for i := range r {
			ea[i], eb[i] = ea[r+reflect(i-r, w)], eb[r+reflect(i-r, w)]
			q := r + w + i
			ea[q], eb[q] = ea[r+reflect(w+i, w)], eb[r+reflect(w+i, w)]
		}
		xSum(out[y*w:y*w+w], ea, eb, k0, k2, d.coef, s2)
	}
}

// ySumScalar writes the y pass of the columns from lo on: a = k2[0]·c +
// sum over j = r..1 of (m_j + p_j)·k2[j], b the same with k0, where rows
// is c, then m_r, p_r, ..., m_1, p_1 (the rows at -j and +j).
func ySumScalar(a, b []float64, rows [][]float64, k0, k2 []float64, lo int) {
	r := len(k0) - 1
	a, b = a[lo:], b[lo:len(a)]
	c2, c0 := k2[0], k0[0]
	for x, v := range rows[0][lo : lo+len(a)] {
		a[x] = v * c2
		b[x] = v * c0
	}
	for j := r; j >= 1; j-- {
		i := 2*(r-j) + 1
		rm, rp := rows[i][lo:lo+len(a)], rows[i+1][lo:lo+len(a)]
		w2, w0 := k2[j], k0[j]
		for x, u := range rm {
			s := u + rp[x]
			a[x] += float64(s * w2)
			b[x] += float64(s * w0)
		}
	}
}

// xSumScalar writes the x pass of the outputs from lo on: out[x] =
// -(sum_j k0[j]·a[r+x±j] + sum_j k2[j]·b[r+x±j])·s2, the centre tap first,
// then the pairs from j = r down to 1, each pair added before it is
// weighted; a and b are len(out) + 2r long.
func xSumScalar(out, a, b, k0, k2 []float64, s2 float64, lo int) {
	r := len(k0) - 1
	for x := lo; x < len(out); x++ {
		t1 := a[x+r] * k0[0]
		t2 := b[x+r] * k2[0]
		for j := r; j >= 1; j-- {
			t1 += float64((a[x+r-j] + a[x+r+j]) * k0[j])
			t2 += float64((b[x+r-j] + b[x+r+j]) * k2[j])
		}
		out[x] = -(t1 + t2) * s2
	}
}
