package imageio

import (
	"encoding/binary"
	"hash/crc32"
	"math"
)

// pngSignature starts every PNG file.
const pngSignature = "\x89PNG\r\n\x1a\n"

// zinflate decompresses the zlib stream src into dst. It reports true only
// when the stream fills dst exactly, its checksum holds and it ends at the
// end of src.
type zinflate func(dst, src []byte) bool

// PNG colour types.
const (
	ctGray      = 0
	ctRGB       = 2
	ctPalette   = 3
	ctGrayAlpha = 4
	ctRGBA      = 6
)

// Chunk stages, as image/png orders them.
const (
	stStart = iota
	stIHDR
	stPLTE
	stTRNS
	stIDAT
	stIEND
)

// pngFile is what pngGray needs of a PNG's chunks.
type pngFile struct {
	w, h       int
	depth      int // bits per sample
	colorType  int
	interlaced bool
	lut        [256]uint8 // palette index to gray; 0 past the palette
	idat       []byte     // the data of the first run of IDAT chunks, joined
}

// channels is the samples per pixel.
func (f *pngFile) channels() int {
	switch f.colorType {
	case ctRGB:
		return 3
	case ctGrayAlpha:
		return 2
	case ctRGBA:
		return 4
	}
	return 1
}

// rowBytes is the length of a w-pixel row, without its filter byte.
func (f *pngFile) rowBytes(w int) int { return (f.depth*f.channels()*w + 7) / 8 }

// pngGray decodes the PNG b, whose header image/png read as w x h (within
// the limits), into dst with inflate and its own unfilter and gray
// conversion, or reports false, with dst.W, dst.H and len(dst.Pix)
// unchanged, to leave the file to image/png. It takes only files that
// image/png takes too, to the same pixels (FuzzDecodePNG; the few deflate
// streams libdeflate alone takes are in doc.go): anything it does not
// read the same way (trailing data in the zlib stream or after
// it, a bad filter byte, a bad checksum, chunks out of order) goes to
// image/png, whose verdict and error then stand.
func pngGray(b []byte, w, h int, dst *Gray, inflate zinflate) bool {
	f, ok := scanPNG(b)
	if !ok || f.w != w || f.h != h {
		return false
	}
	size := int64(0)
	for _, p := range f.passes() {
		size += int64(p.h) * int64(1+f.rowBytes(p.w))
	}
	// Data too short to fill the buffer (inflateMax) is image/png's to
	// refuse, before the buffer is allocated.
	if size <= 0 || size > math.MaxInt || size > inflateMax(int64(len(f.idat))) {
		return false
	}
	padded := make([]byte, size+rawPad)
	if !inflate(padded[:size], f.idat) {
		return false
	}
	buf := grow(dst.Pix, w*h)
	if !f.gray(padded, buf) {
		return false
	}
	dst.W, dst.H, dst.Pix = w, h, buf
	return true
}

