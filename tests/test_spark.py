"""End to end with real PySpark (local[2]): binaryFile -> map_images -> results."""

import io
import os
import re
import sys

import numpy as np
import pyarrow as pa
import pytest
from PIL import Image
from pyspark.sql import functions as F

from test_docs import doc_block, run_block
from conftest import CONNECT, check_close, decode_f32, scipy_ref, session_builder
from pixelflight.spark import map_images

pytestmark = pytest.mark.check  # the whole module is in make check


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
    assert "sidecar answers at " + missing in str(e.value)  # the Python client's words, or the JVM's


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
            # Labels 0 (background) and 1..segments, each segment's at least at its marker.
            labels = np.asarray(Image.open(io.BytesIO(r["labels"])))
            assert set(np.unique(labels)) - {0} == set(range(1, r["segments"] + 1)), r["path"]
    assert sum(r["segments"] or 0 for r in seg) > 10
    blobs = map_images(df, "detect_blobs", max_sigma=10, threshold=0.1).collect()
    assert len(blobs) == n
    coins = [r for r in blobs if r["path"].endswith("/good/coins.png")][0]
    assert coins["error"] is None and len(coins["blobs"]) > 10


# Parameters are checked on the driver, when map_images or image_udf is
# called: no job starts, and the message is in the caller's terms.

@pytest.mark.parametrize("params, want", [
    ({"sigam": 3}, r"fft_convolve has no parameter 'sigam' \(did you mean 'sigma'\?\); its parameters: kernel, sigma"),
    ({"sigma": "3"}, r"fft_convolve parameter sigma='3': want a finite number"),
    ({"sigma": float("nan")}, r"sigma=nan: want a finite number"),
    ({"size": 3.5}, r"size=3.5: want a whole number"),
    ({"matrix": [[1, 2], [3]]}, r"matrix=.*: want a list of rows of finite numbers, all rows as long"),
    ({"sigma": -1}, r"fft_convolve parameter sigma=-1: want at least 1e-06 \(gaussian only"),
    ({"kernel": "gauss"}, r"kernel='gauss': want 'gaussian', 'box', .* or 'matrix' \(did you mean 'gaussian'\?\)"),
    ({"output": "jpeg"}, r"output='jpeg': want 'f32', 'png' or 'stats'"),
    ({"kernel": "box", "sigma": 2}, r"fft_convolve: sigma applies only to kernel gaussian"),  # two params: the driver's sidecar
])
def test_bad_params_fail_on_the_driver(spark, images, params, want):
    df = spark.read.format("binaryFile").load(os.path.join(images, "good"))
    jobs = len(spark.sparkContext.statusTracker().getJobIdsForGroup())
    with pytest.raises(ValueError, match=want) as e:
        map_images(df, "fft_convolve", **params)
    assert "Params." not in str(e.value) and "Go " not in str(e.value), e.value  # no Go type names
    assert len(spark.sparkContext.statusTracker().getJobIdsForGroup()) == jobs, "a job ran"


def test_an_endpoint_never_reached_fails_the_job_fast(spark, images, tmp_path):
    """Tasks whose sidecar never answered give up after the client's first
    contact time (5 s), not its retry time (60 s), with the client's
    message."""
    import time

    missing = "grpc+unix://%s/none.sock" % tmp_path
    df = spark.read.format("binaryFile").load(os.path.join(images, "good")).limit(2)
    start = time.monotonic()
    with pytest.raises(Exception, match="no pixelflight sidecar answers at %s" % re.escape(missing)):
        map_images(df, "echo", endpoint=missing).collect()
    assert time.monotonic() - start < 45  # one task's 60 s retry would exceed it


def test_bad_params_of_other_ops(spark, images):
    df = spark.read.format("binaryFile").load(os.path.join(images, "good"))
    for op, params, want in (("echo", {"sigma": 1}, "echo has no parameter 'sigma'; it takes none"),
                             ("detect_blobs", {"max_sigma": "big"}, "max_sigma='big': want a finite number"),
                             ("detect_blobs", {"min_sigma": 0}, "min_sigma"),
                             ("detect_faces", {"min_size": [1, 2, 3]}, "want an int or a \\[width, height\\] pair"),
                             ("detect_faces", {"annotate": "yes"}, "annotate='yes': want True or False"),
                             ("detect_faces", {"cascade": "no_such_cascade"}, "no_such_cascade"),
                             ("blur", {}, "unknown op 'blur'")):
        with pytest.raises(ValueError, match=want):
            map_images(df, op, **params)


