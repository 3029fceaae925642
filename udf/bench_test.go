package udf

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/pixelflight/pixelflight/imageio"
)

// BenchmarkConvolvePNG is fft_convolve with the PNG's decoding, in process,
// as the sidecar's decode stage and a CPU lane run a row: the images are
// the PNG files of each folder in $PIXELFLIGHT_BENCH_PNGS (a JSON object,
// name: folder), the params each of $PIXELFLIGHT_BENCH_PARAMS (name:
// params); scripts/convbench.py sets both, beside OpenCV and Pillow+scipy
// decoding the same files. ns/op is per image.
func BenchmarkConvolvePNG(b *testing.B) {
	var folders, params map[string]json.RawMessage
	if json.Unmarshal([]byte(os.Getenv("PIXELFLIGHT_BENCH_PNGS")), &folders) != nil ||
		json.Unmarshal([]byte(os.Getenv("PIXELFLIGHT_BENCH_PARAMS")), &params) != nil {
		b.Skip("set PIXELFLIGHT_BENCH_PNGS and PIXELFLIGHT_BENCH_PARAMS (scripts/convbench.py does)")
	}
	reg := NewRegistry(DefaultLimits(), nil)
	for _, set := range slices.Sorted(maps.Keys(folders)) {
		var dir string
		if err := json.Unmarshal(folders[set], &dir); err != nil {
			b.Fatal(err)
		}
		files, _ := filepath.Glob(filepath.Join(dir, "*.png"))
		var ins []Input
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				b.Fatal(err)
			}
			ins = append(ins, Input{Bytes: data})
		}
		if len(ins) == 0 {
			b.Fatalf("no PNGs in %s", dir)
		}
		for _, name := range slices.Sorted(maps.Keys(params)) {
			task, err := reg.Prepare(Command{Op: "fft_convolve", Params: params[name]})
			if err != nil {
				b.Fatal(err)
			}
			b.Run(set+"/"+name, func(b *testing.B) {
				w, g := NewWorker(), new(imageio.Gray)
				i := 0
				for b.Loop() {
					in := ins[i%len(ins)]
					i++
					if err := task.DecodeInto(in, imageio.Info{}, g); err != nil {
						b.Fatal(err)
					}
					if _, err := task.Compute(w, in, g); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
