package imageio

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"image/color"
)

// pngChannels maps the IHDR colour type to a channel count.
func pngChannels(colorType byte) int {
	switch colorType {
	case 0:
		return 1
	case 4:
		return 2
	case 6:
		return 4
	}
	return 3 // 2 truecolour, 3 palette
}

// modelChannels maps a JPEG colour model to a channel count. CMYK counts as colour.
func modelChannels(m color.Model) int {
	if m == color.GrayModel || m == color.Gray16Model {
		return 1
	}
	return 3
}

// tiffChannels uses the colour model for gray/colour and the
// SamplesPerPixel tag for an extra alpha sample.
func tiffChannels(m color.Model, b []byte) int {
	if _, ok := m.(color.Palette); ok {
		return 3
	}
	base := 3
	if m == color.GrayModel || m == color.Gray16Model {
		base = 1
	}
	if tiffSamplesPerPixel(b) > base || m == color.NRGBAModel || m == color.NRGBA64Model {
		return base + 1
	}
	return base
}

// tiffSamplesPerPixel reads tag 277 from the first IFD (default 1).
func tiffSamplesPerPixel(b []byte) int {
	var bo binary.ByteOrder = binary.LittleEndian
	if b[0] == 'M' {
		bo = binary.BigEndian
	}
	off := int64(bo.Uint32(b[4:8]))
	if off+2 > int64(len(b)) {
		return 1
	}
	n := int64(bo.Uint16(b[off:]))
	for i := range n {
		e := off + 2 + 12*i
		if e+12 > int64(len(b)) {
			break
		}
		if bo.Uint16(b[e:]) != 277 {
			continue
		}
		switch bo.Uint16(b[e+2:]) {
		case 1: // BYTE
			return int(b[e+8])
		case 3: // SHORT
			return int(bo.Uint16(b[e+8:]))
		case 4: // LONG
			return int(bo.Uint32(b[e+8:]))
		}
	}
	return 1
}

// webpInfo walks the RIFF chunks up to the first VP8 or VP8L chunk. When a
// VP8X canvas is declared, the frame must have the same size: otherwise the
// frame size, which the decoder allocates, could bypass the limit.
func webpInfo(b []byte) (Info, error) {
	var canvasW, canvasH int
	vp8x, alpha := false, false
	for p := int64(12); p+8 <= int64(len(b)); {
		id, data, next := webpChunk(b, p)
		switch id {
		case "VP8X":
			if len(data) < 10 {
				return Info{}, fmt.Errorf("%w: webp VP8X chunk too short", ErrCorrupt)
			}
			vp8x, alpha = true, data[0]&0x10 != 0
			canvasW = 1 + (int(data[4]) | int(data[5])<<8 | int(data[6])<<16)
			canvasH = 1 + (int(data[7]) | int(data[8])<<8 | int(data[9])<<16)
		case "VP8 ", "VP8L":
			info := Info{Format: "webp", Channels: 3}
			if id == "VP8 " {
				if len(data) < 10 || data[3] != 0x9d || data[4] != 0x01 || data[5] != 0x2a {
					return Info{}, fmt.Errorf("%w: webp VP8 frame header missing", ErrCorrupt)
				}
				info.W = int(binary.LittleEndian.Uint16(data[6:]) & 0x3fff)
				info.H = int(binary.LittleEndian.Uint16(data[8:]) & 0x3fff)
			} else {
				if len(data) < 5 || data[0] != 0x2f {
					return Info{}, fmt.Errorf("%w: webp VP8L header missing", ErrCorrupt)
				}
				bits := binary.LittleEndian.Uint32(data[1:])
				info.W = 1 + int(bits&0x3fff)
				info.H = 1 + int(bits>>14&0x3fff)
				alpha = alpha || (!vp8x && bits>>28&1 != 0)
			}
			if alpha {
				info.Channels = 4
			}
			if vp8x && (info.W != canvasW || info.H != canvasH) {
				return Info{}, fmt.Errorf("%w: webp frame is %dx%d but canvas is %dx%d", ErrCorrupt, info.W, info.H, canvasW, canvasH)
			}
			return info, nil
		}
		p = next
	}
	return Info{}, fmt.Errorf("%w: webp has no VP8/VP8L image chunk (animated WebP is not supported)", ErrCorrupt)
}

// gifOpaque returns b, or a copy of it with the transparency flag cleared
// in the graphic control extensions before the first image, and the
// transparent index (0 when none). Go's decoder turns the transparent
// palette entry into black; Pillow keeps its colour, and fills the screen
// outside the first frame with that index.
func gifOpaque(b []byte) ([]byte, int) {
	out, index := b, 0
	gifFirstImage(b, func(p int) {
		if b[p+1] == 0xf9 && p+6 < len(b) && b[p+2] == 4 && b[p+3]&1 != 0 {
			if &out[0] == &b[0] {
				out = bytes.Clone(b)
			}
			out[p+3] &^= 1
			index = int(b[p+6])
		}
	})
	return out, index
}

