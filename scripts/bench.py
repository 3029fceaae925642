"""make bench: fft_convolve, ours vs scipy.signal.fftconvolve, side by side.

One run, the same 512x512 grayscale images, a 31x31 Gaussian (sigma 5),
mode "same", one core each: the sidecar runs with --workers 1 and
GOMAXPROCS=1 pinned to CPU 0; scipy runs single-threaded pinned to CPU 1.
Prints ms/image for each and the ratio, then images/s for the whole
PySpark path (local[N], binaryFile PNGs) against the sidecar alone fed the
same PNGs by one client.

    .venv/bin/python scripts/bench.py --images build/images/good
"""

import argparse
import glob
import json
import math
import os
import sys
import shutil
import subprocess
import tempfile
import time

import cv2
import numpy as np
import pyarrow as pa
import scipy
import scipy.signal as ss
from PIL import Image

from convref import gaussian
from pixelflight import Client

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIGMA, SIZE = 5.0, 31


def kernel():
    return gaussian(SIGMA, SIZE)


def images_512(folder, n):
    """Real 512x512 images (scikit-image's) topped up with crops and noise."""
    out = []
    for p in sorted(glob.glob(os.path.join(folder, "*.png"))):
        im = np.asarray(Image.open(p).convert("L"))
        if im.shape[0] >= 512 and im.shape[1] >= 512:
            out.append(np.ascontiguousarray(im[:512, :512]))
    rng = np.random.default_rng(0)
    while len(out) < n:
        out.append(rng.integers(0, 256, (512, 512), dtype=np.uint8))
    return out[:n]


def pin(cpu):
    if hasattr(os, "sched_setaffinity") and os.cpu_count() > cpu:
        os.sched_setaffinity(0, {cpu})


def start_sidecar(sock, workers, cpus):
    env = dict(os.environ, GOMAXPROCS=str(workers))
    cmd = [os.path.join(ROOT, "bin", "pixelflight"), "serve", "--listen", "grpc+unix://" + sock,
           "--workers", str(workers), "--log-level", "warn"]
    if shutil.which("taskset") and cpus:
        cmd = ["taskset", "-c", cpus] + cmd
    proc = subprocess.Popen(cmd, env=env)
    for _ in range(200):
        try:
            with Client("grpc+unix://" + sock) as c:
                c.health()
            return proc
        except Exception:
            time.sleep(0.05)
    proc.kill()
    raise SystemExit("sidecar did not start")


def struct_batch(imgs):
    h, w = imgs[0].shape
    n = len(imgs)
    return pa.RecordBatch.from_arrays([pa.StructArray.from_arrays(
        [pa.array(["bench"] * n), pa.array([h] * n, pa.int32()), pa.array([w] * n, pa.int32()),
         pa.array([1] * n, pa.int32()), pa.array([0] * n, pa.int32()),
         pa.array([im.tobytes() for im in imgs], pa.binary())],
        names=["origin", "height", "width", "nChannels", "mode", "data"])], names=["image"])


def time_sidecar(client, batch, column, rounds):
    params = dict(kernel="gaussian", sigma=SIGMA, size=SIZE, output="stats")
    list(client.map_batches("fft_convolve", [batch], column=column, **params))  # warm: plans, spectra
    best = math.inf
    for _ in range(rounds):
        t0 = time.perf_counter()
        out = list(client.map_batches("fft_convolve", [batch], column=column, **params))
        best = min(best, (time.perf_counter() - t0) / batch.num_rows)
        assert sum(b.column("error").null_count for b in out) == batch.num_rows
    return best


def time_scipy(imgs, dtype, rounds):
    k = kernel().astype(dtype)
    xs = [im.astype(dtype) for im in imgs]
    ss.fftconvolve(xs[0], k, mode="same")
    best = math.inf
    for _ in range(rounds):
        t0 = time.perf_counter()
        for x in xs:
            ss.fftconvolve(x, k, mode="same")
        best = min(best, (time.perf_counter() - t0) / len(xs))
    return best


def time_detect(client, img, op, params, ref, rounds):
    """ms per image for op through the sidecar and for the scikit-image reference."""
    b = struct_batch([img])
    list(client.map_batches(op, [b], column="image", **params))
    ours = sp = math.inf
    for _ in range(rounds):
        t0 = time.perf_counter()
        [out] = client.map_batches(op, [b], column="image", **params)
        ours = min(ours, time.perf_counter() - t0)
        assert out.column("error").null_count == 1
        t0 = time.perf_counter()
        ref(img)
        sp = min(sp, time.perf_counter() - t0)
    return ours * 1e3, sp * 1e3


