package cuda

import (
	"os"
	"regexp"
	"slices"
	"strconv"
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

// TestSeparableConstants: the launch geometry and the longest kernel side
// of the separable passes are the same in Go and in kernels.cu.h, whose
// static shared tiles are sized by them: a block launched wider than its
// tile, or a kernel longer than PF_SEP_MAXK, would read past the tiles on
// a GPU.
func TestSeparableConstants(t *testing.T) {
	b, err := os.ReadFile("gpukernels/kernels.cu.h")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]int{
		"PF_SEP_MAXK": sepMaxTaps, "PF_SEP_RX": sepRowThreads, "PF_SEP_RPER": sepRowPer,
		"PF_SEP_CX": sepColX, "PF_SEP_CY": sepColY, "PF_SEP_CPER": sepColPer,
	} {
		m := regexp.MustCompile(`(?m)^#define ` + name + ` (\d+)$`).FindSubmatch(b)
		if m == nil {
			t.Errorf("no #define %s in kernels.cu.h", name)
			continue
		}
		if got, _ := strconv.Atoi(string(m[1])); got != want {
			t.Errorf("kernels.cu.h: %s %d, Go: %d", name, got, want)
		}
	}
}
