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
// thread per output column). detect_faces runs them per pyramid level
// (the tilted integral in between, from the row sums: pf_tilted_a/b).
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

// ---------------------------------------------------------------------
// detect_faces: OpenCV's detectMultiScale (kernels/haar) on the GPU.
//
// Per pyramid level, for a batch of images of one shape: pf_resize
// (INTER_LINEAR_EXACT, integer arithmetic, bit exact), pf_integral_rows
// (row prefix sums), pf_tilted_a and pf_tilted_b (the 45° integral from
// the row prefix sums, when the cascade has tilted features), then
// pf_integral_cols (the columns: the integral and squared integral),
// pf_haar_stage0 (variance normalisation and the first stage, every
// window) and pf_haar_scan (the rest of the cascade for the windows the
// CPU evaluates, hits appended to a list). Grouping stays on the host.
//
// Every sum wraps modulo 2^32 as the CPU's int32/uint32 do (unsigned
// arithmetic here, read back as int), and the float32/float64 arithmetic
// of a window is the CPU's, operation for operation, with the _rn
// intrinsics so that no multiply-add is fused (a fused one rounds once,
// not twice, and a threshold may then fall the other way).

// pf_resize resizes a batch of sw×sh images to dw×dh exactly as
// kernels/haar's resizer (OpenCV's INTER_LINEAR_EXACT on 8 bits): tab
// holds xofs[dw], xc1[dw], yofs[dh], yc1[dh] (int32) from
// haar.ResizeAxis, lohi the two axes' lo and hi.
__device__ __forceinline__ unsigned int pf_hline(const unsigned char* row, const int* xofs, const int* xc1, int x,
                                                 long long xlo, long long xhi, long long sw)
{
	if (x < xlo) {
		return (unsigned int)row[0] << 8;
	}
	if (x >= xhi) {
		return (unsigned int)row[sw - 1] << 8;
	}
	int o = xofs[x];
	unsigned int c1 = (unsigned int)xc1[x];
	return (256u - c1) * (unsigned int)row[o] + c1 * (unsigned int)row[o + 1];
}

extern "C" __global__ void pf_resize(const unsigned char* __restrict__ src, unsigned char* __restrict__ dst,
                                     const int* __restrict__ tab, long long sw, long long sh, long long dw,
                                     long long dh, long long xlo, long long xhi, long long ylo, long long yhi)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x;
	int y = blockIdx.y;
	long long b = blockIdx.z;
	if (x >= dw || y >= dh) {
		return;
	}
	const int* xofs = tab;
	const int* xc1 = tab + dw;
	const int* yofs = tab + 2 * dw;
	const int* yc1 = tab + 2 * dw + dh;
	const unsigned char* img = src + b * sw * sh;
	unsigned char v;
	if (y < ylo || y >= yhi) {
		long long sy = y < ylo ? 0 : sh - 1;
		v = (unsigned char)((pf_hline(img + sy * sw, xofs, xc1, x, xlo, xhi, sw) + 128u) >> 8);
	} else {
		long long sy = yofs[y];
		unsigned int r0 = pf_hline(img + sy * sw, xofs, xc1, x, xlo, xhi, sw);
		unsigned int r1 = pf_hline(img + (sy + 1) * sw, xofs, xc1, x, xlo, xhi, sw);
		unsigned int c1 = (unsigned int)yc1[y];
		v = (unsigned char)((r0 * (256u - c1) + r1 * c1 + (1u << 15)) >> 16);
	}
	dst[b * dw * dh + (long long)y * dw + x] = v;
}