def time_faces(client, rounds):
    """ms per frame for detect_faces and cv2.CascadeClassifier.detectMultiScale2,
    default params, on the astronaut (512x512) and the astronaut as a 640x480 frame."""
    from skimage.data import astronaut
    cv2.setNumThreads(1)
    gray = np.asarray(Image.fromarray(astronaut()).convert("L"))
    frame = np.asarray(Image.fromarray(gray).resize((640, 480), Image.BILINEAR))
    out = {}
    for cascade in ("haarcascade_frontalface_default", "haarcascade_frontalface_alt2"):
        clf = cv2.CascadeClassifier("/usr/share/opencv4/haarcascades/%s.xml" % cascade)
        for label, img in (("512x512", gray), ("640x480", frame)):
            out[(label, cascade)] = time_detect(client, img, "detect_faces", {"cascade": cascade},
                                                lambda im: clf.detectMultiScale2(im, 1.1, 3), rounds)
    return out


def skimage_watershed(img):
    import scipy.ndimage as ndi
    from skimage.feature import peak_local_max
    from skimage.filters import threshold_otsu
    from skimage.segmentation import watershed
    fg = img > threshold_otsu(img)
    dist = ndi.distance_transform_edt(fg)
    coords = peak_local_max(dist, min_distance=5, labels=fg.astype(int))
    markers = np.zeros(dist.shape, int)
    markers[tuple(coords.T)] = np.arange(1, len(coords) + 1)
    return watershed(-dist, markers, mask=fg)


def discs_512():
    rng = np.random.default_rng(3)
    yy, xx = np.mgrid[0:512, 0:512]
    img = np.zeros((512, 512), np.uint8)
    for _ in range(40):
        cy, cx, r = rng.integers(40, 472), rng.integers(40, 472), rng.integers(15, 40)
        img[(yy - cy) ** 2 + (xx - cx) ** 2 < r * r] = 200
    return img


