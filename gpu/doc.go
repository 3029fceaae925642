// Package gpu finds the NVIDIA GPUs of a machine through NVML, the
// management library that ships with the NVIDIA driver, and tells Spark
// about them (`pixelflight discover`, Spark's GPU discovery script).
//
// # Machines without a GPU
//
// NVML (libnvidia-ml.so.1) is opened at run time with dlopen, never linked,
// so one pixelflight binary runs on GPU and CPU-only machines alike. When
// the library is not installed, or is installed but the nvidia kernel module
// is not loaded (NVML's ERROR_LIBRARY_NOT_FOUND and ERROR_DRIVER_NOT_LOADED),
// Devices returns no devices and an error wrapping ErrNoDriver: "no GPU
// here", not a failure. Every other NVML error is a real failure (a driver
// and library of different versions, no permission on /dev/nvidia*, a GPU
// that fell off the bus) and is returned as such, so that a broken GPU
// node is noticed rather than silently scheduled as CPU-only.
//
// Building needs cgo (a C compiler, CGO_ENABLED=1): go-nvml's bindings are
// cgo, linked with unresolved NVML symbols that dlopen fills in. Nothing of
// the driver is needed at build time.
//
// # What is reported
//
// For each GPU, in NVML index order: index, UUID, name, total and free
// memory in bytes, GPU and memory utilisation in percent, and whether MIG
// mode is enabled. Utilisation is -1 and MIG false when the GPU does not
// report them (ERROR_NOT_SUPPORTED, common on older or consumer boards); a
// GPU whose UUID, name or memory cannot be read fails the whole listing.
// Each call initialises NVML and shuts it down again, which can be slow on
// machines without persistence mode (nvidia-smi -pm 1), where the driver
// sets every GPU up first; a server should probe once, not per request.
//
// # CUDA_VISIBLE_DEVICES
//
// NVML always sees every GPU of the machine (or container); CUDA sees only
// those CUDA_VISIBLE_DEVICES names. Visible applies the same rules, as CUDA
// documents them and as PyTorch's NVML-based device count reads them:
//
//   - unset: every GPU, in index order;
//   - set but empty: no GPU;
//   - otherwise a comma-separated list, spaces around entries ignored, of
//     indices or of UUIDs; the GPUs appear in the listed order;
//   - the first entry decides the kind of list: one that starts with GPU-
//     makes a list of UUIDs, anything else a list of indices;
//   - an index is read from the entry's leading digits, as CUDA's strtoul
//     does ("1abc" is 1);
//   - a UUID entry may be any prefix of a GPU's UUID that matches exactly one
//     GPU ("GPU-8932f937" for GPU-8932f937-d72c-4106-c12f-20bd9faed9f6);
//   - the list stops at its first invalid entry, and only the GPUs before it
//     are visible: an index with no GPU ("-1", or 7 on a 4-GPU machine), a
//     UUID or prefix that matches no GPU or several, an entry of the other
//     kind, an empty entry. So "0,2,-1,1" is GPUs 0 and 2, and "-1" is none;
//   - a GPU named twice makes the whole list empty.
//
// MIG instances (MIG-... entries) are not supported: pixelflight schedules
// whole GPUs. A MIG- entry stops the list like any unknown entry, so a list
// that starts with one yields no GPU. Discovery still reports a GPU in MIG
// mode as a whole GPU, with mig_enabled true in `discover --verbose`.
//
// # Addresses for Spark
//
// Spark hands each executor addresses from the discovery script's output,
// and the pixelflight executor plugin starts the sidecar with
// CUDA_VISIBLE_DEVICES set to those addresses, joined by commas. That
// variable replaces whatever the executor had, so each address must name
// the physical GPU on its own: Addresses gives NVML's index as a decimal
// string ("0", "1", ...), also when CUDA_VISIBLE_DEVICES listed UUIDs; a
// discovery run under CUDA_VISIBLE_DEVICES=GPU-8932f937 on a machine where
// that is GPU 3 reports ["3"]. Inside a container NVML indexes only the
// container's GPUs, from 0, as CUDA there does.
//
// NVML's index follows PCI bus order. CUDA's index does too when
// CUDA_DEVICE_ORDER=PCI_BUS_ID; by default (FASTEST_FIRST) CUDA may order
// unlike models differently. On machines with mixed GPU models set
// spark.executorEnv.CUDA_DEVICE_ORDER=PCI_BUS_ID so that an address names
// the same GPU for Spark, NVML and CUDA.
package gpu
