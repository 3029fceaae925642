package udf

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"hash/crc32"
)

// labelsPNG encodes labels (each 0..65535) as a 16-bit grayscale PNG, w×h.
// It writes what image/png would, but with the Sub filter on every row and
// zlib's fastest level: label images are long runs of one value, which Sub
// turns into zeros, and image/png's per-row filter search cost more than
// the watershed itself.
func labelsPNG(labels []int32, w, h int) ([]byte, error) {
	var out bytes.Buffer
	out.WriteString("\x89PNG\r\n\x1a\n")
	var ihdr [13]byte
	binary.BigEndian.PutUint32(ihdr[0:], uint32(w))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(h))
	ihdr[8], ihdr[9] = 16, 0 // bit depth 16, grayscale; compression, filter, interlace 0
	chunk(&out, "IHDR", ihdr[:])

	var data bytes.Buffer
	z, err := zlib.NewWriterLevel(&data, zlib.BestSpeed)
	if err != nil {
		return nil, err
	}
	row := make([]byte, 1+2*w)
	row[0] = 1 // Sub: each byte minus the byte 2 to its left (one 16-bit pixel)
	for y := range h {
		var prev int32
		for x, l := range labels[y*w : (y+1)*w] {
			row[1+2*x] = byte(l>>8) - byte(prev>>8)
			row[2+2*x] = byte(l) - byte(prev)
			prev = l
		}
		if _, err := z.Write(row); err != nil {
			return nil, err
		}
	}
	if err := z.Close(); err != nil {
		return nil, err
	}
	chunk(&out, "IDAT", data.Bytes())
	chunk(&out, "IEND", nil)
	return out.Bytes(), nil
}

func chunk(out *bytes.Buffer, typ string, data []byte) {
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(data)))
	out.Write(n[:])
	crc := crc32.NewIEEE()
	crc.Write([]byte(typ))
	crc.Write(data)
	out.WriteString(typ)
	out.Write(data)
	binary.BigEndian.PutUint32(n[:], crc.Sum32())
	out.Write(n[:])
}