def test_params_checked_without_a_sidecar(tmp_path):
    """Names, types, choices and ranges come from the shipped schema: no sidecar needed."""
    from pixelflight.params import check_params

    missing = "grpc+unix://%s/none.sock" % tmp_path
    for op, params, want in (
            ("detect_blobs", {"treshold": 0.1}, "did you mean 'threshold'"),
            ("fft_convolve", {"sigma": 0}, r"sigma=0: want at least 1e-06 \(gaussian only"),
            ("fft_convolve", {"boundary": "mirror"}, r"boundary='mirror': want 'zero', 'reflect' or 'wrap' \("),
            ("fft_convolve", {"png_scale": "Abs"}, r"png_scale='Abs': want .* \(did you mean 'abs'\?\)"),
            ("detect_blobs", {"overlap": 1.5}, r"detect_blobs parameter overlap=1.5: want 0 to 1 \(blobs overlapping"),
            ("detect_blobs", {"num_sigma": 0}, r"num_sigma=0: want 1 to 100"),
            ("detect_faces", {"scale_factor": 1.0}, r"scale_factor=1.0: want 1.01 to 10"),
            ("detect_faces", {"min_size": [24, -1]}, r"min_size=\[24, -1\]: want each side at least 0"),
            ("watershed", {"threshold": 256}, r"threshold=256: want 0 to 255")):
        with pytest.raises(ValueError, match=want):
            check_params(op, params, missing)
    # Inside every bound, "" for a choice's default; bounds a sidecar's flags
    # set (sizes up to --max-kernel) are left to a sidecar (the driver's,
    # else the tasks').
    check_params("fft_convolve", {"sigma": 1e-6, "mode": "", "boundary": "wrap"}, missing)
    check_params("detect_faces", {"scale_factor": 10, "min_size": 0, "max_size": [0, 9]}, missing)
    check_params("fft_convolve", {"kernel": "box", "size": 5000}, missing)


# Rules joining two parameters: each case is refused or taken alike by the
# driver alone (knowing the sidecar's flags: the defaults) and by a sidecar.
JOINED = [
    ("fft_convolve", {"kernel": "box", "sigma": 2}, 'sigma applies only to kernel gaussian, not "box"'),
    ("fft_convolve", {"kernel": "gaussian", "sigma": 2, "size": 9}, None),
    ("fft_convolve", {"sigma": 2, "matrix": [[1.0]]}, 'sigma applies only to kernel gaussian, not "matrix"'),
    ("fft_convolve", {"kernel": "sobel_x", "size": 3}, "size applies only to kernels gaussian and box"),
    ("fft_convolve", {"kernel": "box", "size": 3}, None),
    ("fft_convolve", {"kernel": "box", "matrix": [[1.0]]}, "matrix is given, so kernel must be"),
    ("fft_convolve", {"kernel": "matrix"}, "kernel matrix needs a matrix"),
    ("fft_convolve", {"matrix": [[0.5, 0.5]]}, None),
    ("fft_convolve", {"kernel": "", "matrix": [[0.5, 0.5]]}, None),
    ("fft_convolve", {"png_scale": "abs"}, 'png_scale applies only to output png, not "f32"'),
    ("fft_convolve", {"png_scale": "abs", "output": "stats"}, 'png_scale applies only to output png, not "stats"'),
    ("fft_convolve", {"png_scale": "abs", "output": "png", "kernel": "laplacian"}, None),
    ("fft_convolve", {"png_scale": "", "output": "stats"}, None),
    ("detect_blobs", {"max_sigma": 0.5}, r"max_sigma below min_sigma \(0.5 < 1\)"),
    ("detect_blobs", {"min_sigma": 60}, r"max_sigma below min_sigma \(50 < 60\)"),
    ("detect_blobs", {"min_sigma": 3, "max_sigma": 3}, None),
    ("detect_blobs", {"min_sigma": 0.1234567, "max_sigma": 0.1}, r"max_sigma below min_sigma \(0.1 < 0.1234567\)"),
    # A gaussian's default size, 2*ceil(3*sigma)+1, against --max-kernel (1024)
    ("fft_convolve", {"sigma": 170.3}, None),
    ("fft_convolve", {"sigma": 171}, r"sigma 171: its default size, 2\*ceil\(3\*sigma\)\+1 = 1027, passes 1024: "
                                     r"give a size \(1 to 1024\)"),
    ("fft_convolve", {"sigma": 171, "size": 9}, None),
]


