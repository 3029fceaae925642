"""A PySpark job that test_yarn.py submits to YARN (client or cluster
deploy mode) with spark-submit; the settings come from the command line.

    spark-submit ... yarn_job.py IMAGES OUT [OP]

Runs OP (fft_convolve with output=stats, or detect_blobs) over the files in
IMAGES (binaryFile, 8 partitions), then again through the jar's pixelflight
data source, and writes to OUT, as JSON, the rows (path, error) of each and
the endpoints the executors' tasks resolved.
"""

import json
import sys

from pyspark.sql import SparkSession

from pixelflight.spark import map_images, read_images


def main():
    images, out = sys.argv[1:3]
    spark = SparkSession.builder.appName("pixelflight-yarn-test").getOrCreate()
    df = spark.read.format("binaryFile").load(images).repartition(8)
    op = sys.argv[3] if len(sys.argv) > 3 else "fft_convolve"
    params = {"output": "stats"} if op == "fft_convolve" else {}
    rows = map_images(df, op, **params).select("path", "error").collect()
    ds_rows = read_images(spark, images, op, **params).select("path", "error").collect()

    def where(_):
        from pixelflight.client import resolve_endpoint
        yield resolve_endpoint()

    endpoints = sorted(set(spark.sparkContext.parallelize(range(16), 16).mapPartitions(where).collect()))
    with open(out, "w") as f:
        json.dump({"rows": [r.asDict() for r in rows], "ds_rows": [r.asDict() for r in ds_rows],
                   "endpoints": endpoints}, f)
    spark.stop()


if __name__ == "__main__":
    main()