// pf_tilted_a and pf_tilted_b build the tilted integral of a batch of
// h×w images from their row prefix sums (pf_integral_rows' sum, before
// pf_integral_cols): with P_r(k) the sum of image row r's first k pixels,
// the CPU's recurrence
//   tilt[y][x] = sum over pixels (c, r), r < y, |c - x + 1| <= y - r - 1
// is A - B with
//   A(x, y) = sum_{r<y} P_r(clamp(x + y - 1 - r, 0, w)), constant along
//             an anti-diagonal but for one term: A(x,y) = A(x+1,y-1) + P_{y-1}(clamp(x))
//   B(x, y) = sum_{r<y} P_r(clamp(x - y + r, 0, w)):
//             B(x,y) = B(x-1,y-1) + P_{y-1}(clamp(x-1)).
// So one thread walks each diagonal (w+h+1 of each kind per image), no
// thread waits for another: pf_tilted_a writes A, pf_tilted_b subtracts
// B. Modulo 2^32, as the CPU's int32.
extern "C" __global__ void pf_tilted_a(const unsigned int* __restrict__ pref, unsigned int* __restrict__ tilt,
                                       long long h, long long w)
{
	long long d = (long long)blockIdx.x * blockDim.x + threadIdx.x; // x + y
	long long b = blockIdx.z;
	if (d > w + h) {
		return;
	}
	long long stride = w + 1;
	const unsigned int* p = pref + b * (h + 1) * stride;
	unsigned int* t = tilt + b * (h + 1) * stride;
	unsigned int a = 0;
	for (long long y = 0; y <= h; y++) {
		long long x = d - y;
		if (y > 0) {
			long long k = x < 0 ? 0 : (x > w ? w : x);
			a += p[y * stride + k];
		}
		if (x >= 0 && x <= w) {
			t[y * stride + x] = a;
		}
	}
}

extern "C" __global__ void pf_tilted_b(const unsigned int* __restrict__ pref, unsigned int* __restrict__ tilt,
                                       long long h, long long w)
{
	long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x - h; // x - y
	long long b = blockIdx.z;
	if (e > w) {
		return;
	}
	long long stride = w + 1;
	const unsigned int* p = pref + b * (h + 1) * stride;
	unsigned int* t = tilt + b * (h + 1) * stride;
	unsigned int s = 0;
	for (long long y = 0; y <= h; y++) {
		long long x = e + y;
		if (y > 0) {
			long long k = x - 1 < 0 ? 0 : (x - 1 > w ? w : x - 1);
			s += p[y * stride + k];
		}
		if (x >= 0 && x <= w) {
			t[y * stride + x] -= s;
		}
	}
}

// The cascade, flattened by cuda/haar.go into an int32 array ci and a
// float32 array cf. ci begins with a header (PF_H_*); then, per feature,
// PF_FEAT ints: three rectangles' four corners as (dx, dy) pairs from
// the window's corner (all zero for an unused rectangle) and 1 if it is
// tilted; per node: feature, left, right; per tree: first node, first
// leaf; per stage: its number of trees. cf: per feature its three
// weights; per node its threshold; per stage its threshold; the leaves.
#define PF_H_STAGES 0
#define PF_H_FEAT 1
#define PF_H_NODE 2
#define PF_H_TREE 3
#define PF_H_STAGE 4
#define PF_H_FW 5
#define PF_H_NTHR 6
#define PF_H_STHR 7
#define PF_H_LEAF 8
#define PF_H_W 9
#define PF_H_H 10
#define PF_FEAT 25

// pf_rect is a rectangle's sum at the window whose corner is element p of
// an integral image s with rows stride apart; c its corners (dx, dy).
__device__ __forceinline__ int pf_rect(const unsigned int* s, long long p, const int* c, long long stride)
{
	unsigned int v = s[p + c[0] + stride * c[1]] - s[p + c[2] + stride * c[3]] - s[p + c[4] + stride * c[5]] +
	                 s[p + c[6] + stride * c[7]];
	return (int)v;
}

