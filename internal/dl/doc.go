// Package dl opens libraries at run time, so that nothing links them: its
// dl.h is the C helper that the cgo preambles of imageio (libturbojpeg,
// libdeflate), cuda/cufft and cuda/nvjpeg include to open their libraries
// with dlopen, and First tries sonames in order.
// Changes to dl.h are not seen by Go's build cache in those packages:
// run `go clean -cache` after editing it.
package dl