def test_joined_rules_on_the_driver_agree_with_the_sidecar(sidecar, tmp_path):
    from pixelflight.client import Client
    from pixelflight.params import check_params

    missing = "grpc+unix://%s/none.sock" % tmp_path
    with Client(sidecar.location) as c:
        for op, params, want in JOINED:
            if want is None:
                check_params(op, params, missing, limits={})
                c.check(op, params)
                continue
            with pytest.raises(ValueError, match=want):
                check_params(op, params, missing, limits={})
            with pytest.raises(pa.ArrowInvalid, match=want):
                c.check(op, params)


def test_bounds_set_by_the_plugins_flags(tmp_path):
    """sizes up to --max-kernel: checked on the driver when the executor
    plugin serves the tasks (its flags are in the Spark conf), else not."""
    from pixelflight.params import check_params, plugin_limits

    missing = "grpc+unix://%s/none.sock" % tmp_path
    plugin = {"spark.plugins": "x.Other, org.pixelflight.spark.PixelflightPlugin"}
    assert plugin_limits({}.get) is None
    assert plugin_limits(dict(plugin, **{"spark.executorEnv.PIXELFLIGHT_ENDPOINT": "grpc://h:1"}).get) is None
    assert plugin_limits(plugin.get) == {}
    assert plugin_limits(dict(plugin, **{"spark.pixelflight.args": "--workers 1 --max-kernel=2048"}).get) == \
        {"max-kernel": 2048}
    assert plugin_limits(dict(plugin, **{"spark.pixelflight.args": "-max-kernel 64",
                                         "spark.executorEnv.PIXELFLIGHT_MAX_KERNEL": "4096"}).get) == {"max-kernel": 64}
    assert plugin_limits({"spark.plugins.defaultList": "org.pixelflight.spark.PixelflightPlugin",
                          "spark.executorEnv.PIXELFLIGHT_MAX_KERNEL": "4096"}.get) == {"max-kernel": 4096}
    with pytest.raises(ValueError, match=r"size=5000: want 1 to 1024 \(gaussian and box only"):
        check_params("fft_convolve", {"kernel": "box", "size": 5000}, missing, limits={})
    with pytest.raises(ValueError, match=r"max_sigma=100: want at most 64 \("):
        check_params("detect_blobs", {"max_sigma": 100}, missing, limits={"max-kernel": 64})
    with pytest.raises(ValueError, match=r"max_sigma 50: want at most 30 \(the kernel side limit\)"):
        check_params("detect_blobs", {"min_sigma": 2}, missing, limits={"max-kernel": 30})  # max_sigma's default
    check_params("fft_convolve", {"kernel": "box", "size": 5000}, missing, limits={"max-kernel": 8192})
    check_params("fft_convolve", {"kernel": "box", "size": 5000}, missing, limits=None)

    class Session:  # a session under the plugin, as map_images reads it
        class conf:
            get = dict(plugin, **{"spark.pixelflight.args": "--max-kernel 32"}).get

    class Frame:
        sparkSession = Session
    with pytest.raises(ValueError, match=r"sigma=40: want 1e-06 to 32 \("):
        map_images(Frame, "fft_convolve", endpoint=None, sigma=40, size=3)
    # A cascade name the plugin's sidecars do not have (Debian's opencv-data
    # alone, no --cascade-dir), on the driver, with the nearest one.
    with pytest.raises(ValueError, match=r"^detect_faces parameter cascade='haarcascade_frontalfce_default': want one "
                                         r"the sidecars have \(did you mean 'haarcascade_frontalface_default'\?\)"):
        map_images(Frame, "detect_faces", endpoint=None, cascade="haarcascade_frontalfce_default")
    assert plugin_limits(dict(plugin, **{"spark.pixelflight.args": "--cascade-dir=/opt/c"}).get) == {"cascade-dir": 1}
    check_params("detect_faces", {"cascade": "mine"}, missing, limits={"cascade-dir": 1})
    check_params("detect_faces", {"cascade": "mine"}, missing, limits=None)