// scanPNG reads b's chunks as image/png does, up to IEND, checking every
// CRC and the same order and lengths; false where image/png would fail or
// where this reading might differ from it.
func scanPNG(b []byte) (pngFile, bool) {
	var f pngFile
	stage, paletted, inRun, joined := stStart, false, false, false
	pos := len(pngSignature)
	for stage != stIEND {
		if len(b)-pos < 12 {
			return f, false
		}
		n := int64(binary.BigEndian.Uint32(b[pos:]))
		if n > 0x7fffffff || n > int64(len(b)-pos-12) {
			return f, false
		}
		typ, data := string(b[pos+4:pos+8]), b[pos+8:pos+8+int(n)]
		if crc32.ChecksumIEEE(b[pos+4:pos+8+int(n)]) != binary.BigEndian.Uint32(b[pos+8+int(n):]) {
			return f, false
		}
		pos += 12 + int(n)
		if typ != "IDAT" {
			inRun = false
		}
		switch typ {
		case "IHDR":
			if stage != stStart || !f.parseIHDR(data) {
				return f, false
			}
			stage, paletted = stIHDR, f.colorType == ctPalette
		case "PLTE":
			np := len(data) / 3
			if stage != stIHDR || len(data)%3 != 0 || np == 0 || np > 256 || np > 1<<f.depth {
				return f, false
			}
			switch f.colorType {
			case ctPalette:
				for i := range np {
					f.lut[i] = luma(uint32(data[3*i]), uint32(data[3*i+1]), uint32(data[3*i+2]))
				}
			case ctRGB, ctRGBA:
			default:
				return f, false
			}
			stage = stPLTE
		case "tRNS":
			// Transparency never changes the gray (alpha is ignored), but
			// image/png checks where it is and how long.
			want := 0 // the length for gray and colour; palettes take up to 256
			switch f.colorType {
			case ctGray:
				want = 2
			case ctRGB:
				want = 6
			}
			switch {
			case paletted && stage != stPLTE,
				f.colorType == ctRGB && stage != stIHDR && stage != stPLTE,
				!paletted && f.colorType != ctRGB && stage != stIHDR,
				paletted && len(data) > 256,
				!paletted && (want == 0 || len(data) != want):
				return f, false
			}
			stage = stTRNS
		case "IDAT":
			switch {
			case stage < stIHDR || (stage == stIHDR && paletted):
				return f, false
			case stage < stIDAT:
				stage, inRun, f.idat = stIDAT, true, data
			case inRun && !joined:
				f.idat, joined = append(append(make([]byte, 0, len(f.idat)+len(b)-pos), f.idat...), data...), true
			case inRun:
				f.idat = append(f.idat, data...)
			}
		case "IEND":
			if stage != stIDAT || n != 0 {
				return f, false
			}
			stage = stIEND
		}
	}
	return f, len(f.idat) > 0
}

// parseIHDR takes what image/png takes.
func (f *pngFile) parseIHDR(d []byte) bool {
	if len(d) != 13 || d[10] != 0 || d[11] != 0 || d[12] > 1 {
		return false
	}
	w, h := int32(binary.BigEndian.Uint32(d)), int32(binary.BigEndian.Uint32(d[4:]))
	if w <= 0 || h <= 0 {
		return false
	}
	f.w, f.h, f.depth, f.colorType, f.interlaced = int(w), int(h), int(d[8]), int(d[9]), d[12] == 1
	switch f.colorType {
	case ctGray:
		return f.depth == 1 || f.depth == 2 || f.depth == 4 || f.depth == 8 || f.depth == 16
	case ctPalette:
		return f.depth == 1 || f.depth == 2 || f.depth == 4 || f.depth == 8
	case ctRGB, ctGrayAlpha, ctRGBA:
		return f.depth == 8 || f.depth == 16
	}
	return false
}

// pngPass is one reduced image of the file: w x h pixels placed at
// (x*dx+x0, y*dy+y0).
type pngPass struct{ w, h, x0, y0, dx, dy int }

// passes are the file's reduced images that hold pixels: the whole image,
// or Adam7's seven passes less the empty ones.
func (f *pngFile) passes() []pngPass {
	if !f.interlaced {
		return []pngPass{{f.w, f.h, 0, 0, 1, 1}}
	}
	var ps []pngPass
	for _, a := range [7][4]int{{0, 0, 8, 8}, {4, 0, 8, 8}, {0, 4, 4, 8}, {2, 0, 4, 4}, {0, 2, 2, 4}, {1, 0, 2, 2}, {0, 1, 1, 2}} {
		p := pngPass{(f.w - a[0] + a[2] - 1) / a[2], (f.h - a[1] + a[3] - 1) / a[3], a[0], a[1], a[2], a[3]}
		if p.w > 0 && p.h > 0 {
			ps = append(ps, p)
		}
	}
	return ps
}

// rawPad is the slack gray needs after the inflated data: unfilterRows
// reads up to 15 bytes past its rows (and writes back what it read there).
const rawPad = 16

