//go:build !cgo || !amd64

package kernels

// cLanes is 0: without cgo on amd64 there is no separableC or
// directC, and Separable and Direct run the Go loops.
func cLanes() int { return 0 }

func (c *Convolver) separableC(lanes int, dst []float32, pix []uint8, h, w int, k *Kernel, mode Mode, b Boundary, oh, ow int) []float32 {
	panic("kernels: separableC without cgo on amd64")
}

func (c *Convolver) directC(lanes int, dst []float32, pix []uint8, h, w int, k *Kernel, mode Mode, b Boundary, oh, ow int) []float32 {
	panic("kernels: directC without cgo on amd64")
}