def test_bounds_in_words():
    from pixelflight.params import _constraint

    p = {"type": "float", "min": {"value": 0, "exclusive": True}, "max": {"value": 1}}
    assert _constraint(p, 0) == "more than 0 and at most 1"
    assert _constraint(p, 1e-9) is None and _constraint(p, 1) is None
    p["max"]["exclusive"] = True
    assert _constraint(p, 1) == "more than 0 and less than 1"


def test_bad_range_under_the_plugin_needs_no_task(spark, images, tmp_path):
    """Where no sidecar answers on the driver (the executor plugin's), a bad
    range or choice still fails on the driver at once: no job, no retries."""
    df = spark.read.format("binaryFile").load(os.path.join(images, "good"))
    jobs = len(spark.sparkContext.statusTracker().getJobIdsForGroup())
    missing = "grpc+unix://%s/none.sock" % tmp_path
    for op, params in (("detect_blobs", {"overlap": 2}), ("fft_convolve", {"mode": "middle"})):
        with pytest.raises(ValueError, match="want"):
            map_images(df, op, endpoint=missing, **params)
    assert len(spark.sparkContext.statusTracker().getJobIdsForGroup()) == jobs, "a job ran"


@pytest.mark.matrix
def test_image_udf_checks_params_and_spark_version(spark, monkeypatch):
    """Spark 3.5: on the matrix's 3.5 leg with that pyspark itself, on 4.x
    as if it were 3.5.6 (the version is checked before the parameters)."""
    import pyspark
    import pyspark.sql.functions
    from pixelflight.spark import image_udf

    if hasattr(pyspark.sql.functions, "arrow_udf"):
        with pytest.raises(ValueError, match="did you mean 'sigma'"):
            image_udf("fft_convolve", sigmaa=2)
        monkeypatch.delattr(pyspark.sql.functions, "arrow_udf")
        monkeypatch.setattr(pyspark, "__version__", "3.5.6")
    with pytest.raises(RuntimeError, match=r"image_udf needs Spark 4\.1 or later .* this is PySpark %s: use "
                                           r"pixelflight\.spark\.map_images" % re.escape(pyspark.__version__)):
        image_udf("fft_convolve")


# keep and column: the columns as Spark names them, in keep's order.

def good_files(spark, images, glob="*.png"):
    return spark.read.format("binaryFile").option("pathGlobFilter", glob).load(os.path.join(images, "good"))


@pytest.mark.connect
def test_keep_in_its_own_order_not_the_dataframes(spark, images):
    """mapInArrow takes columns by position: each kept value must land in
    its own column, also when keep's order is not the DataFrame's."""
    df = good_files(spark, images).withColumn("label", F.regexp_extract("path", r"/(\w+)\.png$", 1))
    out = map_images(df, "info", keep=("label", "length", "path"))
    assert out.columns == ["label", "length", "path", "format", "width", "height", "channels", "error"]
    rows = out.collect()
    assert len(rows) == df.count()
    for r in rows:
        assert r["path"].startswith("file:") and r["path"].endswith("/%s.png" % r["label"]), r
        assert r["length"] == os.path.getsize(r["path"][len("file:"):]), r
        assert r["format"] == "png" and r["error"] is None, r


@pytest.mark.connect
def test_keep_may_hold_the_image_column(spark, images):
    df = good_files(spark, images, "coins.png")
    [r] = map_images(df, "info", keep=("path", "content")).collect()
    assert r["content"] == open(os.path.join(images, "good", "coins.png"), "rb").read()
    assert r["format"] == "png" and r["error"] is None
    [r] = map_images(df, "info", keep=("content",)).collect()
    assert r.asDict().keys() == {"content", "format", "width", "height", "channels", "error"}


@pytest.mark.connect
def test_names_matched_as_spark_matches_them(spark, images):
    """Case apart only with spark.sql.caseSensitive, as Spark resolves names;
    the results carry the DataFrame's own names."""
    df = good_files(spark, images, "coins.png")
    out = map_images(df, "info", column="CONTENT", keep=("Path", "LENGTH"))
    assert out.columns[:2] == ["path", "length"]
    [r] = out.collect()
    assert r["path"].endswith("/coins.png") and r["width"] > 0
    wide = df.withColumn("Width", F.lit(-1))
    with pytest.raises(ValueError, match=r"keep columns \['Width'\] clash with info's result columns"):
        map_images(wide, "info", keep=("path", "Width"))
    with pytest.raises(ValueError, match=r"more than once"):
        map_images(df, "info", keep=("path", "PATH"))
    spark.conf.set("spark.sql.caseSensitive", "true")
    try:
        with pytest.raises(ValueError, match=r"DataFrame has no column \['Path'\]"):
            map_images(df, "info", keep=("Path",))
        [r] = map_images(wide, "info", keep=("path", "Width")).collect()
        assert r["Width"] == -1 and r["width"] > 0
    finally:
        spark.conf.unset("spark.sql.caseSensitive")


