package cuda

// kernelNames are the entry points of gpukernels/kernels.cu.h that Open
// looks up (TestKernelNames keeps this list, the source and the
// emulator's table the same).
var kernelNames = []string{"pf_pack", "pf_mul", "pf_crop_f32", "pf_crop_u8", "pf_stats", "pf_integral_rows", "pf_integral_cols",
	"pf_resize", "pf_tilted_a", "pf_tilted_b", "pf_haar_stage0", "pf_haar_scan",
	"pf_blob_y", "pf_blob_x", "pf_blob_first", "pf_blob_peaks",
	"pf_sep_rows", "pf_sep_cols"}
