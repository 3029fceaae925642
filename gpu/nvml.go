package gpu

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// ErrNoDriver is returned, wrapped, when NVML cannot be used because the
// NVIDIA driver is absent: libnvidia-ml.so.1 is not found, or the kernel
// module is not loaded. Callers treat it as "this machine has no GPU".
var ErrNoDriver = errors.New("no NVIDIA driver")

// Device is one physical NVIDIA GPU as NVML describes it.
type Device struct {
	// Index is NVML's index, in PCI bus order: the address given to Spark.
	Index int    `json:"index"`
	UUID  string `json:"uuid"`
	Name  string `json:"name"`
	// MemoryTotal and MemoryFree are in bytes.
	MemoryTotal uint64 `json:"memory_total_bytes"`
	MemoryFree  uint64 `json:"memory_free_bytes"`
	// UtilizationGPU and UtilizationMemory are percentages over NVML's
	// last sample period, -1 when the GPU does not report them.
	UtilizationGPU    int `json:"utilization_gpu_percent"`
	UtilizationMemory int `json:"utilization_memory_percent"`
	// UtilizationJPEG is the hardware JPEG engines' (NVJPG) utilisation,
	// -1 where NVML reports none: a GPU without them (T4, L4, A10G), or a
	// container without the video driver capability, where nvJPEG cannot
	// use them either.
	UtilizationJPEG int `json:"utilization_jpeg_percent"`
	// MIG is true when MIG mode is enabled; false when it is disabled or
	// the GPU does not support MIG.
	MIG bool `json:"mig_enabled"`
}

// Devices lists every GPU that lib reports, by index, between lib.Init and
// lib.Shutdown. Without a driver it returns an empty list and an error
// wrapping ErrNoDriver. A GPU whose UUID, name or memory cannot be read
// fails the listing; utilisation and MIG mode are optional.
func Devices(lib nvml.Interface) ([]Device, error) {
	if ret := lib.Init(); ret != nvml.SUCCESS {
		if ret == nvml.ERROR_LIBRARY_NOT_FOUND || ret == nvml.ERROR_DRIVER_NOT_LOADED {
			return []Device{}, fmt.Errorf("%w: nvml init: %w", ErrNoDriver, ret)
		}
		return nil, fmt.Errorf("nvml init: %w", ret)
	}
	devices, err := list(lib)
	if ret := lib.Shutdown(); ret != nvml.SUCCESS && err == nil {
		return nil, fmt.Errorf("nvml shutdown: %w", ret)
	}
	return devices, err
}

// Probe lists the GPUs this process may use: those NVML finds through the
// installed driver, narrowed by this process's CUDA_VISIBLE_DEVICES as
// Visible reads it. Each call loads and initialises NVML.
func Probe() ([]Device, error) {
	devices, err := Devices(nvml.New())
	if err != nil {
		return devices, err
	}
	v, set := os.LookupEnv("CUDA_VISIBLE_DEVICES")
	return Visible(devices, v, set), nil
}

func list(lib nvml.Interface) ([]Device, error) {
	n, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("nvml device count: %w", ret)
	}
	devices := make([]Device, 0, n)
	for i := range n {
		d, err := describe(lib, i)
		if err != nil {
			return nil, fmt.Errorf("nvml device %d: %w", i, err)
		}
		devices = append(devices, d)
	}
	return devices, nil
}

func describe(lib nvml.Interface, index int) (Device, error) {
	h, ret := lib.DeviceGetHandleByIndex(index)
	if ret != nvml.SUCCESS {
		return Device{}, fmt.Errorf("handle: %w", ret)
	}
	d := Device{Index: index, UtilizationGPU: -1, UtilizationMemory: -1, UtilizationJPEG: -1}
	if d.UUID, ret = h.GetUUID(); ret != nvml.SUCCESS {
		return Device{}, fmt.Errorf("uuid: %w", ret)
	}
	if d.Name, ret = h.GetName(); ret != nvml.SUCCESS {
		return Device{}, fmt.Errorf("name: %w", ret)
	}
	mem, ret := h.GetMemoryInfo()
	if ret != nvml.SUCCESS {
		return Device{}, fmt.Errorf("memory: %w", ret)
	}
	d.MemoryTotal, d.MemoryFree = mem.Total, mem.Free
	if u, ret := h.GetUtilizationRates(); ret == nvml.SUCCESS {
		d.UtilizationGPU, d.UtilizationMemory = int(u.Gpu), int(u.Memory)
	}
	if u, _, ret := h.GetJpgUtilization(); ret == nvml.SUCCESS {
		d.UtilizationJPEG = int(u)
	}
	if mode, _, ret := h.GetMigMode(); ret == nvml.SUCCESS {
		d.MIG = mode == nvml.DEVICE_MIG_ENABLE
	}
	return d, nil
}

// Visible returns the devices a CUDA process would see given
// CUDA_VISIBLE_DEVICES (value, and whether it is set at all), in the order
// it names them. devices is the full list from Devices. The rules are in
// the package documentation.
func Visible(devices []Device, cudaVisibleDevices string, set bool) []Device {
	if !set {
		return devices
	}
	entries := strings.Split(cudaVisibleDevices, ",")
	byUUID := strings.HasPrefix(strings.TrimSpace(entries[0]), "GPU-")
	visible := []Device{}
	for _, e := range entries {
		d, ok := find(devices, strings.TrimSpace(e), byUUID)
		if !ok {
			break
		}
		if slices.ContainsFunc(visible, func(v Device) bool { return v.Index == d.Index }) {
			return []Device{}
		}
		visible = append(visible, d)
	}
	return visible
}

// find resolves one CUDA_VISIBLE_DEVICES entry: a UUID or unique UUID
// prefix in a list of UUIDs, otherwise an index read from the entry's
// leading digits.
func find(devices []Device, entry string, byUUID bool) (Device, bool) {
	if byUUID {
		if !strings.HasPrefix(entry, "GPU-") {
			return Device{}, false
		}
		var found []Device
		for _, d := range devices {
			if strings.HasPrefix(d.UUID, entry) {
				found = append(found, d)
			}
		}
		if len(found) != 1 {
			return Device{}, false
		}
		return found[0], true
	}
	digits := entry[:len(entry)-len(strings.TrimLeft(entry, "0123456789"))]
	n, err := strconv.Atoi(digits)
	if err != nil {
		return Device{}, false
	}
	i := slices.IndexFunc(devices, func(d Device) bool { return d.Index == n })
	if i < 0 {
		return Device{}, false
	}
	return devices[i], true
}

// Addresses returns each device's NVML index as a decimal string: Spark's
// resource addresses, each a valid CUDA_VISIBLE_DEVICES entry naming that
// physical GPU. The result is never nil, so it encodes as [] in JSON.
func Addresses(devices []Device) []string {
	addrs := make([]string, len(devices))
	for i, d := range devices {
		addrs[i] = strconv.Itoa(d.Index)
	}
	return addrs
}
