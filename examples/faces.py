"""Faces per photo or video frame with PySpark and the pixelflight sidecar.

    bin/pixelflight serve &   # its default socket, which the client finds too
    python examples/faces.py --images build/images/faces --out build/demo-out/faces

or under the executor plugin, on a cluster (spark-conf/README.md):

    spark-submit --properties-file spark-conf/standalone/spark-defaults.conf examples/faces.py --images ...

The master comes from --master, else spark-submit's (spark.master), else
local[*]; the sidecar from the plugin or PIXELFLIGHT_ENDPOINT: the example
sets neither.

Runs detect_faces (Viola-Jones with OpenCV's Haar cascade, as
cv2.CascadeClassifier.detectMultiScale) over every image under --images,
prints the faces found per image, writes each annotated frame (grayscale,
white box around each face) to --out, and reports frames/s.
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
    ap.add_argument("--images", default="build/images/faces")
    ap.add_argument("--out", default="build/demo-out/faces")
    ap.add_argument("--master", default=os.environ.get("SPARK_MASTER"),
                    help="Spark master (default: spark-submit's --master or spark.master, else local[*])")
    ap.add_argument("--cascade", default="haarcascade_frontalface_default")
    ap.add_argument("--min-neighbors", type=int, default=3)
    args = ap.parse_args()

    builder = SparkSession.builder.appName("pixelflight-faces").config("spark.ui.showConsoleProgress", "false")
    if args.master:
        builder = builder.master(args.master)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    print("sidecar: " + describe_sidecar(spark))
    df = spark.read.format("binaryFile").option("recursiveFileLookup", "true").load(args.images).cache()
    n = df.count()

    t0 = time.perf_counter()
    rows = (map_images(df, "detect_faces", cascade=args.cascade, min_neighbors=args.min_neighbors, annotate=True)
            .select("path", "faces", "annotated", "error").orderBy("path").collect())
    dt = time.perf_counter() - t0

    os.makedirs(args.out, exist_ok=True)
    print("\n%-32s %5s  %s" % ("image", "faces", "boxes (x, y, w, h) or error"))
    total = 0
    for r in rows:
        name = os.path.basename(r["path"])
        if r["error"]:
            print("%-32s %5s  %s" % (name[:32], "-", r["error"]))
            continue
        total += len(r["faces"])
        boxes = " ".join("(%d,%d,%d,%d)" % (f["x"], f["y"], f["w"], f["h"]) for f in r["faces"][:4])
        if len(r["faces"]) > 4:
            boxes += " ..."
        print("%-32s %5d  %s" % (name[:32], len(r["faces"]), boxes))
        with open(os.path.join(args.out, os.path.splitext(name)[0] + "_faces.png"), "wb") as f:
            f.write(r["annotated"])
    print("\n%d faces in %d frames; annotated frames in %s" % (total, n, args.out))
    print("%d frames through detect_faces in %.2f s: %.1f frames/s" % (n, dt, n / dt))
    spark.stop()


if __name__ == "__main__":
    main()
