"""A PySpark job run by test_faults.py in its own process (and working
directory), while the test kills or stops the sidecar under it.

    python fault_job.py MASTER IMAGES OUT [spark.key=value ...]

Runs detect_blobs over the files in IMAGES (binaryFile, 4 partitions) and
writes the rows (path, blobs, error) to OUT as JSON. The settings turn the
executor plugin on; without them the sidecar is PIXELFLIGHT_ENDPOINT's. A
failed job exits non-zero with Spark's error (the Python client's inside)
on stderr. PIXELFLIGHT_TEST_CONNECT=1: a Spark Connect session on MASTER.
"""

import json
import os
import sys

from pyspark.sql import SparkSession

from pixelflight.spark import map_images


def main():
    master, images, out = sys.argv[1:4]
    connect = os.environ.get("PIXELFLIGHT_TEST_CONNECT") == "1"
    builder = SparkSession.builder.remote(master) if connect else SparkSession.builder.master(master)
    builder = (builder.appName("pixelflight-fault-test")
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false"))
    for setting in sys.argv[4:]:
        key, value = setting.split("=", 1)
        if connect and key == "spark.plugins":
            # pyspark's local Spark Connect server (remote("local[...]")) sets
            # spark.plugins to its own plugin; Spark loads these too.
            key = "spark.plugins.defaultList"
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    if not connect:
        spark.sparkContext.setLogLevel("ERROR")
    df = spark.read.format("binaryFile").load(images).repartition(4)
    rows = map_images(df, "detect_blobs").collect()
    with open(out, "w") as f:
        json.dump([{"path": r["path"], "blobs": None if r["blobs"] is None else [list(b) for b in r["blobs"]],
                    "error": r["error"]} for r in rows], f)
    spark.stop()


if __name__ == "__main__":
    main()
