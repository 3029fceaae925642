"""Weak and strong scaling of detect_blobs and watershed on a Spark standalone cluster.

    python examples/scaling.py --out build/experiments/scaling [--workers 4] [--master spark://...] [--quick]

The experiment of "Image Processing using Task Parallel and Data Parallel
Frameworks" (Spark, Dask and RADICAL-Pilot on Comet: weak scaling from 512
images on 1 node to 4096 on 8, strong scaling of 4096 images over 1-8
nodes; Spark's strong-scaling speedup reached 6-7 of 8), with pixelflight:
for n = 1..--workers executors of one core, each with its own sidecar of
one CPU lane (the executor plugin, spark-plugin/), a job of detect_blobs
and one of watershed over

- weak: --per-worker copies of the image folder per executor (n times as many images for n),
- strong: --per-worker * --workers copies whatever n.

Without --master, a standalone master and --workers workers of one core
are started on this machine from pyspark's jars and stopped at the end;
with --master, that cluster's executors are used (spark.cores.max = n).
The plugin jar (`make plugin`) and the sidecar binary must be readable at
the same paths on every worker.

Writes scaling.csv (op, kind, workers, images, errors, seconds, images/s,
speedup and efficiency against n = 1) and scaling.png (weak time, strong
time and strong speedup against the ideal) to --out.
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import expkit  # noqa: E402
from pixelflight import plots  # noqa: E402
from pixelflight.spark import map_images  # noqa: E402

FIELDS = ["op", "kind", "workers", "images", "errors", "seconds", "images_per_s", "speedup", "efficiency"]
OPS = ("detect_blobs", "watershed")


def executors(spark):
    """Executors registered with the driver (the driver itself not counted)."""
    return spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1


def run(master, n, args):
    """The weak and strong jobs of every op on n executors; returns CSV rows."""
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    if SparkSession.getActiveSession() is not None:
        raise RuntimeError("scaling.py starts its own Spark applications: run it in a process without one")
    spark, _ = expkit.session(master, "pixelflight-scaling-%d" % n, **{
        "spark.jars": args.jar, "spark.plugins": "org.pixelflight.spark.PixelflightPlugin",
        "spark.pixelflight.binary": args.binary, "spark.pixelflight.args": "--workers 1 --log-format json",
        "spark.pixelflight.metricsListen": "", "spark.executor.cores": 1, "spark.cores.max": n,
        "spark.executor.memory": "512m"})
    rows = []
    try:
        deadline = time.time() + 120
        while executors(spark) < n:
            if time.time() > deadline:
                raise RuntimeError("%d executors did not register within 120 s on %s" % (n, master))
            time.sleep(0.2)
        jobs = [("weak", args.per_worker * n), ("strong", args.per_worker * args.workers)]
        if n == args.workers:  # the same job twice: run it once
            jobs = [("weak+strong", args.per_worker * n)]
        for kinds, copies in jobs:
            df = expkit.images(spark, args.images, copies, partitions=4 * n, pattern=args.pattern)
            count = df.count()
            if not args.quick and kinds == jobs[0][0]:
                # Untimed, once per application: every executor's Python workers and sidecar lanes warm.
                for op in OPS:
                    map_images(df, op).agg(F.count("error")).collect()
            for op in OPS:
                t0 = time.perf_counter()
                res = map_images(df, op).agg(F.count("*").alias("rows"), F.count("error").alias("errors")).collect()[0]
                dt = time.perf_counter() - t0
                for kind in kinds.split("+"):
                    rows.append({"op": op, "kind": kind, "workers": n, "images": res["rows"], "errors": res["errors"],
                                 "seconds": dt, "images_per_s": res["rows"] / dt})
                print("%-12s %-11s %d workers: %d images (%d answered, %d errors) in %.2f s: %.1f images/s"
                      % (op, kinds, n, count, res["rows"], res["errors"], dt, res["rows"] / dt))
            df.unpersist()
    finally:
        spark.stop()
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--images", default=os.path.join(expkit.ROOT, "build", "images", "good"))
    ap.add_argument("--pattern", default="*.png", help="file names to take (a glob)")
    ap.add_argument("--out", default="build/experiments/scaling")
    ap.add_argument("--master", help="an existing standalone cluster (default: start one here)")
    ap.add_argument("--workers", type=int, default=os.cpu_count(), help="largest number of executors")
    ap.add_argument("--per-worker", type=int, default=4, help="copies of the folder per executor (weak scaling)")
    ap.add_argument("--binary", default=expkit.BINARY)
    ap.add_argument("--jar", default=expkit.PLUGIN_JAR)
    ap.add_argument("--quick", action="store_true", help="1 and 2 workers, three small images, no warm-up job (the test's size)")
    args = ap.parse_args(argv)
    if args.quick:
        args.workers, args.per_worker, args.pattern = 2, 1, "{discs_320x240,noise_100,page}.png"
    if not os.path.exists(args.jar):
        raise SystemExit("%s is missing: run `make plugin`" % args.jar)

    rows = []
    cluster = None if args.master else expkit.StandaloneCluster(args.workers)
    try:
        master = args.master or cluster.master
        for n in range(1, args.workers + 1):
            rows += run(master, n, args)
    finally:
        if cluster:
            cluster.stop()
    base = {(r["op"], r["kind"]): r for r in rows if r["workers"] == 1}
    for r in rows:
        b = base[(r["op"], r["kind"])]
        # weak: the time per image-per-worker against n = 1; strong: the time.
        r["speedup"] = b["seconds"] / r["seconds"] * (r["workers"] if r["kind"] == "weak" else 1)
        r["efficiency"] = r["speedup"] / r["workers"]
    os.makedirs(args.out, exist_ok=True)
    csv_path = expkit.write_csv(os.path.join(args.out, "scaling.csv"), rows, FIELDS)
    png = plots.scaling(plots.read_csv(csv_path), os.path.join(args.out, "scaling.png"))
    print("wrote %s and %s" % (csv_path, png))
    return csv_path, [png]


if __name__ == "__main__":
    main()
