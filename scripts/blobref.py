"""Writes kernels/blob/testdata/blob_log_ref.json: what
skimage.feature.blob_log returns on a few 8-bit images, for the Go tests
(go test ./kernels/blob).

Each case stores the image (base64 of the raw row-major uint8 pixels), for
generated images the known blob centres and sigmas, and for each parameter
set the blobs skimage finds. The Go param ExcludeBorder=true is run here as
blob_log(exclude_border=1): blob_log itself rejects exclude_border=True.

Run: .venv/bin/python scripts/blobref.py           (write the JSON)
     .venv/bin/python scripts/blobref.py --bench   (time blob_log on coins,
                                                    one core, defaults)
"""

import base64
import json
import os
import sys
import time

import numpy as np
from skimage import data
from skimage.feature import blob_log

OUT = os.path.join(os.path.dirname(__file__), "..", "kernels", "blob",
                   "testdata", "blob_log_ref.json")

PARAMS = [
    dict(min_sigma=1, max_sigma=50, num_sigma=10, threshold=0.2, overlap=0.5,
         log_scale=False, exclude_border=False),
    dict(min_sigma=2, max_sigma=20, num_sigma=10, threshold=0.1, overlap=0.5,
         log_scale=False, exclude_border=False),
    dict(min_sigma=1, max_sigma=30, num_sigma=8, threshold=0.05, overlap=0.3,
         log_scale=True, exclude_border=True),
]


def pil_gray(rgb):
    """PIL's convert("L"): L = (R*19595 + G*38470 + B*7471 + 0x8000) >> 16."""
    r, g, b = (rgb[..., i].astype(np.uint32) for i in range(3))
    return ((r * 19595 + g * 38470 + b * 7471 + 0x8000) >> 16).astype(np.uint8)


def gen_blobs(seed, h, w, n):
    """Bright Gaussian blobs on a dark, slightly noisy background."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float64)
    img = np.zeros((h, w))
    known = []
    while len(known) < n:
        s = float(rng.uniform(2.0, 8.0))
        y = int(rng.integers(int(3 * s), h - int(3 * s)))
        x = int(rng.integers(int(3 * s), w - int(3 * s)))
        if any((y - k[0]) ** 2 + (x - k[1]) ** 2 < (3 * (s + k[2])) ** 2
               for k in known):
            continue
        known.append([y, x, s])
        img += 200 * np.exp(-((yy - y) ** 2 + (xx - x) ** 2) / (2 * s * s))
    img += rng.normal(0, 2, size=img.shape)
    return np.clip(np.rint(img + 10), 0, 255).astype(np.uint8), known


def images():
    yield "coins", data.coins(), None
    hub = pil_gray(data.hubble_deep_field())
    yield "hubble", hub[300:556, 400:656], None
    for seed in (1, 2):
        img, known = gen_blobs(seed, 160, 200, 8)
        yield f"gen{seed}", img, known


def run(img, p):
    eb = 1 if p["exclude_border"] else False
    b = blob_log(img, min_sigma=p["min_sigma"], max_sigma=p["max_sigma"],
                 num_sigma=p["num_sigma"], threshold=p["threshold"],
                 overlap=p["overlap"], log_scale=p["log_scale"],
                 exclude_border=eb)
    return [[float(v) for v in row] for row in b]


def bench():
    img = data.coins()
    blob_log(img)
    times = []
    for _ in range(5):
        t = time.perf_counter()
        blob_log(img)
        times.append(time.perf_counter() - t)
    best = min(times)
    print(f"skimage blob_log coins {img.shape}: best {best*1e3:.1f} ms, "
          f"median {sorted(times)[2]*1e3:.1f} ms, "
          f"{img.size / best / 1e6:.3f} MB/s")


def main():
    if "--bench" in sys.argv:
        bench()
        return
    cases = []
    for name, img, known in images():
        img = np.ascontiguousarray(img, dtype=np.uint8)
        case = dict(name=name, h=int(img.shape[0]), w=int(img.shape[1]),
                    pixels=base64.b64encode(img.tobytes()).decode("ascii"),
                    runs=[dict(params=p, blobs=run(img, p)) for p in PARAMS])
        if known:
            case["known"] = known
        cases.append(case)
        print(name, img.shape, [len(r["blobs"]) for r in case["runs"]])
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        json.dump(dict(cases=cases), f, separators=(",", ":"))
    print("wrote", os.path.normpath(OUT), os.path.getsize(OUT), "bytes")


if __name__ == "__main__":
    main()
