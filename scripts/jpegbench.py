"""JPEG decoding speed: imageio with libjpeg-turbo, imageio with image/jpeg,
and Pillow, on the same files, one core.

Runs BenchmarkDecodeJPEG (go test ./imageio, -cpu=1), which also writes its
photo-like JPEGs (512x512 and 1920x1080, quality 90, 4:2:0) to a temporary
directory, then times Pillow on those files: im.draft("L") (libjpeg's gray
output, what imageio's libjpeg-turbo path computes) and convert("L") (a
full RGB decode, then the L rule). Prints milliseconds per decode, the
median of -count runs for Go and the best of 5 repeats for Pillow.

Run: .venv/bin/python scripts/jpegbench.py [--count 3]
"""

import argparse
import io
import os
import re
import statistics
import subprocess
import sys
import tempfile
import timeit

from PIL import Image, features

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def pillow_ms(data, draft):
    def decode():
        with Image.open(io.BytesIO(data)) as im:
            if draft:
                im.draft("L", im.size)
                im.load()
            else:
                im.convert("L")

    n, _ = timeit.Timer(decode).autorange()
    return min(timeit.repeat(decode, number=n, repeat=5)) / n * 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--count", type=int, default=3, help="go test -count")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cmd = ["go", "test", "-run=^$", "-bench=^BenchmarkDecodeJPEG$", "-cpu=1", f"-count={args.count}",
               "./imageio/", "-args", "-jpegbench.out", tmp]
        print(" ".join(cmd[:-1] + ["DIR"]), file=sys.stderr)
        out = subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, text=True).stdout
        runs = {}
        for m in re.finditer(r"^BenchmarkDecodeJPEG/(\w+)-(\S+?)\s+\d+\s+([\d.]+) ns/op", out, re.M):
            runs.setdefault((m[1], m[2]), []).append(float(m[3]) / 1e6)
        print(f"Pillow {Image.__version__} (libjpeg-turbo {features.version_feature('libjpeg_turbo')}); ms per decode")
        print(f"{'file':>10} {'KiB':>5} {'turbo':>7} {'go':>7} {'go/turbo':>8} {'pil-draft':>9} {'pil-L':>7}")
        for name in sorted(os.listdir(tmp), key=lambda n: os.path.getsize(os.path.join(tmp, n))):
            label = name.removesuffix(".jpg")
            with open(os.path.join(tmp, name), "rb") as f:
                data = f.read()
            turbo = statistics.median(runs[("turbo", label)]) if ("turbo", label) in runs else float("nan")
            go = statistics.median(runs[("go", label)])
            print(f"{label:>10} {len(data) / 1024:5.0f} {turbo:7.2f} {go:7.2f} {go / turbo:8.2f} "
                  f"{pillow_ms(data, True):9.2f} {pillow_ms(data, False):7.2f}")


if __name__ == "__main__":
    sys.exit(main())
