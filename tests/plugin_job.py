"""A PySpark job run by test_plugin.py in its own process (and working
directory): the executor plugin starts the sidecars, nothing else does.

    python plugin_job.py MASTER PLUGIN_JAR BINARY IMAGES [METRICS_LISTEN]

Prints one JSON line: rows, errors, the endpoints the tasks used, and with
METRICS_LISTEN (set as spark.pixelflight.metricsListen) the rows the
sidecar's Prometheus endpoint counted.
"""

import json
import os
import sys
import urllib.request

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pixelflight.spark import map_images


def main():
    master, jar, binary, images = sys.argv[1:5]
    metrics = sys.argv[5] if len(sys.argv) > 5 else ""
    os.environ.pop("PIXELFLIGHT_ENDPOINT", None)
    builder = SparkSession.builder
    if metrics:
        builder = builder.config("spark.pixelflight.metricsListen", metrics)
    spark = (builder.master(master).appName("pixelflight-plugin-test")
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
    counted = None
    if metrics:
        text = urllib.request.urlopen("http://%s/metrics" % metrics, timeout=10).read().decode()
        counted = sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                      if line.startswith("pixelflight_rows_total{"))
    print(json.dumps({"rows": len(rows), "paths": len({r["path"] for r in rows}),
                      "errors": [r["error"] for r in rows if r["error"]], "endpoints": endpoints,
                      "metrics_rows": counted}))
    spark.stop()


if __name__ == "__main__":
    main()
