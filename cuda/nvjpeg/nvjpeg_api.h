// The part of nvjpeg.h (nvJPEG 12) this package calls, without the CUDA
// headers: the function types it looks up, as pointer types. Enums are the
// integer types GCC and Clang give them (unsigned int where no value is
// negative); handles are pointers to the same incomplete structs.
// testdata/headercheck.c checks every type here against the real header.
#ifndef PF_NVJPEG_API_H
#define PF_NVJPEG_API_H

#include <stddef.h>

#define PF_NVJPEG_MAX_COMPONENT 4 // NVJPEG_MAX_COMPONENT

struct nvjpegHandle;
struct nvjpegJpegState;
struct nvjpegJpegStream;
struct CUstream_st; // cudaStream_t, CUstream

// nvjpegImage_t.
typedef struct {
	unsigned char *channel[PF_NVJPEG_MAX_COMPONENT];
	size_t pitch[PF_NVJPEG_MAX_COMPONENT];
} pf_nvjpeg_image;

// The types of the pointers passed for nvjpegImage_t (pf_nvjpeg_image, a
// distinct type of the same layout) and the allocators (always NULL).
// testdata/headercheck.c defines PF_NVJPEG_REAL_TYPES and these as the
// real ones, so that all else must match exactly.
#ifndef PF_NVJPEG_REAL_TYPES
typedef pf_nvjpeg_image pf_image_t;
typedef void pf_dev_allocator_t;
typedef void pf_pinned_allocator_t;
#endif

// nvjpegStatus_t (returned), libraryPropertyType, nvjpegBackend_t,
// nvjpegOutputFormat_t: unsigned int. nvjpegChromaSubsampling_t: int.
typedef unsigned int (*pf_nvjpegGetProperty)(unsigned int type, int *value);
typedef unsigned int (*pf_nvjpegCreateEx)(unsigned int backend, pf_dev_allocator_t *dev_allocator, pf_pinned_allocator_t *pinned_allocator,
                                          unsigned int flags, struct nvjpegHandle **handle);
typedef unsigned int (*pf_nvjpegDestroy)(struct nvjpegHandle *handle);
typedef unsigned int (*pf_nvjpegGetHardwareDecoderInfo)(struct nvjpegHandle *handle, unsigned int *num_engines,
                                                        unsigned int *num_cores_per_engine);
typedef unsigned int (*pf_nvjpegJpegStateCreate)(struct nvjpegHandle *handle, struct nvjpegJpegState **state);
typedef unsigned int (*pf_nvjpegJpegStateDestroy)(struct nvjpegJpegState *state);
typedef unsigned int (*pf_nvjpegGetImageInfo)(struct nvjpegHandle *handle, const unsigned char *data, size_t length,
                                              int *components, int *subsampling, int *widths, int *heights);
typedef unsigned int (*pf_nvjpegJpegStreamCreate)(struct nvjpegHandle *handle, struct nvjpegJpegStream **stream);
typedef unsigned int (*pf_nvjpegJpegStreamDestroy)(struct nvjpegJpegStream *stream);
typedef unsigned int (*pf_nvjpegJpegStreamParse)(struct nvjpegHandle *handle, const unsigned char *data, size_t length,
                                                 int save_metadata, int save_stream, struct nvjpegJpegStream *stream);
typedef unsigned int (*pf_nvjpegDecodeBatchedSupported)(struct nvjpegHandle *handle, struct nvjpegJpegStream *stream,
                                                        int *is_supported);
typedef unsigned int (*pf_nvjpegDecodeBatchedInitialize)(struct nvjpegHandle *handle, struct nvjpegJpegState *state,
                                                         int batch_size, int max_cpu_threads, unsigned int output_format);
typedef unsigned int (*pf_nvjpegDecodeBatched)(struct nvjpegHandle *handle, struct nvjpegJpegState *state,
                                               const unsigned char *const *data, const size_t *lengths,
                                               pf_image_t *destinations, struct CUstream_st *stream);

#endif
