// Package imageio turns image bytes sent by Spark into 8-bit grayscale.
//
// # Inputs
//
// DecodeGray takes an encoded file. The format is chosen by magic bytes
// (Sniff), never by file name:
//
//	png   PNG, all bit depths, palette, interlaced
//	jpeg  baseline and progressive 8-bit JPEG, gray, YCbCr, RGB, CMYK
//	      (not arithmetic-coded, not 12-bit)
//	gif   GIF, first frame only
//	bmp   uncompressed BMP, 1/2/4/8-bit palette, 24 and 32 bit
//	tiff  TIFF: none, LZW, Deflate, PackBits, CCITT; strips or tiles
//	webp  WebP still images, lossy (VP8) and lossless (VP8L); not animated
//	pnm   netpbm P2, P3 (plain) and P5, P6 (binary); maxval 1..65535
//
// SparkImageGray takes Spark's image data source struct instead (already
// decoded pixels, B,G,R(,A) order, OpenCV modes CV_8UC1/3/4 only).
//
// DecodeInfo reads only the header and reports format, width, height and
// the channel count the file declares (1 gray, 2 gray+alpha, 3 colour,
// 4 colour+alpha; palette files count as 3, CMYK JPEGs as 3).
//
// # Limits
//
// Every decode first reads the header and checks its width and height:
// W <= 0 or H <= 0 fails with ErrBadDims, and W*H > Limits.MaxPixels fails
// with ErrTooLarge, before any pixel memory is allocated. A 60000x60000
// PNG header is refused at once, whatever the file claims after it.
// MaxPixels <= 0 refuses every image, so a forgotten limit fails loudly.
// For WebP the frame size must also equal the VP8X canvas size.
//
// Memory for an accepted image is the decoder's own image (1 to 8 bytes
// per pixel, by depth and channels) plus the 1-byte gray result;
// progressive JPEG also keeps its coefficients (4 bytes per sample).
// dst.Pix is reused when its capacity is enough; otherwise, when the
// decoder made an 8-bit gray image of exactly W*H bytes, that buffer is
// taken over instead of copied.
//
// # Errors
//
// Every error wraps one of the fixed values, with context; test with
// errors.Is:
//
//	ErrEmpty          zero-length input
//	ErrUnknownFormat  magic bytes match no supported format
//	ErrBadDims        width or height <= 0
//	ErrTooLarge       width*height over Limits.MaxPixels
//	ErrCorrupt        truncated, corrupt, or a variant the decoder does not
//	                  support (the decoder's message is wrapped too);
//	                  panics inside decoders are recovered as ErrCorrupt
//	ErrBadStruct      Spark struct: bad mode, nChannels or data length
//
// # The grayscale rule
//
// The result matches Pillow's Image.convert("L"):
//
//	L = (R*19595 + G*38470 + B*7471 + 0x8000) >> 16
//
// on 8-bit R, G, B. Alpha is ignored (no compositing, no premultiplying):
// the stored colour of a transparent pixel decides its gray. Details:
//
//   - Gray sources are copied as they are.
//   - 16-bit PNG and TIFF samples use the high byte, v >> 8, before the
//     rule. This includes 16-bit gray, where Pillow (mode I;16) clips
//     to 255 instead; the high byte is the deliberate choice here.
//   - Palette images look up the palette colour, then apply the rule.
//     For GIF the transparent entry keeps its stored colour (Go's decoder
//     would make it black), and the screen outside a smaller first frame
//     gets the colour of the transparent index, or of index 0, as in Pillow.
//   - PNM samples with maxval != 255 are scaled to 0..255 rounding half up,
//     (v*255 + maxval/2) / maxval. Pillow rounds half to even, so an exact
//     half (maxval 100, v 30) can be one level apart.
//   - JPEG colour images use the decoded Y plane directly (JFIF Y is the
//     same luma). Go's IDCT and upsampling differ from libjpeg's, and
//     libjpeg's RGB clips where colours are saturated, so JPEG results
//     differ from Pillow's: mostly by 0 or 1, up to about 7 levels.
//   - CMYK JPEGs go through Go's CMYK->RGB, then the rule (within 1 of
//     Pillow).
//   - Lossy WebP is converted to RGB with libwebp's fixed-point BT.601
//     formula (limited range), then the rule. Chroma is not interpolated
//     as libwebp's "fancy" upsampler does, so results differ from Pillow's
//     by up to 2-3 levels on photos, more on pixel-level colour noise.
//     Lossless WebP is exact.
//   - Spark structs: B=data[i], G=data[i+1], R=data[i+2], then the rule;
//     1-channel data is copied.
//
// All functions are safe for concurrent use; the package has no state.
package imageio
