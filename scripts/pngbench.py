"""PNG decoding speed to gray: imageio's fast path (libdeflate), imageio with
image/png, Pillow and OpenCV, on the same files, one core.

Writes scikit-image's astronaut as Pillow saves it (512x512, and resized to
1920x1080; Pillow's encoder filters photos with Paeth almost throughout) to
a temporary directory, then runs BenchmarkDecodePNG (go test ./imageio,
-cpu=1), which adds its own photo-like PNGs ("512", "1080": image/png's
encoder, mostly Up filters) and decodes every file there both ways. Then
times Pillow (Image.open(f).convert("L")) and OpenCV
(cv2.imdecode(buf, cv2.IMREAD_GRAYSCALE)) on the same files. Prints CPU
milliseconds per decode (steadier than the wall clock on a shared machine;
all single-threaded): the median of -count runs of the benchmark's
cpu-ms/op for Go, the best of 5 repeats for Pillow and OpenCV; and each
one's time over the fast path's.

Run: .venv/bin/python scripts/pngbench.py [--count 3]
"""

import argparse
import io
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import timeit

import cv2
import numpy as np
from PIL import Image
from skimage import data

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def best_ms(decode):
    t = timeit.Timer(decode, timer=time.process_time)
    n, _ = t.autorange()
    return min(t.repeat(number=n, repeat=5)) / n * 1e3


def pillow_ms(b):
    def decode():
        with Image.open(io.BytesIO(b)) as im:
            im.convert("L")

    return best_ms(decode)


def opencv_ms(b):
    buf = np.frombuffer(b, np.uint8)
    return best_ms(lambda: cv2.imdecode(buf, cv2.IMREAD_GRAYSCALE))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--count", type=int, default=3, help="go test -count")
    args = ap.parse_args()
    cv2.setNumThreads(1)
    with tempfile.TemporaryDirectory() as tmp:
        astro = Image.fromarray(data.astronaut())
        astro.save(os.path.join(tmp, "astronaut-512.png"))
        astro.resize((1920, 1080), Image.BILINEAR).save(os.path.join(tmp, "astronaut-1080.png"))
        cmd = ["go", "test", "-run=^$", "-bench=^BenchmarkDecodePNG$", "-cpu=1", f"-count={args.count}",
               "./imageio/", "-args", "-pngbench.dir", tmp]
        print(" ".join(cmd[:-1] + ["DIR"]), file=sys.stderr)
        out = subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, text=True).stdout
        runs = {}
        for m in re.finditer(r"^BenchmarkDecodePNG/(\w+)-(\S+?)\s.*?([\d.]+) cpu-ms/op", out, re.M):
            runs.setdefault((m[1], m[2]), []).append(float(m[3]))
        print(f"Pillow {Image.__version__}, OpenCV {cv2.__version__}; CPU ms per decode to gray, one core")
        print(f"{'file':>15} {'KiB':>5} {'fast':>7} {'go':>7} {'pillow':>7} {'opencv':>7}"
              f" {'go/fast':>8} {'pil/fast':>8} {'cv/fast':>8}")
        for name in sorted(os.listdir(tmp), key=lambda n: os.path.getsize(os.path.join(tmp, n))):
            label = name.removesuffix(".png")
            with open(os.path.join(tmp, name), "rb") as f:
                b = f.read()
            fast = statistics.median(runs[("fast", label)]) if ("fast", label) in runs else float("nan")
            go = statistics.median(runs[("go", label)])
            pil, cv = pillow_ms(b), opencv_ms(b)
            print(f"{label:>15} {len(b) / 1024:5.0f} {fast:7.2f} {go:7.2f} {pil:7.2f} {cv:7.2f}"
                  f" {go / fast:8.2f} {pil / fast:8.2f} {cv / fast:8.2f}")


if __name__ == "__main__":
    sys.exit(main())
