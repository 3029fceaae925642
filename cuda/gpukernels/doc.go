// Package gpukernels holds the CUDA kernels of the GPU backend and runs
// them on the CPU for tests.
//
// kernels.cu.h is CUDA C. `make cuda-ptx` compiles it with NVRTC to
// cuda/kernels.ptx, which pixelflight-cuda embeds and the driver
// JIT-compiles for its GPU. With cgo, this package also compiles it as
// C++ behind cuda_emu.h (emu.cc), which supplies CUDA's built-ins
// (threadIdx and friends, __shared__, __syncthreads) and runs each
// launch's grid on the CPU: Launch runs a kernel on memory from Alloc.
// Package cuda's tests use that as an emulated device, so every kernel's
// logic is checked against the CPU backend on machines without a GPU.
// Nothing in the product imports this package.
//
// The source is named .h, not .cu, because Go's build cache hashes only
// the files it knows (.go, .c, .cc, .h, ...) in a package's directory:
// an edit to a .cu file would not rebuild the emulated kernels.
package gpukernels
