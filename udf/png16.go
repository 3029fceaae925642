package udf

import (
	"encoding/binary"
	"hash/crc32"
	"math/bits"
)

// labelsPNG encodes labels (each 0..65535) as a 16-bit grayscale PNG, w×h.
//
// A label image is long runs of one value. With PNG's Sub filter on every
// row a run becomes a run of zero bytes, so the image data is written as
// zlib's Z_RLE strategy would write it: one fixed-Huffman deflate block of
// literals and copies at distance 1, with the Adler-32 summed a run at a
// time. The cost grows with the number of runs, not with the bytes; any
// labels still decode exactly (random ones take up to 9/8 of their bytes).
func labelsPNG(labels []int32, w, h int) []byte {
	z := rleWriter{a: 1}
	z.out = append(z.out, 0x78, 0x01) // zlib: deflate, 32 KiB window, fastest
	z.put(0b011, 3)                   // the final block, fixed Huffman codes
	for y := range h {
		row := labels[y*w : (y+1)*w]
		z.byte(1) // Sub: each byte minus the byte 2 to its left (one 16-bit pixel)
		var prev int32
		for x := 0; x < w; {
			l := row[x]
			z.byte(byte(l>>8) - byte(prev>>8))
			z.byte(byte(l) - byte(prev))
			x++
			start := x
			x = runEnd(row, x, l)
			z.zeros(2 * (x - start))
			prev = l
		}
	}
	z.flush()
	z.code(256) // end of block
	for z.nbits > 0 {
		z.out = append(z.out, byte(z.bits))
		z.bits >>= 8
		z.nbits -= min(8, z.nbits)
	}
	z.out = binary.BigEndian.AppendUint32(z.out, uint32(z.b%adlerMod<<16|z.a%adlerMod))

	out := make([]byte, 0, len(z.out)+64+12*(len(z.out)/maxIDAT))
	out = append(out, "\x89PNG\r\n\x1a\n"...)
	var ihdr [13]byte
	binary.BigEndian.PutUint32(ihdr[0:], uint32(w))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(h))
	ihdr[8], ihdr[9] = 16, 0 // bit depth 16, grayscale; compression, filter, interlace 0
	out = chunk(out, "IHDR", ihdr[:])
	for data := z.out; ; data = data[min(maxIDAT, len(data)):] {
		out = chunk(out, "IDAT", data[:min(maxIDAT, len(data))])
		if len(data) <= maxIDAT {
			break
		}
	}
	return chunk(out, "IEND", nil)
}

// runEnd is the first index from x on whose label is not l (len(row) if
// none), comparing 8 labels a branch.
func runEnd(row []int32, x int, l int32) int {
	for ; x+8 <= len(row); x += 8 {
		r := row[x : x+8 : x+8]
		if (r[0]^l)|(r[1]^l)|(r[2]^l)|(r[3]^l)|(r[4]^l)|(r[5]^l)|(r[6]^l)|(r[7]^l) != 0 {
			break
		}
	}
	for x < len(row) && row[x] == l {
		x++
	}
	return x
}

// maxIDAT bounds one IDAT chunk's data, under PNG's 2^31-1 per chunk.
const maxIDAT = 1 << 30

func chunk(out []byte, typ string, data []byte) []byte {
	out = binary.BigEndian.AppendUint32(out, uint32(len(data)))
	start := len(out)
	out = append(out, typ...)
	out = append(out, data...)
	return binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(out[start:]))
}

// rleWriter writes a fixed-Huffman deflate block of literals and
// distance-1 copies (RFC 1951), summing the bytes' Adler-32 (RFC 1950).
type rleWriter struct {
	out   []byte
	bits  uint64 // bits not yet in out, the first in the lowest bit
	nbits uint
	last  byte // the last byte written, when started
	begun bool
	run   int    // bytes equal to last, not yet written
	a, b  uint64 // Adler-32's sums, reduced mod adlerMod now and then
}

const adlerMod = 65521

// byte writes c.
func (z *rleWriter) byte(c byte) {
	if z.begun && c == z.last {
		z.run++
		return
	}
	z.flush()
	z.literal(c)
	z.last, z.begun = c, true
}

