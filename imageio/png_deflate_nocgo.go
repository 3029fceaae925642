//go:build !cgo

package imageio

// Without cgo there is no libdeflate: PNGs always use image/png.
func pngInflate() zinflate { return nil }

// PNGDecoder names the PNG decoder in use: always "go image/png" in a
// build without cgo.
func PNGDecoder() string { return goPNG }

// paethRow reverses the Paeth filter in place.
func paethRow(cur, prev []byte, bpp int) { paethN(cur, prev, bpp) }

// unfilterGroup is the number of rows unfilterRows takes at once.
const unfilterGroup = 32

// haveAVX2 is false without cgo: the C paths that need it are not there.
func haveAVX2() bool { return false }

// unfilterRows is not available without cgo.
func unfilterRows(raw []byte, n int, prev []byte, bpp int) bool { return false }

// grayRGB8 is rgb8.
func grayRGB8(out, in []uint8, step int) { rgb8(out, in, step) }
