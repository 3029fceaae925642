// Package nvjpeg opens NVIDIA's nvJPEG at run time by soname, to decode
// batches of JPEGs from host memory to 8-bit luma in device memory: with
// the JPEG engines (Hardware) where the GPU has them (A100, A30, H100),
// else with CUDA (GPUHybrid or Default). Nothing links libnvjpeg, so one
// pixelflight-cuda runs with or without it and with nvJPEG 12 (CUDA 12)
// or 13 (CUDA 13, which needs a CUDA 13 driver); Sonames picks them in
// that order by the driver's CUDA version, and Open takes the first that
// loads and has every function used.
//
// A caller asks Decoder.Supported of each image before a batch and
// decodes the ones refused on the host. Before each DecodeBatched it waits
// on the host for earlier work that uses the destinations: on H100 the
// hardware batched decode writes them ahead of the work queued before it
// on the same stream (pytorch/vision#9606, meta-pytorch/torchcodec#1634).
//
// Raw nvJPEG, not nvImageCodec's C API: the backend needs one thing,
// baseline and progressive JPEGs decoded in batches to their Y plane at
// addresses it chooses, which nvjpegDecodeBatched does with either engine;
// nvJPEG ships in the CUDA toolkit, in the nvidia/cuda runtime images the
// Dockerfile builds on and as a pinned PyPI wheel (for make cuda-check),
// while nvImageCodec is one more library to install and version on every
// node, built on nvJPEG for JPEG anyway, whose extra formats (JPEG 2000,
// TIFF, PNG on the GPU) no op here asks for: the host decodes those.
//
// It needs no CUDA headers or libraries to build, and is tested against a
// stand-in library the test compiles. nvjpeg_api.h declares the part of
// nvjpeg.h used; testdata/headercheck.c checks it against the real header
// (make cuda-check).
package nvjpeg