// jpegInfo reads a JPEG header as image/jpeg's DecodeConfig does, without
// its 13 KB decoder, for the files that it reads without trouble: marker
// segments one after another up to the SOF (baseline, extended or
// progressive; one component, or three with chroma at full resolution),
// then to the SOS unless a JFIF APP0 came first. ok is false for anything
// else (a fault, junk or fill bytes between segments, four components,
// other subsampling), which DecodeConfig then reads, errors included.
func jpegInfo(b []byte) (info Info, ok bool) {
	if len(b) < 2 || b[0] != 0xff || b[1] != 0xd8 {
		return Info{}, false
	}
	jfif, sof := false, false
	for p := 2; p+4 <= len(b) && b[p] == 0xff; {
		m, n := b[p+1], int(b[p+2])<<8|int(b[p+3])
		if n < 2 || p+2+n > len(b) {
			return Info{}, false
		}
		seg := b[p+4 : p+2+n]
		p += 2 + n
		switch {
		case m >= 0xc0 && m <= 0xc2:
			if sof {
				return Info{}, false // several SOF markers
			}
			if info, sof = jpegSOF(seg); !sof || jfif {
				return info, sof
			}
		case m == 0xda: // SOS
			return info, sof
		case m == 0xe0: // APP0
			if len(seg) >= 5 {
				jfif = string(seg[:5]) == "JFIF\x00"
			}
		case m == 0xc4, m == 0xdb, m == 0xdd, m > 0xe0 && m <= 0xef, m == 0xfe: // DHT, DQT, DRI, APPn, COM
		default:
			return Info{}, false
		}
	}
	return Info{}, false
}

// jpegSOF reads a SOF segment's size and components, or reports false
// where image/jpeg would refuse it or jpegInfo leaves it to image/jpeg.
func jpegSOF(s []byte) (Info, bool) {
	if len(s) < 6 || s[0] != 8 || (s[5] != 1 && s[5] != 3) || len(s) != 6+3*int(s[5]) {
		return Info{}, false
	}
	nc := int(s[5])
	for i := range nc {
		c, hv, tq := s[6+3*i], s[7+3*i], s[8+3*i]
		if tq > 3 {
			return Info{}, false
		}
		for j := range i {
			if s[6+3*j] == c { // a repeated component identifier
				return Info{}, false
			}
		}
		switch {
		case nc == 1 || i == 0: // h, v in 1, 2, 4; a colour image's luma v not 4
			h, v := hv>>4, hv&0x0f
			if h != 1 && h != 2 && h != 4 || v != 1 && v != 2 && (v != 4 || nc != 1) {
				return Info{}, false
			}
		case hv != 0x11: // chroma
			return Info{}, false
		}
	}
	return Info{Format: "jpeg", H: int(s[1])<<8 | int(s[2]), W: int(s[3])<<8 | int(s[4]), Channels: nc}, true
}

// JPEGLuma reports whether a JPEG's gray, as DecodeGray gives it, is its
// first component as coded: one component, or three coded as YCbCr (not
// RGB: an Adobe APP14 segment with transform 0, or components named R, G,
// B, as image/jpeg decides), of 8-bit samples. A decoder that outputs the coded Y plane (a
// GPU's) then gives the same gray, within its IDCT's rounding. Anything
// jpegFrame cannot read is false.
func JPEGLuma(b []byte) bool {
	f, ok := jpegFrame(b)
	switch {
	case !ok || f.precision != 8 || f.components != 1 && f.components != 3:
		return false
	case f.components == 1:
		return true
	case f.adobe:
		return f.transform == 1
	}
	return f.ids != [3]byte{'R', 'G', 'B'}
}

// JPEGProgressive reports whether a JPEG's frame is progressive (SOF2),
// which hardware JPEG decoders refuse; false for anything jpegFrame
// cannot read.
func JPEGProgressive(b []byte) bool {
	f, ok := jpegFrame(b)
	return ok && f.sof == 0xc2
}

// frame is what jpegFrame reads of a JPEG.
type frame struct {
	sof        byte // its SOF marker: 0xc0 baseline, 0xc1 extended, 0xc2 progressive
	precision  byte // bits per sample
	components int
	ids        [3]byte // the first three component identifiers
	adobe      bool    // an Adobe APP14 segment, with its colour transform
	transform  byte
}

// jpegFrame reads the marker segments of a JPEG up to its first SOS: its
// frame (SOF0 to SOF2) and Adobe segment. ok is false for anything else:
// no SOI, a segment that runs past the end, junk between segments, no SOS,
// lossless, hierarchical or arithmetic coding.
func jpegFrame(b []byte) (f frame, ok bool) {
	if len(b) < 2 || b[0] != 0xff || b[1] != 0xd8 {
		return f, false
	}
	for p := 2; p+4 <= len(b) && b[p] == 0xff; {
		m, n := b[p+1], int(b[p+2])<<8|int(b[p+3])
		if n < 2 || p+2+n > len(b) {
			return f, false
		}
		seg := b[p+4 : p+2+n]
		p += 2 + n
		switch {
		case m == 0xee && len(seg) >= 12 && string(seg[:5]) == "Adobe": // APP14
			f.adobe, f.transform = true, seg[11]
		case m >= 0xc0 && m <= 0xc2: // SOF0..2
			if len(seg) < 6 {
				return f, false
			}
			f.sof, f.precision, f.components = m, seg[0], int(seg[5])
			if f.components == 3 && len(seg) >= 6+9 {
				f.ids = [3]byte{seg[6], seg[9], seg[12]}
			}
		case m == 0xda: // SOS
			return f, f.sof != 0
		case m >= 0xc3 && m <= 0xcf && m != 0xc4 && m != 0xc8 && m != 0xcc: // lossless, hierarchical, arithmetic
			return f, false
		}
	}
	return f, false
}
