package imageio

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/gif"
	"image/jpeg"
	"image/png"

	"golang.org/x/image/bmp"
	"golang.org/x/image/tiff"
	"golang.org/x/image/webp"
)

// Gray is an 8-bit grayscale image, row-major, stride == W.
type Gray struct {
	W, H int
	Pix  []uint8
}

// Info is what the header alone says.
//
// Format is one of "png", "jpeg", "gif", "bmp", "tiff", "webp", "pnm".
// Channels is 1 (gray), 2 (gray+alpha), 3 (colour) or 4 (colour+alpha),
// as the file declares it.
type Info struct {
	Format         string
	W, H, Channels int
}

// Limits bounds decoding. MaxPixels is checked from the header before any
// pixel allocation. MaxPixels <= 0 refuses every image.
type Limits struct {
	MaxPixels int64
}

// Fixed error values. Returned errors wrap one of them; test with errors.Is.
var (
	ErrEmpty         = errors.New("imageio: empty input")
	ErrUnknownFormat = errors.New("imageio: unknown image format")
	ErrTooLarge      = errors.New("imageio: image too large")
	ErrCorrupt       = errors.New("imageio: corrupt or unsupported image")
	ErrBadDims       = errors.New("imageio: bad image dimensions")
	ErrBadStruct     = errors.New("imageio: bad Spark image struct")
	// ErrTruncated: the file is too short to hold the pixel data its
	// header claims (checkData). It wraps ErrCorrupt.
	ErrTruncated = fmt.Errorf("%w: file too short for its header", ErrCorrupt)
)

// Sniff names the format of b from its magic bytes.
func Sniff(b []byte) (format string, err error) {
	switch {
	case len(b) == 0:
		return "", ErrEmpty
	case bytes.HasPrefix(b, []byte(pngSignature)):
		return "png", nil
	case bytes.HasPrefix(b, []byte{0xff, 0xd8, 0xff}):
		return "jpeg", nil
	case bytes.HasPrefix(b, []byte("GIF87a")), bytes.HasPrefix(b, []byte("GIF89a")):
		return "gif", nil
	case bytes.HasPrefix(b, []byte("BM")):
		return "bmp", nil
	case bytes.HasPrefix(b, []byte("II*\x00")), bytes.HasPrefix(b, []byte("MM\x00*")):
		return "tiff", nil
	case len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP":
		return "webp", nil
	case len(b) >= 3 && b[0] == 'P' && bytes.IndexByte([]byte("2356"), b[1]) >= 0 && isSpace(b[2]):
		return "pnm", nil
	}
	n := min(len(b), 8)
	return "", fmt.Errorf("%w: magic bytes % x", ErrUnknownFormat, b[:n])
}

// DecodeInfo reads only the header of b. It does not decode pixels and has
// no size limit. Zero or negative dimensions give ErrBadDims together with
// the Info read so far.
func DecodeInfo(b []byte) (Info, error) {
	format, err := Sniff(b)
	if err != nil {
		return Info{}, err
	}
	info, err := readInfo(format, b)
	if err != nil {
		return Info{}, err
	}
	if info.W <= 0 || info.H <= 0 {
		return info, fmt.Errorf("%w: %s header says %dx%d", ErrBadDims, format, info.W, info.H)
	}
	return info, nil
}

// DecodeGray decodes b to 8-bit grayscale into dst, reusing dst.Pix when
// its capacity is big enough. The header is checked against lim before any
// pixel memory is allocated. On error dst.W, dst.H and len(dst.Pix) are
// unchanged, but the contents of dst.Pix may have been overwritten.
// dst must not be nil.
func DecodeGray(b []byte, lim Limits, dst *Gray) error {
	return decodeGray(b, lim, dst, decoders{jpeg: turboGray(), png: pngInflate()})
}

