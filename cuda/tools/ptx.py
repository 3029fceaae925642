#!/usr/bin/env python3
"""Compile a CUDA C source to PTX with NVRTC (no nvcc needed).

    ptx.py --nvrtc LIBNVRTC --arch compute_52 -o out.ptx kernels.cu

NVRTC comes from NVIDIA's PyPI wheel nvidia-cuda-nvrtc-cu12 (pinned in
cuda/requirements-cuda.txt, installed by `make cuda-sdk`). The PTX's ISA
version is NVRTC's (12.0: PTX 8.0), so the driver of any CUDA 12 or later
release can JIT-compile it for the GPU it runs on. Warnings are printed;
an error, or a warning with --werror, fails with exit 1.
"""
import argparse
import ctypes
import sys


def check(lib, res, what):
    if res != 0:
        lib.nvrtcGetErrorString.restype = ctypes.c_char_p
        sys.exit(f"ptx.py: {what}: {lib.nvrtcGetErrorString(res).decode()}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nvrtc", required=True, help="path of libnvrtc.so.12")
    ap.add_argument("--arch", default="compute_52", help="virtual architecture of the PTX")
    ap.add_argument("--werror", action="store_true", help="fail on warnings")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("source")
    a = ap.parse_args()

    lib = ctypes.CDLL(a.nvrtc)
    major, minor = ctypes.c_int(), ctypes.c_int()
    check(lib, lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)), "nvrtcVersion")
    with open(a.source, "rb") as f:
        src = f.read()
    prog = ctypes.c_void_p()
    check(lib, lib.nvrtcCreateProgram(ctypes.byref(prog), src, a.source.encode(), 0, None, None), "nvrtcCreateProgram")
    opts = [f"--gpu-architecture={a.arch}", "--std=c++17", "-default-device"]  # no fast math: roundf, division exact as on the CPU
    # -lineinfo keeps source lines for compute-sanitizer; no -G (slow code).
    opts.append("--generate-line-info")
    copts = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
    res = lib.nvrtcCompileProgram(prog, len(opts), copts)
    size = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetProgramLog(prog, log)
    text = log.value.decode(errors="replace").strip()
    if text:
        print(text, file=sys.stderr)
    check(lib, res, f"compiling {a.source}")
    if a.werror and "warning" in text:
        sys.exit(f"ptx.py: {a.source}: warnings with --werror")
    check(lib, lib.nvrtcGetPTXSize(prog, ctypes.byref(size)), "nvrtcGetPTXSize")
    ptx = ctypes.create_string_buffer(size.value)
    check(lib, lib.nvrtcGetPTX(prog, ptx), "nvrtcGetPTX")
    with open(a.output, "wb") as f:
        f.write(ptx.value)
    print(f"ptx.py: {a.source} -> {a.output} (NVRTC {major.value}.{minor.value}, {a.arch}, {len(ptx.value)} bytes)")


if __name__ == "__main__":
    main()
