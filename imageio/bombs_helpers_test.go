package imageio

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"hash/crc32"
	"sort"
)

// Builders of hostile files: headers that lie, streams that inflate far
// beyond what their header says, JPEGs with hundreds of scans. Each is
// small; what it asks of a decoder is not.

// zlibZeros is a zlib stream that inflates to mib MiB of zeros, built
// from one compressed MiB repeated (deflate blocks may refer back across
// block boundaries, and all of them are zeros), so that making it costs
// little: about 1 KiB per MiB.
func zlibZeros(mib int) []byte {
	var blk bytes.Buffer
	fw, _ := flate.NewWriter(&blk, flate.BestCompression)
	zeros := make([]byte, 1<<20)
	fw.Write(zeros)
	fw.Flush() // ends byte-aligned, not final
	one := blk.Bytes()
	out := []byte{0x78, 0xda}
	for range mib {
		out = append(out, one...)
	}
	out = append(out, 0x03, 0x00) // an empty final fixed-Huffman block
	// Adler-32 of n zeros: A stays 1, B adds A n times.
	return binary.BigEndian.AppendUint32(out, uint32(mib<<20%65521)<<16|1)
}

// pngChunk appends one PNG chunk with its CRC.
func pngChunk(b []byte, typ string, data []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(data)))
	c := append([]byte(typ), data...)
	b = append(b, c...)
	return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(c))
}

// pngWith is a PNG of w x h, 8-bit, colorType, whose IDAT holds idat as is.
func pngWith(w, h uint32, colorType byte, idat []byte) []byte {
	b := pngHeader(w, h, colorType)
	b = pngChunk(b, "IDAT", idat)
	return pngChunk(b, "IEND", nil)
}

// tiffEntry is one IFD entry; values of more than 4 bytes are not needed.
type tiffEntry struct {
	tag, typ uint16 // typ 3 SHORT, 4 LONG
	val      uint32
}

// tiffFile is a little-endian TIFF with one IFD of entries (sorted here)
// and data placed right after the header; the StripOffsets or TileOffsets
// entry (273, 324) gets data's offset.
func tiffFile(entries []tiffEntry, data []byte) []byte {
	sort.Slice(entries, func(i, j int) bool { return entries[i].tag < entries[j].tag })
	const dataAt = 8
	ifd := uint32(dataAt + len(data) + len(data)&1)
	b := []byte("II*\x00")
	b = binary.LittleEndian.AppendUint32(b, ifd)
	b = append(b, data...)
	if len(data)&1 == 1 {
		b = append(b, 0)
	}
	b = binary.LittleEndian.AppendUint16(b, uint16(len(entries)))
	for _, e := range entries {
		if e.tag == 273 || e.tag == 324 {
			e.val = dataAt
		}
		b = binary.LittleEndian.AppendUint16(b, e.tag)
		b = binary.LittleEndian.AppendUint16(b, e.typ)
		b = binary.LittleEndian.AppendUint32(b, 1)
		if e.typ == 3 {
			b = binary.LittleEndian.AppendUint16(b, uint16(e.val))
			b = append(b, 0, 0)
		} else {
			b = binary.LittleEndian.AppendUint32(b, e.val)
		}
	}
	return binary.LittleEndian.AppendUint32(b, 0)
}

// tiffGray is an 8-bit gray TIFF of w x h in one strip of rowsPerStrip
// rows holding data, compressed with compression (1 none, 8 Deflate,
// 32773 PackBits).
func tiffGray(w, h, rowsPerStrip uint32, compression uint16, data []byte) []byte {
	return tiffFile([]tiffEntry{
		{256, 4, w}, {257, 4, h}, {258, 3, 8}, {259, 3, uint32(compression)}, {262, 3, 1},
		{273, 4, 0}, {277, 3, 1}, {278, 4, rowsPerStrip}, {279, 4, uint32(len(data))},
	}, data)
}

// tiffTiled is an 8-bit gray TIFF of w x h in one tile of tw x th holding data.
func tiffTiled(w, h, tw, th uint32, compression uint16, data []byte) []byte {
	return tiffFile([]tiffEntry{
		{256, 4, w}, {257, 4, h}, {258, 3, 8}, {259, 3, uint32(compression)}, {262, 3, 1},
		{277, 3, 1}, {322, 4, tw}, {323, 4, th}, {324, 4, 0}, {325, 4, uint32(len(data))},
	}, data)
}

