package imageio

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
)

// Checks that a file can hold the pixel data its header claims, run after
// the size limit and before any decoder allocates its image. Each is a
// lower bound on the bytes that pixel data takes in its format, reached
// by no file the decoder would decode: a header claiming 10000x10000 over
// a few bytes is refused at the cost of reading the header, not of 100
// megapixels. doc.go's Limits section states the bound per format.

// The best compression ratios, in output bytes per input byte.
const (
	// deflateRatio: a deflate match of 258 bytes, the longest, takes at
	// least two bits, a 1-bit length code and a 1-bit distance code.
	deflateRatio = 1032
	// lzwRatio: an LZW code of w bits (9 to 12 in TIFF, 3 to 12 in GIF)
	// writes at most 2^w bytes (its table holds at most 2^w strings, each
	// one byte longer than an earlier one), so at most 4096/12 bytes a
	// bit: 2731 bytes a byte.
	lzwRatio = 2731
	// vp8MacroblocksPerByte: every macroblock of a VP8 key frame codes
	// its luma and chroma prediction modes in the first partition with
	// fixed probabilities (145 for the first luma bit, 142 for the first
	// chroma bit). x/image/vp8's boolean decoder takes at least 0.81 and
	// 0.84 bits for them, so 1.6 bits a macroblock: at most 5 macroblocks
	// a byte. libwebp's flat frames take 3.4 bits (2.3 a byte).
	vp8MacroblocksPerByte = 5
)

// inflateMax bounds what n bytes of zlib or deflate data inflate to.
func inflateMax(n int64) int64 { return deflateRatio*n + 4096 }

// mulSat is a*b, or MaxUint64 when that overflows.
func mulSat(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	if hi != 0 {
		return math.MaxUint64
	}
	return lo
}

// addSat is a+b, or MaxUint64 when that overflows.
func addSat(a, b uint64) uint64 {
	s, carry := bits.Add64(a, b, 0)
	if carry != 0 {
		return math.MaxUint64
	}
	return s
}

// checkData refuses, with ErrTruncated, a file of format whose header
// (read as w x h, within the limits) claims more pixel data than the
// file can hold. TIFF is checked by tiffGuard (tiffData) and PNM by
// checkPNM, both called by CheckHeader too; JPEG is not checked.
func checkData(format string, b []byte, w, h int) error {
	switch format {
	case "png":
		return checkPNG(b, w, h)
	case "bmp":
		return checkBMP(b, w, h)
	case "gif":
		return checkGIF(b, w, h)
	case "webp":
		return checkWebP(b, w, h)
	}
	return nil
}

// checkPNG: the image data, all IDAT chunks together (as far as the file
// holds them), inflates to at most inflateMax of its size; the samples
// alone, without filter bytes, take w*h*bits per pixel/8 bytes. A header
// image/png would refuse is left to it.
func checkPNG(b []byte, w, h int) error {
	var f pngFile
	const ihdrEnd = len(pngSignature) + 8 + 13 + 4
	if len(b) < ihdrEnd || string(b[12:16]) != "IHDR" || !f.parseIHDR(b[16:29]) {
		return nil
	}
	var idat int64
	for p := int64(ihdrEnd); p+8 <= int64(len(b)); {
		n := int64(binary.BigEndian.Uint32(b[p:]))
		if string(b[p+4:p+8]) == "IDAT" {
			idat += min(n, int64(len(b))-p-8)
		} else if string(b[p+4:p+8]) == "IEND" {
			break
		}
		p += 12 + n
	}
	need := mulSat(mulSat(uint64(w), uint64(h)), uint64(f.depth*f.channels())) / 8
	if need > uint64(inflateMax(idat)) {
		return fmt.Errorf("%w: png of %dx%d needs %d bytes of samples, but its %d bytes of image data inflate to at most %d",
			ErrTruncated, w, h, need, idat, inflateMax(idat))
	}
	return nil
}

