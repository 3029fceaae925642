// cuda_emu.h: just enough of CUDA C++ to compile kernels.cu.h with g++ and
// run its kernels on the CPU, so that the kernels' logic is tested on
// machines without a GPU (emu.cc, emu.go, `go test ./cuda/...`).
//
// What it emulates:
//   - __global__, __device__, __forceinline__, __restrict__: dropped.
//   - threadIdx, blockIdx, blockDim, gridDim: thread-local, set by launch.
//   - float2: a struct of two floats.
//   - __shared__: static. Blocks run one after another (and launches one
//     at a time, under a lock), so a block's threads share it and no two
//     blocks see each other's.
//   - __syncthreads: a std::barrier over the block's threads. Kernels that
//     call it must be launched "threaded": each CUDA thread of a block is
//     then a std::thread; a thread that returns drops out of the barrier
//     (as an exited thread does on the GPU). Other kernels run their
//     threads one after another, and __syncthreads there aborts.
//   - Launch checks: block at most 1024 threads, grid y and z at most
//     65535, no dimension zero (CUDA_ERROR_INVALID_VALUE on a GPU).
//   - atomicAdd on unsigned int: a real atomic (GCC's __atomic builtins),
//     so it holds in threaded launches too.
//   - The IEEE round-to-nearest intrinsics (__fadd_rn, __fmul_rn,
//     __dadd_rn, __dsub_rn, __dmul_rn, __ddiv_rn, __dsqrt_rn): the plain
//     operations: the emulator is built for x86-64 or arm64 without
//     -ffast-math; on x86-64 (no -mfma) g++ has no fused multiply-add to
//     contract a*b+c into. (cgo refuses -ffp-contract=off; on arm64 the
//     exactness tests would show a contraction.)
// Not emulated: warps, shuffles, other atomics, dynamic shared memory,
// fast-math intrinsics (kernels.cu uses none of them).
#pragma once

#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

struct uint3 {
	unsigned x, y, z;
};
struct dim3 {
	unsigned x, y, z;
};
struct float2 {
	float x, y;
};

namespace emu {
inline thread_local uint3 tid, bid;
inline thread_local dim3 bdim, gdim;
inline thread_local std::barrier<>* bar = nullptr;
inline std::mutex launch_mu;
} // namespace emu

#define threadIdx (emu::tid)
#define blockIdx (emu::bid)
#define blockDim (emu::bdim)
#define gridDim (emu::gdim)
#define __global__
#define __device__
#define __forceinline__ inline
#define __restrict__ __restrict
#define __shared__ static

inline void __syncthreads()
{
	if (emu::bar == nullptr) {
		std::fprintf(stderr, "cuda_emu: __syncthreads in a kernel not launched threaded\n");
		std::abort();
	}
	emu::bar->arrive_and_wait();
}

inline unsigned int atomicAdd(unsigned int* p, unsigned int v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dsub_rn(double a, double b) { return a - b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline double __ddiv_rn(double a, double b) { return a / b; }
inline double __dsqrt_rn(double a) { return std::sqrt(a); }

namespace emu {

// from_u64 reads one 8-byte kernel argument as the parameter's type.
template <class T> T from_u64(uint64_t v)
{
	if constexpr (std::is_pointer_v<T>) {
		return reinterpret_cast<T>(static_cast<uintptr_t>(v));
	} else if constexpr (std::is_same_v<T, double>) {
		double d;
		std::memcpy(&d, &v, sizeof d);
		return d;
	} else {
		static_assert(std::is_same_v<T, long long>, "kernel parameters are pointers, long long or double");
		return static_cast<long long>(v);
	}
}

template <class... A, std::size_t... I>
std::tuple<A...> unpack(const uint64_t* args, std::index_sequence<I...>)
{
	return std::tuple<A...>(from_u64<A>(args[I])...);
}

// Errors of launch, as negative numbers.
enum { OK = 0, BAD_ARGS = -2, BAD_CONFIG = -3 };

// launch runs kernel k over grid × block with the 8-byte arguments args.
template <class... A>
int launch(void (*k)(A...), dim3 grid, dim3 block, bool threaded, const uint64_t* args, int nargs)
{
	if (nargs != (int)sizeof...(A)) {
		return BAD_ARGS;
	}
	unsigned threads = block.x * block.y * block.z;
	if (grid.x == 0 || grid.y == 0 || grid.z == 0 || threads == 0 || threads > 1024 || grid.y > 65535 ||
	    grid.z > 65535 || block.z > 64) {
		return BAD_CONFIG;
	}
	std::tuple<A...> t = unpack<A...>(args, std::index_sequence_for<A...>{});
	std::lock_guard<std::mutex> lock(launch_mu);
	auto run = [&](uint3 b, uint3 th, std::barrier<>* br) {
		tid = th;
		bid = b;
		bdim = block;
		gdim = grid;
		bar = br;
		std::apply(k, t);
		bar = nullptr;
	};
	for (unsigned z = 0; z < grid.z; z++)
		for (unsigned y = 0; y < grid.y; y++)
			for (unsigned x = 0; x < grid.x; x++) {
				uint3 b{x, y, z};
				if (!threaded) {
					for (unsigned tz = 0; tz < block.z; tz++)
						for (unsigned ty = 0; ty < block.y; ty++)
							for (unsigned tx = 0; tx < block.x; tx++)
								run(b, uint3{tx, ty, tz}, nullptr);
					continue;
				}
				std::barrier<> br((std::ptrdiff_t)threads);
				std::vector<std::thread> ts;
				ts.reserve(threads);
				for (unsigned tz = 0; tz < block.z; tz++)
					for (unsigned ty = 0; ty < block.y; ty++)
						for (unsigned tx = 0; tx < block.x; tx++)
							ts.emplace_back([&, th = uint3{tx, ty, tz}] {
								run(b, th, &br);
								br.arrive_and_drop();
							});
				for (auto& th : ts)
					th.join();
			}
	return OK;
}

} // namespace emu
