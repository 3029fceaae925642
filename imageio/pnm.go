package imageio

import "fmt"

// pnmHeader is a parsed netpbm header (P2, P3, P5, P6).
type pnmHeader struct {
	kind         byte // '2', '3', '5' or '6'
	w, h, maxval int
	raster       []byte // the bytes after the header
}

func (p pnmHeader) channels() int {
	if p.kind == '3' || p.kind == '6' {
		return 3
	}
	return 1
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// skipSpace skips whitespace and '#' comments (to the end of the line).
func skipSpace(b []byte, p int) int {
	for p < len(b) {
		switch {
		case isSpace(b[p]):
			p++
		case b[p] == '#':
			for p < len(b) && b[p] != '\n' && b[p] != '\r' {
				p++
			}
		default:
			return p
		}
	}
	return p
}

// readUint reads a decimal number of at most maxDigits digits after
// whitespace and comments. It returns the value and the next position.
func readUint(b []byte, p, maxDigits int) (int, int, error) {
	p = skipSpace(b, p)
	start, v := p, 0
	for p < len(b) && b[p] >= '0' && b[p] <= '9' {
		if p-start == maxDigits {
			return 0, p, fmt.Errorf("%w: pnm number longer than %d digits", ErrCorrupt, maxDigits)
		}
		v = v*10 + int(b[p]-'0')
		p++
	}
	if p == start {
		if p == len(b) {
			return 0, p, fmt.Errorf("%w: pnm data truncated", ErrCorrupt)
		}
		return 0, p, fmt.Errorf("%w: pnm expected a number at byte %d, found %q", ErrCorrupt, p, b[p])
	}
	return v, p, nil
}

func parsePNMHeader(b []byte) (pnmHeader, error) {
	h := pnmHeader{kind: b[1]}
	var err error
	p := 2
	for _, v := range []*int{&h.w, &h.h, &h.maxval} {
		if *v, p, err = readUint(b, p, 9); err != nil {
			return pnmHeader{}, err
		}
	}
	if h.maxval < 1 || h.maxval > 65535 {
		return pnmHeader{}, fmt.Errorf("%w: pnm maxval %d not in 1..65535", ErrCorrupt, h.maxval)
	}
	// Exactly one whitespace byte separates the header from the raster.
	if p >= len(b) || !isSpace(b[p]) {
		return pnmHeader{}, fmt.Errorf("%w: pnm header not followed by whitespace", ErrCorrupt)
	}
	h.raster = b[p+1:]
	return h, nil
}

// check refuses, with ErrTruncated, a raster too short for n pixels: the
// binary formats take exactly their samples' bytes, the plain ones at
// least a digit and a separator a sample.
func (h pnmHeader) check(n int) error {
	ch := h.channels()
	if h.kind == '5' || h.kind == '6' {
		size := 1
		if h.maxval > 255 {
			size = 2
		}
		if need := n * ch * size; len(h.raster) < need {
			return fmt.Errorf("%w: pnm raster truncated: need %d bytes, have %d", ErrTruncated, need, len(h.raster))
		}
		return nil
	}
	if len(h.raster) < 2*n*ch-1 {
		return fmt.Errorf("%w: pnm raster truncated: %d samples cannot fit in %d bytes", ErrTruncated, n*ch, len(h.raster))
	}
	return nil
}

// checkPNM is checkData for PNM.
func checkPNM(b []byte, w, h int) error {
	hdr, err := parsePNMHeader(b)
	if err != nil {
		return err
	}
	return hdr.check(w * h)
}

// decodePNM decodes the raster of b, n = W*H pixels, into buf grown to n
// (reusing its memory when it can) and returns it. Samples are scaled from
// 0..maxval to 0..255 with rounding. A raster too short for n pixels is
// refused before buf grows: a header may claim any size up to the limit.
func decodePNM(b []byte, n int, buf []uint8) ([]uint8, error) {
	h, err := parsePNMHeader(b)
	if err != nil {
		return nil, err
	}
	ch := h.channels()
	var dst []uint8
	scale := func(v int) (int, error) {
		if v > h.maxval {
			return 0, fmt.Errorf("%w: pnm sample %d over maxval %d", ErrCorrupt, v, h.maxval)
		}
		return (v*255 + h.maxval/2) / h.maxval, nil
	}
	if err := h.check(n); err != nil {
		return nil, err
	}
	var next func() (int, error) // the next raw sample
	if h.kind == '5' || h.kind == '6' {
		size := 1
		if h.maxval > 255 {
			size = 2
		}
		r := h.raster[:n*ch*size]
		dst = grow(buf, n)
		if ch == 1 && h.maxval == 255 {
			copy(dst, r)
			return dst, nil
		}
		next = func() (int, error) {
			v := int(r[0])
			if size == 2 {
				v = v<<8 | int(r[1]) // big-endian
			}
			r = r[size:]
			return v, nil
		}
	} else {
		dst = grow(buf, n)
		p := 0
		next = func() (int, error) {
			var v int
			var err error
			v, p, err = readUint(h.raster, p, 5)
			return v, err
		}
	}
	var s [3]int
	for i := range dst {
		for c := range ch {
			v, err := next()
			if err != nil {
				return nil, err
			}
			if s[c], err = scale(v); err != nil {
				return nil, err
			}
		}
		if ch == 1 {
			dst[i] = uint8(s[0])
		} else {
			dst[i] = luma(uint32(s[0]), uint32(s[1]), uint32(s[2]))
		}
	}
	return dst, nil
}
