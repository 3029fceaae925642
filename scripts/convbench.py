"""make bench: fft_convolve on one core beside OpenCV and scipy, by kernel.

One run, one core (CPU 0) for everything, one after another: for each
kernel of the CPU targets (Gaussians sigma 1 to 8, boxes 3 to 31, Sobel, a
random 31x31 matrix) and the laplacian, on 512x512 and 1920x1080 grayscale images, mode
"same", zero boundary:

  ours, kernel alone   kernels.BenchmarkTargets (go test -cpu 1): the
                       method Choose takes, 8-bit in, float32 out
  ours, sidecar        pixelflight serve --workers 1 (GOMAXPROCS=1) on CPU
                       0, its client on CPU 1: raw gray Spark image
                       structs in, output stats; and PNGs in (decode
                       included)
  ours, +dec           udf.BenchmarkConvolvePNG (go test -cpu 1): the
                       PNGs decoded and convolved in process, as the
                       sidecar's decode stage and a CPU lane do, output
                       stats
  OpenCV               cv2.sepFilter2D (separable kernels) or cv2.filter2D
                       (the others), BORDER_CONSTANT, one thread:
                       float32 in, and 8-bit in with a float32 result; and
                       from the same PNGs, cv2.imdecode to gray first
  scipy                scipy.signal.fftconvolve, float32; and from the
                       PNGs, Pillow's decode to gray first

Every figure is the best of --rounds (5; scipy's of a third as many, at
least 2): the Go benchmarks' means over --benchtime each, the others'
single passes over the images. Prints
ms/image and the ratios OpenCV/ours and scipy/ours (above 1: ours
faster), kernel alone against float32-in OpenCV, as the targets state, and
decoding included, in process: theirs from the PNGs against
udf.BenchmarkConvolvePNG (decode and convolve, output stats) on the same
PNG files.

    .venv/bin/python scripts/convbench.py [--json out.json]
"""

import argparse
import glob
import io
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import cv2
import numpy as np
import pyarrow as pa
import scipy
import scipy.signal as ss
from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import ROOT, _png, images_512, start_sidecar, struct_batch  # noqa: E402
from pixelflight import Client  # noqa: E402


def g1(sigma, size):
    x = np.arange(size) - (size - 1) / 2
    v = np.exp(-(x ** 2) / (2 * sigma ** 2))
    return v / v.sum()


RNG = np.random.default_rng(20261127)
RANDOM31 = RNG.random((31, 31)) * 2 - 1

LAPLACIAN = np.array([[0.0, 1, 0], [1, -4, 1], [0, 1, 0]])

# name: (params, column factor, row factor, the 2-D kernel of one that has
# no factors)
KERNELS = {
    "gauss-s1": ({"kernel": "gaussian", "sigma": 1}, g1(1, 7), g1(1, 7), None),
    "gauss-s2": ({"kernel": "gaussian", "sigma": 2}, g1(2, 13), g1(2, 13), None),
    "gauss-s4": ({"kernel": "gaussian", "sigma": 4}, g1(4, 25), g1(4, 25), None),
    "gauss-s8": ({"kernel": "gaussian", "sigma": 8}, g1(8, 49), g1(8, 49), None),
    "box-3": ({"kernel": "box", "size": 3}, np.full(3, 1 / 3), np.full(3, 1 / 3), None),
    "box-9": ({"kernel": "box", "size": 9}, np.full(9, 1 / 9), np.full(9, 1 / 9), None),
    "box-31": ({"kernel": "box", "size": 31}, np.full(31, 1 / 31), np.full(31, 1 / 31), None),
    "sobel_x": ({"kernel": "sobel_x"}, np.array([1.0, 2, 1]), np.array([1.0, 0, -1]), None),
    "laplacian": ({"kernel": "laplacian"}, None, None, LAPLACIAN),
    "random-31": ({"matrix": RANDOM31.tolist()}, None, None, RANDOM31),
}


def pin(cpu):
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {cpu})


def best(f, rounds):
    f()
    b = math.inf
    for _ in range(rounds):
        t0 = time.perf_counter()
        f()
        b = min(b, time.perf_counter() - t0)
    return b * 1e3


def go_kernels(benchtime, rounds):
    """ms per image of kernels.BenchmarkTargets, by (size, kernel), the best
    of rounds runs (go test -count), and the method."""
    env = dict(os.environ, GOEXPERIMENT=os.environ.get("SIMD", "simd"))
    cmd = ["taskset", "-c", "0", os.environ.get("GO", "go"), "test", "-run", "^$", "-bench", "Targets",
           "-benchtime", benchtime, "-cpu", "1", "-count", str(rounds), "./kernels/"]
    out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=True).stdout
    res = {}
    for size, name, method, ns in re.findall(r"^BenchmarkTargets/(\S+?)/(\S+?)/(\S+?)\s+\d+\s+([\d.]+) ns/op", out, re.M):
        ms = float(ns) / 1e6
        res[(size, name)] = (min(ms, res.get((size, name), (ms,))[0]), method)
    return res


