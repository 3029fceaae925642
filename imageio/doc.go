// Package imageio turns image bytes sent by Spark into 8-bit grayscale.
//
// # Inputs
//
// DecodeGray takes an encoded file. The format is chosen by magic bytes
// (Sniff), never by file name:
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
// SparkImageGray takes Spark's image data source struct instead (already
// decoded pixels, B,G,R(,A) order, OpenCV modes CV_8UC1/3/4 only).
//
// DecodeInfo reads only the header and reports format, width, height and
// the channel count the file declares (1 gray, 2 gray+alpha, 3 colour,
// 4 colour+alpha; palette files count as 3, CMYK JPEGs as 3).
// SparkImageInfo checks a Spark struct as SparkImageGray does (but for
// Limits) and reports its size.
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
// Then the file must be able to hold the pixel data its header claims, or
// the decode fails with ErrTruncated, still before any pixel memory is
// allocated: a 10000x10000 header over a few bytes costs a look at the
// file, not 100 megapixels. Each rule is a lower bound that no file the
// decoder takes goes below; files as compressible as each format allows
// (flat, from Pillow and Go's encoders) pass, several at the bound
// itself. Per format (bits a pixel: of the samples as stored, all
// channels):
//
//	png   the IDAT chunks, all together, inflate to at most 1032 times
//	      their size plus 4 KiB (a deflate match of 258 bytes takes at
//	      least 2 bits), and must reach W*H*bits/8 bytes
//	bmp   exactly H rows of W*bits/8 bytes, each padded to 4, from the
//	      pixel data offset
//	tiff  the strips or tiles the decoder reads: uncompressed ones must
//	      lie in the file whole, and together they must decode to H rows
//	      of W*bits/8 bytes (rounded up): uncompressed 1:1, PackBits to its
//	      exact unpacked length, Deflate at most 1032:1 plus 4 KiB, LZW at
//	      most 2731:1 (an LZW code of w <= 12 bits writes at most 2^w
//	      bytes); CCITT group 3 and 4 take at least one bit a row (a white
//	      row in group 4). Compressions the decoder lacks (JPEG, old-style
//	      CCITT) are refused here too, as ErrCorrupt
//	gif   the first frame: at most 2731 pixels (the LZW bound) per byte
//	      after its descriptor; the screen around the frame costs no data
//	webp  lossy (VP8): the first partition must be in the file and hold
//	      at least 1.6 bits a macroblock (16x16 pixels): the first bits
//	      of its luma and chroma modes, coded at fixed probabilities
//	      (libwebp's flat frames take 3.4). Lossless (VP8L) has no such
//	      bound: where every Huffman code has one symbol a pixel takes no
//	      bits (Pillow writes a flat 4096x4096 in 706 bytes), so only
//	      MaxPixels bounds it
//	pnm   binary (P5, P6): exactly W*H*channels samples of 1 byte (2 for
//	      maxval > 255); plain (P2, P3): a digit and a separator a sample,
//	      2*W*H*channels-1 bytes
//	jpeg  not checked: its decoders allocate the image at the first scan
//	      and then find the data missing
//
// Memory for an accepted image is the decoder's own image (1 to 8 bytes
// per pixel, by depth and channels) plus the 1-byte gray result;
// progressive JPEG also keeps its coefficients (4 bytes per sample).
// dst.Pix is reused when its capacity is enough; otherwise, when the
// decoder made an 8-bit gray image of exactly W*H bytes, that buffer is
// taken over instead of copied. libjpeg-turbo (below) writes the gray
// result directly, keeping only a few rows of its own, or for progressive
// (multi-scan) JPEG the coefficients (2 bytes per sample). The fast PNG
// path (below) keeps the inflated data (the samples plus a filter byte per
// row: 1 to 8 bytes per pixel, as image/png's image) and, when the image
// data spans several IDAT chunks, their data joined (at most the file's
// size); a file it leaves to image/png then costs image/png's memory too.
//
// # JPEG decoders
//
// JPEG pixels come from libjpeg-turbo where the machine has it and from
// Go's image/jpeg elsewhere. JPEGDecoder names the one in use
// ("libjpeg-turbo 2.x", "libjpeg-turbo 3.x" or "go image/jpeg"), for logs
// and capabilities. libjpeg-turbo is 3 to 5 times faster on photos
// (BenchmarkDecodeJPEG, scripts/jpegbench.py), partly because gray output
// lets it skip the chroma IDCT.
//
// The library is never linked. In a cgo build the first JPEG decode opens
// libturbojpeg.so.0 (libjpeg-turbo 2.0 or newer: Debian's package
// libturbojpeg0, Ubuntu's libturbojpeg) with dlopen, once, and keeps it
// open, unchanged, for the life of the process. So one binary runs on
// machines with and without it, and building needs neither the library
// nor its header. Without cgo (CGO_ENABLED=0), or when the library cannot
// be opened, JPEGs decode with image/jpeg, silently.
//
// Both paths read the header as image/jpeg's DecodeConfig does first, so
// DecodeInfo, the size checks and the supported variants are the same
// everywhere. The common headers (marker segments in order, one component
// or three with full-resolution chroma) are read without its 13 KB
// decoder, in about 80 ns; anything else goes to DecodeConfig itself
// (FuzzJPEGInfo: what the fast read accepts, DecodeConfig reads alike).
// libjpeg-turbo then reads the header itself (it must find the same size)
// and decodes straight into dst, with a TurboJPEG handle of its own per
// call. Whatever it cannot do cleanly goes to image/jpeg, whose verdict
// stands: CMYK and YCCK files (libjpeg has no CMYK to gray), and files on
// which libjpeg fails or even warns (truncated, extraneous bytes, corrupt
// data). A file image/jpeg accepts is therefore accepted on every machine,
// and every error, message included, is image/jpeg's. The differences:
// libjpeg-turbo decodes some damaged files that image/jpeg refuses (in the
// tests, a few percent of randomly damaged progressive files, hardly any
// baseline ones), and damaged files that both accept can decode to
// different pixels.
//
// # PNG decoders
//
// PNG pixels come from the package's own decoder where the machine has
// libdeflate, and from Go's image/png elsewhere. PNGDecoder names the one
// in use ("libdeflate" or "go image/png"), for logs and capabilities. The
// own decoder is 3 to 3.5 times faster than image/png on photos, about
// twice as fast as Pillow (BenchmarkDecodePNG, scripts/pngbench.py,
// BENCHMARKS.md), and gives the same pixels. It inflates the image data with one libdeflate call into a
// buffer of exactly the size the header implies, then unfilters each row
// in place and converts it to gray by the rule below: whole rows, no
// per-pixel interfaces. Paeth rows of 3 or 4 bytes per pixel (8-bit RGB
// and RGBA, most photos) are unfiltered in C with SSE2, a pixel's channels
// together in 16-bit lanes, as libpng does; every other filter and layout
// in Go. Adam7-interlaced files take the same path, pass by pass.
//
// Why this and not another library, measured on one core of the 2-core
// development machine (CPU time; scikit-image's astronaut saved by Pillow,
// 512x512 RGB, Paeth on 473 of its 512 rows):
//
//	image/png, then the gray rule          14.7 ms
//	this decoder (libdeflate)                5.0 ms
//	libspng 0.7.3 (Debian's, zlib inside)    8.7 ms to RGB8, before gray
//	inflate alone: zlib 1.2.13               3.6 ms (21.1 ms at 1920x1080)
//	inflate alone: libdeflate 1.14           2.1 ms  (8.9 ms at 1920x1080)
//	Paeth, 3 bytes per pixel, per byte: image/png's 7.9 ns (branches on
//	noise), branch-free Go 3.4 ns, C with SSE2 1.5 ns
//
// Inflating is most of the time, and libdeflate's one-shot inflate, which
// knows the output size from the header, is the fastest there is; the
// unfilter is the rest, and Go's compiler spills registers in the
// three-channel Paeth loop that C keeps in one SSE register.
//
// The library is never linked. In a cgo build the first PNG decode opens
// libdeflate.so.0 (libdeflate 1.6 or newer, which has
// libdeflate_zlib_decompress_ex: Debian's package libdeflate0) with
// dlopen, once, and keeps it open for the life of the process, as for
// libjpeg-turbo. Without cgo, or without the library, PNGs decode with
// image/png, silently.
//
// Both paths read the header with image/png first, so DecodeInfo, the size
// checks and the errors are the same everywhere. The own decoder reads
// the chunks as image/png does (order, lengths, every CRC, up to IEND) and
// takes a file only where image/png takes it to the same pixels
// (FuzzDecodePNG checks this); whatever it reads differently goes to
// image/png, whose verdict and error stand: trailing bytes after the zlib
// stream (image/png takes some of them, as far as it has read ahead), a
// filter type over 4, a short or long stream, a bad checksum, chunks out
// of order, a truncated file. A stream that inflates beyond the header's
// size fails in libdeflate as soon as it passes the buffer. The one
// difference: libdeflate takes a few deflate streams that Go's
// compress/flate refuses (distance codes 30 and 31, length codes 286 and
// 287, more than 286 length or 30 distance codes declared, a lone 1-bit
// Huffman code read with the bit 1). No encoder writes them, and the file
// must still hold an Adler-32 of exactly the header's image; such a file
// decodes where libdeflate is and fails elsewhere.
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
//     same luma). libjpeg-turbo's gray output equals Pillow's Y plane
//     (Image.open(f); im.draft("L", im.size)) exactly; image/jpeg's IDCT
//     rounds differently, within 1 of it. Pillow's convert("L") decodes to
//     RGB first: it differs from the Y plane by 1 in up to 1% of the pixels
//     of the test photos, and by more (up to 11) only where a decoded R, G
//     or B clips at 0 or 255.
//   - RGB JPEGs (Adobe transform 0, no YCbCr) get the rule on the decoded
//     R, G, B: equal to Pillow's convert("L") with libjpeg-turbo, within 1
//     with image/jpeg.
//   - CMYK JPEGs go through Go's CMYK->RGB, then the rule (within 1 of
//     Pillow), with or without libjpeg-turbo.
//   - Lossy WebP is converted to RGB with libwebp's fixed-point BT.601
//     formula (limited range), then the rule. Chroma is not interpolated
//     as libwebp's "fancy" upsampler does, so results differ from Pillow's
//     along colour edges: by up to 9 levels in 5-15% of the pixels of
//     scikit-image's photos at quality 75-95 (coffee 9, astronaut 7,
//     rocket 6, chelsea 2), the mean within 0.01. Lossless WebP is exact.
//   - TIFF with associated (premultiplied) alpha: the alpha is divided out
//     as Pillow's unpacker does (c*255/a, clipped; 0 where a is 0), then
//     the rule: exact.
//   - Spark structs: B=data[i], G=data[i+1], R=data[i+2], then the rule;
//     1-channel data is copied.
//
// All functions are safe for concurrent use. The package's only state is
// the libjpeg-turbo and libdeflate libraries, opened once and read-only
// afterwards.
package imageio
