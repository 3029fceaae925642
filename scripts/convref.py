"""Writes udf/testdata/fftconvolve_ref.json: fft_convolve cases with the
results scipy gives, for the Go tests (go test ./udf -run Scipy).

Each case is an 8-bit grayscale image (random, seeded), the op's params, and
what scipy computes on the same image: scipy.signal.fftconvolve for the zero
boundary, scipy.signal.convolve2d (boundary "symm" / "wrap") for reflect and
wrap. Kernels are built here from their definitions, not by our code.

Run: .venv/bin/python scripts/convref.py   (make testdata)
"""

import json
import math
import os
import sys

import numpy as np
import scipy.signal as ss


def gaussian(sigma, size=None):
    if size is None:
        size = 2 * math.ceil(3 * sigma) + 1
    x = np.arange(size) - (size - 1) / 2
    g = np.exp(-(x ** 2) / (2 * sigma ** 2))
    k = np.outer(g, g)
    return k / k.sum()


NAMED = {
    "laplacian": [[0, 1, 0], [1, -4, 1], [0, 1, 0]],
    "sobel_x": [[1, 0, -1], [2, 0, -2], [1, 0, -1]],
    "sobel_y": [[1, 2, 1], [0, 0, 0], [-1, -2, -1]],
    "sharpen": [[0, -1, 0], [-1, 5, -1], [0, -1, 0]],
}


def kernel_of(p):
    name = p.get("kernel", "matrix" if "matrix" in p else "gaussian")
    if name == "gaussian":
        return gaussian(p.get("sigma", 1.0), p.get("size"))
    if name == "box":
        s = p.get("size", 3)
        return np.full((s, s), 1.0 / (s * s))
    if name == "matrix":
        return np.array(p["matrix"], dtype=np.float64)
    return np.array(NAMED[name], dtype=np.float64)


def reference(img, p):
    k = kernel_of(p)
    mode = p.get("mode", "same")
    boundary = p.get("boundary", "zero")
    x = img.astype(np.float64)
    if boundary == "zero":
        return ss.fftconvolve(x, k, mode=mode)
    return ss.convolve2d(x, k, mode=mode, boundary={"reflect": "symm", "wrap": "wrap"}[boundary])


def main(out):
    rng = np.random.default_rng(20261122)
    sizes = [(1, 1), (1, 9), (9, 1), (6, 8), (7, 5), (16, 16), (21, 34)]
    params = [
        {},
        {"kernel": "gaussian", "sigma": 1.5},
        {"kernel": "gaussian", "sigma": 0.8, "size": 4},
        {"kernel": "box", "size": 5},
        {"kernel": "box", "size": 2},
        {"kernel": "laplacian"},
        {"kernel": "sobel_x"},
        {"kernel": "sobel_y"},
        {"kernel": "sharpen"},
        {"matrix": [[1.0, -2.0, 0.5, 3.0]]},
        {"kernel": "matrix", "matrix": [[0.5], [1.0], [-1.5], [2.0], [0.25]]},
        {"matrix": [[1, 2], [3, 4], [5, 6]]},
    ]
    cases = []
    for h, w in sizes:
        img = rng.integers(0, 256, size=(h, w), dtype=np.uint8)
        for base in params:
            k = kernel_of(base)
            for mode in ("same", "full", "valid"):
                for boundary in ("zero", "reflect", "wrap"):
                    if mode == "valid" and (k.shape[0] > h or k.shape[1] > w):
                        continue
                    if boundary != "zero" and (k.shape[0] > h or k.shape[1] > w):
                        continue  # convolve2d's symm/wrap need the kernel inside the image
                    p = dict(base, mode=mode, boundary=boundary)
                    want = reference(img, p)
                    cases.append({
                        "params": p,
                        "height": h, "width": w, "pixels": img.ravel().tolist(),
                        "want_height": want.shape[0], "want_width": want.shape[1],
                        "want": [float("%.7g" % v) for v in want.ravel()],
                    })
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        json.dump({"generator": "scripts/convref.py", "scipy": ss.__name__ and __import__("scipy").__version__,
                   "cases": cases}, f, separators=(",", ":"))
    print("%s: %d cases" % (out, len(cases)))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "udf/testdata/fftconvolve_ref.json")
