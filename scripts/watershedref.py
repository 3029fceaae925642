"""Writes kernels/watershed/testdata/watershed_ref.json: the distance-transform
watershed pipeline as scikit-image runs it, for the Go tests
(go test ./kernels/watershed/).

Images: overlapping discs (seeded layouts, 200x200, 256x256 and the 512x512
benchmark image), skimage.data.coins() (303x384) and a crop of it, stored once
under "images" as 8-bit pixels. For each case the JSON holds the params,
skimage's Otsu threshold, scipy's squared distances (left out for the 512x512
case to keep the file small), the peak_local_max markers, the segment count
and the label image. Arrays are zlib-compressed little-endian and
base64-encoded: pixels uint8, dist2 and labels int32, peaks int32 flat indices
in marker order.

It also times the pipeline once on the 512x512 discs image (one core; run it
under `taskset -c 0` for a strict single-core figure) and records that.

Run: .venv/bin/python scripts/watershedref.py
"""

import base64
import json
import os
import sys
import time
import zlib

import numpy as np
import scipy.ndimage
import skimage.data
import skimage.feature
import skimage.segmentation
from skimage.filters import threshold_otsu

OUT = os.path.join(
    os.path.dirname(os.path.abspath(__file__)),
    "..", "kernels", "watershed", "testdata", "watershed_ref.json",
)


def pipeline(img, threshold=-1, min_distance=5):
    """The reference semantics, step by step (see the package doc)."""
    t = threshold_otsu(img) if threshold < 0 else threshold
    fg = img > t
    dist = scipy.ndimage.distance_transform_edt(fg)
    coords = skimage.feature.peak_local_max(
        dist, min_distance=min_distance, labels=fg.astype(int)
    )
    markers = np.zeros(dist.shape, int)
    markers[tuple(coords.T)] = np.arange(1, len(coords) + 1)
    labels = skimage.segmentation.watershed(-dist, markers, mask=fg)
    segments = len(np.unique(labels)) - (1 if 0 in labels else 0)
    return t, dist, coords, labels, segments


def discs(h, w, n, seed):
    """Overlapping bright discs on a darker, slightly noisy background."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:h, 0:w]
    img = np.full((h, w), 40.0)
    rmin, rmax = max(6, min(h, w) // 20), max(10, min(h, w) // 8)
    for _ in range(n):
        cy, cx = rng.uniform(0, h), rng.uniform(0, w)
        r = rng.uniform(rmin, rmax)
        inside = (yy - cy) ** 2 + (xx - cx) ** 2 < r * r
        img[inside] = rng.uniform(150, 220)
    img += rng.normal(0, 3, size=(h, w))
    return np.clip(np.rint(img), 0, 255).astype(np.uint8)


def pack(a, dtype):
    raw = np.ascontiguousarray(a, dtype=np.dtype(dtype).newbyteorder("<"))
    return base64.b64encode(zlib.compress(raw.tobytes(), 9)).decode("ascii")


def case(name, image, img, threshold=-1, min_distance=5, with_dist=True):
    t, dist, coords, labels, segments = pipeline(img, threshold, min_distance)
    d2 = np.rint(dist * dist).astype(np.int64)
    # scipy's distances are exactly sqrt of an integer: the Go side compares
    # against sqrt(dist2).
    assert np.array_equal(np.sqrt(d2.astype(np.float64)), dist), name
    assert labels.max() < 2**31
    h, w = img.shape
    flat = coords[:, 0] * w + coords[:, 1] if len(coords) else np.zeros(0, int)
    print(f"{name}: {h}x{w} threshold={threshold} min_distance={min_distance} "
          f"otsu={int(threshold_otsu(img))} segments={segments}", file=sys.stderr)
    out = {
        "name": name,
        "image": image,
        "h": h,
        "w": w,
        "threshold": threshold,
        "min_distance": min_distance,
        "otsu": int(threshold_otsu(img)),
        "used_threshold": int(t),
        "segments": int(segments),
        "peaks": pack(flat, np.int32),
        "labels": pack(labels, np.int32),
    }
    if with_dist:
        out["dist2"] = pack(d2, np.int32)
    return out


def time_pipeline(img, reps=5):
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        pipeline(img)
        best = min(best, time.perf_counter() - t0)
    return best * 1e3


def main():
    coins = skimage.data.coins()
    d200 = discs(200, 200, 14, seed=1)
    d256 = discs(256, 256, 18, seed=2)
    d512 = discs(512, 512, 60, seed=3)
    crop = np.ascontiguousarray(coins[40:200, 60:300])
    images = {"discs-200": d200, "discs-256": d256, "discs-512": d512,
              "coins": coins, "coins-crop": crop}
    cases = [
        case("discs-200", "discs-200", d200),
        case("discs-256", "discs-256", d256),
        case("discs-256-t120-md3", "discs-256", d256, threshold=120, min_distance=3),
        case("discs-256-md1", "discs-256", d256, min_distance=1),
        case("discs-512", "discs-512", d512, with_dist=False),
        case("coins", "coins", coins),
        case("coins-t100-md10", "coins", coins, threshold=100, min_distance=10),
        case("coins-crop", "coins-crop", crop),
    ]
    ms = time_pipeline(d512)
    print(f"skimage pipeline on discs-512: {ms:.1f} ms (best of 5)", file=sys.stderr)
    doc = {
        "generator": "scripts/watershedref.py",
        "versions": {
            "numpy": np.__version__,
            "scipy": scipy.__version__,
            "skimage": skimage.__version__,
        },
        "python_ms_discs_512": round(ms, 2),
        "images": {k: {"h": v.shape[0], "w": v.shape[1], "pixels": pack(v, np.uint8)}
                   for k, v in images.items()},
        "cases": cases,
    }
    with open(OUT, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print(f"wrote {os.path.normpath(OUT)} ({os.path.getsize(OUT)} bytes)", file=sys.stderr)


if __name__ == "__main__":
    main()
