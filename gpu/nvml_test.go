package gpu

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
)

// dgx returns go-nvml's simulated DGX A100 (8 GPUs, random UUIDs), with
// the utilisation the simulation lacks: GPU i is 10*i % busy, memory i %,
// its JPEG engines 2*i %.
func dgx() *dgxa100.Server {
	s := dgxa100.New()
	for i, d := range s.Devices {
		d.(*dgxa100.Device).GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) {
			return nvml.Utilization{Gpu: uint32(10 * i), Memory: uint32(i)}, nvml.SUCCESS
		}
		d.(*dgxa100.Device).GetJpgUtilizationFunc = func() (uint32, uint32, nvml.Return) {
			return uint32(2 * i), 1000, nvml.SUCCESS
		}
	}
	return s
}

func mockDevice(s *dgxa100.Server, i int) *dgxa100.Device { return s.Devices[i].(*dgxa100.Device) }

func TestDevicesDGXA100(t *testing.T) {
	s := dgx()
	mockDevice(s, 2).MigMode = nvml.DEVICE_MIG_ENABLE
	mockDevice(s, 5).MemoryInfo.Free = 1 << 30
	got, err := Devices(s)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 8 {
		t.Fatalf("%d devices, want 8", len(got))
	}
	for i, d := range got {
		want := Device{
			Index:             i,
			UUID:              mockDevice(s, i).UUID,
			Name:              "Mock NVIDIA A100-SXM4-40GB",
			MemoryTotal:       42949672960,
			UtilizationGPU:    10 * i,
			UtilizationMemory: i,
			UtilizationJPEG:   2 * i,
			MIG:               i == 2,
		}
		if i == 5 {
			want.MemoryFree = 1 << 30
		}
		if d != want {
			t.Errorf("device %d = %+v, want %+v", i, d, want)
		}
	}
	if n := len(s.InitCalls()); n != 1 || len(s.ShutdownCalls()) != n {
		t.Errorf("%d Init, %d Shutdown calls, want 1 each", n, len(s.ShutdownCalls()))
	}
}

func TestDevicesOptionalFieldsUnsupported(t *testing.T) {
	s := dgx()
	d := mockDevice(s, 3)
	d.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) {
		return nvml.Utilization{}, nvml.ERROR_NOT_SUPPORTED
	}
	d.GetJpgUtilizationFunc = func() (uint32, uint32, nvml.Return) { return 0, 0, nvml.ERROR_NOT_SUPPORTED }
	d.MigMode = nvml.DEVICE_MIG_ENABLE
	d.GetMigModeFunc = func() (int, int, nvml.Return) { return 0, 0, nvml.ERROR_NOT_SUPPORTED }
	got, err := Devices(s)
	if err != nil {
		t.Fatal(err)
	}
	if g := got[3]; g.UtilizationGPU != -1 || g.UtilizationMemory != -1 || g.UtilizationJPEG != -1 || g.MIG || g.UUID != d.UUID {
		t.Errorf("device 3 = %+v, want utilisation -1, MIG false", g)
	}
	if got[4].UtilizationGPU != 40 {
		t.Errorf("device 4 utilisation %d, want 40", got[4].UtilizationGPU)
	}
}

func TestDevicesRequiredFieldFails(t *testing.T) {
	s := dgx()
	mockDevice(s, 6).GetUUIDFunc = func() (string, nvml.Return) { return "", nvml.ERROR_GPU_IS_LOST }
	got, err := Devices(s)
	if !errors.Is(err, nvml.ERROR_GPU_IS_LOST) || errors.Is(err, ErrNoDriver) || got != nil {
		t.Errorf("Devices = %v, %v; want nil and ERROR_GPU_IS_LOST", got, err)
	}
	if len(s.ShutdownCalls()) != 1 {
		t.Errorf("%d Shutdown calls after a failed listing, want 1", len(s.ShutdownCalls()))
	}
}

func TestDevicesInitErrors(t *testing.T) {
	for _, c := range []struct {
		ret      nvml.Return
		noDriver bool
	}{
		{nvml.ERROR_LIBRARY_NOT_FOUND, true},
		{nvml.ERROR_DRIVER_NOT_LOADED, true},
		{nvml.ERROR_NO_PERMISSION, false},
		{nvml.ERROR_LIB_RM_VERSION_MISMATCH, false},
	} {
		s := dgx()
		s.InitFunc = func() nvml.Return { return c.ret }
		got, err := Devices(s)
		if !errors.Is(err, c.ret) || errors.Is(err, ErrNoDriver) != c.noDriver || len(got) != 0 {
			t.Errorf("Init %v: Devices = %v, %v; want no devices, ErrNoDriver %v", c.ret, got, err, c.noDriver)
		}
		if len(s.ShutdownCalls()) != 0 {
			t.Errorf("Init %v: Shutdown called after a failed Init", c.ret)
		}
	}
}

