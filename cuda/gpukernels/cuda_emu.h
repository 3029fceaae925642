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
//   - __syncthreads: a barrier over the block's threads. Kernels that
//     call it must be launched "threaded": each CUDA thread of a block is
//     then a fiber (ucontext, its own stack) on the launching thread, and
//     the block runs in rounds: every live fiber runs until it reaches
//     __syncthreads or returns, and the next round starts once all have;
//     a thread that returns drops out of the barrier (as an exited thread
//     does on the GPU). One OS thread, so no two CUDA threads run at once
//     and what one wrote before the barrier the others read after it.
//     (Fibers, not a std::thread per CUDA thread: a 512×512 image's
//     launches start some 65,000 threads, seconds on a small machine.)
//     Other kernels run their threads one after another, and
//     __syncthreads there aborts.
//   - Launch checks: block at most 1024 threads, grid y and z at most
//     65535, no dimension zero (CUDA_ERROR_INVALID_VALUE on a GPU).
//   - atomicAdd on unsigned int: a real atomic (GCC's __atomic builtins).
//   - The IEEE round-to-nearest intrinsics (__fadd_rn, __fmul_rn,
//     __dadd_rn, __dsub_rn, __dmul_rn, __ddiv_rn, __dsqrt_rn): the plain
//     operations: the emulator is built for x86-64 or arm64 without
//     -ffast-math; on x86-64 (no -mfma) g++ has no fused multiply-add to
//     contract a*b+c into. (cgo refuses -ffp-contract=off; on arm64 the
//     exactness tests would show a contraction.)
// Not emulated: warps, shuffles, other atomics, dynamic shared memory,
// fast-math intrinsics (kernels.cu uses none of them).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <tuple>
#include <utility>
#include <vector>

#include <ucontext.h>

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
// The fiber running a threaded launch's CUDA thread (nullptr elsewhere),
// and the context of the loop that runs the block's rounds.
struct fiber;
inline thread_local fiber* cur = nullptr;
inline thread_local ucontext_t* rounds = nullptr;
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

namespace emu {
// fiber is one CUDA thread of a threaded launch: its context, its stack
// (kept for the whole launch, reused by every block) and its state.
struct fiber {
	ucontext_t ctx;
	uint3 th;
	bool done;
	std::unique_ptr<char[]> stack; // fiberStack bytes, not zeroed
};

// fiberStack is each fiber's stack: the kernels keep small frames (their
// shared arrays are static), and Go's signal handlers run on their own
// stack (SA_ONSTACK), not on a fiber's.
constexpr std::size_t fiberStack = 64 << 10;

// The block a threaded launch runs: body(arg, thread) runs one thread.
struct block_body {
	void (*body)(void*, uint3);
	void* arg;
};
inline thread_local block_body* blk = nullptr;

// fiber_main is every fiber's entry: its CUDA thread, then back to the
// rounds loop (uc_link).
inline void fiber_main()
{
	blk->body(blk->arg, cur->th);
	cur->done = true;
}

// start readies f to run CUDA thread th from the top, returning to link
// at its end. (Its own function: getcontext returns twice, and g++ warns
// of the locals of the function that calls it.)
__attribute__((noinline)) inline void start(fiber& f, uint3 th, ucontext_t* link)
{
	f.th = th;
	f.done = false;
	if (getcontext(&f.ctx) != 0) {
		std::abort();
	}
	f.ctx.uc_stack.ss_sp = f.stack.get();
	f.ctx.uc_stack.ss_size = fiberStack;
	f.ctx.uc_link = link;
	makecontext(&f.ctx, fiber_main, 0);
}

// yield returns from the running fiber to the rounds loop.
inline void yield()
{
	if (swapcontext(&cur->ctx, rounds) != 0) {
		std::abort();
	}
}
} // namespace emu

inline void __syncthreads()
{
	if (emu::cur == nullptr) {
		std::fprintf(stderr, "cuda_emu: __syncthreads in a kernel not launched threaded\n");
		std::abort();
	}
	emu::yield();
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
	auto run = [&](uint3 b, uint3 th) {
		tid = th;
		bid = b;
		bdim = block;
		gdim = grid;
		std::apply(k, t);
	};
	// Threaded: one fiber per CUDA thread of a block, made once per
	// launch and restarted for every block.
	std::vector<fiber> fs(threaded ? threads : 0);
	for (fiber& f : fs) {
		f.stack.reset(new char[fiberStack]);
	}
	ucontext_t loop;
	uint3 cb{};
	auto one = [&](uint3 th) { run(cb, th); };
	block_body bb{[](void* p, uint3 th) { (*static_cast<decltype(one)*>(p))(th); }, &one};
	for (unsigned z = 0; z < grid.z; z++)
		for (unsigned y = 0; y < grid.y; y++)
			for (unsigned x = 0; x < grid.x; x++) {
				uint3 b{x, y, z};
				if (!threaded) {
					for (unsigned tz = 0; tz < block.z; tz++)
						for (unsigned ty = 0; ty < block.y; ty++)
							for (unsigned tx = 0; tx < block.x; tx++)
								run(b, uint3{tx, ty, tz});
					continue;
				}
				cb = b;
				blk = &bb;
				unsigned i = 0;
				for (unsigned tz = 0; tz < block.z; tz++)
					for (unsigned ty = 0; ty < block.y; ty++)
						for (unsigned tx = 0; tx < block.x; tx++) {
							start(fs[i++], uint3{tx, ty, tz}, &loop);
						}
				// Rounds: each live fiber runs to its next __syncthreads or
				// its end; a round ends when all have.
				for (bool live = true; live;) {
					live = false;
					for (fiber& f : fs) {
						if (f.done) {
							continue;
						}
						cur = &f;
						rounds = &loop;
						tid = f.th;
						if (swapcontext(&loop, &f.ctx) != 0) {
							std::abort();
						}
						live = live || !f.done;
					}
				}
				cur = nullptr;
				rounds = nullptr;
				blk = nullptr;
			}
	return OK;
}

} // namespace emu
