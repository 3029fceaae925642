//go:build cgo

// The kernels of kernels.cu.h compiled for the CPU (see cuda_emu.h),
// behind one C entry point for package emu.
#include "cuda_emu.h"

#include "kernels.cu.h"

#include "emu.h"

int emu_launch(const char* name, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
               const uint64_t* args, int nargs)
{
	dim3 g{gx, gy, gz}, b{bx, by, bz};
	struct entry {
		const char* name;
		int (*run)(dim3, dim3, const uint64_t*, int);
	};
#define PF_KERNEL(k, threaded) \
	entry{#k, [](dim3 g, dim3 b, const uint64_t* a, int n) { return emu::launch(k, g, b, threaded, a, n); }}
	static const entry table[] = {
		PF_KERNEL(pf_pack, false),         PF_KERNEL(pf_mul, false),
		PF_KERNEL(pf_crop_f32, false),     PF_KERNEL(pf_crop_u8, false),
		PF_KERNEL(pf_stats, true),         PF_KERNEL(pf_integral_rows, false),
		PF_KERNEL(pf_integral_cols, false), PF_KERNEL(pf_resize, false),
		PF_KERNEL(pf_tilted_a, false),      PF_KERNEL(pf_tilted_b, false),
		PF_KERNEL(pf_haar_stage0, false),   PF_KERNEL(pf_haar_scan, false),
		PF_KERNEL(pf_blob_y, false),        PF_KERNEL(pf_blob_x, false),
		PF_KERNEL(pf_blob_first, false),    PF_KERNEL(pf_blob_peaks, false),
		PF_KERNEL(pf_sep_rows, true),       PF_KERNEL(pf_sep_cols, true),
	};
#undef PF_KERNEL
	for (const entry& e : table) {
		if (std::strcmp(e.name, name) == 0) {
			return e.run(g, b, args, nargs);
		}
	}
	return -1;
}
