"""A PySpark job run by test_plugin.py in its own process (and working
directory): the executor plugin starts the sidecars, nothing else does.

    python plugin_job.py MASTER PLUGIN_JAR BINARY IMAGES [METRICS_LISTEN]

Prints one JSON line: rows, errors, the endpoints the tasks used, and with
METRICS_LISTEN (set as spark.pixelflight.metricsListen) the rows the
sidecar's Prometheus endpoint counted; then the same op through the jar's
`pixelflight` data source (no Python on the executors): its rows and the
paths whose results differ from map_images'. PIXELFLIGHT_TEST_CONNECT=1: a Spark
Connect session on MASTER.
"""

import json
import os
import re
import sys
import urllib.request

import pyarrow as pa

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pixelflight.spark import map_images, read_images


# pyspark's local Spark Connect server (remote("local[...]")) sets
# spark.plugins to its own plugin; Spark loads the plugins of this key too.
PLUGINS_KEY = "spark.plugins.defaultList"


def main():
    master, jar, binary, images = sys.argv[1:5]
    metrics = sys.argv[5] if len(sys.argv) > 5 else ""
    os.environ.pop("PIXELFLIGHT_ENDPOINT", None)
    connect = os.environ.get("PIXELFLIGHT_TEST_CONNECT") == "1"
    builder = SparkSession.builder.remote(master) if connect else SparkSession.builder.master(master)
    if metrics:
        builder = builder.config("spark.pixelflight.metricsListen", metrics)
    spark = (builder.appName("pixelflight-plugin-test")
             .config("spark.jars", jar)
             .config(PLUGINS_KEY if connect else "spark.plugins", "org.pixelflight.spark.PixelflightPlugin")
             .config("spark.pixelflight.binary", binary)
             .config("spark.pixelflight.args", "--workers 1 --log-format json")
             .config("spark.executor.cores", "1")
             .config("spark.cores.max", "2")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .getOrCreate())
    if not connect:
        spark.sparkContext.setLogLevel("ERROR")
    df = spark.read.format("binaryFile").load(images).repartition(4)
    out = map_images(df, "fft_convolve", output="stats").select("path", "mean", "error")
    rows = out.collect()

    def where(batches):
        from pixelflight.client import resolve_endpoint
        for _ in batches:
            pass
        endpoint, source = resolve_endpoint()
        yield pa.RecordBatch.from_pydict({"endpoint": [endpoint], "source": [source]})

    endpoints = sorted({(r["endpoint"], r["source"]) for r in
                        spark.range(0, 8, 1, 8).mapInArrow(where, "endpoint string, source string").collect()})
    counted = labels = None
    if metrics:
        text = urllib.request.urlopen("http://%s/metrics" % metrics, timeout=10).read().decode()
        series = [line for line in text.splitlines() if line.startswith("pixelflight_rows_total{")]
        counted = sum(float(line.rsplit(" ", 1)[1]) for line in series)
        labels = sorted({re.search(r'spark_executor_id="([^"]*)"', line).group(1) if "spark_executor_id" in line
                         else None for line in series}, key=str)
    ds = read_images(spark, images, "fft_convolve", output="stats").select("path", "mean", "error").collect()
    mapped = {r["path"]: (r["mean"], r["error"]) for r in rows}
    print(json.dumps({"rows": len(rows), "paths": len({r["path"] for r in rows}),
                      "errors": [r["error"] for r in rows if r["error"]], "endpoints": endpoints,
                      "metrics_rows": counted, "metrics_executors": labels, "ds_rows": len(ds),
                      "ds_differ": [r["path"] for r in ds if mapped.get(r["path"]) != (r["mean"], r["error"])]}))
    spark.stop()


if __name__ == "__main__":
    main()
