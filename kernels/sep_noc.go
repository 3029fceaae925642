//go:build !cgo || !amd64

package kernels

// sepLanes is 0: without cgo on amd64 there is no separableC, and
// Separable runs the Go loops.
func sepLanes() int { return 0 }

func (c *Convolver) separableC(lanes int, dst []float32, pix []uint8, h, w int, k *Kernel, mode Mode, b Boundary, oh, ow int) []float32 {
	panic("kernels: separableC without cgo on amd64")
}
