package imageio

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// Checks on whole files, after the header passed the size limit and
// before a decoder runs: what the header's size does not bound.

// maxJPEGScans bounds the scans of a JPEG. Each progressive scan is a pass
// over every block of the image however few bytes it takes (end-of-band
// runs skip 32767 blocks in a few bits), so a small file of many scans
// keeps a worker busy for minutes: 600 scans of 8192x8192 in 190 KB took
// image/jpeg 45 s. Encoders write a few dozen at most (libjpeg's
// progressive scripts: 10 scans, 6 for gray); libjpeg-turbo's
// TJFLAG_LIMITSCANS allows 500.
const maxJPEGScans = 100

// checkJPEGScans refuses a JPEG of more than maxJPEGScans scans.
func checkJPEGScans(b []byte) error {
	if n := jpegScans(b, maxJPEGScans); n > maxJPEGScans {
		return fmt.Errorf("%w: jpeg has more than %d scans", ErrCorrupt, maxJPEGScans)
	}
	return nil
}

// jpegScans counts the SOS markers of b up to EOI, or until the count
// passes max. It walks marker segments by their lengths, skips
// entropy-coded data to the next marker (0xff followed by neither 0x00 nor
// an RSTn), and skips stray bytes before a marker as both decoders do.
func jpegScans(b []byte, max int) int {
	n, p := 0, 2 // after SOI
	for n <= max {
		i := bytes.IndexByte(b[min(p, len(b)):], 0xff)
		if i < 0 {
			return n
		}
		p += i
		for p < len(b) && b[p] == 0xff { // fill bytes
			p++
		}
		if p >= len(b) {
			return n
		}
		m := b[p]
		p++
		switch {
		case m == 0xd9: // EOI
			return n
		case m == 0x00, m == 0x01, m >= 0xd0 && m <= 0xd8: // no segment
			continue
		}
		if p+2 > len(b) {
			return n
		}
		p += int(b[p])<<8 | int(b[p+1])
		if m != 0xda {
			continue
		}
		n++
		for p < len(b) { // to the 0xff that starts the next marker
			i := bytes.IndexByte(b[p:], 0xff)
			if i < 0 || p+i+1 >= len(b) {
				p = len(b)
				break
			}
			p += i
			if c := b[p+1]; c != 0 && (c < 0xd0 || c > 0xd7) {
				break
			}
			p++
		}
	}
	return n
}

// tiffPackBits is TIFF's PackBits compression.
const tiffPackBits = 32773

// tiffGuard checks the first IFD of a TIFF whose header said w x h and
// returns what to decode: b, or a corrected copy. golang.org/x/image/tiff
// bounds what it inflates (Deflate, LZW, CCITT) per strip or tile by the
// strip's or tile's size from the tags, 8 bytes per pixel, and PackBits
// not at all. So:
//
//   - a RowsPerStrip beyond the height (2^32-1 is the usual "one strip")
//     becomes the height, in a copy: the same image, with the strip's
//     bound now the image's;
//   - tiles must not cover much more than the image: at most 4 times its
//     pixels, plus 1 megapixel;
//   - PackBits data of each strip or tile must not unpack to more than its
//     bound;
//   - the strips or tiles must hold the image's pixel data (tiffData).
//
// Without these a 64x64 TIFF of 265 KB inflated to 1 GiB. Entries this
// check cannot read are left to the decoder, which reads them the same
// way and fails.
func tiffGuard(b []byte, w, h int) ([]byte, error) {
	d, ok := readIFD(b)
	if !ok {
		return b, nil
	}
	blockW, blockH := uint64(w), uint64(h)
	tiled := d.first(322) != 0
	offsets, counts := d.tags[273], d.tags[279]
	if tiled {
		blockW, blockH = d.first(322), d.first(323)
		offsets, counts = d.tags[324], d.tags[325]
		if blockW > 1<<24 || blockH > 1<<24 {
			return nil, fmt.Errorf("%w: tiff tiles of %dx%d", ErrCorrupt, blockW, blockH)
		}
		if blockW != 0 && blockH != 0 {
			covered := (uint64(w) + blockW - 1) / blockW * blockW * ((uint64(h) + blockH - 1) / blockH * blockH)
			if covered > 4*uint64(w)*uint64(h)+1<<20 {
				return nil, fmt.Errorf("%w: tiff tiles of %dx%d cover %d pixels of a %dx%d image", ErrCorrupt, blockW, blockH, covered, w, h)
			}
		}
	} else if rps := d.first(278); rps > uint64(h) {
		e := d.tags[278]
		if e.size() > 4 {
			return nil, fmt.Errorf("%w: tiff RowsPerStrip %d for %d rows", ErrCorrupt, rps, h)
		}
		b = bytes.Clone(b)
		d.b = b
		e.set(d.order, b, uint32(h))
	} else if rps != 0 {
		blockH = rps
	}
	return b, tiffData(d, uint64(w), uint64(h), blockW, blockH, offsets, counts)
}

