// pixelflight's CUDA kernels: the device half of the GPU backend (CUDA C,
// named .h only so that Go's build cache tracks it: see doc.go).
//
// One source, two compilers:
//   - NVRTC (cuda/tools/ptx.py, `make cuda-ptx`) compiles it to PTX for
//     compute_52 (cuda/kernels.ptx, embedded in pixelflight-cuda), which
//     the driver JIT-compiles for the GPU it runs on; ptxas checks that
//     PTX in `make cuda-check`.
//   - g++ compiles it as C++ after cuda_emu.h, which defines __global__,
//     threadIdx, __syncthreads and friends and runs each grid on the CPU
//     (emu.cc), so `go test ./cuda/...` checks every kernel against the
//     CPU backend on machines without a GPU.
// So: no #include, nothing beyond what both sides define (see cuda_emu.h).
//
// Launch convention: every kernel parameter is 8 bytes (pointers, long
// long, double), because gorgonia.org/cu's Launch copies 8 bytes per
// parameter. Grids are 3D: x over columns (blockDim.x threads each),
// y over rows, z over the images of the batch. Grid sizes and block sizes
// are chosen by cuda/backend.go, the same code for the GPU and the
// emulator.
//
// The FFTs themselves are cuFFT's (batched 2D R2C and C2R plans); these
// kernels are everything around them.

#ifndef PF_STATS_THREADS
#define PF_STATS_THREADS 256
#endif

// pf_pack widens a batch of h×w 8-bit images into the nh×nw real arrays
// cuFFT transforms: transform row y holds image row rsrc[y] and transform
// column x image column csrc[x], or zero where either is -1. The tables
// give every boundary rule (zero, reflect, wrap) and mode one kernel.
extern "C" __global__ void pf_pack(const unsigned char* __restrict__ img, float* __restrict__ out,
                                   const int* __restrict__ rsrc, const int* __restrict__ csrc,
                                   long long h, long long w, long long nh, long long nw)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x;
	int y = blockIdx.y;
	long long b = blockIdx.z;
	if (x >= nw || y >= nh) {
		return;
	}
	int sy = rsrc[y], sx = csrc[x];
	float v = 0.0f;
	if (sy >= 0 && sx >= 0) {
		v = (float)img[b * h * w + (long long)sy * w + sx];
	}
	out[b * nh * nw + (long long)y * nw + x] = v;
}

// pf_mul multiplies each image's half spectrum (nh rows of cw = nw/2+1
// complex values, cuFFT's R2C layout) by the kernel's, and by scale
// (1/(nh·nw): cuFFT's transforms are unnormalised), in place.
extern "C" __global__ void pf_mul(float2* __restrict__ spec, const float2* __restrict__ ker,
                                  long long nh, long long cw, double scale)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x;
	int y = blockIdx.y;
	long long b = blockIdx.z;
	if (x >= cw || y >= nh) {
		return;
	}
	long long k = (long long)y * cw + x;
	float2 a = spec[b * nh * cw + k];
	float2 c = ker[k];
	float s = (float)scale;
	float2 r;
	r.x = (a.x * c.x - a.y * c.y) * s;
	r.y = (a.x * c.y + a.y * c.x) * s;
	spec[b * nh * cw + k] = r;
}

// pf_src is where output pixel (y, x) lies in an nh×nw inverse
// transform: at (oy+y, ox+x) modulo the transform size, oy < nh and
// ox < nw, y < oh <= nh, x < ow <= nw. (cuda/geometry.go's layouts keep
// oy+y < nh and ox+x < nw; the wrap is there for any other.)
__device__ __forceinline__ long long pf_src(int y, int x, long long nh, long long nw, long long oy, long long ox)
{
	long long sy = oy + y, sx = ox + x;
	if (sy >= nh) {
		sy -= nh;
	}
	if (sx >= nw) {
		sx -= nw;
	}
	return sy * nw + sx;
}

// pf_crop_f32 copies the oh×ow output out of each inverse transform into
// a packed float32 image: the f32 output.
extern "C" __global__ void pf_crop_f32(const float* __restrict__ in, float* __restrict__ out,
                                       long long nh, long long nw, long long oy, long long ox,
                                       long long oh, long long ow)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x;
	int y = blockIdx.y;
	long long b = blockIdx.z;
	if (x >= ow || y >= oh) {
		return;
	}
	out[b * oh * ow + (long long)y * ow + x] = in[b * nh * nw + pf_src(y, x, nh, nw, oy, ox)];
}

// pf_crop_u8 is pf_crop_f32 for the png output: each value clipped to
// [0, 255] and rounded half away from zero, as the CPU's encoder does, so
// one byte per pixel crosses the bus instead of four.
extern "C" __global__ void pf_crop_u8(const float* __restrict__ in, unsigned char* __restrict__ out,
                                      long long nh, long long nw, long long oy, long long ox,
                                      long long oh, long long ow)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x;
	int y = blockIdx.y;
	long long b = blockIdx.z;
	if (x >= ow || y >= oh) {
		return;
	}
	float v = in[b * nh * nw + pf_src(y, x, nh, nw, oy, ox)];
	v = fminf(fmaxf(v, 0.0f), 255.0f);
	out[b * oh * ow + (long long)y * ow + x] = (unsigned char)roundf(v);
}