// pf_stages runs stages [from, to) of the cascade on the window at p with
// variance normalisation vnf, as haar's program.run: 1 if all pass, else
// minus the index of the stage that rejects the window. (Stumps are trees
// of one node; the arithmetic is the same.)
__device__ int pf_stages(const int* ci, const float* cf, const unsigned int* sum, const unsigned int* tilt,
                         long long p, long long stride, float vnf, int from, int to)
{
	const int* feat = ci + ci[PF_H_FEAT];
	const int* node = ci + ci[PF_H_NODE];
	const int* tree = ci + ci[PF_H_TREE];
	const int* stage = ci + ci[PF_H_STAGE];
	const float* fw = cf + ci[PF_H_FW];
	const float* nthr = cf + ci[PF_H_NTHR];
	const float* sthr = cf + ci[PF_H_STHR];
	const float* leaf = cf + ci[PF_H_LEAF];
	int k = 0;
	for (int si = 0; si < from; si++) {
		k += stage[si];
	}
	for (int si = from; si < to; si++) {
		double acc = 0.0;
		int nt = stage[si];
		for (int i = 0; i < nt; i++) {
			const int* t = tree + 2 * (k + i);
			int n0 = t[0];
			int idx = 0;
			for (;;) {
				const int* nd = node + 3 * (n0 + idx);
				int f = nd[0];
				const int* fe = feat + PF_FEAT * f;
				const float* w = fw + 3 * f;
				const unsigned int* s = fe[24] ? tilt : sum;
				float v = __fadd_rn(__fmul_rn(w[0], (float)pf_rect(s, p, fe, stride)),
				                    __fmul_rn(w[1], (float)pf_rect(s, p, fe + 8, stride)));
				if (w[2] != 0.0f) {
					v = __fadd_rn(v, __fmul_rn(w[2], (float)pf_rect(s, p, fe + 16, stride)));
				}
				idx = __fmul_rn(v, vnf) >= nthr[n0 + idx] ? nd[2] : nd[1];
				if (idx <= 0) {
					break;
				}
			}
			acc = __dadd_rn(acc, (double)leaf[t[1] - idx]);
		}
		if (acc < (double)sthr[si]) {
			return -si;
		}
		k += nt;
	}
	return 1;
}

// pf_window is the variance normalisation of the window at p (haar's
// scan): false where the window is rejected before any stage.
__device__ __forceinline__ bool pf_window(const int* ci, const unsigned int* sum, const unsigned int* sq,
                                          long long p, long long stride, float* vnf)
{
	int W = ci[PF_H_W], H = ci[PF_H_H];
	int c[8] = {1, 1, W - 1, 1, 1, H - 1, W - 1, H - 1};
	int vs = pf_rect(sum, p, c, stride);
	unsigned int vq = (unsigned int)pf_rect(sq, p, c, stride);
	double area = (double)((W - 2) * (H - 2));
	double nf = __dsub_rn(__dmul_rn(area, (double)vq), __dmul_rn((double)vs, (double)vs));
	if (!(nf > 0.0)) {
		return false;
	}
	float r = (float)__ddiv_rn(1.0, __dsqrt_rn(nf));
	if (!(__dmul_rn(area, (double)r) < 0.1)) {
		return false;
	}
	*vnf = r;
	return true;
}

// pf_haar_stage0 evaluates every window of one level (thread (kx, ky) of
// image z: the window at kx·step, ky·step; nx×ny windows) up to the first
// stage: status 0 when the variance check rejects it, 1 when the first
// stage does, 2 when it passes.
extern "C" __global__ void pf_haar_stage0(const unsigned int* __restrict__ sum, const unsigned int* __restrict__ sq,
                                          const unsigned int* __restrict__ tilt, unsigned char* __restrict__ status,
                                          const int* __restrict__ ci, const float* __restrict__ cf, long long h,
                                          long long w, long long nx, long long ny, long long step)
{
	int kx = blockIdx.x * blockDim.x + threadIdx.x;
	int ky = blockIdx.y;
	long long b = blockIdx.z;
	if (kx >= nx || ky >= ny) {
		return;
	}
	long long stride = w + 1;
	long long plane = b * (h + 1) * stride;
	long long p = (long long)ky * step * stride + (long long)kx * step;
	float vnf = 0.0f;
	unsigned char st = 0;
	if (pf_window(ci, sum + plane, sq + plane, p, stride, &vnf)) {
		st = pf_stages(ci, cf, sum + plane, tilt + plane, p, stride, vnf, 0, 1) == 0 ? 1 : 2;
	}
	status[b * nx * ny + (long long)ky * nx + kx] = st;
}