// packBitsZeros is PackBits data of n runs of 128 zeros (2 bytes each).
func packBitsZeros(n int) []byte {
	return bytes.Repeat([]byte{0x81, 0x00}, n) // -127: repeat the next byte 128 times
}

// jpegBits writes entropy-coded JPEG data, MSB first, stuffing a zero
// byte after each 0xff.
type jpegBits struct {
	b   []byte
	acc uint32
	n   uint
}

func (w *jpegBits) write(v uint32, n uint) {
	for i := int(n) - 1; i >= 0; i-- {
		w.acc = w.acc<<1 | v>>uint(i)&1
		w.n++
		if w.n == 8 {
			w.b = append(w.b, byte(w.acc))
			if byte(w.acc) == 0xff {
				w.b = append(w.b, 0)
			}
			w.acc, w.n = 0, 0
		}
	}
}

// flush pads with 1 bits to a byte boundary and returns the data.
func (w *jpegBits) flush() []byte {
	for w.n != 0 {
		w.write(1, 1)
	}
	out := w.b
	w.b = nil
	return out
}

func jpegSegment(b []byte, marker byte, data []byte) []byte {
	b = append(b, 0xff, marker)
	b = binary.BigEndian.AppendUint16(b, uint16(2+len(data)))
	return append(b, data...)
}

// progressiveJPEG is a valid gray progressive JPEG of w x h (mid-gray):
// one DC scan (one 1-bit code per block), then acScans AC scans that each
// skip every block with end-of-band runs of 32767 blocks (a few bytes per
// scan, whatever the size). A decoder walks every block in every scan:
// the work grows with w*h*acScans, the file with acScans only.
func progressiveJPEG(w, h, acScans int) []byte {
	b := jpegHead(0xc2, w, h, 0xe0) // AC: EOBRUN of 2^14 + 14 more bits
	blocks := ((w + 7) / 8) * ((h + 7) / 8)
	var bw jpegBits
	b = jpegSegment(b, 0xda, []byte{1, 1, 0x00, 0, 0, 0x00}) // DC first scan
	for range blocks {
		bw.write(0, 1)
	}
	b = append(b, bw.flush()...)
	for range blocks / 32767 {
		bw.write(0, 1)
		bw.write(1<<14-1, 14) // run of 32767
	}
	if r := blocks % 32767; r != 0 { // the rest: one run that overshoots
		bw.write(0, 1)
		bw.write(1<<14-1, 14)
	}
	ac := bw.flush()
	for range acScans {
		b = jpegSegment(b, 0xda, []byte{1, 1, 0x00, 1, 63, 0x00})
		b = append(b, ac...)
	}
	return append(b, 0xff, 0xd9)
}

// sequentialJPEG is a gray baseline JPEG of w x h (mid-gray) of scans
// scans, each coding every block in two bits (DC "0", AC end-of-block "0").
func sequentialJPEG(w, h, scans int) []byte {
	b := jpegHead(0xc0, w, h, 0x00) // AC: end of block
	var bw jpegBits
	for range ((w + 7) / 8) * ((h + 7) / 8) {
		bw.write(0, 2)
	}
	data := bw.flush()
	for range scans {
		b = jpegSegment(b, 0xda, []byte{1, 1, 0x00, 0, 63, 0x00})
		b = append(b, data...)
	}
	return append(b, 0xff, 0xd9)
}

// jpegHead is a gray JPEG's start up to its first scan: SOI, a flat
// quantization table, the frame (marker sof, w x h, one component) and two
// Huffman tables of one 1-bit code "0" each: DC table 0 for category 0,
// AC table 0 for the symbol ac.
func jpegHead(sof byte, w, h int, ac byte) []byte {
	b := []byte{0xff, 0xd8}
	b = jpegSegment(b, 0xdb, append([]byte{0}, bytes.Repeat([]byte{1}, 64)...))
	b = jpegSegment(b, sof, []byte{8, byte(h >> 8), byte(h), byte(w >> 8), byte(w), 1, 1, 0x11, 0})
	counts := make([]byte, 16)
	counts[0] = 1
	b = jpegSegment(b, 0xc4, append(append([]byte{0x00}, counts...), 0x00))
	return jpegSegment(b, 0xc4, append(append([]byte{0x10}, counts...), ac))
}