// checkBMP: the decoder reads uncompressed rows, each padded to 4 bytes,
// from the pixel data offset on, which it requires to be the end of the
// header and palette.
func checkBMP(b []byte, w, h int) error {
	if len(b) < 30 {
		return nil
	}
	offset := int64(binary.LittleEndian.Uint32(b[10:]))
	depth := int64(binary.LittleEndian.Uint16(b[28:]))
	row := (int64(w)*depth + 31) / 32 * 4
	need := mulSat(uint64(row), uint64(h))
	if have := max(int64(len(b))-offset, 0); need > uint64(have) {
		return fmt.Errorf("%w: bmp of %dx%d at %d bits needs %d bytes of pixels from offset %d, file holds %d",
			ErrTruncated, w, h, depth, need, offset, have)
	}
	return nil
}

// checkGIF: the first frame's LZW data, at most the rest of the file,
// codes at most lzwRatio pixels a byte. The screen around the frame
// costs no data. A frame the decoder refuses before allocating (none,
// or larger than the screen) is left to it.
func checkGIF(b []byte, w, h int) error {
	p := gifFirstImage(b, nil)
	if p < 0 || p+10 > len(b) {
		return nil
	}
	le := binary.LittleEndian
	left, top := int(le.Uint16(b[p+1:])), int(le.Uint16(b[p+3:]))
	fw, fh := int(le.Uint16(b[p+5:])), int(le.Uint16(b[p+7:]))
	if left+fw > w || top+fh > h {
		return nil
	}
	q := p + 10
	if flags := b[p+9]; flags&0x80 != 0 { // local colour table
		q += 3 << (flags&7 + 1)
	}
	q++ // LZW minimum code size
	have := int64(max(len(b)-q, 0))
	if need := int64(fw) * int64(fh); need > lzwRatio*have {
		return fmt.Errorf("%w: gif frame of %dx%d needs at least %d bytes of LZW data, file holds %d",
			ErrTruncated, fw, fh, (need+lzwRatio-1)/lzwRatio, have)
	}
	return nil
}

// gifFirstImage walks the blocks of the GIF b after its screen descriptor
// and global colour table, as image/gif does, calling ext (when not nil)
// with the position of each extension block, up to the first image
// descriptor, and returns its position, or -1 when there is none.
func gifFirstImage(b []byte, ext func(p int)) int {
	if len(b) < 13 {
		return -1
	}
	p := 13
	if b[10]&0x80 != 0 { // global colour table
		p += 3 << (b[10]&7 + 1)
	}
	for p+1 < len(b) && b[p] == 0x21 { // extension blocks
		if ext != nil {
			ext(p)
		}
		p += 2
		for p < len(b) && b[p] != 0 { // sub-blocks
			p += int(b[p]) + 1
		}
		p++
	}
	if p < len(b) && b[p] == 0x2c {
		return p
	}
	return -1
}

// checkWebP: a lossy (VP8) frame's first partition must be in the file
// and hold at least 1.6 bits a macroblock (vp8MacroblocksPerByte). A
// lossless (VP8L) frame has no such bound: where every Huffman code has
// one symbol, pixels take no bits at all.
func checkWebP(b []byte, w, h int) error {
	for p := int64(12); p+8 <= int64(len(b)); {
		id, data, next := webpChunk(b, p)
		switch id {
		case "VP8L":
			return nil
		case "VP8 ":
			if len(data) < 10 || data[0]&1 != 0 { // no key frame: refused from its header
				return nil
			}
			first := int64(data[0])>>5 | int64(data[1])<<3 | int64(data[2])<<11
			have := int64(len(data) - 10)
			mbs := int64((w+15)/16) * int64((h+15)/16)
			if first > have {
				return fmt.Errorf("%w: webp VP8 first partition of %d bytes, file holds %d", ErrTruncated, first, have)
			}
			if mbs > vp8MacroblocksPerByte*first+1 {
				return fmt.Errorf("%w: webp VP8 frame of %dx%d (%d macroblocks) needs a first partition of at least %d bytes, has %d",
					ErrTruncated, w, h, mbs, (mbs-1)/vp8MacroblocksPerByte, first)
			}
			return nil
		}
		p = next
	}
	return nil
}