// gray unfilters the inflated image data, padded[:len-rawPad], in place
// and writes its gray into dst (f.w x f.h); false on a filter type over 4.
func (f *pngFile) gray(padded, dst []uint8) bool {
	raw := padded[:len(padded)-rawPad]
	bpp := max(1, f.depth*f.channels()/8) // filter distance in bytes
	var tmp []uint8
	for _, p := range f.passes() {
		n := f.rowBytes(p.w)
		prev := make([]byte, n) // zeros above the first row
		if p.dx > 1 && len(tmp) < p.w {
			tmp = make([]uint8, p.w)
		}
		emit := func(y int, cur []byte) {
			out := dst[(y*p.dy+p.y0)*f.w:][:f.w]
			if p.dx == 1 {
				f.grayRow(out, cur)
			} else {
				f.grayRow(tmp[:p.w], cur)
				for x, v := range tmp[:p.w] {
					out[x*p.dx+p.x0] = v
				}
			}
		}
		for y := 0; y < p.h; y++ {
			// A group takes about n+31 steps for its 32n bytes: rows
			// shorter than 16 bytes go one or two at a time.
			if bpp <= 4 && n >= 16 && y+unfilterGroup <= p.h && haveAVX2() && costlyRows(raw, n) && unfilterRows(raw, n, prev, bpp) {
				for k := range unfilterGroup {
					cur := raw[1+k*(1+n):][:n]
					emit(y+k, cur)
					prev = cur
				}
				raw = raw[unfilterGroup*(1+n):]
				y += unfilterGroup - 1
				continue
			}
			row := raw[:1+n]
			raw = raw[1+n:]
			cur := row[1:]
			if bpp == 1 && row[0] == 4 && y+1 < p.h && raw[0] == 4 {
				// Two Paeth rows, one byte of filter distance: unfiltered
				// together, their chains of left neighbours interleaved.
				next := raw[1 : 1+n]
				raw = raw[1+n:]
				paeth1x2(cur, next, prev)
				emit(y, cur)
				emit(y+1, next)
				prev = next
				y++
				continue
			}
			if !unfilter(row[0], cur, prev, bpp) {
				return false
			}
			emit(y, cur)
			prev = cur
		}
	}
	return true
}

// costlyRows says whether the unfilterGroup rows of n bytes at the start
// of raw are worth unfiltering together (unfilterRows): their filter
// types all known (0 to 4), and at least a quarter of them Sub, Average
// or Paeth, whose bytes one at a time wait on their left neighbours,
// about 1.8 ns a byte here. Together every row costs about 0.35 ns a
// byte; Up rows alone 0.2, None rows nothing (BenchmarkUnfilterGray).
func costlyRows(raw []byte, n int) bool {
	costly := 0
	for k := range unfilterGroup {
		switch raw[k*(1+n)] {
		case 1, 3, 4:
			costly++
		case 0, 2:
		default:
			return false
		}
	}
	return 4*costly >= unfilterGroup
}

// grayRow converts one unfiltered row to gray by the package's rule.
func (f *pngFile) grayRow(out, in []uint8) {
	switch {
	case f.depth < 8:
		unpackRow(out, in, f.depth, f.colorType == ctPalette, &f.lut)
	case f.colorType == ctPalette:
		for i, v := range in[:len(out)] {
			out[i] = f.lut[v]
		}
	case f.colorType == ctGray && f.depth == 8:
		copy(out, in)
	case f.colorType == ctGray, f.colorType == ctGrayAlpha: // the high byte of the first sample
		step := f.depth / 8 * f.channels()
		for i := range out {
			out[i] = in[i*step]
		}
	case f.depth == 8:
		grayRGB8(out, in, f.channels())
	default:
		rgb16(out, in, 2*f.channels())
	}
}

// unpackRow converts 1, 2 or 4-bit samples: palette indices through lut,
// gray levels scaled to 0..255 as image/png scales them.
func unpackRow(out, in []uint8, depth int, palette bool, lut *[256]uint8) {
	perByte, mask := 8/depth, uint8(1<<depth-1)
	scale := uint8(255 / mask) // 0xff, 0x55, 0x11
	for i := range out {
		v := in[i/perByte] >> (8 - depth - i%perByte*depth) & mask
		if palette {
			out[i] = lut[v]
		} else {
			out[i] = v * scale
		}
	}
}

