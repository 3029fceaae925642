//go:build cgo

package cuda

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/pixelflight/pixelflight/cuda/gpukernels"
)

// The integral-image kernels (detect_faces on the GPU) against a direct
// sum, with the CPU's int32/uint32 wrap-around.
func TestIntegralKernels(t *testing.T) {
	const batch, h, w = 3, 7, 11
	r := rand.New(rand.NewPCG(3, 4))
	img := gpukernels.Alloc(batch * h * w)
	defer img.Free()
	for i := range img.Bytes() {
		img.Bytes()[i] = uint8(r.IntN(256))
	}
	plane := (h + 1) * (w + 1)
	sum, sq := gpukernels.Alloc(4*batch*plane), gpukernels.Alloc(4*batch*plane)
	defer sum.Free()
	defer sq.Free()
	if err := gpukernels.Launch("pf_integral_rows", dim3{1, 1, batch}, dim3{64, 1, 1}, []uint64{img.Addr(), sum.Addr(), sq.Addr(), h, w}); err != nil {
		t.Fatal(err)
	}
	if err := gpukernels.Launch("pf_integral_cols", dim3{1, 1, batch}, dim3{64, 1, 1}, []uint64{sum.Addr(), sq.Addr(), h, w}); err != nil {
		t.Fatal(err)
	}
	for b := range batch {
		pix := img.Bytes()[b*h*w:]
		for y := range h + 1 {
			for x := range w + 1 {
				var s int32
				var q uint32
				for yy := range y {
					for xx := range x {
						v := pix[yy*w+xx]
						s += int32(v)
						q += uint32(v) * uint32(v)
					}
				}
				i := b*plane + y*(w+1) + x
				gs := int32(binary.LittleEndian.Uint32(sum.Bytes()[4*i:]))
				gq := binary.LittleEndian.Uint32(sq.Bytes()[4*i:])
				if gs != s || gq != q {
					t.Fatalf("image %d (y %d, x %d): sum %d sq %d, want %d %d", b, y, x, gs, gq, s, q)
				}
			}
		}
	}
}

// The emulator refuses what the driver would: an unknown kernel, the
// wrong number of arguments, a block of more than 1024 threads, a grid's
// y beyond 65535.
func TestEmulatorRefusesBadLaunches(t *testing.T) {
	m := gpukernels.Alloc(64)
	defer m.Free()
	for _, c := range []struct {
		name        string
		grid, block dim3
		args        []uint64
	}{
		{"pf_nothing", dim3{1, 1, 1}, dim3{1, 1, 1}, nil},
		{"pf_integral_cols", dim3{1, 1, 1}, dim3{1, 1, 1}, []uint64{m.Addr(), m.Addr(), 1}},
		{"pf_integral_cols", dim3{1, 1, 1}, dim3{2048, 1, 1}, []uint64{m.Addr(), m.Addr(), 1, 1}},
		{"pf_integral_cols", dim3{1, 65536, 1}, dim3{1, 1, 1}, []uint64{m.Addr(), m.Addr(), 1, 1}},
		{"pf_integral_cols", dim3{0, 1, 1}, dim3{1, 1, 1}, []uint64{m.Addr(), m.Addr(), 1, 1}},
	} {
		if err := gpukernels.Launch(c.name, c.grid, c.block, c.args); !errors.Is(err, gpukernels.ErrLaunch) {
			t.Errorf("%s grid %v block %v with %d args: %v, want ErrLaunch", c.name, c.grid, c.block, len(c.args), err)
		}
	}
}
