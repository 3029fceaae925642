package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/pixelflight/pixelflight/gpu"
)

// runDiscover is `pixelflight discover` as Main runs it: with the
// machine's NVML, and CUDA_VISIBLE_DEVICES read through lookupEnv.
func runDiscover(args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	return discover(args, stdout, stderr, nvml.New(), lookupEnv(getenv))
}

// lookupEnv turns Main's getenv into a lookup that can tell an unset
// variable from an empty one, as CUDA_VISIBLE_DEVICES needs (unset: every
// GPU; empty: none). The value always comes from getenv; when getenv says
// "", whether the variable is set comes from os.LookupEnv. With main's
// os.Getenv this is exactly os.LookupEnv.
func lookupEnv(getenv func(string) string) func(string) (string, bool) {
	return func(key string) (string, bool) {
		if v := getenv(key); v != "" {
			return v, true
		}
		_, set := os.LookupEnv(key)
		return "", set
	}
}

// discover prints Spark's resource JSON for the GPUs lib finds that
// CUDA_VISIBLE_DEVICES leaves visible. Stdout carries nothing else: Spark
// parses all of it.
func discover(args []string, stdout, stderr io.Writer, lib nvml.Interface, lookupEnv func(string) (string, bool)) int {
	fs := newFlagSet("discover")
	name := fs.String("name", "gpu", "resource name in the output, as in spark.executor.resource.<name>.amount")
	verbose := fs.Bool("verbose", false, "also write the reported GPUs, with memory, utilisation and MIG mode, as a JSON array to stderr")
	const head = "Usage: pixelflight discover [flags]\n\nPrints Spark's GPU resource JSON, {\"name\":\"gpu\",\"addresses\":[\"0\",\"1\"]}, for the NVIDIA GPUs\nthat CUDA_VISIBLE_DEVICES leaves visible; no driver or no GPU prints no addresses.\n\n"
	if err := parseArgs(fs, head, args, stdout); err != nil {
		return usageError("discover", err, stderr)
	}
	if *name == "" {
		return usageError("discover", errors.New("--name must not be empty"), stderr)
	}

	all, err := gpu.Devices(lib)
	if errors.Is(err, gpu.ErrNoDriver) {
		fmt.Fprintf(stderr, "pixelflight discover: %v: no GPUs\n", err)
	} else if err != nil {
		fmt.Fprintf(stderr, "pixelflight discover: %v\n", err)
		return 1
	}
	cvd, set := lookupEnv("CUDA_VISIBLE_DEVICES")
	devices := gpu.Visible(all, cvd, set)
	if *verbose {
		if set {
			fmt.Fprintf(stderr, "pixelflight discover: CUDA_VISIBLE_DEVICES=%q leaves %d of %d GPUs\n", cvd, len(devices), len(all))
		}
		b, _ := json.Marshal(devices) // a []gpu.Device always marshals
		fmt.Fprintf(stderr, "%s\n", b)
	}
	resource := struct {
		Name      string   `json:"name"`
		Addresses []string `json:"addresses"`
	}{*name, gpu.Addresses(devices)}
	if err := json.NewEncoder(stdout).Encode(resource); err != nil {
		fmt.Fprintf(stderr, "pixelflight discover: %v\n", err)
		return 1
	}
	return 0
}
