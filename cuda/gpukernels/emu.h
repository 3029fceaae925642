#ifndef PIXELFLIGHT_EMU_H
#define PIXELFLIGHT_EMU_H
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif
// emu_launch runs kernel name of kernels.cu on the CPU: 0, or -1 (no such
// kernel), -2 (wrong argument count), -3 (bad grid or block).
int emu_launch(const char* name, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
               const uint64_t* args, int nargs);
#ifdef __cplusplus
}
#endif
#endif