// pf_haar_scan finishes the windows of one level that the CPU evaluates
// and that passed the first stage. The CPU walks a row of windows in
// order and skips the window after one the first stage rejected; so a
// window is evaluated when the run of such rejections just before it
// (status 1) has even length. A window that passes every stage is
// appended to hits as (image, level, y, x) under the atomic counter
// count (the list has room for every window: no hit is lost; the host
// sorts them back into the CPU's order).
extern "C" __global__ void pf_haar_scan(const unsigned int* __restrict__ sum, const unsigned int* __restrict__ sq,
                                        const unsigned int* __restrict__ tilt, const unsigned char* __restrict__ status,
                                        const int* __restrict__ ci, const float* __restrict__ cf,
                                        unsigned int* __restrict__ hits, unsigned int* __restrict__ count,
                                        long long h, long long w, long long nx, long long ny, long long step,
                                        long long level)
{
	int kx = blockIdx.x * blockDim.x + threadIdx.x;
	int ky = blockIdx.y;
	long long b = blockIdx.z;
	if (kx >= nx || ky >= ny) {
		return;
	}
	const unsigned char* row = status + b * nx * ny + (long long)ky * nx;
	if (row[kx] != 2) {
		return;
	}
	int j = kx - 1;
	while (j >= 0 && row[j] == 1) {
		j--;
	}
	if ((kx - 1 - j) % 2 != 0) {
		return; // skipped: the window before was evaluated and rejected by the first stage
	}
	long long stride = w + 1;
	long long plane = b * (h + 1) * stride;
	long long p = (long long)ky * step * stride + (long long)kx * step;
	float vnf = 0.0f;
	if (!pf_window(ci, sum + plane, sq + plane, p, stride, &vnf)) {
		return; // cannot happen: status 2 passed it
	}
	if (pf_stages(ci, cf, sum + plane, tilt + plane, p, stride, vnf, 1, ci[PF_H_STAGES]) <= 0) {
		return;
	}
	unsigned int i = atomicAdd(count, 1u);
	unsigned int* o = hits + 4 * (long long)i;
	o[0] = (unsigned int)b;
	o[1] = (unsigned int)level;
	o[2] = (unsigned int)(ky * step);
	o[3] = (unsigned int)(kx * step);
}

// ---- detect_blobs: the LoG scale space and its 3×3×3 maxima ----
//
// One scale at a time, as package blob's direct path: pf_blob_y sums the
// Gaussian (k0) and its second derivative (k2) along y from the 8-bit
// pixels (v/255), pf_blob_x along x, giving -sigma²·LoG; pf_blob_peaks
// then classifies layer k once k+1 exists. Every sum is in the CPU's
// order, each product and sum rounded (_rn: no fused multiply-add), so a
// scale the CPU sums directly (blob.Scale.Exact) comes out bit for bit;
// for the others the CPU filters in the DCT domain, and tol[k] bounds the
// difference. Lines shorter than the kernel reflect again (period 2n),
// as scipy's 'reflect' mode.

__device__ __forceinline__ long long pf_reflect(long long i, long long n)
{
	long long m = 2 * n;
	i %= m;
	if (i < 0) {
		i += m;
	}
	if (i >= n) {
		i = m - 1 - i;
	}
	return i;
}

// pf_blob_y: a = k2 along y, b = k0 along y, of image b's pixels / 255;
// k0 and k2 hold the weights at offsets 0..r.
extern "C" __global__ void pf_blob_y(const unsigned char* __restrict__ pix, double* __restrict__ a,
                                     double* __restrict__ bo, const double* __restrict__ k0,
                                     const double* __restrict__ k2, long long h, long long w, long long r)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x;
	int y = blockIdx.y;
	long long b = blockIdx.z;
	if (x >= w || y >= h) {
		return;
	}
	const double inv = 1.0 / 255; // img_as_float
	const unsigned char* img = pix + b * h * w + x;
	double v = __dmul_rn((double)img[(long long)y * w], inv);
	double s2 = __dmul_rn(v, k2[0]), s0 = __dmul_rn(v, k0[0]);
	for (long long j = r; j >= 1; j--) {
		double u = __dadd_rn(__dmul_rn((double)img[pf_reflect(y - j, h) * w], inv),
		                     __dmul_rn((double)img[pf_reflect(y + j, h) * w], inv));
		s2 = __dadd_rn(s2, __dmul_rn(u, k2[j]));
		s0 = __dadd_rn(s0, __dmul_rn(u, k0[j]));
	}
	long long o = b * h * w + (long long)y * w + x;
	a[o] = s2;
	bo[o] = s0;
}

