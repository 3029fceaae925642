"""A PySpark job run by test_plugin.py in its own process (and working
directory): the executor plugin starts the sidecars, nothing else does.

    python plugin_job.py MASTER PLUGIN_JAR BINARY IMAGES

Prints one JSON line: rows, errors, and the endpoints the tasks used.
"""

import json
import os
import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pixelflight.spark import map_images


def main():
    master, jar, binary, images = sys.argv[1:5]
    os.environ.pop("PIXELFLIGHT_ENDPOINT", None)
    spark = (SparkSession.builder.master(master).appName("pixelflight-plugin-test")
             .config("spark.jars", jar)
             .config("spark.plugins", "org.pixelflight.spark.PixelflightPlugin")
             .config("spark.pixelflight.binary", binary)
             .config("spark.pixelflight.args", "--workers 1 --log-format json")
             .config("spark.executor.cores", "1")
             .config("spark.cores.max", "2")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    df = spark.read.format("binaryFile").load(images).repartition(4)
    out = map_images(df, "fft_convolve", output="stats").select("path", "mean", "error")
    rows = out.collect()

    def where(_):
        from pixelflight.client import resolve_endpoint
        yield resolve_endpoint()

    endpoints = sorted(set(spark.sparkContext.parallelize(range(8), 8).mapPartitions(where).collect()))
    print(json.dumps({"rows": len(rows), "paths": len({r["path"] for r in rows}),
                      "errors": [r["error"] for r in rows if r["error"]], "endpoints": endpoints}))
    spark.stop()


if __name__ == "__main__":
    main()