@pytest.mark.connect
def test_names_spark_needs_quoted(spark, images):
    """A dot, a space or a backtick is part of a name, in keep, in column,
    and in a kept struct's fields."""
    df = (good_files(spark, images, "coins.png")
          .withColumn("meta", F.struct(F.lit(7).alias("camera id"), F.array(F.lit("x")).alias("tag.s")))
          .withColumnRenamed("path", "file.path").withColumnRenamed("content", "the `image`"))
    out = map_images(df, "info", column="the `image`", keep=("meta", "file.path"))
    assert out.columns == ["meta", "file.path", "format", "width", "height", "channels", "error"]
    [r] = out.collect()
    assert r["file.path"].endswith("/coins.png") and r["format"] == "png" and r["error"] is None
    assert r["meta"]["camera id"] == 7 and r["meta"]["tag.s"] == ["x"]


@pytest.mark.connect
def test_write_images_names_with_a_dot(spark, images, tmp_path):
    from pixelflight import write_images

    df = good_files(spark, images, "coins.png").withColumnRenamed("path", "file.path") \
        .withColumnRenamed("content", "png.bytes")
    [path] = write_images(df, "png.bytes", str(tmp_path), name_column="file.path")
    assert os.path.basename(path) == "coins_png.bytes.png"
    assert open(path, "rb").read() == open(os.path.join(images, "good", "coins.png"), "rb").read()


@pytest.mark.parametrize("output", [None, ""])
def test_output_default_as_none_or_empty(spark, images, output):
    """output None or "": f32, as check_params and the sidecar take them."""
    df = good_files(spark, images, "coins.png")
    out = map_images(df, "fft_convolve", output=output, sigma=2.0)
    assert out.columns == ["path", "height", "width", "data", "error"]
    [r] = out.collect()
    assert r["error"] is None, r["error"]
    check_close(decode_f32(r.asDict()), scipy_ref(os.path.join(images, "good", "coins.png")), "coins.png")


def test_unix_endpoint_form(spark, sidecar, images, tmp_path):
    """unix:///path as serve takes it; a location pyarrow cannot use fails
    on the driver, naming it and where it came from."""
    assert sidecar.location.startswith("grpc+unix://")
    unix = sidecar.location[len("grpc+"):]
    df = good_files(spark, images, "coins.png")
    [r] = map_images(df, "info", endpoint=unix).collect()
    assert r["width"] > 0 and r["error"] is None, r
    jobs = len(spark.sparkContext.statusTracker().getJobIdsForGroup())
    for bad in ("127.0.0.1:8815", str(tmp_path / "pf.sock"), "http://127.0.0.1:8815"):
        with pytest.raises(ValueError, match=r"the pixelflight endpoint '%s' \(from the endpoint argument\) is not "
                                             % re.escape(bad)):
            map_images(df, "info", endpoint=bad)
    assert len(spark.sparkContext.statusTracker().getJobIdsForGroup()) == jobs, "a job ran"


def test_client_doc_example(spark, images, tmp_path):
    """docs/client.md's example as written, on local files."""
    good = os.path.join(images, "good")
    run_block(doc_block("docs/client.md", "from pixelflight.spark import map_images"), {"spark": spark},
              **{"s3://bucket/photos/": good, "s3://bucket/blurred/": str(tmp_path / "blurred")})
    got = spark.read.parquet(str(tmp_path / "blurred")).collect()
    assert len(got) == len(os.listdir(good)) and all(r["error"] is None and r["png"][:4] == b"\x89PNG" for r in got)


def test_runner_jvm_needs_the_extensions(spark, images):
    """This session has no pixelflight extensions: runner="jvm" says what
    to set, before any job; "auto" runs in Python."""
    df = spark.read.format("binaryFile").load(os.path.join(images, "good", "coins.png"))
    with pytest.raises(ValueError, match="set spark.sql.extensions=org.pixelflight.spark.PixelflightExtensions"):
        map_images(df, "info", runner="jvm")
    assert map_images(df, "info").count() == 1