def go_decode(sets, benchtime, rounds):
    """ms per image of udf.BenchmarkConvolvePNG (decoding included, in
    process), by (size, kernel), the best of rounds runs: each set's PNGs
    written to a folder."""
    d = tempfile.mkdtemp(prefix="pf-convbench-")
    folders = {}
    for size, pngs in sets.items():
        folders[size] = os.path.join(d, size)
        os.makedirs(folders[size])
        for i, p in enumerate(pngs):
            with open(os.path.join(folders[size], "%02d.png" % i), "wb") as f:
                f.write(p)
    params = {name: dict(KERNELS[name][0], output="stats") for name in KERNELS}
    env = dict(os.environ, GOEXPERIMENT=os.environ.get("SIMD", "simd"),
               PIXELFLIGHT_BENCH_PNGS=json.dumps(folders), PIXELFLIGHT_BENCH_PARAMS=json.dumps(params))
    cmd = ["taskset", "-c", "0", os.environ.get("GO", "go"), "test", "-run", "^$", "-bench", "ConvolvePNG",
           "-benchtime", benchtime, "-cpu", "1", "-count", str(rounds), "./udf/"]
    out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=True).stdout
    shutil.rmtree(d)
    res = {}
    for size, name, ns in re.findall(r"^BenchmarkConvolvePNG/(\S+?)/(\S+?)\s+\d+\s+([\d.]+) ns/op", out, re.M):
        res[(size, name)] = min(float(ns) / 1e6, res.get((size, name), math.inf))
    return res


def images_1080(n):
    out = []
    for p in sorted(glob.glob(os.path.join(ROOT, "build/images/photo1080/jpg/*.jpg")))[:n]:
        im = np.asarray(Image.open(p).convert("L"))
        if im.shape == (1080, 1920):
            out.append(np.ascontiguousarray(im))
    if not out:
        out = [RNG.integers(0, 256, (1080, 1920), dtype=np.uint8)]
    return out


