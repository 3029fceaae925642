"""FFT convolution of a folder of images with PySpark and the pixelflight sidecar.

    bin/pixelflight serve &   # its default socket, which the client finds too
    python examples/convolve.py --images build/images --out build/demo-out

or under the executor plugin, on a cluster (spark-conf/README.md):

    spark-submit --properties-file spark-conf/standalone/spark-defaults.conf examples/convolve.py --images ...

The master comes from --master, else spark-submit's (spark.master), else
local[*]; the sidecar from the plugin or PIXELFLIGHT_ENDPOINT: the example
sets neither.

Reads every file under --images with Spark's binaryFile source, blurs each
with a Gaussian through the sidecar (fft_convolve), writes the results of the
first few as PNGs to --out, lists every row with its error, then times a
larger job (the folder repeated --repeat times) and prints images/s.
"""

import argparse
import os
import sys
import time

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pixelflight.spark import describe_sidecar, map_images


def main():
    # Executors run this same interpreter (the venv with pixelflight in it).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--images", default="build/images", help="folder of images (searched recursively)")
    ap.add_argument("--out", default="build/demo-out", help="folder for result PNGs")
    ap.add_argument("--master", default=os.environ.get("SPARK_MASTER"),
                    help="Spark master (default: spark-submit's --master or spark.master, else local[*])")
    ap.add_argument("--sigma", type=float, default=3.0, help="Gaussian sigma in pixels")
    ap.add_argument("--repeat", type=int, default=20, help="times the folder is repeated in the timed job")
    ap.add_argument("--save", type=int, default=6, help="result PNGs to write")
    args = ap.parse_args()

    builder = SparkSession.builder.appName("pixelflight-convolve").config("spark.ui.showConsoleProgress", "false")
    if args.master:
        builder = builder.master(args.master)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    print("sidecar: " + describe_sidecar(spark))

    df = spark.read.format("binaryFile").option("recursiveFileLookup", "true").load(args.images)
    blurred = map_images(df, "fft_convolve", keep=("path", "length"),
                         kernel="gaussian", sigma=args.sigma, output="png")
    rows = blurred.orderBy("path").collect()
    os.makedirs(args.out, exist_ok=True)
    saved = 0
    print("\n%-44s %9s %11s  %s" % ("image", "bytes", "result", "error"))
    for r in rows:
        name = os.path.basename(r["path"])
        size = "%dx%d" % (r["width"], r["height"]) if r["error"] is None else "-"
        print("%-44s %9d %11s  %s" % (name[:44], r["length"], size, r["error"] or ""))
        if r["error"] is None and saved < args.save:
            with open(os.path.join(args.out, name.replace(".", "_") + "_blur.png"), "wb") as f:
                f.write(r["png"])
            saved += 1
    bad = sum(r["error"] is not None for r in rows)
    print("\n%d rows, %d with errors; %d result PNGs written to %s" % (len(rows), bad, saved, os.path.abspath(args.out)))

    # The timed job: the folder repeated, results reduced to statistics.
    many = df.crossJoin(spark.range(args.repeat).withColumnRenamed("id", "copy")).repartition(
        spark.sparkContext.defaultParallelism * 2)
    many = many.cache()
    n = many.count()
    t0 = time.perf_counter()
    res = map_images(many, "fft_convolve", kernel="gaussian", sigma=args.sigma, output="stats")
    summary = res.agg(F.count("*").alias("rows"), F.count("error").alias("errors")).collect()[0]
    dt = time.perf_counter() - t0
    print("timed job: %d images (%d rows back, %d errors) in %.2f s: %.1f images/s through PySpark"
          % (n, summary["rows"], summary["errors"], dt, n / dt))
    spark.stop()


if __name__ == "__main__":
    main()
