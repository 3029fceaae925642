// Package imageio turns image bytes sent by Spark into 8-bit grayscale. It
// refuses an image too large for its Limits, or too short for the pixel
// data its header claims, before it allocates the pixels.
//
// DecodeGray decodes an encoded file, its format found by its magic bytes
// (Sniff), never by its name; SparkImageGray converts Spark's image
// struct. Both write a Gray. DecodeInfo and SparkImageInfo read only the
// size and channels; CheckHeader makes a decode's checks without
// decoding; DecodeGrayInfo decodes a file whose header DecodeInfo read.
// JPEGLuma and JPEGProgressive tell which JPEGs a GPU decoder may take.
// Every error wraps one of the Err values. All functions are safe for
// concurrent use.
//
// It relies on Go's decoders (image/png, image/jpeg, image/gif, and
// golang.org/x/image's bmp, tiff and webp; netpbm is its own) and on two C
// libraries opened at run time where the machine has them: libjpeg-turbo
// for JPEG and libdeflate for PNG. JPEGDecoder and PNGDecoder name the
// decoders in use. How it decodes, and why: docs/decoding.md. Its
// figures: BENCHMARKS.md.
//
// # Inputs
//
// DecodeGray takes these formats:
//
//	png   PNG, all colour types and bit depths, palette, tRNS, interlaced
//	jpeg  baseline and progressive 8-bit JPEG, gray, YCbCr, RGB, CMYK
//	      (not arithmetic-coded, not 12-bit)
//	gif   GIF, first frame only
//	bmp   uncompressed BMP, 1/2/4/8-bit palette, 24 and 32 bit
//	tiff  TIFF: none, LZW, Deflate, PackBits, CCITT; strips or tiles
//	webp  WebP still images, lossy (VP8) and lossless (VP8L); not animated
//	pnm   netpbm P2, P3 (plain) and P5, P6 (binary); maxval 1..65535
//
// SparkImageGray takes Spark's image data source struct: decoded pixels,
// B,G,R(,A) order, OpenCV modes CV_8UC1/3/4 only.
//
// DecodeInfo reports format, width, height and the channel count the file
// declares (1 gray, 2 gray+alpha, 3 colour, 4 colour+alpha; palette files
// count as 3, CMYK JPEGs as 3). SparkImageInfo checks a Spark struct as
// SparkImageGray does (but for Limits) and reports its size.
//
// # Limits
//
// Every decode first reads the header. W <= 0 or H <= 0 fails with
// ErrBadDims, and W*H > Limits.MaxPixels with ErrTooLarge, before any
// pixel memory is allocated. MaxPixels <= 0 refuses every image. For WebP
// the frame size must also equal the VP8X canvas size. A JPEG of more than
// 100 scans is ErrCorrupt.
//
// Then the file must be able to hold the pixel data its header claims, or
// the decode fails with ErrTruncated, still before any pixel memory is
// allocated. Each rule is a lower bound that no file the decoder takes
// goes below; docs/decoding.md says why each holds. Per format (bits a
// pixel: of the samples as stored, all channels):
//
//	png   the IDAT chunks, all together, inflate to at most 1032 times
//	      their size plus 4 KiB, and must reach W*H*bits/8 bytes
//	bmp   exactly H rows of W*bits/8 bytes, each padded to 4, from the
//	      pixel data offset
//	tiff  the strips or tiles the decoder reads: uncompressed ones lie in
//	      the file whole, and together they decode to H rows of
//	      W*bits/8 bytes (rounded up): uncompressed 1:1, PackBits to its
//	      exact unpacked length, Deflate at most 1032:1 plus 4 KiB, LZW at
//	      most 2731:1; CCITT group 3 and 4 take at least one bit a row.
//	      Compressions the decoder lacks (JPEG, old-style CCITT) are
//	      refused here too, as ErrCorrupt
//	gif   the first frame: at most 2731 pixels per byte after its
//	      descriptor; the screen around the frame costs no data
//	webp  lossy (VP8): the first partition is in the file and holds at
//	      least 1.6 bits a macroblock (16x16 pixels); lossless (VP8L):
//	      no rule, only MaxPixels
//	pnm   binary (P5, P6): exactly W*H*channels samples of 1 byte (2 for
//	      maxval > 255); plain (P2, P3): 2*W*H*channels-1 bytes
//	jpeg  no rule
//
// # Memory
//
// An accepted image costs the decoder's own image (1 to 8 bytes per
// pixel, by depth and channels) plus the 1-byte gray result; progressive
// JPEG also keeps its coefficients (4 bytes per sample). dst.Pix is reused
// when its capacity is enough; otherwise, when the decoder made an 8-bit
// gray image of exactly W*H bytes, that buffer is taken over instead of
// copied. libjpeg-turbo writes the gray result directly, keeping only a
// few rows of its own, or for progressive (multi-scan) JPEG the
// coefficients (2 bytes per sample). The libdeflate PNG path keeps the
// inflated data (the samples plus a filter byte per row: 1 to 8 bytes per
// pixel, as image/png's image) and, when the image data spans several IDAT
// chunks, their data joined (at most the file's size); a file it leaves to
// image/png then costs image/png's memory too.
//
// # Decoders
//
// JPEGs decode with libjpeg-turbo (libturbojpeg.so.0, 2.0 or newer:
// Debian's libturbojpeg0, Ubuntu's libturbojpeg), PNGs with the package's
// own decoder on libdeflate's inflate (libdeflate.so.0, 1.6 or newer:
// Debian's libdeflate0). In a cgo build the first decode of each format
// opens its library with dlopen, once, and keeps it, unchanged, for the
// life of the process; the first use of the AVX2 paths (PNG's 32-row
// unfilter, 8-bit RGB and NRGBA to gray) asks, once, whether the CPU has
// AVX2. Those three values are the package's only state. Nothing links
// the libraries, and building needs neither. Without cgo, or without the
// library, image/jpeg and image/png decode, silently.
// JPEGDecoder says "libjpeg-turbo 2.x", "libjpeg-turbo 3.x" or "go
// image/jpeg"; PNGDecoder "libdeflate" or "go image/png".
//
// Both paths of a format read the header as the Go decoder does, so
// DecodeInfo, the size checks and the variants taken are the same on
// every machine. A file the fast path cannot decode cleanly goes to the Go
// decoder, whose verdict and error stand. So a file the Go decoder takes
// is taken everywhere, and every error is the Go decoder's, but for:
//
//   - libjpeg-turbo decodes some damaged files that image/jpeg refuses,
//     and damaged files both take can decode to different pixels;
//   - libdeflate takes a few deflate streams that compress/flate refuses
//     (distance codes 30 and 31, length codes 286 and 287, more than 286
//     length or 30 distance codes declared, a lone 1-bit Huffman code read
//     with the bit 1): such a file decodes where libdeflate is and fails
//     elsewhere.
//
// Undamaged, the libdeflate path gives image/png's pixels
// (FuzzDecodePNG), and libjpeg-turbo the pixels the gray rule below
// states.
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
//	ErrTruncated      too short for the pixel data its header claims (see
//	                  Limits); it wraps ErrCorrupt, so errors.Is(err,
//	                  ErrCorrupt) holds too
//	ErrBadStruct      Spark struct: bad mode, nChannels or data length
//
// # The grayscale rule
//
// The result matches Pillow's Image.convert("L"):
//
//	L = (R*19595 + G*38470 + B*7471 + 0x8000) >> 16
//
// on 8-bit R, G, B. Alpha is ignored (no compositing, no premultiplying):
// the stored colour of a transparent pixel decides its gray. How far each
// source is from Pillow: docs/ops.md. Details:
//
//   - Gray sources are copied as they are.
//   - 16-bit PNG and TIFF samples use the high byte, v >> 8, before the
//     rule, 16-bit gray included (Pillow's mode I;16 clips to 255
//     instead).
//   - Palette images look up the palette colour, then apply the rule.
//     For GIF the transparent entry keeps its stored colour (Go's decoder
//     would make it black), and the screen outside a smaller first frame
//     gets the colour of the transparent index, or of index 0, as in Pillow.
//   - PNM samples with maxval != 255 are scaled to 0..255 rounding half up,
//     (v*255 + maxval/2) / maxval. Pillow rounds half to even, so an exact
//     half (maxval 100, v 30) can be one level apart.
//   - JPEG colour images use the decoded Y plane directly (JFIF Y is the
//     same luma). libjpeg-turbo's gray output equals Pillow's Y plane
//     (Image.open(f); im.draft("L", im.size)) exactly; image/jpeg's IDCT
//     rounds differently, within 1 of it. Pillow's convert("L") decodes to
//     RGB first, and so differs from the Y plane.
//   - RGB JPEGs (Adobe transform 0, no YCbCr) get the rule on the decoded
//     R, G, B: equal to Pillow's convert("L") with libjpeg-turbo, within 1
//     with image/jpeg.
//   - CMYK JPEGs go through Go's CMYK->RGB, then the rule (within 1 of
//     Pillow), with or without libjpeg-turbo.
//   - Lossy WebP is converted to RGB with libwebp's fixed-point BT.601
//     formula (limited range), then the rule. Chroma is not interpolated
//     as libwebp's "fancy" upsampler does, so results differ from Pillow's
//     along colour edges. Lossless WebP is exact.
//   - TIFF with associated (premultiplied) alpha: the alpha is divided out
//     as Pillow's unpacker does (c*255/a, clipped; 0 where a is 0), then
//     the rule: exact.
//   - Spark structs: B=data[i], G=data[i+1], R=data[i+2], then the rule;
//     1-channel data is copied.
package imageio
