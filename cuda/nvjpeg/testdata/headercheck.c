// Checks ../nvjpeg_api.h against the real nvjpeg.h at compile time (make
// cuda-check: cc -fsyntax-only with the nvidia-nvjpeg and CUDA runtime
// include directories). It fails to compile on any difference in a
// function's type, an enum's integer type or value, or nvjpegImage_t's
// layout.
#include <nvjpeg.h>
#include <stddef.h>

#define PF_NVJPEG_REAL_TYPES
typedef nvjpegImage_t pf_image_t;
typedef nvjpegDevAllocator_t pf_dev_allocator_t;
typedef nvjpegPinnedAllocator_t pf_pinned_allocator_t;
#include "../nvjpeg_api.h"

#define SAME(a, b) _Static_assert(__builtin_types_compatible_p(a, b), #a " is not " #b)
#define FN(name) SAME(pf_##name, __typeof__(&name))

FN(nvjpegGetProperty);
FN(nvjpegCreateEx);
FN(nvjpegDestroy);
FN(nvjpegGetHardwareDecoderInfo);
FN(nvjpegJpegStateCreate);
FN(nvjpegJpegStateDestroy);
FN(nvjpegGetImageInfo);
FN(nvjpegJpegStreamCreate);
FN(nvjpegJpegStreamDestroy);
FN(nvjpegJpegStreamParse);
FN(nvjpegDecodeBatchedSupported);
FN(nvjpegDecodeBatchedInitialize);
FN(nvjpegDecodeBatched);

// The enums' integer types, as used above.
SAME(nvjpegStatus_t, unsigned int);
SAME(libraryPropertyType, unsigned int);
SAME(nvjpegBackend_t, unsigned int);
SAME(nvjpegOutputFormat_t, unsigned int);
SAME(nvjpegChromaSubsampling_t, int);
SAME(nvjpegHandle_t, struct nvjpegHandle *);
SAME(nvjpegJpegState_t, struct nvjpegJpegState *);
SAME(nvjpegJpegStream_t, struct nvjpegJpegStream *);
SAME(cudaStream_t, struct CUstream_st *);

// pf_nvjpeg_image is nvjpegImage_t's layout.
_Static_assert(PF_NVJPEG_MAX_COMPONENT == NVJPEG_MAX_COMPONENT, "NVJPEG_MAX_COMPONENT");
_Static_assert(sizeof(pf_nvjpeg_image) == sizeof(nvjpegImage_t), "sizeof nvjpegImage_t");
_Static_assert(offsetof(pf_nvjpeg_image, channel) == offsetof(nvjpegImage_t, channel), "nvjpegImage_t.channel");
_Static_assert(offsetof(pf_nvjpeg_image, pitch) == offsetof(nvjpegImage_t, pitch), "nvjpegImage_t.pitch");
SAME(__typeof__(((pf_nvjpeg_image *)0)->channel), __typeof__(((nvjpegImage_t *)0)->channel));
SAME(__typeof__(((pf_nvjpeg_image *)0)->pitch), __typeof__(((nvjpegImage_t *)0)->pitch));

// The enum values nvjpeg.go passes or names (its constants and statusNames).
_Static_assert(MAJOR_VERSION == 0 && MINOR_VERSION == 1 && PATCH_LEVEL == 2, "libraryPropertyType");
_Static_assert(NVJPEG_BACKEND_DEFAULT == 0 && NVJPEG_BACKEND_HYBRID == 1 && NVJPEG_BACKEND_GPU_HYBRID == 2 &&
                   NVJPEG_BACKEND_HARDWARE == 3,
               "nvjpegBackend_t");
_Static_assert(NVJPEG_OUTPUT_Y == 2, "NVJPEG_OUTPUT_Y");
_Static_assert(NVJPEG_CSS_444 == 0 && NVJPEG_CSS_422 == 1 && NVJPEG_CSS_420 == 2 && NVJPEG_CSS_440 == 3 &&
                   NVJPEG_CSS_411 == 4 && NVJPEG_CSS_410 == 5 && NVJPEG_CSS_GRAY == 6 && NVJPEG_CSS_410V == 7 &&
                   NVJPEG_CSS_UNKNOWN == -1,
               "nvjpegChromaSubsampling_t");
_Static_assert(NVJPEG_STATUS_SUCCESS == 0 && NVJPEG_STATUS_NOT_INITIALIZED == 1 &&
                   NVJPEG_STATUS_INVALID_PARAMETER == 2 && NVJPEG_STATUS_BAD_JPEG == 3 &&
                   NVJPEG_STATUS_JPEG_NOT_SUPPORTED == 4 && NVJPEG_STATUS_ALLOCATOR_FAILURE == 5 &&
                   NVJPEG_STATUS_EXECUTION_FAILED == 6 && NVJPEG_STATUS_ARCH_MISMATCH == 7 &&
                   NVJPEG_STATUS_INTERNAL_ERROR == 8 && NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED == 9 &&
                   NVJPEG_STATUS_INCOMPLETE_BITSTREAM == 10,
               "nvjpegStatus_t");
