package cuda

import (
	"os"
	"regexp"
	"slices"
	"testing"
)

// TestKernelNames: every kernel of kernels.cu.h is one Open loads on a GPU
// (kernelNames) and one the emulator runs (emu.cc), and no other: a kernel
// missing from Open's list would fail its first launch on a GPU and take
// the backend out of service, while the emulator, with its own table,
// would never notice.
func TestKernelNames(t *testing.T) {
	names := func(file, pattern string) []string {
		t.Helper()
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range regexp.MustCompile(pattern).FindAllStringSubmatch(string(b), -1) {
			out = append(out, m[1])
		}
		slices.Sort(out)
		return out
	}
	src := names("gpukernels/kernels.cu.h", `extern "C" __global__ void (\w+)\(`)
	emu := names("gpukernels/emu.cc", `PF_KERNEL\((pf_\w+),`)
	open := slices.Sorted(slices.Values(kernelNames))
	if len(src) == 0 || !slices.Equal(src, open) || !slices.Equal(src, emu) {
		t.Fatalf("kernels in kernels.cu.h %v\nOpen loads %v\nthe emulator runs %v", src, open, emu)
	}
}
