// Package cufft opens NVIDIA's cuFFT at run time by soname, so that one
// pixelflight-cuda runs on nodes with CUDA 12 and CUDA 13 drivers: cuFFT
// 12 (libcufft.so.12, CUDA 13) needs a CUDA 13 driver, cuFFT 11
// (libcufft.so.11, CUDA 12) runs on both. Sonames picks them in that
// order by the driver's CUDA version; Open takes the first that loads and
// has every function used (batched 2D real transforms on a stream).
//
// It needs no CUDA headers or libraries to build, and is tested against
// a stand-in library the test compiles.
package cufft