// pf_blob_x: out = -(k0 along x of a + k2 along x of b) · s2.
extern "C" __global__ void pf_blob_x(const double* __restrict__ a, const double* __restrict__ bi,
                                     double* __restrict__ out, const double* __restrict__ k0,
                                     const double* __restrict__ k2, long long h, long long w, long long r,
                                     double s2)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x;
	int y = blockIdx.y;
	long long b = blockIdx.z;
	if (x >= w || y >= h) {
		return;
	}
	long long row = b * h * w + (long long)y * w;
	const double* ar = a + row;
	const double* br = bi + row;
	double t1 = __dmul_rn(ar[x], k0[0]), t2 = __dmul_rn(br[x], k2[0]);
	for (long long j = r; j >= 1; j--) {
		long long m = pf_reflect(x - j, w), p = pf_reflect(x + j, w);
		t1 = __dadd_rn(t1, __dmul_rn(__dadd_rn(ar[m], ar[p]), k0[j]));
		t2 = __dadd_rn(t2, __dmul_rn(__dadd_rn(br[m], br[p]), k2[j]));
	}
	out[row + x] = __dmul_rn(-__dadd_rn(t1, t2), s2);
}

// pf_blob_first keeps each image's first response of scale 0: blob_log
// finds no peak in a cube that is constant.
extern "C" __global__ void pf_blob_first(const double* __restrict__ layer0, double* __restrict__ first,
                                         long long h, long long w)
{
	long long b = blockIdx.z;
	if (threadIdx.x == 0) {
		first[b] = layer0[b * h * w];
	}
}

// A peak pf_blob_peaks found: response v at (y, x) of scale k.
struct pf_blob_hit {
	double v;
	int y, x, k, pad;
};

// Per image, pf_blob_peaks' counters: hits found; varied (some response
// certainly differs from the first); unsure (a decision lay within the
// tolerance); full (more hits than the list holds).
#define PF_BLOB_WORDS 4

// pf_blob_peaks classifies every point of scale k (layers prev, cur,
// next: scales k-1, k, k+1; prev == cur at k = 0, next == cur at the
// last) as the CPU's peak_local_max would on the exact responses, which
// lie within tol of these: a peak is > thr and >= its 26 neighbours
// (those in the cube). Where the margins are 0 (exact scales) the
// comparisons are the CPU's; where a decision lies within the tolerance,
// the image is marked unsure (the host redoes it on the CPU). Peaks go to
// the image's list of cap hits; the count may pass cap (the host redoes
// that image too).
extern "C" __global__ void pf_blob_peaks(const double* __restrict__ prev, const double* __restrict__ cur,
                                         const double* __restrict__ next, const double* __restrict__ first,
                                         const double* __restrict__ tol, unsigned int* __restrict__ counters,
                                         pf_blob_hit* __restrict__ hits, long long h, long long w, long long k,
                                         long long ns, long long cap, long long border, double thr)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x;
	int y = blockIdx.y;
	long long b = blockIdx.z;
	if (x >= w || y >= h) {
		return;
	}
	long long plane = h * w, o = b * plane;
	double v = cur[o + (long long)y * w + x];
	// Tolerances doubled: a margin also covers the rounding of the
	// comparison's own sums (nothing where the tolerance is 0).
	double e = 2 * tol[k];
	unsigned int* cnt = counters + b * PF_BLOB_WORDS;
	double f = first[b];
	if (v != f && (v - f > e + 2 * tol[0] || f - v > e + 2 * tol[0])) {
		cnt[1] = 1u;
	}
	if (y < border || x < border || y >= h - border || x >= w - border) {
		return;
	}
	if (v <= thr - e) {
		return; // certainly not above the threshold
	}
	bool unsure = !(v > thr + e);
	for (long long dk = -1; dk <= 1; dk++) {
		if (k + dk < 0 || k + dk >= ns) {
			continue;
		}
		const double* l = dk < 0 ? prev : (dk > 0 ? next : cur);
		double eu = e + 2 * tol[k + dk];
		for (int yy = y > 0 ? y - 1 : 0; yy <= y + 1 && yy < h; yy++) {
			for (int xx = x > 0 ? x - 1 : 0; xx <= x + 1 && xx < w; xx++) {
				if (dk == 0 && yy == y && xx == x) {
					continue;
				}
				double u = l[o + (long long)yy * w + xx];
				if (u > v + eu) {
					return; // a neighbour certainly above: no peak
				}
				if (!(u <= v - eu)) {
					unsure = true;
				}
			}
		}
	}
	if (unsure) {
		cnt[2] = 1u;
		return;
	}
	unsigned int i = atomicAdd(cnt, 1u);
	if (i >= cap) {
		cnt[3] = 1u; // the list is full (the count itself may wrap)
	} else {
		pf_blob_hit hit;
		hit.v = v;
		hit.y = y;
		hit.x = x;
		hit.k = (int)k;
		hit.pad = 0;
		hits[b * cap + i] = hit;
	}
}

