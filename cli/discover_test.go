package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"

	"github.com/pixelflight/pixelflight/gpu"
)

// dgx is go-nvml's simulated DGX A100 (8 GPUs) with the utilisation the
// simulation lacks, and its UUIDs in index order.
func dgx() (*dgxa100.Server, []string) {
	s := dgxa100.New()
	uuids := make([]string, len(s.Devices))
	for i, d := range s.Devices {
		d := d.(*dgxa100.Device)
		d.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) {
			return nvml.Utilization{Gpu: 50, Memory: 20}, nvml.SUCCESS
		}
		d.GetJpgUtilizationFunc = func() (uint32, uint32, nvml.Return) { return 0, 0, nvml.ERROR_NOT_SUPPORTED }
		uuids[i] = d.UUID
	}
	return s, uuids
}

// lookup is an environment of at most CUDA_VISIBLE_DEVICES: unset when
// set is false.
func lookup(cvd string, set bool) func(string) (string, bool) {
	return func(k string) (string, bool) {
		if k != "CUDA_VISIBLE_DEVICES" || !set {
			return "", false
		}
		return cvd, true
	}
}

func TestDiscoverDGXA100(t *testing.T) {
	s, uuids := dgx()
	for _, c := range []struct {
		args []string
		cvd  string
		set  bool
		want string
	}{
		{nil, "", false, `{"name":"gpu","addresses":["0","1","2","3","4","5","6","7"]}`},
		{[]string{"--name", "nvidia"}, "", false, `{"name":"nvidia","addresses":["0","1","2","3","4","5","6","7"]}`},
		{nil, "", true, `{"name":"gpu","addresses":[]}`},
		{nil, "-1", true, `{"name":"gpu","addresses":[]}`},
		{nil, "3,1", true, `{"name":"gpu","addresses":["3","1"]}`},
		{nil, "1,9,2", true, `{"name":"gpu","addresses":["1"]}`},
		{nil, "5,5", true, `{"name":"gpu","addresses":[]}`},
		// UUIDs, whole or a prefix, give the physical index.
		{nil, uuids[6] + "," + uuids[2][:13], true, `{"name":"gpu","addresses":["6","2"]}`},
		{nil, uuids[4] + ",0", true, `{"name":"gpu","addresses":["4"]}`},
		{nil, "GPU-not-a-uuid," + uuids[1], true, `{"name":"gpu","addresses":[]}`},
		{nil, "MIG-" + uuids[0][4:], true, `{"name":"gpu","addresses":[]}`},
	} {
		var stdout, stderr bytes.Buffer
		code := discover(c.args, &stdout, &stderr, s, lookup(c.cvd, c.set))
		if code != 0 || stdout.String() != c.want+"\n" || stderr.Len() != 0 {
			t.Errorf("%v CUDA_VISIBLE_DEVICES=%q (set %v): exit %d, stdout %q, stderr %q; want 0, %q, nothing",
				c.args, c.cvd, c.set, code, stdout.String(), stderr.String(), c.want+"\n")
		}
	}
}

func TestDiscoverVerbose(t *testing.T) {
	s, uuids := dgx()
	var stdout, stderr bytes.Buffer
	if code := discover([]string{"--verbose"}, &stdout, &stderr, s, lookup("7,"+uuids[0], true)); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if want := `{"name":"gpu","addresses":["7"]}` + "\n"; stdout.String() != want {
		t.Errorf("stdout %q, want %q", stdout.String(), want)
	}
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `leaves 1 of 8 GPUs`) {
		t.Fatalf("stderr %q: want a CUDA_VISIBLE_DEVICES note and one JSON line", stderr.String())
	}
	var devices []gpu.Device
	if err := json.Unmarshal([]byte(lines[1]), &devices); err != nil {
		t.Fatal(err)
	}
	want := gpu.Device{Index: 7, UUID: uuids[7], Name: "Mock NVIDIA A100-SXM4-40GB", MemoryTotal: 42949672960, UtilizationGPU: 50, UtilizationMemory: 20, UtilizationJPEG: -1}
	if len(devices) != 1 || devices[0] != want {
		t.Errorf("verbose devices %+v, want [%+v]", devices, want)
	}
	if !strings.Contains(lines[1], `"memory_total_bytes":42949672960`) || !strings.Contains(lines[1], `"mig_enabled":false`) {
		t.Errorf("verbose JSON %s lacks snake_case fields", lines[1])
	}
}

func TestDiscoverNoDriver(t *testing.T) {
	var stdout, stderr bytes.Buffer
	lib := nvml.New(nvml.WithLibraryPath("/nonexistent/libnvidia-ml.so.1"))
	if code := discover([]string{"--verbose"}, &stdout, &stderr, lib, lookup("", false)); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if want := `{"name":"gpu","addresses":[]}` + "\n"; stdout.String() != want {
		t.Errorf("stdout %q, want %q", stdout.String(), want)
	}
	if !strings.Contains(stderr.String(), "no NVIDIA driver") || !strings.HasSuffix(stderr.String(), "[]\n") {
		t.Errorf("stderr %q: want a no-driver note and an empty device list", stderr.String())
	}
}

// TestMainDiscover runs discover as main does, with this machine's NVML:
// without a driver (as on CI) it must report no GPUs and succeed.
func TestMainDiscover(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"discover"}, "x", &stdout, &stderr, env(nil)); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var res struct {
		Name      string
		Addresses []string
	}
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil || res.Name != "gpu" || res.Addresses == nil {
		t.Fatalf("stdout %q (%v): want Spark's resource JSON", stdout.String(), err)
	}
	if strings.Contains(stderr.String(), "no NVIDIA driver") && len(res.Addresses) != 0 {
		t.Errorf("no driver, yet addresses %q", res.Addresses)
	}
	t.Logf("stdout %q, stderr %q", stdout.String(), stderr.String())
}

func TestDiscoverErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		init nvml.Return
		code int
		want string
	}{
		{nil, nvml.ERROR_NO_PERMISSION, 1, "ERROR_NO_PERMISSION"},
		{nil, nvml.ERROR_LIB_RM_VERSION_MISMATCH, 1, "ERROR_LIB_RM_VERSION_MISMATCH"},
		{[]string{"extra"}, nvml.SUCCESS, 2, "unexpected arguments"},
		{[]string{"--name", ""}, nvml.SUCCESS, 2, "--name must not be empty"},
		{[]string{"--bogus"}, nvml.SUCCESS, 2, "flag provided but not defined"},
	} {
		s, _ := dgx()
		s.InitFunc = func() nvml.Return { return c.init }
		var stdout, stderr bytes.Buffer
		code := discover(c.args, &stdout, &stderr, s, lookup("", false))
		if code != c.code || stdout.Len() != 0 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%v, Init %v: exit %d, stdout %q, stderr %q; want %d, nothing, %q", c.args, c.init, code, stdout.String(), stderr.String(), c.code, c.want)
		}
	}
}

func TestLookupEnv(t *testing.T) {
	const k = "PIXELFLIGHT_TEST_LOOKUP"
	t.Setenv(k, "")
	if v, set := lookupEnv(env(nil))(k); v != "" || !set {
		t.Errorf("empty variable: %q, %v; want \"\", set", v, set)
	}
	if v, set := lookupEnv(env(map[string]string{k: "0,1"}))(k); v != "0,1" || !set {
		t.Errorf("getenv's value: %q, %v; want \"0,1\", set", v, set)
	}
	if v, set := lookupEnv(env(nil))(k + "_UNSET"); v != "" || set {
		t.Errorf("unset variable: %q, %v; want \"\", unset", v, set)
	}
}