// unfilter reverses a PNG row filter in place: cur is the row, prev the
// unfiltered row above, bpp the distance to the pixel on the left.
func unfilter(filter byte, cur, prev []byte, bpp int) bool {
	prev = prev[:len(cur)]
	switch filter {
	case 0:
	case 1:
		unfilterSub(cur, bpp)
	case 2:
		unfilterUp(cur, prev)
	case 3:
		unfilterAvg(cur, prev, bpp)
	case 4:
		paethRow(cur, prev, bpp)
	default:
		return false
	}
	return true
}

func unfilterSub(cur []byte, bpp int) {
	for i := bpp; i < len(cur); i++ {
		cur[i] += cur[i-bpp]
	}
}

// unfilterUp adds prev to cur eight bytes at a time, without carries
// between bytes.
func unfilterUp(cur, prev []byte) {
	const hi = 0x8080808080808080
	i := 0
	for ; i+8 <= len(cur); i += 8 {
		x, y := binary.LittleEndian.Uint64(cur[i:]), binary.LittleEndian.Uint64(prev[i:])
		binary.LittleEndian.PutUint64(cur[i:], (x&^hi)+(y&^hi)^(x^y)&hi)
	}
	for ; i < len(cur); i++ {
		cur[i] += prev[i]
	}
}

func unfilterAvg(cur, prev []byte, bpp int) {
	for i := range min(bpp, len(cur)) {
		cur[i] += prev[i] / 2
	}
	for i := bpp; i < len(cur); i++ {
		cur[i] += uint8((int(cur[i-bpp]) + int(prev[i])) / 2)
	}
}

// paeth is the Paeth predictor of a (left), b (above) and c (upper
// left), without branches (the choice is unpredictable on photos).
func paeth(a, b, c int) int {
	p, q := b-c, a-c // p-a and p-b, with p = a+b-c
	pa, pb, pc := max(p, -p), max(q, -q), max(p+q, -p-q)
	if pb < pa {
		a, pa = b, pb
	}
	if pc < pa {
		a = c
	}
	return a
}

// paeth1x2 reverses the Paeth filter in place on two rows whose filter
// distance is one byte (8-bit gray, or fewer bits a pixel), r1 below r0
// and prev above r0. Each byte waits on its left neighbour, a chain about
// 8 cycles a byte long; r1's chain, a byte behind r0's (its byte x needs
// r0's x-1 and x), runs beside it.
func paeth1x2(r0, r1, prev []byte) {
	n := len(r0)
	if n == 0 {
		return
	}
	r1, prev = r1[:n], prev[:n]
	b0 := int(prev[0])
	a0 := (paeth(0, b0, 0) + int(r0[0])) & 0xff
	r0[0] = byte(a0)
	c0 := b0
	a1, c1 := 0, 0 // r1's left and upper-left
	for x := 1; x < n; x++ {
		up := a0 // r0[x-1], above r1[x-1]
		b0 = int(prev[x])
		a0 = (paeth(a0, b0, c0) + int(r0[x])) & 0xff
		r0[x] = byte(a0)
		c0 = b0
		a1 = (paeth(a1, up, c1) + int(r1[x-1])) & 0xff
		r1[x-1] = byte(a1)
		c1 = up
	}
	r1[n-1] = byte((paeth(a1, a0, c1) + int(r1[n-1])) & 0xff)
}

// paethN reverses the Paeth filter in place for any bpp, one channel at a
// time.
func paethN(cur, prev []byte, bpp int) {
	for k := range min(bpp, len(cur)) {
		a, c := 0, 0
		for i := k; i < len(cur); i += bpp {
			b := int(prev[i])
			a = (paeth(a, b, c) + int(cur[i])) & 0xff
			cur[i] = byte(a)
			c = b
		}
	}
}