// pf_stats reduces each image's oh×ow output to partial statistics: block
// (p, 0, b) of a grid of P×1×batch blocks of PF_STATS_THREADS threads
// covers pixels p·T + t, p·T + t + P·T, ... of image b and writes
// count, mean, M2 (sum of squared deviations), min, max as five doubles at
// part[(b·P + p)·5]. The host merges the P partials of each image
// (Chan et al.'s pairwise update, as here), so only 40·P bytes per image
// come back for the stats output.
extern "C" __global__ void pf_stats(const float* __restrict__ in, double* __restrict__ part,
                                    long long nh, long long nw, long long oy, long long ox,
                                    long long oh, long long ow)
{
	__shared__ double s_n[PF_STATS_THREADS];
	__shared__ double s_mean[PF_STATS_THREADS];
	__shared__ double s_m2[PF_STATS_THREADS];
	__shared__ float s_min[PF_STATS_THREADS];
	__shared__ float s_max[PF_STATS_THREADS];

	int t = threadIdx.x;
	long long b = blockIdx.z;
	const float* img = in + b * nh * nw;
	double n = 0.0, mean = 0.0, m2 = 0.0;
	float mn = 3.402823466e+38f, mx = -3.402823466e+38f;
	long long total = oh * ow;
	long long step = (long long)gridDim.x * blockDim.x;
	for (long long i = (long long)blockIdx.x * blockDim.x + t; i < total; i += step) {
		int y = (int)(i / ow);
		int x = (int)(i - (long long)y * ow);
		float v = img[pf_src(y, x, nh, nw, oy, ox)];
		n += 1.0;
		double d = (double)v - mean;
		mean += d / n;
		m2 += d * ((double)v - mean);
		mn = fminf(mn, v);
		mx = fmaxf(mx, v);
	}
	s_n[t] = n;
	s_mean[t] = mean;
	s_m2[t] = m2;
	s_min[t] = mn;
	s_max[t] = mx;
	__syncthreads();
	for (int half = PF_STATS_THREADS / 2; half > 0; half /= 2) {
		if (t < half) {
			double na = s_n[t], nb = s_n[t + half];
			double nn = na + nb;
			if (nb > 0.0) {
				double d = s_mean[t + half] - s_mean[t];
				s_mean[t] += d * nb / nn;
				s_m2[t] += s_m2[t + half] + d * d * na * nb / nn;
				s_n[t] = nn;
			}
			s_min[t] = fminf(s_min[t], s_min[t + half]);
			s_max[t] = fmaxf(s_max[t], s_max[t + half]);
		}
		__syncthreads();
	}
	if (t == 0) {
		double* p = part + (b * gridDim.x + blockIdx.x) * 5;
		p[0] = s_n[0];
		p[1] = s_mean[0];
		p[2] = s_m2[0];
		p[3] = (double)s_min[0];
		p[4] = (double)s_max[0];
	}
}

// pf_integral_rows and pf_integral_cols build the integral image and the
// integral of squares of a batch of h×w 8-bit images, as OpenCV's
// cv::integral and kernels/haar do: (h+1)×(w+1) arrays, row 0 and column 0
// zero, sum[y][x] the sum of the pixels above and left of (y, x), both
// wrapping modulo 2^32 as the CPU's int32/uint32 do (sum is read as
// int32). Rows
// first (one thread per image row: the running sums), then columns (one
// thread per output column). Not yet used by a backend: the first step
// of Haar detection on the GPU (see cuda/doc.go).
extern "C" __global__ void pf_integral_rows(const unsigned char* __restrict__ img, unsigned int* __restrict__ sum,
                                            unsigned int* __restrict__ sq, long long h, long long w)
{
	int y = blockIdx.x * blockDim.x + threadIdx.x;
	long long b = blockIdx.z;
	long long stride = w + 1;
	long long plane = (h + 1) * stride;
	if (y > h) {
		return;
	}
	unsigned int* srow = sum + b * plane + (long long)y * stride;
	unsigned int* qrow = sq + b * plane + (long long)y * stride;
	srow[0] = 0;
	qrow[0] = 0;
	if (y == 0) {
		for (long long x = 1; x <= w; x++) {
			srow[x] = 0;
			qrow[x] = 0;
		}
		return;
	}
	const unsigned char* row = img + b * h * w + (long long)(y - 1) * w;
	unsigned int s = 0, q = 0;
	for (long long x = 0; x < w; x++) {
		unsigned int v = row[x];
		s += v;
		q += v * v;
		srow[x + 1] = s;
		qrow[x + 1] = q;
	}
}

extern "C" __global__ void pf_integral_cols(unsigned int* __restrict__ sum, unsigned int* __restrict__ sq,
                                            long long h, long long w)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x;
	long long b = blockIdx.z;
	long long stride = w + 1;
	long long plane = (h + 1) * stride;
	if (x > w) {
		return;
	}
	unsigned int* s = sum + b * plane + x;
	unsigned int* q = sq + b * plane + x;
	for (long long y = 1; y <= h; y++) {
		s[y * stride] += s[(y - 1) * stride];
		q[y * stride] += q[(y - 1) * stride];
	}
}
