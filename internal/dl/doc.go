// Package dl holds no Go code: its dl.h is the C helper that the cgo
// preambles of imageio (libturbojpeg, libdeflate) and cuda/cufft include
// to open their libraries with dlopen, so that nothing links them.
// Changes to dl.h are not seen by Go's build cache in those packages:
// run `go clean -cache` after editing it.
package dl