// zeros writes n zero bytes.
func (z *rleWriter) zeros(n int) {
	if n == 0 {
		return
	}
	if !z.begun || z.last != 0 {
		z.byte(0)
		n--
	}
	z.run += n
}

// flush writes the pending run of last: copies of 258 bytes at most, at
// distance 1, and literals for what is shorter than a copy's 3.
func (z *rleWriter) flush() {
	n := uint64(z.run)
	if n == 0 {
		return
	}
	z.run = 0
	// n copies of c add n·a + c·n(n+1)/2 to b and n·c to a.
	c := uint64(z.last)
	tri := n / 2 % adlerMod * ((n + 1) % adlerMod) // n(n+1)/2, n even
	if n%2 == 1 {
		tri = n % adlerMod * ((n + 1) / 2 % adlerMod)
	}
	a := z.a % adlerMod
	z.b = (z.b%adlerMod + n%adlerMod*a + c*(tri%adlerMod)) % adlerMod
	z.a = (a + n%adlerMod*c) % adlerMod
	for n > 0 {
		if n < 3 {
			z.code(uint16(z.last))
			n--
			continue
		}
		k := min(n, 258)
		if r := n - k; r == 1 || r == 2 {
			k = 256 // leave a copy's worth, not one or two literals
		}
		c := copyCodes[k]
		z.put(c.v, uint(c.n))
		n -= k
	}
}

// literal writes c and adds it to the Adler-32.
func (z *rleWriter) literal(c byte) {
	z.code(uint16(c))
	z.a += uint64(c)
	z.b += z.a
	if z.b >= 1<<62 { // b ≥ a: both stay far from overflowing
		z.a %= adlerMod
		z.b %= adlerMod
	}
}

// code writes symbol s, a literal or the block's end (256).
func (z *rleWriter) code(s uint16) {
	c := literalCodes[s]
	z.put(c.v, uint(c.n))
}

// put writes the n low bits of v, the lowest first.
func (z *rleWriter) put(v uint32, n uint) {
	z.bits |= uint64(v) << z.nbits
	z.nbits += n
	if z.nbits >= 32 {
		z.out = binary.LittleEndian.AppendUint32(z.out, uint32(z.bits))
		z.bits >>= 32
		z.nbits -= 32
	}
}

// huffCode is bits for put: v's n low bits.
type huffCode struct {
	v uint32
	n uint8
}

// Deflate's fixed Huffman codes (RFC 1951, 3.2.6), reversed for put as
// Huffman codes go most significant bit first: literalCodes for the
// literals and the block's end (0..256), copyCodes[k] for a copy of k
// bytes (3..258) at distance 1: length code, its extra bits, distance
// code 0. Tables, never written after they are made.
var (
	literalCodes = makeLiteralCodes()
	copyCodes    = makeCopyCodes()
)

// fixedCode is symbol s's fixed Huffman code, ready for put.
func fixedCode(s int) huffCode {
	var c, n int
	switch {
	case s < 144:
		c, n = 0x30+s, 8
	case s < 256:
		c, n = 0x190+s-144, 9
	case s < 280:
		c, n = s-256, 7
	default:
		c, n = 0xc0+s-280, 8
	}
	return huffCode{uint32(bits.Reverse16(uint16(c)) >> (16 - n)), uint8(n)}
}

func makeLiteralCodes() (t [257]huffCode) {
	for s := range t {
		t[s] = fixedCode(s)
	}
	return t
}

func makeCopyCodes() (t [259]huffCode) {
	// The length codes 257..285: each one's shortest length and extra bits.
	base := [29]int{3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258}
	extra := [29]uint8{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0}
	for k := 3; k <= 258; k++ {
		i := len(base) - 1
		for base[i] > k {
			i--
		}
		c := fixedCode(257 + i)
		v := c.v | uint32(k-base[i])<<c.n // extra bits; then distance code 0, 5 zero bits
		t[k] = huffCode{v, c.n + extra[i] + 5}
	}
	return t
}
