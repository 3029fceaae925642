package haar

// integrals fills the (w+1)×(h+1) integral images of the w×h image img,
// rows stride apart, as OpenCV's integral() does: sum[y][x] is the sum of
// img over rows < y and columns < x; sq the same of squares (modulo 2^32,
// as OpenCV's 32-bit buffer; window differences are exact); and, when
// tilt is not nil, tilt[y][x] the sum over the 45° triangle of pixels
// (c, r) with r < y and |c-x+1| <= y-r-1.
func integrals(img []uint8, w, h, stride int, sum []int32, sq []uint32, tilt []int32) {
	integralsSplit(img, w, h, stride, 0, sum, sq, tilt)
}

// integralsSplit is integrals in program's layout half: 0 plain, else
// column x of each row at element col(x, half) (stride = 2·half).
func integralsSplit(img []uint8, w, h, stride, half int, sum []int32, sq []uint32, tilt []int32) {
	clear(sum[:w+1])
	clear(sq[:w+1])
	if half != 0 {
		clear(sum[:stride])
		clear(sq[:stride])
	}
	for y := range h {
		row := img[y*w : (y+1)*w]
		if half == 0 {
			prev, cur := sum[y*stride:y*stride+w+1], sum[(y+1)*stride:(y+1)*stride+w+1]
			qprev, qcur := sq[y*stride:y*stride+w+1], sq[(y+1)*stride:(y+1)*stride+w+1]
			var s int32
			var q uint32
			cur[0], qcur[0] = 0, 0
			for x, v := range row {
				s += int32(v)
				q += uint32(v) * uint32(v)
				cur[x+1] = prev[x+1] + s
				qcur[x+1] = qprev[x+1] + q
			}
			continue
		}
		// Split: column x+1 at (x+1)/2 (x odd) or half + x/2 (x even).
		n := (w + 2) / 2 // even columns 0, 2, ..., w
		prev, cur := sum[y*stride:(y+1)*stride], sum[(y+1)*stride:(y+2)*stride]
		qprev, qcur := sq[y*stride:(y+1)*stride], sq[(y+1)*stride:(y+2)*stride]
		oprev, ocur := prev[half:], cur[half:]
		oqprev, oqcur := qprev[half:], qcur[half:]
		_, _, _, _ = prev[n-1], cur[n-1], qprev[n-1], qcur[n-1]
		var s int32
		var q uint32
		cur[0], qcur[0] = 0, 0
		x := 0
		for ; x+1 < w; x += 2 {
			a, b := int32(row[x]), int32(row[x+1])
			s += a
			q += uint32(a * a)
			ocur[x/2] = oprev[x/2] + s
			oqcur[x/2] = oqprev[x/2] + q
			s += b
			q += uint32(b * b)
			cur[x/2+1] = prev[x/2+1] + s
			qcur[x/2+1] = qprev[x/2+1] + q
		}
		if x < w {
			a := int32(row[x])
			s += a
			q += uint32(a * a)
			ocur[x/2] = oprev[x/2] + s
			oqcur[x/2] = oqprev[x/2] + q
		}
	}
	if tilt == nil {
		return
	}
	// T(x,y) = T(x-1,y-1) + T(x+1,y-1) - T(x,y-2) + I(x-1,y-1) + I(x-1,y-2),
	// with T(-1,y) = T(0,y-1) and T(w+1,y) = T(w,y-1) (the triangle's part
	// outside the image is empty) and T(x,y<=0) = 0.
	t := func(x, y int) int32 {
		if y <= 0 {
			return 0
		}
		switch {
		case x < 0:
			x, y = 0, y-1
		case x > w:
			x, y = w, y-1
		}
		if y <= 0 {
			return 0
		}
		return tilt[y*stride+col(x, half)]
	}
	pix := func(x, y int) int32 {
		if x < 0 || x >= w || y < 0 {
			return 0
		}
		return int32(img[y*w+x])
	}
	clear(tilt[:stride])
	for y := 1; y <= h; y++ {
		for x := 0; x <= w; x++ {
			tilt[y*stride+col(x, half)] = t(x-1, y-1) + t(x+1, y-1) - t(x, y-2) + pix(x-1, y-1) + pix(x-1, y-2)
		}
	}
}