// DecodeGrayInfo is DecodeGray for b whose header DecodeInfo read, without
// error, as info: the header is not read again. Given an info of another
// format than b's, it reads the header itself.
func DecodeGrayInfo(b []byte, info Info, lim Limits, dst *Gray) error {
	fast := decoders{jpeg: turboGray(), png: pngInflate()}
	if f, err := Sniff(b); err != nil || f != info.Format {
		return decodeGray(b, lim, dst, fast)
	}
	return decodeGrayInfo(b, info, lim, dst, fast)
}

// The names JPEGDecoder and PNGDecoder give.
const (
	goJPEG         = "go image/jpeg"
	goPNG          = "go image/png"
	libdeflateName = "libdeflate"
)

// decoders are the fast paths decodeGray tries first; a nil one leaves its
// format to the Go decoder.
type decoders struct {
	jpeg jpegGray
	png  zinflate // pngGray's inflate
}

// jpegGray decodes a JPEG file whose header image/jpeg read as w x h (within
// the limits) into dst, or reports false, with dst.W, dst.H and len(dst.Pix)
// unchanged, to leave the file to image/jpeg.
type jpegGray func(b []byte, w, h int, dst *Gray) bool

// decodeGray is DecodeGray with the fast paths to try first.
func decodeGray(b []byte, lim Limits, dst *Gray, fast decoders) error {
	info, err := DecodeInfo(b)
	if err != nil {
		return err
	}
	return decodeGrayInfo(b, info, lim, dst, fast)
}

// CheckHeader makes the checks a decode of b, whose header DecodeInfo
// read as info, makes before it allocates: the size within lim, the data
// the header claims present (ErrTruncated), a JPEG's scan count. An image
// it passes may still fail to decode; one it refuses, its decode refuses
// with the same error.
func CheckHeader(b []byte, info Info, lim Limits) error {
	if err := checkLimit(info.Format, "header", info.W, info.H, lim); err != nil {
		return err
	}
	if err := checkData(info.Format, b, info.W, info.H); err != nil {
		return err
	}
	switch info.Format {
	case "jpeg":
		return checkJPEGScans(b)
	case "tiff":
		_, err := tiffGuard(b, info.W, info.H)
		return err
	case "pnm":
		return checkPNM(b, info.W, info.H)
	}
	return nil
}

// decodeGrayInfo is decodeGray for b whose header DecodeInfo read as info.
func decodeGrayInfo(b []byte, info Info, lim Limits, dst *Gray, fast decoders) error {
	var err error
	if err := CheckHeader(b, info, lim); err != nil {
		return err
	}
	w, h := info.W, info.H
	if info.Format == "jpeg" {
		// CMYK and YCCK (4 channels) are image/jpeg's alone.
		if fast.jpeg != nil && info.Channels != 4 && fast.jpeg(b, w, h, dst) {
			return nil
		}
	}
	if info.Format == "png" && fast.png != nil && pngGray(b, w, h, dst, fast.png) {
		return nil
	}
	if info.Format == "pnm" {
		buf, err := decodePNM(b, w*h, dst.Pix)
		if err != nil {
			return err
		}
		dst.W, dst.H, dst.Pix = w, h, buf
		return nil
	}

	src, background := b, 0
	switch info.Format {
	case "gif":
		src, background = gifOpaque(b)
	case "tiff":
		if src, err = tiffGuard(b, w, h); err != nil {
			return err
		}
	}
	var m image.Image
	err = safely(info.Format, func() error {
		var err error
		m, err = decodeImage(info.Format, src)
		return err
	})
	if err != nil {
		return err
	}
	if !m.Bounds().In(image.Rect(0, 0, w, h)) {
		return fmt.Errorf("%w: %s decoder returned bounds %v for a %dx%d header", ErrCorrupt, info.Format, m.Bounds(), w, h)
	}
	// A decoded gray image with the right shape can become dst.Pix as is.
	if g, ok := m.(*image.Gray); ok && cap(dst.Pix) < w*h && g.Rect == image.Rect(0, 0, w, h) && g.Stride == w {
		dst.W, dst.H, dst.Pix = w, h, g.Pix[:w*h]
		return nil
	}
	buf := grow(dst.Pix, w*h)
	toGray(m, info.Format == "webp", background, w, buf)
	dst.W, dst.H, dst.Pix = w, h, buf
	return nil
}

