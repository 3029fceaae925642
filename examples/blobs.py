"""Blob and watershed-segment counts per image with PySpark and the pixelflight sidecar.

    bin/pixelflight serve &   # its default socket, which the client finds too
    python examples/blobs.py --images build/images/good

or under the executor plugin, on a cluster (spark-conf/README.md):

    spark-submit --properties-file spark-conf/standalone/spark-defaults.conf examples/blobs.py --images ...

The master comes from --master, else spark-submit's (spark.master), else
local[*]; the sidecar from the plugin or PIXELFLIGHT_ENDPOINT: the example
sets neither.

Runs detect_blobs (Laplacian of Gaussian, as skimage.feature.blob_log) and
watershed (distance-transform watershed, as scikit-image) over every image
under --images and prints, per image, the number of blobs and segments.
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
    ap.add_argument("--images", default="build/images/good")
    ap.add_argument("--master", default=os.environ.get("SPARK_MASTER"),
                    help="Spark master (default: spark-submit's --master or spark.master, else local[*])")
    ap.add_argument("--max-sigma", type=float, default=20.0)
    ap.add_argument("--threshold", type=float, default=0.1)
    args = ap.parse_args()

    builder = SparkSession.builder.appName("pixelflight-blobs").config("spark.ui.showConsoleProgress", "false")
    if args.master:
        builder = builder.master(args.master)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    print("sidecar: " + describe_sidecar(spark))
    df = spark.read.format("binaryFile").option("recursiveFileLookup", "true").load(args.images).cache()
    n = df.count()

    t0 = time.perf_counter()
    blobs = map_images(df, "detect_blobs", max_sigma=args.max_sigma, threshold=args.threshold) \
        .select("path", F.size("blobs").alias("blobs"), F.col("error").alias("blob_error"))
    segs = map_images(df, "watershed").select("path", "segments", F.col("error").alias("seg_error"))
    rows = blobs.join(segs, "path").orderBy("path").collect()
    dt = time.perf_counter() - t0
    print("\n%-36s %6s %9s  %s" % ("image", "blobs", "segments", "error"))
    for r in rows:
        err = r["blob_error"] or r["seg_error"] or ""
        print("%-36s %6s %9s  %s" % (os.path.basename(r["path"])[:36],
                                     "-" if r["blob_error"] else r["blobs"],
                                     "-" if r["seg_error"] else r["segments"], err))
    print("\n%d images through detect_blobs and watershed in %.2f s: %.1f images/s" % (n, dt, n / dt))
    spark.stop()


if __name__ == "__main__":
    main()