def theirs(imgs, pngs, name, rounds):
    """ms per image: OpenCV float32 in, OpenCV 8-bit in, scipy float32; and
    decoding included, from the PNGs ours gets: OpenCV's imdecode to gray,
    then its float32 filter, and Pillow's decode to gray, then scipy.

    OpenCV writes into outputs made beforehand (dst=), as ours does in
    BenchmarkTargets: a fresh output per call costs page faults whenever
    glibc hands a large allocation back to the OS, and timed that way the
    same call measured 0.15 or 0.6 ms from one batch to the next."""
    _, col, row, matrix = KERNELS[name]
    xs = [im.astype(np.float32) for im in imgs]
    outs = [np.empty(im.shape, np.float32) for im in imgs]
    if col is None:
        k = matrix.astype(np.float32)
        cv32 = lambda: [cv2.filter2D(x, -1, k, dst=o, borderType=cv2.BORDER_CONSTANT) for x, o in zip(xs, outs)]  # noqa: E731
        cv8 = lambda: [cv2.filter2D(im, cv2.CV_32F, k, dst=o, borderType=cv2.BORDER_CONSTANT) for im, o in zip(imgs, outs)]  # noqa: E731
        k2 = k
    else:
        kx, ky = row.astype(np.float32), col.astype(np.float32)
        cv32 = lambda: [cv2.sepFilter2D(x, -1, kx, ky, dst=o, borderType=cv2.BORDER_CONSTANT) for x, o in zip(xs, outs)]  # noqa: E731
        cv8 = lambda: [cv2.sepFilter2D(im, cv2.CV_32F, kx, ky, dst=o, borderType=cv2.BORDER_CONSTANT) for im, o in zip(imgs, outs)]  # noqa: E731
        k2 = np.outer(ky, kx).astype(np.float32)
    sp = lambda: [ss.fftconvolve(x, k2, mode="same") for x in xs]  # noqa: E731
    bufs = [np.frombuffer(p, np.uint8) for p in pngs]

    def cvdec():
        for b, o in zip(bufs, outs):
            x = cv2.imdecode(b, cv2.IMREAD_GRAYSCALE).astype(np.float32)
            if col is None:
                cv2.filter2D(x, -1, k, dst=o, borderType=cv2.BORDER_CONSTANT)
            else:
                cv2.sepFilter2D(x, -1, kx, ky, dst=o, borderType=cv2.BORDER_CONSTANT)

    def spdec():
        for p in pngs:
            ss.fftconvolve(np.asarray(Image.open(io.BytesIO(p)).convert("L"), np.float32), k2, mode="same")
    n = len(imgs)
    return (best(cv32, rounds) / n, best(cv8, rounds) / n, best(sp, max(2, rounds // 3)) / n,
            best(cvdec, rounds) / n, best(spdec, max(2, rounds // 3)) / n)


def ours_sidecar(client, imgs, pngs, name, rounds):
    """ms per image through the sidecar: raw gray structs in, and PNGs in; output stats."""
    params = dict(KERNELS[name][0], output="stats")
    raw = struct_batch(imgs)
    png = pa.RecordBatch.from_arrays([pa.array(pngs, pa.binary())], names=["content"])

    def run(batch, column):
        out = list(client.map_batches("fft_convolve", [batch], column=column, **params))
        assert sum(b.column("error").null_count for b in out) == batch.num_rows, out
    n = len(imgs)
    return best(lambda: run(raw, "image"), rounds) / n, best(lambda: run(png, "content"), rounds) / n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--images", default=os.path.join(ROOT, "build/images/good"))
    ap.add_argument("-n", type=int, default=8, help="512x512 images (1920x1080: n/2)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--benchtime", default="300ms", help="each Go benchmark run (rounds of them)")
    ap.add_argument("--json", help="also write the figures here")
    args = ap.parse_args()
    cv2.setNumThreads(1)
    kern = go_kernels(args.benchtime, args.rounds)
    sets = {"512x512": images_512(args.images, args.n), "1920x1080": images_1080(max(1, args.n // 2))}
    pngsets = {size: [_png(im) for im in imgs] for size, imgs in sets.items()}
    dec = go_decode(pngsets, args.benchtime, args.rounds)
    sock = os.path.join(tempfile.mkdtemp(prefix="pf-"), "conv.sock")
    proc = start_sidecar(sock, 1, "0")
    rows = []
    try:
        with Client("grpc+unix://" + sock) as c:
            for size, imgs in sets.items():
                pngs = pngsets[size]
                for name in KERNELS:
                    k_ms, method = kern[(size, name)]
                    pin(1)  # the client beside the sidecar's core
                    raw_ms, png_ms = ours_sidecar(c, imgs, pngs, name, args.rounds)
                    pin(0)
                    cv32, cv8, sp, cvdec, spdec = theirs(imgs, pngs, name, args.rounds)
                    rows.append({"size": size, "kernel": name, "method": method, "ours_kernel_ms": k_ms,
                                 "ours_sidecar_raw_ms": raw_ms, "ours_sidecar_png_ms": png_ms,
                                 "opencv_f32_ms": cv32, "opencv_u8_ms": cv8, "scipy_f32_ms": sp,
                                 "ours_decode_ms": dec[(size, name)],
                                 "opencv_f32_decode_ms": cvdec, "scipy_f32_decode_ms": spdec})
    finally:
        proc.terminate()
        proc.wait()
    print("fft_convolve on one core (CPU 0), mode same, zero boundary; ms/image, best of %d; "
          "ratios: theirs / ours kernel alone (OpenCV: float32 in), and decoding included, in process: "
          "theirs from PNG / ours from PNG (+dec); above 1 ours faster" % args.rounds)
    print("%-9s %-9s %-9s %7s %8s %8s %8s %8s %8s %6s %6s %6s %8s %8s %8s %6s %6s" % (
        "size", "kernel", "method", "ours", "sidecar", "+PNG", "cv f32", "cv u8", "scipy32", "cv32/", "cv8/", "sp/",
        "+dec", "cv+dec", "sp+dec", "cvd/", "spd/"))
    for r in rows:
        print("%-9s %-9s %-9s %7.3f %8.3f %8.3f %8.3f %8.3f %8.3f %6.2f %6.2f %6.2f %8.3f %8.3f %8.3f %6.2f %6.2f" % (
            r["size"], r["kernel"], r["method"], r["ours_kernel_ms"], r["ours_sidecar_raw_ms"], r["ours_sidecar_png_ms"],
            r["opencv_f32_ms"], r["opencv_u8_ms"], r["scipy_f32_ms"], r["opencv_f32_ms"] / r["ours_kernel_ms"],
            r["opencv_u8_ms"] / r["ours_kernel_ms"], r["scipy_f32_ms"] / r["ours_kernel_ms"],
            r["ours_decode_ms"], r["opencv_f32_decode_ms"], r["scipy_f32_decode_ms"],
            r["opencv_f32_decode_ms"] / r["ours_decode_ms"], r["scipy_f32_decode_ms"] / r["ours_decode_ms"]))
    print("OpenCV %s, scipy %s, numpy %s" % (cv2.__version__, scipy.__version__, np.__version__))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "opencv": cv2.__version__, "scipy": scipy.__version__}, f, indent=1)


if __name__ == "__main__":
    main()
