// Package blob implements the detect_blobs kernel: Laplacian-of-Gaussian
// blob detection with the semantics of scikit-image's
// skimage.feature.blob_log, in pure Go.
//
// # What it computes
//
// For an 8-bit grayscale image (scaled to 0..1 as img_as_float does: v*(1/255)):
//
//  1. sigmas = np.linspace(MinSigma, MaxSigma, NumSigma), or np.logspace of
//     their log10s when LogScale is set;
//  2. for each sigma, -gaussian_laplace(image, sigma) * sigma**2 with
//     scipy.ndimage's rules: separable kernels of radius int(4*sigma+0.5),
//     mode 'reflect' (d c b a | a b c d | d c b a), float64 throughout;
//  3. peak_local_max on the (row, col, scale) cube: a point is a peak when
//     it is > Threshold and >= every neighbour in its 3x3x3 box (plateaus
//     give several peaks, a constant cube none); ExcludeBorder drops peaks in
//     the first/last row and column (blob_log(exclude_border=1); blob_log
//     itself refuses exclude_border=True);
//  4. peaks sorted by response, highest first, and pruned as _prune_blobs
//     does: for each pair whose disk overlap (radius sigma*sqrt(2)) exceeds
//     Overlap, the blob with the smaller sigma is dropped.
//
// Results are the blobs blob_log returns, in the same order: Y (row), X
// (column) and the Sigma of the detecting scale; the blob radius is about
// sqrt(2)*Sigma.
//
// # Agreement with scikit-image
//
// testdata/blob_log_ref.json holds blob_log's output (scikit-image 0.25.2,
// scipy 1.16.3) for coins, a Hubble crop and generated blobs under three
// parameter sets; the tests expect >= 95% matched and <= 5% extra and log the
// exact figures (currently 100% identical, same order). Regenerate it with
//
//	.venv/bin/python scripts/blobref.py
//
// Two details matter for exact agreement:
//
//   - Small kernels (radius < 24) sum in scipy's own order, so responses are
//     bit-identical; larger ones use a 2D DCT of the reflect-extended image
//     and differ by ~1e-15 absolute (responses are ~0.01 to 1), which only
//     changes a result when two neighbouring responses tie to the last bits.
//   - _prune_blobs visits overlapping pairs in the iteration order of the
//     Python set that cKDTree.query_pairs returns, and the result depends on
//     that order on crowded images (coins at threshold 0.05 keeps 353 blobs
//     in set order, 326 to 398 in other orders). The package replays
//     CPython's set table (tuple hash, probing, resizes) to get the same
//     order; it assumes CPython 3.8+ on a 64-bit machine.
//
// threshold_rel and per-axis sigmas are not supported.
//
// # Vector code
//
// Built with GOEXPERIMENT=simd, on a CPU with AVX2, the transforms' passes,
// the filter, the loops that reorder lines around the transforms, the
// direct sums and the peak search run 4 float64 values at a time
// (fftpass_simd.go; without them every loop runs its scalar version).
// They do the scalar code's operations in the same order, every product
// rounded before its sum (no fused multiply-add, which the compiler does
// not use in the scalar code either at the default GOAMD64=v1), so the
// responses, and the blobs, are the same bit for bit with or without them
// (TestVectorMatchesScalar).
//
// # Operations
//
// A Detector keeps its scratch buffers between calls: three rolling
// float64 response layers (3*8*h*w bytes), the 2r+1 image rows a direct
// scale reads (it converts the 8-bit image a row at a time, so it keeps no
// float64 copy of it), FFT plans, and, once a radius reaches 24, the image
// spectrum, 8*My*Mx bytes (Mx, My: the DCT lengths, about 1.02 times the
// sides for large images), and the current scale's filter (about 32*My +
// 16*Mx bytes); the transform's intermediate rows live in the layer being
// computed, which has room for h*Mx. So about 33 bytes per pixel, plus the
// peaks and their pairs, which Memory bounds. After the first call of a
// given size Detect allocates only its result (and, on a busy image, its
// peaks). A Detector is not safe for concurrent use: keep one per worker
// goroutine. Detect is single-threaded on purpose (the server runs one
// image per core).
//
// Cost grows with the image size and with NumSigma; large sigmas cost about
// as much as small ones thanks to the transform path. Reflect extension
// followed by a circular convolution with an even kernel is diagonal in the
// DCT-II basis, so each axis is extended by reflection to M (>= n + max
// radius, or a multiple of n, where reflection is periodic; M a 2^a·3^b·5^c
// size), the image is DCT-transformed once per Detect, and each large scale
// costs one filtered inverse 2D DCT: a real, even filter on real
// coefficients, computed with complex FFTs of length M that each carry two
// lines (Makhoul's reordering): for coins, 192 transforms of 512 and 152 of
// 384 per scale, about half of Detect's time with the vector code.
// BenchmarkDetect/coins (303x384, default params) measures it; compare
// with
//
//	.venv/bin/python scripts/blobref.py --bench
//
// Errors: Params.Validate's messages name the blob_log parameter
// ("min_sigma 0: want > 0 ..."); Detect wraps them and ErrSize with %w.
package blob
