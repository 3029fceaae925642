// Package watershed splits touching objects in an 8-bit grayscale image with
// the classic distance-transform watershed, giving the same labels as this
// scikit-image pipeline (numpy 2.3, scipy 1.16, scikit-image 0.25):
//
//	t = threshold_otsu(img) if threshold < 0 else threshold
//	fg = img > t
//	dist = scipy.ndimage.distance_transform_edt(fg)
//	coords = peak_local_max(dist, min_distance=md, labels=fg.astype(int))
//	markers[coords] = 1..len(coords)
//	labels = watershed(-dist, markers, mask=fg)
//
// # Using it
//
// Create one Segmenter per worker goroutine (NewSegmenter) and call Segment
// for each image; its scratch buffers grow to the largest image seen and are
// kept, so steady-state calls do not allocate (pass a labels slice of
// h*w to reuse it too). A Segmenter must not be shared between goroutines.
// Params come from DefaultParams (Otsu threshold, MinDistance 5); Segment
// validates them and the image size and returns wrapped errors.
//
// # What comes back
//
// labels[i] is 0 for background and 1..segments for the segments, numbered
// as peak_local_max lists the peaks: highest distance first, raster order
// among equals. segments is the number of peaks. Foreground that no peak
// reaches stays 0, as in skimage: peaks must lie at least MinDistance from
// the image border, so a small object hugging the border can be left out.
//
// # Stages
//
//   - Threshold: Otsu on the 256-value histogram, in skimage's arithmetic
//     (one bin per value from min to max; the first maximum wins). A constant
//     image returns its value, so everything is background.
//   - Distance: exact squared Euclidean distances: a column scan straight
//     from the pixels (which also leaves one bit per foreground pixel for
//     the later stages), then along each row the least (q-p)² + g[p]² over
//     the column distances g. In the vector build the row pass tries
//     offsets 1, 2, ... until their square passes the best so far, 16
//     pixels at a time; rows with a pixel more than 128 from the
//     background, and every row of the portable build, take the
//     Felzenszwalb–Huttenlocher envelope in integer arithmetic on each run
//     of foreground between background pixels. Both give the one least
//     value. The distances are integers, so sqrt of them equals scipy's
//     floats bit for bit. The rest of the pipeline works on the integers,
//     which order exactly like the floats. An image with no background
//     measures from (-1, 0), as scipy.
//   - Peaks: peak_local_max with one label, as skimage does it: the
//     foreground's bounding box inside the MinDistance border, the maxima
//     of the (2·MinDistance+1)² window (edges replicated) among the 3x3
//     maxima (found row by row, in vectors where they run; tested one by
//     one; when there are many, through a separable maximum filter), the
//     "trivial image" fallback, sort, then greedy Chebyshev spacing.
//   - Flood: skimage's priority flood on -dist, 4-connected, ties broken by
//     push order. A bucket queue (one FIFO per squared distance, laid out
//     by a histogram) reproduces it exactly while no two pending markers in
//     one foreground component share a distance (components from the rows'
//     runs of foreground, joined where runs of neighbouring rows overlap).
//     Where some do, a step-for-step copy of skimage's binary heap (which
//     orders tied markers by its layout) runs until the lowest such tie is
//     popped, and hands the rest to the bucket queue.
//
// # Vectors
//
// Built with GOEXPERIMENT=simd on amd64, the row loops (column scan, row
// pass, 3x3 maxima, the flood's states and the labels) run 8 or 16 wide
// with AVX2 when the CPU has it (vec_simd.go); otherwise, and in the
// portable build, their scalar versions in rows.go run (vec_generic.go).
// The tests check each vector loop against its scalar version, and both
// builds against the same references; the labels are the same.
//
// # Checking it
//
// scripts/watershedref.py runs the Python pipeline on generated discs and
// skimage.data.coins() and writes testdata/watershed_ref.json; the tests
// compare Otsu thresholds, distances, peaks, segment counts and labels
// (all exact on the stored cases) and the benchmark runs on the same 512x512
// discs image the script times, and on scripts/bench.py's discs
// (testdata/bench_discs_512.zlib). Regenerate after upgrading scikit-image:
// its flood has changed between releases (0.25 raises a pushed value to the
// popped one; older releases did not), and such changes move labels on
// plateaus.
//
// # Cost
//
// Linear in pixels for the threshold, distances and peaks (the brute-force
// row pass stops after at most 64 steps per 16 pixels); the flood is linear
// with the bucket queue and n·log n for what the heap pops. On one core
// (BENCHMARKS.md, 2026-11-28), vector build: about 0.8 ms for
// scripts/bench.py's 512x512 discs (the benchmark's bench-discs-512), whose
// whole call through the sidecar, label PNG included, takes 2–3 ms
// against about 22–25 ms for scikit-image; about 1.8 ms for the benchmark's
// discs-512, and about 2.1 ms for coins (tied markers in one component, so
// mostly heap, whose pops are half of it). The portable build takes about
// 2.1, 3.4 and 3.0 ms (the envelope on every row).
package watershed
