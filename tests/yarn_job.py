"""A PySpark job that test_yarn.py submits to YARN (client or cluster
deploy mode) with spark-submit; the settings come from the command line.

    spark-submit ... yarn_job.py IMAGES OUT

Runs fft_convolve (stats) over the files in IMAGES (binaryFile, 8
partitions) and writes to OUT, as JSON, the rows (path, mean, error) and
the endpoints the executors' tasks resolved.
"""

import json
import sys

from pyspark.sql import SparkSession

from pixelflight.spark import map_images


def main():
    images, out = sys.argv[1:3]
    spark = SparkSession.builder.appName("pixelflight-yarn-test").getOrCreate()
    df = spark.read.format("binaryFile").load(images).repartition(8)
    rows = map_images(df, "fft_convolve", output="stats").select("path", "mean", "error").collect()

    def where(_):
        from pixelflight.client import resolve_endpoint
        yield resolve_endpoint()

    endpoints = sorted(set(spark.sparkContext.parallelize(range(16), 16).mapPartitions(where).collect()))
    with open(out, "w") as f:
        json.dump({"rows": [r.asDict() for r in rows], "endpoints": endpoints}, f)
    spark.stop()


if __name__ == "__main__":
    main()