// TestDevicesRealLibraryMissing goes through go-nvml's real dlopen with a
// library that does not exist, so it checks the no-driver path on any
// machine.
func TestDevicesRealLibraryMissing(t *testing.T) {
	got, err := Devices(nvml.New(nvml.WithLibraryPath("/nonexistent/libnvidia-ml.so.1")))
	if !errors.Is(err, ErrNoDriver) || got == nil || len(got) != 0 {
		t.Errorf("Devices = %#v, %v; want an empty list and ErrNoDriver", got, err)
	}
}

// TestProbe uses this machine's driver: without one (as on CI) it must say
// so with ErrNoDriver, not fail or crash.
func TestProbe(t *testing.T) {
	got, err := Probe()
	switch {
	case errors.Is(err, ErrNoDriver):
		if len(got) != 0 {
			t.Errorf("no driver, yet devices %v", got)
		}
		t.Logf("no driver here: %v", err)
	case err != nil:
		t.Fatal(err)
	default:
		t.Logf("GPUs here: %+v", got)
	}
}

func TestVisible(t *testing.T) {
	devices := []Device{
		{Index: 0, UUID: "GPU-8932f937-d72c-4106-c12f-20bd9faed9f6"},
		{Index: 1, UUID: "GPU-8932aaaa-0000-0000-0000-000000000001"},
		{Index: 2, UUID: "GPU-c0ffee00-0000-0000-0000-000000000002"},
		{Index: 3, UUID: "GPU-deadbeef-0000-0000-0000-000000000003"},
	}
	for _, c := range []struct {
		env  string
		set  bool
		want []int
	}{
		{"", false, []int{0, 1, 2, 3}},
		{"", true, nil},
		{" ", true, nil},
		{"-1", true, nil},
		{"2,0", true, []int{2, 0}},
		{"0,2,-1,1", true, []int{0, 2}},
		{"1,7,2", true, []int{1}},
		{"4", true, nil},
		{" 1 , 3 ", true, []int{1, 3}},
		{"1,,2", true, []int{1}},
		{"1abc,2", true, []int{1, 2}},
		{"99999999999999999999999", true, nil},
		{"0,0", true, nil},
		{"1,2,1", true, nil},
		{"GPU-c0ffee00-0000-0000-0000-000000000002", true, []int{2}},
		{"GPU-dead,GPU-8932f", true, []int{3, 0}},
		{"GPU-8932", true, nil}, // matches GPUs 0 and 1
		{"GPU-dead,GPU-8932,GPU-c0", true, []int{3}},
		{"GPU-dead,GPU-ffff", true, []int{3}},
		{"GPU-dead,2", true, []int{3}},
		{"3,GPU-c0", true, []int{3}},
		{"GPU-dead,GPU-deadbeef", true, nil},
		{"gpu-dead", true, nil},
		{"MIG-5b7f1a4e-0000-0000-0000-000000000000", true, nil},
		{"1,MIG-5b7f1a4e-0000-0000-0000-000000000000", true, []int{1}},
	} {
		got := Visible(devices, c.env, c.set)
		var idx []int
		for _, d := range got {
			idx = append(idx, d.Index)
			if d != devices[d.Index] {
				t.Errorf("%q: device %+v, want %+v", c.env, d, devices[d.Index])
			}
		}
		if got == nil || !reflect.DeepEqual(idx, c.want) {
			t.Errorf("CUDA_VISIBLE_DEVICES=%q (set %v): %v, want %v", c.env, c.set, idx, c.want)
		}
	}
}

func TestAddresses(t *testing.T) {
	if got := Addresses(nil); got == nil || len(got) != 0 {
		t.Errorf("Addresses(nil) = %#v, want an empty non-nil list", got)
	}
	got := Addresses([]Device{{Index: 3}, {Index: 10}, {Index: 0}})
	if want := []string{"3", "10", "0"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Addresses = %q, want %q", got, want)
	}
}

func ExampleVisible() {
	devices := []Device{
		{Index: 0, UUID: "GPU-8932f937-d72c-4106-c12f-20bd9faed9f6"},
		{Index: 1, UUID: "GPU-1b5e2ac0-3f9d-4e0b-a7e2-5c4d6f8a9b10"},
		{Index: 2, UUID: "GPU-6f0c1d2e-9a8b-4c7d-b6e5-f4a3b2c1d0e9"},
	}
	// Spark is told the physical index of each visible GPU, whether the
	// variable lists UUIDs or indices.
	fmt.Println(Addresses(Visible(devices, "GPU-6f0c,GPU-8932f937", true)))
	fmt.Println(Addresses(Visible(devices, "2,0,-1,1", true)))
	fmt.Println(Addresses(Visible(devices, "", true)))
	fmt.Println(Addresses(Visible(devices, "", false)))
	// Output:
	// [2 0]
	// [2 0]
	// []
	// [0 1 2]
}