// ---- fft_convolve by two 1-D passes: a rank-1 kernel (Col·Row) ----
//
// What kernels' Separable method computes on the CPU, for the small
// separable kernels cuda/separable.go sends here instead of cuFFT. For a
// batch of h×w 8-bit images and an oh×ow output, with R = oh+kh-1
// extended rows and U = ow+kw-1 extended columns:
//   pf_sep_rows: mid[r][x] = sum_j row[j]·E(r, x+kw-1-j), r < R, x < ow
//   pf_sep_cols: out[y][x] = sum_i col[i]·mid[y+kh-1-i][x], y < oh
// where E(r, u) is image pixel (rsrc[r], csrc[u]), or 0 where either is
// -1: the host's tables give the mode (which extended row and column come
// first) and the boundary (zero, reflect, wrap) as pf_pack's do. Both
// sums run over ascending input positions, as the CPU's. The taps (kh, kw
// <= PF_SEP_MAXK, float32) are in global memory, copied to shared memory
// per block; so is each block's tile of the input, widened to float32
// once and read kw (or kh) times from there. The output is packed oh×ow
// float32, which pf_crop_u8 and pf_stats read as a transform of nh = oh,
// nw = ow at offset 0.

#ifndef PF_SEP_MAXK
#define PF_SEP_MAXK 64
#endif
// pf_sep_rows: blocks of PF_SEP_RX threads, each thread PF_SEP_RPER
// outputs PF_SEP_RX apart (a tile of PF_SEP_RX·PF_SEP_RPER columns of one
// extended row); grid (ceil(ow / tile), R, batch).
#define PF_SEP_RX 128
#define PF_SEP_RPER 4
// pf_sep_cols: blocks of PF_SEP_CX×PF_SEP_CY threads, each thread
// PF_SEP_CPER outputs PF_SEP_CY rows apart (a tile of PF_SEP_CX columns ×
// PF_SEP_CY·PF_SEP_CPER rows); grid (ceil(ow / PF_SEP_CX),
// ceil(oh / (PF_SEP_CY·PF_SEP_CPER)), batch).
#define PF_SEP_CX 32
#define PF_SEP_CY 8
#define PF_SEP_CPER 4

