"""A PySpark job run by test_faults.py in its own process (and working
directory), while the test kills or stops the sidecar under it.

    python fault_job.py MASTER IMAGES OUT [spark.key=value ...]

Runs detect_blobs over the files in IMAGES (binaryFile, 4 partitions) and
writes the rows (path, blobs, error) to OUT as JSON. The settings turn the
executor plugin on; without them the sidecar is PIXELFLIGHT_ENDPOINT's. A
failed job exits non-zero with Spark's error (the Python client's inside)
on stderr.
"""

import json
import sys

from pyspark.sql import SparkSession

from pixelflight.spark import map_images


def main():
    master, images, out = sys.argv[1:4]
    builder = (SparkSession.builder.master(master).appName("pixelflight-fault-test")
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false"))
    for setting in sys.argv[4:]:
        builder = builder.config(*setting.split("=", 1))
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    df = spark.read.format("binaryFile").load(images).repartition(4)
    rows = map_images(df, "detect_blobs").collect()
    with open(out, "w") as f:
        json.dump([{"path": r["path"], "blobs": None if r["blobs"] is None else [list(b) for b in r["blobs"]],
                    "error": r["error"]} for r in rows], f)
    spark.stop()


if __name__ == "__main__":
    main()
