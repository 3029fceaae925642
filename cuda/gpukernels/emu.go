//go:build cgo

package gpukernels

/*
#cgo CXXFLAGS: -std=c++20 -O2 -Wall -Wextra -Werror -Wno-unused-parameter
#cgo LDFLAGS: -lstdc++ -lpthread -lm
#include <stdlib.h>
#include "emu.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"
)

// ErrLaunch is the error of a launch the emulator refuses, as the driver
// would (CUDA_ERROR_INVALID_VALUE or CUDA_ERROR_NOT_FOUND).
var ErrLaunch = errors.New("emulated launch refused")

// Launch runs kernel name over grid × block (x, y, z) with 8-byte
// arguments (device addresses from Alloc, int64s, float64 bits).
func Launch(name string, grid, block [3]int, args []uint64) error {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	a := (*C.uint64_t)(C.malloc(C.size_t(8 * max(len(args), 1))))
	defer C.free(unsafe.Pointer(a))
	copy(unsafe.Slice((*uint64)(unsafe.Pointer(a)), len(args)), args)
	r := C.emu_launch(cname, C.uint(grid[0]), C.uint(grid[1]), C.uint(grid[2]),
		C.uint(block[0]), C.uint(block[1]), C.uint(block[2]), a, C.int(len(args)))
	switch r {
	case 0:
		return nil
	case -1:
		return fmt.Errorf("%w: no kernel %q", ErrLaunch, name)
	case -2:
		return fmt.Errorf("%w: %s: wrong number of arguments (%d)", ErrLaunch, name, len(args))
	case -3:
		return fmt.Errorf("%w: %s: grid %v block %v", ErrLaunch, name, grid, block)
	}
	return fmt.Errorf("%w: %s: error %d", ErrLaunch, name, int(r))
}

// Memory is emulated device memory: C memory (so that the kernels may
// hold its address), zeroed.
type Memory struct {
	p unsafe.Pointer
	n int
}

// Alloc returns n zeroed bytes of emulated device memory.
func Alloc(n int) *Memory {
	return &Memory{p: C.calloc(C.size_t(max(n, 1)), 1), n: n}
}

// Addr is the memory's address, as a kernel argument.
func (m *Memory) Addr() uint64 { return uint64(uintptr(m.p)) }

// Bytes is the memory itself.
func (m *Memory) Bytes() []byte { return unsafe.Slice((*byte)(m.p), m.n) }

// Free releases the memory.
func (m *Memory) Free() { C.free(m.p) }
