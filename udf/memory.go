package udf

import (
	"fmt"
)

// The memory models: bytes per pixel a row takes at its peak on the CPU,
// its decoded image, the kernel's working set and its result together,
// measured as the sidecar's peak resident memory over one row of a
// 1500×1500 and a 4000×4000 image (scripts/mempeak.py; tests/test_memory.py
// checks them against real peaks), the larger, and about 10% more, with
// transparent huge pages "always" (a few MB more than "madvise").
//
// fft_convolve's: the decoded image, the output and a few rows by every
// method; by FFT also the transform's planes and strips and the kernel's
// spectrum (kernels.FFTBytes, bounded whatever the image's size and
// shape: large and thin images go in tiles), and half again for the
// garbage collector's slack.
// Measured by FFT (a 15×15 matrix), less the direct methods' rows: 3 MB
// more at 300² (FFTBytes 2.0 MB), 4 MB at 512² (5.2 MB), none at 1500²
// and 4000².
var convolvePeak = [...]int64{OutputF32: 32, OutputPNG: 14, OutputStats: 10}

const (
	watershedPeak = 32
	rowFixed      = 1 << 20 // a row's fixed cost: plans, buffers' headers, its share of the runtime
)

// blobsPeak: the scale space (three response layers and the image's DCT
// spectrum, measured at 2, 10 and 20 scales), blobsScale, and blobsPeaks
// for the peaks and their pairs, which ask the budget for more when they
// need it (BlobsSpec.Memory). blobsScale holds where each side's
// transform length is the side (1500², 4000²); elsewhere the lengths
// reach past the image, and where the scale space at them
// (blob.ScaleSpaceBytes; for thin and small images many times the image)
// and a fifth more is above blobsScale a pixel, the row is modelled with
// that instead (BlobsSpec.PerPixel). The measured peaks were 1.13 times
// it at 1500², 0.98 at 7×100,000 and 0.8 at 100,000×7 (whose chunk
// buffers are made for 20 lines and filled for 4).
const (
	blobsPeak  = blobsScale + blobsPeaks
	blobsScale = 41
	blobsPeaks = 4
)

// facesPeak: the integral images and the pyramid, and the annotated PNG.
func facesPeak(annotate bool) int64 {
	if annotate {
		return 21
	}
	return 17
}

// FormatBytes writes n in the largest binary unit that keeps it at 1 or
// more, with one decimal: "9.3 GiB", "512.0 KiB", "17 B".
func FormatBytes(n int64) string {
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	f, unit := float64(n)/1024, "KiB"
	for _, u := range []string{"MiB", "GiB", "TiB"} {
		if f < 1024 {
			break
		}
		f, unit = f/1024, u
	}
	return fmt.Sprintf("%.1f %s", f, unit)
}