// webpChunk is the RIFF chunk of b at p (p+8 <= len(b)): its id, its data
// as far as b holds it, and the position of the next chunk.
func webpChunk(b []byte, p int64) (id string, data []byte, next int64) {
	n := int64(binary.LittleEndian.Uint32(b[p+4:]))
	data = b[p+8:]
	if n < int64(len(data)) {
		data = data[:n]
	}
	return string(b[p : p+4]), data, p + 8 + n + n&1
}

// tiffData checks the strips or tiles of blockW x blockH that
// golang.org/x/image/tiff reads for a w x h image against the file:
// uncompressed ones must lie in it whole; together they must decode to at
// least the image's samples (h rows of w*bits per pixel/8 bytes, rounded
// up), given deflateRatio, lzwRatio, PackBits' exact length, or for CCITT
// at least one bit a row. A compression the decoder does not support is
// refused here, before it allocates. Headers the decoder refuses before
// allocating (too few offsets or counts, tiles under 8x8) are left to it.
func tiffData(d ifd, w, h, blockW, blockH uint64, offsets, counts ifdEntry) error {
	if tiled := d.first(322) != 0; tiled && (blockW < 8 || blockH < 8) || blockW == 0 || blockH == 0 {
		return nil
	}
	n := (w + blockW - 1) / blockW * ((h + blockH - 1) / blockH)
	if n > offsets.count || n > counts.count {
		return nil
	}
	comp := d.first(259)
	switch comp {
	case 0, 1, 3, 4, 5, 8, 32946, tiffPackBits:
	default:
		return fmt.Errorf("%w: tiff compression %d is not supported", ErrCorrupt, comp)
	}
	size := uint64(len(d.b))
	limit := blockW * blockH * 8 // what the decoder reads of a block at most
	var have uint64              // bytes of data, PackBits unpacked
	for i := range n {
		off, c := offsets.at(d, i), counts.at(d, i)
		switch {
		case comp == 0 || comp == 1:
			if off > size || c > size-off {
				return fmt.Errorf("%w: tiff block %d of %d bytes at offset %d ends past the file's %d bytes", ErrTruncated, i, c, off, size)
			}
		case off >= size:
			c = 0
		case comp == tiffPackBits:
			if c = unpackedLen(d.b[off:min(off+c, size)], limit); c > limit {
				return fmt.Errorf("%w: tiff PackBits block %d unpacks to more than %d bytes", ErrCorrupt, i, limit)
			}
		default:
			c = min(c, size-off)
		}
		have = addSat(have, c)
	}
	depth := uint64(1) // BitsPerSample: one, or as many as samples for RGB
	if _, ok := d.tags[258]; ok {
		depth = d.first(258)
		if d.first(262) == 2 {
			depth = mulSat(depth, d.tags[258].count)
		}
	}
	if comp == 3 || comp == 4 { // CCITT: a row takes at least one bit
		if h > mulSat(have, 8) {
			return fmt.Errorf("%w: tiff CCITT image of %d rows needs at least %d bytes, file holds %d", ErrTruncated, h, (h+7)/8, have)
		}
		return nil
	}
	decoded := have // none, PackBits
	switch comp {
	case 5:
		decoded = mulSat(have, lzwRatio)
	case 8, 32946:
		decoded = addSat(mulSat(have, deflateRatio), 4096)
	}
	need := mulSat((mulSat(w, depth)+7)/8, h)
	if need > decoded {
		return fmt.Errorf("%w: tiff of %dx%d at %d bits needs %d bytes of samples, but its %d blocks (compression %d) hold %d bytes, which decode to at most %d",
			ErrTruncated, w, h, depth, need, n, comp, have, decoded)
	}
	return nil
}
