"""CPU time vs GPU time of a PySpark FFT convolution job.

    python examples/cpu_vs_gpu.py --out build/experiments/cpu_vs_gpu [--quick]

The experiment of Continuum Analytics' "How to do Image Processing with
GPUs" (PySpark and NumbaPro: JPEGs to grayscale, a 2-D FFT convolution per
image, CPU time and GPU time printed per job), with pixelflight: the same
job (a Gaussian blur, results reduced to min/max/mean/std per image) run

- through a sidecar with the CPU backend only (``serve --backend cpu``),
- through a sidecar with the GPU backend only (``--backend cuda --workers 0``),
  where the sidecar's capabilities list a GPU backend; otherwise that row
  is written with status ``absent`` and no figures,
- as plain scipy.signal.fftconvolve in the Python workers (Pillow's gray,
  what a PySpark user writes without pixelflight).

Writes cpu_vs_gpu.csv (method, status, images, errors, seconds, images/s,
the largest difference of an image's mean from scipy's) and cpu_vs_gpu.png
(seconds and images/s per method) to --out.

Spark's master and the sidecars: expkit.OWN_SIDECARS (printed by --help).
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import expkit  # noqa: E402
from pixelflight import plots  # noqa: E402
from pixelflight.spark import map_images  # noqa: E402

FIELDS = ["method", "status", "images", "errors", "seconds", "images_per_s", "max_mean_diff", "note"]


def scipy_job(df, sigma):
    """The job without pixelflight: decode, gray and convolve in the Python workers."""

    def run(batches):
        import io
        import math

        import numpy as np
        import pyarrow as pa
        import scipy.signal as ss
        from PIL import Image

        size = 2 * math.ceil(3 * sigma) + 1
        x = np.arange(size) - (size - 1) / 2
        g = np.exp(-(x ** 2) / (2 * sigma ** 2))
        k = np.outer(g, g)
        k /= k.sum()
        for b in batches:
            out = {"path": b.column("path").to_pylist(), "mean": [], "error": []}
            for data in b.column("content").to_pylist():
                try:
                    gray = np.asarray(Image.open(io.BytesIO(data)).convert("L"), dtype=np.float64)
                    out["mean"].append(float(ss.fftconvolve(gray, k, mode="same").mean()))
                    out["error"].append(None)
                except Exception as e:  # a bad image fails its row, as in the sidecar
                    out["mean"].append(None)
                    out["error"].append(str(e))
            yield pa.RecordBatch.from_pydict(out)

    return df.mapInArrow(run, "path string, mean double, error string")


def timed(job):
    """Runs a job (a DataFrame of path, mean, error); returns (seconds,
    {path: mean}, rows with an error, rows answered)."""
    t0 = time.perf_counter()
    rows = job.collect()
    dt = time.perf_counter() - t0
    return dt, {r["path"]: r["mean"] for r in rows}, sum(r["error"] is not None for r in rows), len(rows)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__ + expkit.OWN_SIDECARS,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--images", default=os.path.join(expkit.ROOT, "build", "images", "good"))
    ap.add_argument("--out", default="build/experiments/cpu_vs_gpu")
    expkit.add_master(ap)
    ap.add_argument("--binary", default=expkit.BINARY, help="pixelflight binary (it runs pixelflight-cuda beside it for the GPU)")
    ap.add_argument("--copies", type=int, default=20, help="times each image is in the job")
    ap.add_argument("--sigma", type=float, default=3.0)
    ap.add_argument("--pattern", default="*", help="file names to take (a glob)")
    ap.add_argument("--quick", action="store_true", help="the c* images once, no warm-up run (the test's size)")
    args = ap.parse_args(argv)
    copies = 1 if args.quick else args.copies
    pattern = "c*" if args.quick else args.pattern

    gpus, why = expkit.gpu_backends(args.binary)
    spark, owned = expkit.session(args.master, "pixelflight-cpu-vs-gpu")
    print("Spark master: %s; sidecars started here, one per configuration" % spark.conf.get("spark.master"))
    df = None
    try:
        df = expkit.images(spark, args.images, copies, pattern=pattern)
        n = df.count()
        configs = [("sidecar cpu", ["--backend", "cpu"], None),
                   ("sidecar gpu", ["--backend", "cuda", "--workers", "0"], None if gpus else why),
                   ("scipy in Python workers", None, None)]
        rows, means = [], {}
        for method, serve, absent in configs:
            row = {"method": method, "images": n}
            if absent:
                rows.append(dict(row, status="absent", note=absent))
                print("%-26s absent: %s" % (method, absent))
                continue
            sidecar = expkit.Sidecar(*serve, binary=args.binary) if serve else None
            try:
                def job():
                    if sidecar is None:
                        return scipy_job(df, args.sigma)
                    return map_images(df, "fft_convolve", endpoint=sidecar.endpoint, kernel="gaussian",
                                      sigma=args.sigma, output="stats").select("path", "mean", "error")

                if not args.quick:
                    timed(job())  # warm-up: Python workers started, files in the page cache
                dt, means[method], errors, answered = timed(job())
                note = "backends %s" % sidecar.backends() if sidecar else ""
            finally:
                if sidecar:
                    sidecar.stop()
            rows.append(dict(row, status="ran" if answered == n else "lost rows", errors=errors, seconds=dt,
                             images_per_s=n / dt, note=note))
            print("%-26s %d images (%d answered, %d errors) in %.2f s: %.1f images/s"
                  % (method, n, answered, errors, dt, n / dt))
        ref = means.get("scipy in Python workers", {})
        for r in rows:
            got = means.get(r["method"])
            if got and ref:
                r["max_mean_diff"] = max(abs(got[p] - ref[p]) for p in ref if ref[p] is not None and got.get(p) is not None)
    finally:
        if df is not None:
            df.unpersist()
        if owned:
            spark.stop()
    os.makedirs(args.out, exist_ok=True)
    csv_path = expkit.write_csv(os.path.join(args.out, "cpu_vs_gpu.csv"), rows, FIELDS)
    png = plots.cpu_vs_gpu(plots.read_csv(csv_path), os.path.join(args.out, "cpu_vs_gpu.png"))
    print("wrote %s and %s" % (csv_path, png))
    return csv_path, [png]


if __name__ == "__main__":
    main()
