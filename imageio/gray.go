package imageio

import (
	"image"
	"image/color"
)

// luma is Pillow's convert("L") rule (ITU-R 601-2, 16-bit fixed point).
func luma(r, g, b uint32) uint8 {
	return uint8((r*19595 + g*38470 + b*7471 + 0x8000) >> 16)
}

// toGray writes m into dst, a w-wide gray buffer whose rectangle contains
// m.Bounds(). Pixels outside m.Bounds() (a GIF frame smaller than its
// screen) get the colour of palette index background, as Pillow does.
// webpYUV selects libwebp's YUV->RGB conversion for YCbCr images instead
// of using the Y plane as is.
func toGray(m image.Image, webpYUV bool, background, w int, dst []uint8) {
	r := m.Bounds()
	var lut [256]uint8
	if p, ok := m.(*image.Paletted); ok {
		lut = paletteLuma(p.Palette)
	}
	if r != image.Rect(0, 0, w, len(dst)/w) {
		v := lut[uint8(background)]
		for i := range dst {
			dst[i] = v
		}
	}
	for y := r.Min.Y; y < r.Max.Y; y++ {
		out := dst[y*w+r.Min.X : y*w+r.Max.X]
		switch m := m.(type) {
		case *image.Gray:
			copy(out, m.Pix[m.PixOffset(r.Min.X, y):])
		case *image.Gray16:
			in := m.Pix[m.PixOffset(r.Min.X, y):]
			for i := range out {
				out[i] = in[2*i] // high byte
			}
		case *image.RGBA: // premultiplied: a TIFF's associated alpha
			unpremul(out, m.Pix[m.PixOffset(r.Min.X, y):], 1)
		case *image.NRGBA:
			grayRGB8(out, m.Pix[m.PixOffset(r.Min.X, y):], 4)
		case *image.RGBA64:
			unpremul(out, m.Pix[m.PixOffset(r.Min.X, y):], 2)
		case *image.NRGBA64:
			rgb16(out, m.Pix[m.PixOffset(r.Min.X, y):], 8)
		case *image.CMYK:
			in := m.Pix[m.PixOffset(r.Min.X, y):]
			for i := range out {
				cr, cg, cb := color.CMYKToRGB(in[4*i], in[4*i+1], in[4*i+2], in[4*i+3])
				out[i] = luma(uint32(cr), uint32(cg), uint32(cb))
			}
		case *image.Paletted:
			in := m.Pix[m.PixOffset(r.Min.X, y):]
			for i := range out {
				out[i] = lut[in[i]]
			}
		case *image.YCbCr:
			ycbcrRow(out, m, r.Min.X, y, webpYUV)
		case *image.NYCbCrA:
			ycbcrRow(out, &m.YCbCr, r.Min.X, y, webpYUV)
		default:
			for i := range out {
				c := color.NRGBAModel.Convert(m.At(r.Min.X+i, y)).(color.NRGBA)
				out[i] = luma(uint32(c.R), uint32(c.G), uint32(c.B))
			}
		}
	}
}

// rgb8 applies the rule to 8-bit R,G,B samples spaced step bytes apart
// (grayRGB8 takes 8 pixels at a time in C where it can).
func rgb8(out, in []uint8, step int) {
	for i := range out {
		p := in[step*i : step*i+3 : step*i+3]
		out[i] = luma(uint32(p[0]), uint32(p[1]), uint32(p[2]))
	}
}

// rgb16 applies the rule to the high bytes of big-endian 16-bit R,G,B
// samples whose pixels are step bytes apart.
func rgb16(out, in []uint8, step int) {
	for i := range out {
		p := in[step*i : step*i+5 : step*i+5]
		out[i] = luma(uint32(p[0]), uint32(p[2]), uint32(p[4]))
	}
}

// unpremul applies the rule to premultiplied RGBA pixels of size bytes a
// sample (1, or 2 big-endian: their high bytes), dividing the alpha out
// as Pillow's TIFF unpacker does (RGBa): c*255/a, clipped; 0 where alpha
// is 0.
func unpremul(out, in []uint8, size int) {
	for i := range out {
		p := in[4*size*i : 4*size*(i+1) : 4*size*(i+1)]
		r, g, b, a := uint32(p[0]), uint32(p[size]), uint32(p[2*size]), uint32(p[3*size])
		switch a {
		case 0:
			out[i] = 0
		case 255:
			out[i] = luma(r, g, b)
		default:
			out[i] = luma(min(r*255/a, 255), min(g*255/a, 255), min(b*255/a, 255))
		}
	}
}

// paletteLuma maps palette indices to gray. Entries use their
// non-premultiplied colour; indices past the palette map to 0.
func paletteLuma(p color.Palette) (lut [256]uint8) {
	for i, c := range p[:min(len(p), 256)] {
		n := color.NRGBAModel.Convert(c).(color.NRGBA)
		lut[i] = luma(uint32(n.R), uint32(n.G), uint32(n.B))
	}
	return lut
}

// ycbcrRow converts one row. JPEG (JFIF, full range) Y is the luma itself.
// WebP (VP8) stores limited-range BT.601, which libwebp converts to RGB
// with the fixed-point formula below before Pillow applies the rule.
func ycbcrRow(out []uint8, m *image.YCbCr, x0, y int, webpYUV bool) {
	yy := m.Y[m.YOffset(x0, y):]
	if !webpYUV {
		copy(out, yy)
		return
	}
	for i := range out {
		c := m.COffset(x0+i, y)
		Y, u, v := int(yy[i]), int(m.Cb[c]), int(m.Cr[c])
		yc := Y * 19077 >> 8
		r := clip8(yc + v*26149>>8 - 14234)
		g := clip8(yc - u*6419>>8 - v*13320>>8 + 8708)
		b := clip8(yc + u*33050>>8 - 17685)
		out[i] = luma(r, g, b)
	}
}

// clip8 descales libwebp's 6-bit fixed point to 0..255.
func clip8(v int) uint32 {
	switch {
	case v < 0:
		return 0
	case v >= 256<<6:
		return 255
	}
	return uint32(v >> 6)
}