def spark_path(imgs, sock, copies):
    """images/s: PySpark local[N] over PNG files vs one client feeding the sidecar the same PNGs."""
    from pyspark.sql import SparkSession

    from pixelflight.spark import map_images

    d = tempfile.mkdtemp(prefix="pf-bench-")
    pngs = []
    for i in range(copies):
        for j, im in enumerate(imgs):
            p = os.path.join(d, "img_%03d_%02d.png" % (i, j))
            Image.fromarray(im).save(p)
            pngs.append(p)
    endpoint = "grpc+unix://" + sock
    params = dict(kernel="gaussian", sigma=SIGMA, size=SIZE, output="stats")
    with Client(endpoint) as c:
        b = pa.RecordBatch.from_arrays([pa.array([open(p, "rb").read() for p in pngs], pa.binary())], names=["content"])
        list(c.map_batches("fft_convolve", [b.slice(0, 4)], **params))
        t0 = time.perf_counter()
        list(c.map_batches("fft_convolve", [b], **params))
        alone = len(pngs) / (time.perf_counter() - t0)
    n = os.cpu_count()
    spark = (SparkSession.builder.master("local[%d]" % n).appName("pixelflight-bench")
             .config("spark.executorEnv.PIXELFLIGHT_ENDPOINT", endpoint)
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    df = spark.read.format("binaryFile").load(d).repartition(2 * n).cache()
    df.count()
    map_images(df, "fft_convolve", endpoint=endpoint, **params).count()  # warm the Python workers
    t0 = time.perf_counter()
    rows = map_images(df, "fft_convolve", endpoint=endpoint, **params).where("error is null").count()
    spark_rate = rows / (time.perf_counter() - t0)
    spark.stop()
    shutil.rmtree(d)
    return alone, spark_rate, len(pngs)


def main():
    # Executors run this same interpreter (the venv with pixelflight in it).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    ap = argparse.ArgumentParser()
    ap.add_argument("--images", default="build/images/good")
    ap.add_argument("-n", type=int, default=8, help="images")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--copies", type=int, default=16, help="copies of the images for the PySpark run")
    ap.add_argument("--no-spark", action="store_true")
    ap.add_argument("--json", help="also write the figures here")
    args = ap.parse_args()
    imgs = images_512(args.images, args.n)
    sock = os.path.join(tempfile.mkdtemp(prefix="pf-"), "bench.sock")

    proc = start_sidecar(sock, 1, "0")
    pin(1 if os.cpu_count() > 1 else 0)
    try:
        with Client("grpc+unix://" + sock) as c:
            ours_raw = time_sidecar(c, struct_batch(imgs), "image", args.rounds)
            pngs = [pa.py_buffer(_png(im)) for im in imgs]
            png_batch = pa.RecordBatch.from_arrays([pa.array([p.to_pybytes() for p in pngs], pa.binary())], names=["content"])
            ours_png = time_sidecar(c, png_batch, "content", args.rounds)
            from skimage.data import coins
            from skimage.feature import blob_log
            blob_ms = time_detect(c, coins(), "detect_blobs", {}, lambda im: blob_log(im / 255.0), 3)
            ws_ms = time_detect(c, discs_512(), "watershed", {}, skimage_watershed, args.rounds)
            face_ms = time_faces(c, args.rounds)
    finally:
        proc.terminate()
        proc.wait()
    sp64 = time_scipy(imgs, np.float64, args.rounds)
    sp32 = time_scipy(imgs, np.float32, args.rounds)
    os.sched_setaffinity(0, set(range(os.cpu_count()))) if hasattr(os, "sched_setaffinity") else None

    res = {"images": len(imgs), "size": "512x512", "kernel": "gaussian 31x31 sigma 5", "mode": "same",
           "ours_ms": ours_raw * 1e3, "ours_png_ms": ours_png * 1e3,
           "scipy_f64_ms": sp64 * 1e3, "scipy_f32_ms": sp32 * 1e3, "scipy": scipy.__version__}
    print("fft_convolve 512x512, 31x31 gaussian, mode same, one core each, %d images, best of %d"
          % (len(imgs), args.rounds))
    print("  pixelflight (raw gray in, stats out)        %7.2f ms/image" % res["ours_ms"])
    print("  pixelflight (PNG in: decode + convolve)      %7.2f ms/image" % res["ours_png_ms"])
    print("  scipy.signal.fftconvolve float64 (uint8->float) %4.2f ms/image   ratio scipy/ours %.2f"
          % (res["scipy_f64_ms"], sp64 / ours_raw))
    print("  scipy.signal.fftconvolve float32               %5.2f ms/image   ratio scipy/ours %.2f"
          % (res["scipy_f32_ms"], sp32 / ours_raw))

    res.update({"blobs_coins_ms": blob_ms, "watershed_discs512_ms": ws_ms})
    print("detection, one core each, best of runs:")
    print("  detect_blobs, coins 303x384, defaults:  ours %7.1f ms   skimage blob_log %7.1f ms   ratio %.2f"
          % (blob_ms[0], blob_ms[1], blob_ms[1] / blob_ms[0]))
    print("  watershed, 512x512 discs:               ours %7.1f ms   skimage pipeline %7.1f ms   ratio %.2f"
          % (ws_ms[0], ws_ms[1], ws_ms[1] / ws_ms[0]))
    res.update({"faces_ms": face_ms, "opencv": cv2.__version__})
    for (label, cascade), (o, r) in face_ms.items():
        print("  detect_faces, %-9s %s:  ours %7.1f ms   OpenCV %s %7.1f ms   ratio %.2f"
              % (label, cascade.replace("haarcascade_frontalface_", ""), o, cv2.__version__, r, r / o))
    if not args.no_spark:
        proc = start_sidecar(sock, os.cpu_count(), "")
        try:
            alone, spark_rate, n = spark_path(imgs, sock, args.copies)
        finally:
            proc.terminate()
            proc.wait()
        res.update({"sidecar_alone_images_per_s": alone, "pyspark_images_per_s": spark_rate, "pyspark_images": n})
        print("whole path, all %d cores, %d PNG images 512x512:" % (os.cpu_count(), n))
        print("  sidecar alone (one pyarrow client)  %6.1f images/s" % alone)
        print("  PySpark local[%d] binaryFile -> map_images  %6.1f images/s  (%.0f%% of the sidecar alone)"
              % (os.cpu_count(), spark_rate, 100 * spark_rate / alone))
    if args.json:
        res["faces_ms"] = {"%s %s" % k: v for k, v in res["faces_ms"].items()}
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)


def _png(im):
    import io
    b = io.BytesIO()
    Image.fromarray(im).save(b, "PNG")
    return b.getvalue()


if __name__ == "__main__":
    main()
