package cuda

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pixelflight/pixelflight/gpu"
)

func TestChoose(t *testing.T) {
	h100 := []gpu.Device{{Index: 0, Name: "NVIDIA H100 80GB HBM3", UUID: "GPU-1"}}
	ok := func() error { return nil }
	broken := func() error { return errors.New("exit status 127: libcuda.so.1: cannot open shared object file") }
	noDriver := fmt.Errorf("%w: nvml init: ERROR_LIBRARY_NOT_FOUND", gpu.ErrNoDriver)
	for _, c := range []struct {
		name string
		f    Facts
		exec string
		open bool
		err  bool
		why  string
	}{
		{"cpu asked", Facts{Backend: "cpu", GPUs: h100, Sibling: "/opt/pixelflight-cuda", Preflight: ok}, "", false, false, "--backend cpu"},
		{"gpu node", Facts{Backend: "auto", GPUs: h100, Sibling: "/opt/pixelflight-cuda", Preflight: ok}, "/opt/pixelflight-cuda", false, false, "NVIDIA H100"},
		{"gpu node, cuda asked", Facts{Backend: "cuda", GPUs: h100, Sibling: "/opt/pixelflight-cuda", Preflight: ok}, "/opt/pixelflight-cuda", false, false, "1 GPU(s)"},
		{"cpu node", Facts{Backend: "auto", ProbeErr: noDriver, Sibling: "/opt/pixelflight-cuda", Preflight: ok}, "", false, false, "no NVIDIA driver"},
		{"cpu node, cuda asked", Facts{Backend: "cuda", ProbeErr: noDriver, Sibling: "/opt/pixelflight-cuda"}, "", false, true, "no NVIDIA driver"},
		{"nvml error", Facts{Backend: "auto", ProbeErr: errors.New("nvml init: ERROR_UNKNOWN"), Sibling: "/x"}, "", false, false, "NVML failed"},
		{"gpus hidden", Facts{Backend: "auto", GPUs: []gpu.Device{}, Sibling: "/x", Preflight: ok}, "", false, false, "CUDA_VISIBLE_DEVICES"},
		{"no sibling", Facts{Backend: "auto", GPUs: h100}, "", false, false, "no pixelflight-cuda"},
		{"no sibling, cuda asked", Facts{Backend: "cuda", GPUs: h100}, "", false, true, "no pixelflight-cuda"},
		{"sibling cannot start", Facts{Backend: "auto", GPUs: h100, Sibling: "/opt/pixelflight-cuda", Preflight: broken}, "", false, false, "libcuda.so.1"},
		{"sibling cannot start, cuda asked", Facts{Backend: "cuda", GPUs: h100, Sibling: "/opt/pixelflight-cuda", Preflight: broken}, "", false, true, "cannot start"},
		{"exec'd already", Facts{Backend: "auto", GPUs: h100, Sibling: "/opt/pixelflight-cuda", Execed: true, Preflight: ok}, "", false, false, "once"},
		{"cuda build", Facts{Backend: "auto", Built: true}, "", true, false, "CUDA build"},
		{"cuda build, cpu asked", Facts{Backend: "cpu", Built: true}, "", false, false, "--backend cpu"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Choose(c.f)
			if got.Exec != c.exec || got.Open != c.open || (got.Err != nil) != c.err || !strings.Contains(got.Reason, c.why) {
				t.Errorf("Choose = %+v, want exec %q open %v error %v, reason containing %q", got, c.exec, c.open, c.err, c.why)
			}
			if got.Err != nil && !errors.Is(got.Err, ErrUnavailable) {
				t.Errorf("error %v does not wrap ErrUnavailable", got.Err)
			}
		})
	}
}

// The preflight is asked only when everything else says exec.
func TestChooseRunsPreflightLast(t *testing.T) {
	called := false
	Choose(Facts{Backend: "auto", ProbeErr: gpu.ErrNoDriver, Sibling: "/x", Preflight: func() error { called = true; return nil }})
	if called {
		t.Error("preflight ran on a node without a driver")
	}
}

// The preflight reports a pixelflight-cuda that cannot start (here a
// script standing in for one without libcuda.so.1), with its output.
func TestPreflight(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad")
	if err := os.WriteFile(bad, []byte("#!/bin/sh\necho 'error while loading shared libraries: libcuda.so.1' >&2\nexit 127\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := preflight(bad); err == nil || !strings.Contains(err.Error(), "libcuda.so.1") {
		t.Errorf("preflight(bad) = %v, want an error naming libcuda.so.1", err)
	}
	good := filepath.Join(dir, "good")
	if err := os.WriteFile(good, []byte("#!/bin/sh\ntest \"$1\" = version && test \"$"+ExecEnv+"\" = 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := preflight(good); err != nil {
		t.Errorf("preflight(good) = %v", err)
	}
}
