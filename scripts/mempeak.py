"""Peak memory of one row, per op: the figures behind each op's memory
model (udf/memory.go, docs/ops.md's Memory table).

For each op and params, a fresh `pixelflight serve --workers 1` runs one
W x W image (smooth noise: the detectors find structure in it); the row's
peak is the sidecar's peak resident memory (VmHWM) less its resident
memory before the row, per pixel.

    .venv/bin/python scripts/mempeak.py [--side 4000] [--ops '[["watershed", {}]]'] [-- serve flags]
"""

import argparse
import io
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
from PIL import Image

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
from pixelflight import Client  # noqa: E402

# A 15x15 kernel of rank above 1: fft_convolve takes it by FFT (the default
# Gaussian goes as two 1-D passes), whose rows take the most memory.
FFT_MATRIX = [[(i * 15 + j * j) % 7 for j in range(15)] for i in range(15)]

CASES = [("fft_convolve", {"output": "f32"}), ("fft_convolve", {"output": "png"}),
         ("fft_convolve", {"output": "stats"}), ("fft_convolve", {"output": "f32", "matrix": FFT_MATRIX}),
         ("fft_convolve", {"output": "stats", "matrix": FFT_MATRIX}),
         ("detect_blobs", {}), ("detect_blobs", {"num_sigma": 20}),
         ("detect_faces", {}), ("detect_faces", {"annotate": True}), ("watershed", {})]


def image(side):
    """A side x side PNG of smooth noise."""
    rng = np.random.default_rng(0)
    small = rng.integers(0, 256, (max(side // 8, 1), max(side // 8, 1)), dtype=np.uint8)
    buf = io.BytesIO()
    Image.fromarray(small).resize((side, side), Image.BILINEAR).save(buf, "PNG")
    return buf.getvalue()


def memory(pid):
    out = {}
    for line in open("/proc/%d/status" % pid):
        key, value = line.split(":", 1)
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(value.split()[0]) << 10
    return out


def peak(binary, op, params, png, side, flags=()):
    """The row's peak bytes (VmHWM less VmRSS before it), its error, seconds."""
    with tempfile.TemporaryDirectory() as d:
        sock = os.path.join(d, "s.sock")
        p = subprocess.Popen([binary, "serve", "--listen", "grpc+unix://" + sock, "--workers", "1", *flags],
                             stderr=subprocess.DEVNULL)
        try:
            deadline = time.time() + 20
            while True:
                try:
                    with Client("grpc+unix://" + sock) as c:
                        c.health()
                    break
                except Exception:
                    if time.time() > deadline:
                        raise
                    time.sleep(0.05)
            before = memory(p.pid)["VmRSS"]
            start = time.time()
            batch = pa.record_batch([pa.array([png], pa.binary())], names=["content"])
            with Client("grpc+unix://" + sock) as c:
                [res] = list(c.map_batches(op, [batch], **params))
            took = time.time() - start
            return memory(p.pid)["VmHWM"] - before, res.column("error")[0].as_py(), took
        finally:
            p.terminate()
            p.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--side", type=int, default=4000)
    ap.add_argument("--ops", help="JSON list of [op, params]")
    ap.add_argument("--bin", default=os.path.join(ROOT, "bin", "pixelflight"))
    ap.add_argument("flags", nargs="*", help="more serve flags, after --")
    a = ap.parse_args()
    png = image(a.side)
    for op, params in json.loads(a.ops) if a.ops else CASES:
        n, err, took = peak(a.bin, op, params, png, a.side, a.flags)
        print("%-13s %-22s peak %7.0f MB  %5.1f B/px  %5.1fs %s"
              % (op, json.dumps(params), n / 1e6, n / a.side ** 2, took, err or ""), flush=True)


if __name__ == "__main__":
    main()