// checkLimit refuses non-positive sizes and sizes over lim.MaxPixels.
// source and part name where the size came from ("png", "header").
func checkLimit(source, part string, w, h int, lim Limits) error {
	if w <= 0 || h <= 0 {
		return fmt.Errorf("%w: %s %s says %dx%d", ErrBadDims, source, part, w, h)
	}
	if n := int64(w) * int64(h); n > lim.MaxPixels {
		return fmt.Errorf("%w: %s %s says %dx%d = %d pixels, over the limit of %d", ErrTooLarge, source, part, w, h, n, lim.MaxPixels)
	}
	return nil
}

// grow returns p resized to n, reusing its memory when the capacity allows.
func grow(p []uint8, n int) []uint8 {
	if cap(p) >= n {
		return p[:n]
	}
	return make([]uint8, n)
}

// safely runs a third-party decoder, turning its errors and panics into ErrCorrupt.
func safely(format string, f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %s decoder panicked: %v", ErrCorrupt, format, r)
		}
	}()
	if err := f(); err != nil {
		return fmt.Errorf("%w: %s decoder: %w", ErrCorrupt, format, err)
	}
	return nil
}

func decodeImage(format string, b []byte) (image.Image, error) {
	r := bytes.NewReader(b)
	switch format {
	case "png":
		return png.Decode(r)
	case "jpeg":
		return jpeg.Decode(r)
	case "gif":
		return gif.Decode(r)
	case "bmp":
		return bmp.Decode(r)
	case "tiff":
		return tiff.Decode(r)
	case "webp":
		return webp.Decode(r)
	}
	return nil, fmt.Errorf("no decoder for %q", format)
}

func decodeConfig(format string, b []byte) (image.Config, error) {
	r := bytes.NewReader(b)
	switch format {
	case "png":
		return png.DecodeConfig(r)
	case "jpeg":
		return jpeg.DecodeConfig(r)
	case "gif":
		return gif.DecodeConfig(r)
	case "bmp":
		return bmp.DecodeConfig(r)
	case "tiff":
		return tiff.DecodeConfig(r)
	}
	return image.Config{}, fmt.Errorf("no decoder for %q", format)
}

// readInfo reads the header of b, already sniffed as format. Only the
// third-party calls run under safely, so that fuzzing sees our own bugs.
func readInfo(format string, b []byte) (Info, error) {
	switch format {
	case "webp":
		return webpInfo(b)
	case "pnm":
		h, err := parsePNMHeader(b)
		if err != nil {
			return Info{}, err
		}
		return Info{Format: "pnm", W: h.w, H: h.h, Channels: h.channels()}, nil
	case "jpeg":
		if info, ok := jpegInfo(b); ok {
			return info, nil
		}
	case "png":
		// Go's decoder rejects zero sizes as a format error; report them as ErrBadDims.
		if len(b) >= 24 && string(b[12:16]) == "IHDR" {
			w := int(int32(binary.BigEndian.Uint32(b[16:20])))
			h := int(int32(binary.BigEndian.Uint32(b[20:24])))
			if w <= 0 || h <= 0 {
				return Info{Format: format, W: w, H: h}, nil
			}
		}
	}
	var cfg image.Config
	err := safely(format, func() error {
		var err error
		cfg, err = decodeConfig(format, b)
		return err
	})
	if err != nil {
		return Info{}, err
	}
	info := Info{Format: format, W: cfg.Width, H: cfg.Height, Channels: 3}
	switch format {
	case "png":
		info.Channels = pngChannels(b[25])
	case "jpeg":
		info.Channels = modelChannels(cfg.ColorModel)
	case "bmp":
		// 32-bit pixels with a V4/V5 header carry alpha.
		if binary.LittleEndian.Uint16(b[28:30]) == 32 && binary.LittleEndian.Uint32(b[14:18]) > 40 {
			info.Channels = 4
		}
	case "tiff":
		info.Channels = tiffChannels(cfg.ColorModel, b)
	}
	return info, nil
}