// unpackedLen is the length PackBits data src unpacks to, or more than
// limit once it passes limit.
func unpackedLen(src []byte, limit uint64) uint64 {
	var n uint64
	for p := 0; p < len(src) && n <= limit; {
		c := int(int8(src[p]))
		p++
		switch {
		case c >= 0:
			n += uint64(c) + 1
			p += c + 1
		case c != -128:
			n += uint64(1 - c)
			p++
		}
	}
	return n
}

// ifd is the entries of a TIFF's first IFD that tiffGuard reads.
type ifd struct {
	b     []byte
	order binary.ByteOrder
	tags  map[uint16]ifdEntry
}

// ifdEntry is one entry: a BYTE, SHORT or LONG array, read as
// golang.org/x/image/tiff reads it (inline when it fits in 4 bytes).
type ifdEntry struct {
	pos   int // of the entry in the file
	typ   uint16
	count uint64
	data  uint64 // offset of the values
}

// readIFD reads the first IFD of b; false when it cannot (the decoder will
// not either).
func readIFD(b []byte) (ifd, bool) {
	d := ifd{b: b, order: binary.LittleEndian, tags: map[uint16]ifdEntry{}}
	if len(b) < 8 {
		return d, false
	}
	if b[0] == 'M' {
		d.order = binary.BigEndian
	}
	off := uint64(d.order.Uint32(b[4:8]))
	if off+2 > uint64(len(b)) {
		return d, false
	}
	n := uint64(d.order.Uint16(b[off:]))
	for i := range n {
		p := off + 2 + 12*i
		if p+12 > uint64(len(b)) {
			return d, false
		}
		tag := d.order.Uint16(b[p:])
		e := ifdEntry{pos: int(p), typ: d.order.Uint16(b[p+2:]), count: uint64(d.order.Uint32(b[p+4:]))}
		switch {
		case tag != 258 && tag != 259 && tag != 262 && tag != 273 && tag != 278 && tag != 279 && (tag < 322 || tag > 325):
			continue // the decoder may ignore it: so does this check
		case e.typ != 1 && e.typ != 3 && e.typ != 4:
			return d, false // the decoder refuses it
		}
		e.data = p + 8
		if e.size() > 4 {
			e.data = uint64(d.order.Uint32(b[p+8:]))
		}
		if e.data+e.size() > uint64(len(b)) {
			return d, false
		}
		d.tags[tag] = e
	}
	return d, true
}

func (e ifdEntry) width() uint64 {
	switch e.typ {
	case 1:
		return 1
	case 3:
		return 2
	}
	return 4
}

func (e ifdEntry) size() uint64 { return e.count * e.width() }

// at is value i (i < e.count).
func (e ifdEntry) at(d ifd, i uint64) uint64 {
	p := e.data + i*e.width()
	switch e.typ {
	case 1:
		return uint64(d.b[p])
	case 3:
		return uint64(d.order.Uint16(d.b[p:]))
	}
	return uint64(d.order.Uint32(d.b[p:]))
}

// set writes v as the first value of an inline entry of b.
func (e ifdEntry) set(order binary.ByteOrder, b []byte, v uint32) {
	p := e.pos + 8
	switch e.typ {
	case 1:
		b[p] = byte(v)
	case 3:
		order.PutUint16(b[p:], uint16(v))
	default:
		order.PutUint32(b[p:], v)
	}
}

// first is the first value of tag, or 0, as the decoder's firstVal.
func (d ifd) first(tag uint16) uint64 {
	e, ok := d.tags[tag]
	if !ok || e.count == 0 {
		return 0
	}
	return e.at(d, 0)
}
