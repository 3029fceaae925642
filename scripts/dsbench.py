"""make bench-datasource: the plugin jar's data source against binaryFile +
map_images, side by side in one run.

The same files (N 512x512 JPEGs, quality 90, about 60 KB, written to a
temporary folder), the same Spark (local[CORES]) and the same sidecar
(started here, --workers CORES). For op info (transport only) and
fft_convolve stats (sigma 3), each path reads every file once per round,
rounds alternating; printed per path: images/s, executor CPU-seconds per
image (the Spark JVM and its Python workers, /proc utime + stime of the
process tree, the sidecar not counted), and the sidecar alone fed the same
bytes by one in-process client, as the reference for images/s.

With --standalone, Spark is a standalone cluster started here (a master
and one worker of CORES cores, from pip's pyspark) instead of local mode:
the executor is then a JVM of its own, and its CPU (with its Python
workers) is printed apart from the driver's.

    .venv/bin/python scripts/dsbench.py [--files 400] [--cores 2] [--rounds 2] [--jar JAR] [--open-cost BYTES] [--standalone]
"""

import argparse
import io
import os
import shutil
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import skimage.data as data
from PIL import Image
from pyspark.sql import SparkSession

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
from conftest import Sidecar, start_standalone, stop_standalone  # noqa: E402
from pixelflight import Client  # noqa: E402
from pixelflight.spark import map_images, read_images  # noqa: E402

JAR = os.path.join(ROOT, "spark-plugin", "target", "pixelflight-spark-plugin.jar")
TICK = os.sysconf("SC_CLK_TCK")
OPS = [("info", {}), ("fft_convolve", {"output": "stats", "sigma": 3.0})]


def write_images(d, n):
    src = np.asarray(Image.fromarray(data.astronaut()).convert("L").resize((1024, 1024)))
    rng = np.random.default_rng(1)
    for i in range(n):
        y, x = rng.integers(0, 512, 2)
        buf = io.BytesIO()
        Image.fromarray(src[y:y + 512, x:x + 512]).save(buf, "JPEG", quality=90)
        with open(os.path.join(d, "f%05d.jpg" % i), "wb") as f:
            f.write(buf.getvalue())


def tree_cpu(pid):
    """CPU seconds of pid and its descendants, with their reaped children."""
    kids = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/stat" % d) as f:
                    st = f.read().rsplit(")", 1)[1].split()
                kids.setdefault(int(st[1]), []).append((int(d), st))
            except OSError:
                pass
    total, todo = 0, [pid]
    with open("/proc/%d/stat" % pid) as f:
        own = f.read().rsplit(")", 1)[1].split()
    total += sum(int(v) for v in own[11:15])
    while todo:
        for child, st in kids.get(todo.pop(), []):
            total += sum(int(v) for v in st[11:15])
            todo.append(child)
    return total / TICK


def executor_pid():
    """The pid of the one standalone executor JVM."""
    for d in os.listdir("/proc"):
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                if b"CoarseGrainedExecutorBackend" in f.read():
                    return int(d)
        except OSError:
            pass
    raise RuntimeError("no executor JVM")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=400)
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--jar", default=JAR, help="the plugin jar (default: spark-plugin/target's)")
    ap.add_argument("--open-cost", type=int, help="spark.sql.files.openCostInBytes (unset: the data source packs files by 64 KB each, binaryFile by 4 MB)")
    ap.add_argument("--standalone", action="store_true", help="a standalone cluster of one worker, not local mode")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="dsbench-")
    imgs = os.path.join(tmp, "img")
    os.makedirs(imgs)
    write_images(imgs, a.files)
    sidecar = Sidecar("grpc+unix://%s/s.sock" % tmp, "--workers", str(a.cores), "--metrics-listen", "")
    os.environ["PIXELFLIGHT_ENDPOINT"] = sidecar.location
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    master, cluster = "local[%d]" % a.cores, []
    if a.standalone:
        master, cluster = start_standalone(tmp, os.environ, workers=1, cores=a.cores, memory="2g")
    spark = (SparkSession.builder.master(master).config("spark.jars", a.jar)
             .config("spark.executorEnv.PIXELFLIGHT_ENDPOINT", sidecar.location)
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false"))
    if a.open_cost:
        spark = spark.config("spark.sql.files.openCostInBytes", str(a.open_cost))
    spark = spark.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    driver = spark._jvm.java.lang.ProcessHandle.current().pid()
    paths = sorted(os.path.join(imgs, n) for n in os.listdir(imgs))
    content = pa.record_batch([pa.array([open(p, "rb").read() for p in paths], pa.binary())], names=["content"])
    nbytes = sum(os.path.getsize(p) for p in paths)
    tasks = read_images(spark, imgs, "info").rdd.getNumPartitions()
    executor = executor_pid() if a.standalone else driver
    where = "a standalone worker of %d cores" % a.cores if a.standalone else "local[%d]" % a.cores
    print("%d files, %.1f KB each on average, %s, sidecar --workers %d, %d tasks a query"
          % (a.files, nbytes / a.files / 1e3, where, a.cores, tasks))

    def datasource(op, params):
        return read_images(spark, imgs, op, **params).filter("error is null").count()

    def mapinarrow(op, params):
        df = spark.read.format("binaryFile").load(imgs)
        return map_images(df, op, **params).filter("error is null").count()

    def alone(op, params):
        with Client(sidecar.location) as c:
            return sum(b.column("error").null_count for b in c.map_batches(op, [content], **params))

    try:
        for op, params in OPS:
            for f in (datasource, mapinarrow):  # warm up: JIT, Python workers
                f(op, params)
            res = {}
            for _ in range(a.rounds):
                for name, f in (("data source", datasource), ("binaryFile + map_images", mapinarrow),
                                ("sidecar alone", alone)):
                    c0, d0, t0 = tree_cpu(executor), tree_cpu(driver), time.perf_counter()
                    n = f(op, params)
                    t, cpu, dcpu = time.perf_counter() - t0, tree_cpu(executor) - c0, tree_cpu(driver) - d0
                    assert n == a.files, (name, n)
                    r = res.setdefault(name, [0, 0.0, 0.0, 0.0])
                    r[0] += n
                    r[1] += t
                    r[2] += cpu
                    r[3] += dcpu
            print("\n%s %s" % (op, params or ""))
            for name, (n, t, cpu, dcpu) in res.items():
                cpu_col = ""
                if name != "sidecar alone":
                    cpu_col = "   %.2f ms executor CPU/image" % (cpu / n * 1e3)
                    if a.standalone:
                        cpu_col += ", driver %.2f ms" % (dcpu / n * 1e3)
                print("  %-26s %7.1f images/s%s" % (name, n / t, cpu_col))
    finally:
        spark.stop()
        sidecar.stop()
        stop_standalone(cluster)
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
