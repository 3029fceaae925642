"""End to end with real PySpark (local[2]): binaryFile -> map_images -> results."""

import os
import sys

import numpy as np
import pytest
from pyspark.sql import functions as F

from conftest import CONNECT, check_close, decode_f32, scipy_ref, session_builder
from pixelflight.spark import map_images


@pytest.fixture(scope="module")
def spark(sidecar):
    os.environ["PIXELFLIGHT_ENDPOINT"] = sidecar.location
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers need pixelflight
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    s = (session_builder("local[2]").appName("pixelflight-test")
         .config("spark.executorEnv.PIXELFLIGHT_ENDPOINT", sidecar.location)
         .config("spark.ui.enabled", "false")
         .config("spark.sql.shuffle.partitions", "2")
         .getOrCreate())
    if not CONNECT:
        s.sparkContext.setLogLevel("ERROR")
    yield s
    s.stop()


@pytest.mark.matrix
@pytest.mark.connect
def test_binaryfile_every_row_back(spark, images):
    df = spark.read.format("binaryFile").option("recursiveFileLookup", "true").load(images).repartition(3)
    n_in = df.count()
    out = map_images(df, "fft_convolve", kernel="gaussian", sigma=2.0).collect()
    assert len(out) == n_in
    paths = [r["path"] for r in out]
    assert len(set(paths)) == n_in  # each row exactly once
    # Spark's binaryFile source makes no row for an empty file (the Flight
    # tests cover empty bytes); every other bad file is a row with an error.
    assert not any(p.endswith("/bad/empty.png") for p in paths)
    assert sum("/bad/" in p for p in paths) == len(os.listdir(os.path.join(images, "bad"))) - 1
    for r in out:
        local = r["path"].replace("file:", "")
        if "/bad/" in local:
            assert r["error"] and r["data"] is None, local
        else:
            assert r["error"] is None, (local, r["error"])
            check_close(decode_f32(r.asDict()), scipy_ref(local), local)


@pytest.mark.matrix
@pytest.mark.connect
def test_stats_and_keep(spark, images):
    df = spark.read.format("binaryFile").load(os.path.join(images, "good"))
    out = map_images(df, "fft_convolve", keep=("path", "length"), kernel="box", size=5, output="stats")
    assert out.columns == ["path", "length", "min", "max", "mean", "std", "error"]
    rows = out.where(F.col("error").isNull()).count()
    assert rows == df.count()


def test_spark_image_source(spark, images):
    """Spark's own image source: the struct column, BGR order."""
    df = spark.read.format("image").load(os.path.join(images, "good", "coins.png"))
    df = df.select("image", F.col("image.origin").alias("path"))
    [r] = map_images(df, "fft_convolve", column="image", sigma=2.0).collect()
    assert r["error"] is None, r["error"]
    check_close(decode_f32(r.asDict()), scipy_ref(os.path.join(images, "good", "coins.png")), "coins.png")


def test_unreachable_endpoint_fails_the_job_clearly(spark, images, tmp_path):
    df = spark.read.format("binaryFile").load(os.path.join(images, "good", "coins.png"))
    missing = "grpc+unix://%s/none.sock" % tmp_path
    with pytest.raises(Exception) as e:
        map_images(df, "echo", endpoint=missing).collect()
    assert "no pixelflight sidecar answers at " + missing in str(e.value)


def test_arrow_udf_column_function(spark, images):
    from pixelflight.spark import image_udf

    df = spark.read.format("binaryFile").option("recursiveFileLookup", "true").load(images)
    stats = image_udf("fft_convolve", kernel="laplacian", output="stats")
    out = df.select("path", stats("content").alias("r")).select("path", "r.*").collect()
    assert len(out) == df.count()
    for r in out:
        assert (r["error"] is None) == ("/bad/" not in r["path"]), (r["path"], r["error"])
        if r["error"] is None:
            assert np.isfinite(r["std"])


def test_detection_ops_through_spark(spark, images):
    df = spark.read.format("binaryFile").option("recursiveFileLookup", "true").load(images)
    n = df.count()
    seg = map_images(df, "watershed").collect()
    assert len(seg) == n
    for r in seg:
        assert (r["error"] is None) == ("/bad/" not in r["path"]), (r["path"], r["error"])
        if r["error"] is None:
            assert r["segments"] >= 0 and r["labels"][:8] == b"\x89PNG\r\n\x1a\n"
    blobs = map_images(df, "detect_blobs", max_sigma=10, threshold=0.1).collect()
    assert len(blobs) == n
    coins = [r for r in blobs if r["path"].endswith("/good/coins.png")][0]
    assert coins["error"] is None and len(coins["blobs"]) > 10