extern "C" __global__ void pf_sep_rows(const unsigned char* __restrict__ img, float* __restrict__ mid,
                                       const int* __restrict__ rsrc, const int* __restrict__ csrc,
                                       const float* __restrict__ taps, long long h, long long w,
                                       long long rows, long long ow, long long kw)
{
	__shared__ float s_tap[PF_SEP_MAXK];
	__shared__ float s_in[PF_SEP_RX * PF_SEP_RPER + PF_SEP_MAXK - 1];
	int t = threadIdx.x;
	long long x0 = (long long)blockIdx.x * (PF_SEP_RX * PF_SEP_RPER);
	long long r = blockIdx.y;
	long long b = blockIdx.z;
	if (kw > PF_SEP_MAXK || r >= rows) {
		return; // the host never launches these
	}
	for (int j = t; j < kw; j += PF_SEP_RX) {
		s_tap[j] = taps[kw - 1 - j]; // reversed: tap j multiplies input x+j
	}
	long long sy = rsrc[r]; // -1: a row of zeros
	const unsigned char* row = img + b * h * w + (sy >= 0 ? sy : 0) * w;
	long long u1 = ow + kw - 1; // extended columns
	for (int i = t; i < PF_SEP_RX * PF_SEP_RPER + kw - 1; i += PF_SEP_RX) {
		long long u = x0 + i;
		float v = 0.0f;
		if (sy >= 0 && u < u1) {
			int sx = csrc[u];
			if (sx >= 0) {
				v = (float)row[sx];
			}
		}
		s_in[i] = v;
	}
	__syncthreads();
	// Each tap read once for the thread's outputs (past ow too: the tile
	// has room for them; they are not stored).
	float acc[PF_SEP_RPER];
	for (int k = 0; k < PF_SEP_RPER; k++) {
		acc[k] = 0.0f;
	}
	for (int j = 0; j < kw; j++) {
		float c = s_tap[j];
		for (int k = 0; k < PF_SEP_RPER; k++) {
			acc[k] += c * s_in[t + k * PF_SEP_RX + j];
		}
	}
	float* out = mid + (b * rows + r) * ow;
	for (int k = 0; k < PF_SEP_RPER; k++) {
		long long x = x0 + t + k * PF_SEP_RX;
		if (x < ow) {
			out[x] = acc[k];
		}
	}
}

extern "C" __global__ void pf_sep_cols(const float* __restrict__ mid, float* __restrict__ out,
                                       const float* __restrict__ taps, long long rows, long long oh,
                                       long long ow, long long kh)
{
	__shared__ float s_tap[PF_SEP_MAXK];
	__shared__ float s_in[(PF_SEP_CY * PF_SEP_CPER + PF_SEP_MAXK - 1) * PF_SEP_CX];
	int tx = threadIdx.x, ty = threadIdx.y;
	int t = ty * PF_SEP_CX + tx;
	long long x0 = (long long)blockIdx.x * PF_SEP_CX;
	long long y0 = (long long)blockIdx.y * (PF_SEP_CY * PF_SEP_CPER);
	long long b = blockIdx.z;
	if (kh > PF_SEP_MAXK) {
		return; // the host never launches this
	}
	for (int i = t; i < kh; i += PF_SEP_CX * PF_SEP_CY) {
		s_tap[i] = taps[kh - 1 - i]; // reversed: tap i multiplies input row y+i
	}
	const float* in = mid + b * rows * ow;
	int n = (PF_SEP_CY * PF_SEP_CPER + (int)kh - 1) * PF_SEP_CX;
	for (int i = t; i < n; i += PF_SEP_CX * PF_SEP_CY) {
		long long r = y0 + i / PF_SEP_CX, x = x0 + i % PF_SEP_CX;
		s_in[i] = r < rows && x < ow ? in[r * ow + x] : 0.0f;
	}
	__syncthreads();
	long long x = x0 + tx;
	if (x >= ow) {
		return;
	}
	float acc[PF_SEP_CPER];
	for (int k = 0; k < PF_SEP_CPER; k++) {
		acc[k] = 0.0f;
	}
	for (int i = 0; i < kh; i++) {
		float c = s_tap[i];
		for (int k = 0; k < PF_SEP_CPER; k++) {
			acc[k] += c * s_in[(ty + k * PF_SEP_CY + i) * PF_SEP_CX + tx];
		}
	}
	for (int k = 0; k < PF_SEP_CPER; k++) {
		long long y = y0 + ty + k * PF_SEP_CY;
		if (y < oh) {
			out[(b * oh + y) * ow + x] = acc[k];
		}
	}
}
