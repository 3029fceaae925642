"""The plugin jar's `pixelflight` data source (spark-plugin/, ImageDataSource):
real PySpark (local[2]) with the jar built for its Spark version, a real
sidecar, real image files. The executors' JVMs read the files and talk
Flight to the sidecar; no Python runs on them. The tests marked `matrix`
run on Spark 3.5 too, with the Spark 3.5 build of the jar; those marked
`connect` over Spark Connect (the jar on the Connect server)."""

import json
import os
import re
import shutil
import signal
import sys
import threading
import time

import pyarrow as pa
import pyspark
import pytest

from conftest import CONNECT, Sidecar, free_port, session_builder
from pixelflight import Client, result_schema
from pixelflight.params import check_params, plugin_limits
from pixelflight.spark import _ddl, map_images, read_images
from test_docs import doc_block, run_block
from test_flight import schema_cases

pytestmark = pytest.mark.check  # the whole module is in make check

META = ["path", "modificationTime", "length"]


@pytest.fixture(scope="module")
def spark(sidecar):
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # The UI (on a free port) for the scan node's metrics in its REST API.
    s = (session_builder("local[2]", extensions=True).appName("pixelflight-datasource-test")  # pixelflight_map
         .config("spark.executorEnv.PIXELFLIGHT_ENDPOINT", sidecar.location)
         .config("spark.ui.enabled", "true").config("spark.ui.port", str(free_port()))
         .config("spark.ui.showConsoleProgress", "false")
         .getOrCreate())
    if not CONNECT:
        s.sparkContext.setLogLevel("ERROR")
    yield s
    s.stop()


def files(d):
    return sorted(os.path.join(d, n) for n in os.listdir(d))


def client_results(location, paths, op, **params):
    """op over the files through the Python client: file name -> result row."""
    content = [open(p, "rb").read() for p in paths]
    batch = pa.record_batch([pa.array([os.path.basename(p) for p in paths]), pa.array(content, pa.binary())],
                            names=["name", "content"])
    with Client(location) as c:
        rows = pa.Table.from_batches(list(c.map_batches(op, [batch], keep=("name",), **params))).to_pylist()
    return {r.pop("name"): r for r in rows}


def by_name(rows):
    got = {}
    for r in rows:
        d = r.asDict(recursive=True)
        name = os.path.basename(d["path"])
        assert name not in got, "%s answered twice" % name
        got[name] = d
    return got


@pytest.mark.matrix
@pytest.mark.connect
def test_every_file_answered_once_in_its_row(spark, sidecar, images):
    paths = files(os.path.join(images, "good")) + files(os.path.join(images, "bad"))
    want = client_results(sidecar.location, paths, "fft_convolve", output="stats", sigma=2.0)
    df = read_images(spark, [os.path.join(images, "good"), os.path.join(images, "bad")], "fft_convolve",
                     output="stats", sigma=2.0)
    assert df.columns == META + result_schema("fft_convolve", {"output": "stats"}).names
    got = by_name(df.collect())
    assert sorted(got) == sorted(want)
    for name, row in got.items():
        st = os.stat(os.path.join(images, "bad" if name in os.listdir(os.path.join(images, "bad")) else "good", name))
        assert row["length"] == st.st_size, name
        assert abs(row["modificationTime"].timestamp() - st.st_mtime) < 0.002, name
        assert {k: row[k] for k in want[name]} == want[name], name
    bad = {n for n, r in got.items() if r["error"]}
    assert bad == set(os.listdir(os.path.join(images, "bad"))), bad


def scan_metrics(spark, timeout=20):
    """The metrics of the last query's pixelflight scan node, from Spark's
    REST API ({description: value}), once Spark has aggregated them."""
    import urllib.request
    url = "%s/api/v1/applications/%s/sql?details=true&planDescription=false" % (
        spark.sparkContext.uiWebUrl, spark.sparkContext.applicationId)
    deadline = time.time() + timeout
    while True:
        with urllib.request.urlopen(url, timeout=10) as r:
            runs = json.load(r)
        done = [e for e in runs if e.get("status") == "COMPLETED"]
        for node in (done[-1]["nodes"] if done else []):
            got = {m["name"]: m["value"] for m in node.get("metrics", [])}
            if "pixelflight rows" in got and got["pixelflight rows"]:
                return got
        if time.time() > deadline:
            raise AssertionError("no pixelflight metrics in %s" % json.dumps(runs)[:2000])
        time.sleep(0.5)


@pytest.mark.skipif(CONNECT, reason="the REST API of the Connect server's UI, not the client's")
def test_scan_node_metrics_in_spark_ui(spark, images):
    """The data source's scan node shows its rows, error rows, where they
    ran, bytes each way and the time waited on the sidecar, in Spark's UI
    and REST API."""
    good, bad = files(os.path.join(images, "good")), files(os.path.join(images, "bad"))
    rows = read_images(spark, [os.path.join(images, "good"), os.path.join(images, "bad")], "fft_convolve",
                       output="stats").collect()
    assert len(rows) == len(good) + len(bad)
    m = {k: int(v.replace(",", "")) for k, v in scan_metrics(spark).items() if k.startswith("pixelflight")}
    errors = sum(1 for r in rows if r["error"])
    assert m["pixelflight rows"] == len(rows), m
    assert m["pixelflight error rows"] == errors > 0, m
    assert m["pixelflight rows run on the CPU"] == len(rows) - errors, m
    assert m["pixelflight rows run on a GPU"] == 0, m
    assert m["pixelflight image bytes sent"] == sum(os.path.getsize(p) for p in good + bad), m
    assert m["pixelflight result bytes received"] > 0, m
    assert m["pixelflight time waiting on the sidecar (ms)"] >= 0, m


@pytest.mark.matrix
def test_bad_files_are_row_errors(spark, images, tmp_path):
    bad = os.path.join(images, "bad")
    got = by_name(read_images(spark, bad, "fft_convolve", output="stats").collect())
    assert "empty" in got["empty.png"]["error"]
    assert "unknown image format" in got["notes.png"]["error"]
    assert "too large" in got["oversized.png"]["error"]
    assert got["corrupt.png"]["error"] and got["truncated.png"]["error"]
    assert all(r["mean"] is None for r in got.values())
    # Files over maxFileBytes are not read: their row says so, the others are answered.
    got = by_name(read_images(spark, os.path.join(images, "good"), "info", options={"maxFileBytes": 400000})
                  .collect())
    big = {n for n in got if os.path.getsize(os.path.join(images, "good", n)) > 400000}
    assert big and len(big) < len(got)
    # The same without the error column: the files not sent still count as error rows.
    slim = read_images(spark, os.path.join(images, "good"), "info", options={"maxFileBytes": 400000}).select("path")
    assert slim.count() == len(slim.collect()) == len(got)
    for n, r in got.items():
        if n in big:
            assert "over the pixelflight option maxFileBytes (400000)" in r["error"] and r["width"] is None, r
        else:
            assert r["error"] is None and r["width"] > 0, r


@pytest.mark.matrix
def test_strict_fails_the_job_on_a_bad_file(spark, images):
    with pytest.raises(Exception, match="strict"):
        read_images(spark, os.path.join(images, "bad"), "fft_convolve", strict=True, output="stats").collect()
    with pytest.raises(Exception, match="maxFileBytes"):
        read_images(spark, os.path.join(images, "good"), "info", strict=True,
                    options={"maxFileBytes": 400000}).collect()
    assert read_images(spark, os.path.join(images, "good"), "info", strict=True).filter("error is null").count() \
        == len(os.listdir(os.path.join(images, "good")))


@pytest.mark.matrix
@pytest.mark.connect
def test_sql_form(spark, images):
    good = os.path.join(images, "good")
    spark.sql("CREATE OR REPLACE TEMPORARY VIEW pf_info USING pixelflight OPTIONS (path '%s', op 'info', "
              "pathGlobFilter '*.png')" % good)
    rows = spark.sql("SELECT path, format, width, height, error FROM pf_info ORDER BY path").collect()
    pngs = sorted(n for n in os.listdir(good) if n.endswith(".png"))
    assert [os.path.basename(r["path"]) for r in rows] == pngs
    assert all(r["format"] == "png" and r["width"] > 0 and r["error"] is None for r in rows)
    spark.sql("CREATE OR REPLACE TEMPORARY VIEW pf_stats USING pixelflight OPTIONS (path '%s', op 'fft_convolve', "
              "params '{\"sigma\": 3, \"output\": \"stats\"}')" % good)
    [r] = spark.sql("SELECT count(*) AS n, count(mean) AS means FROM pf_stats").collect()
    assert r["n"] == r["means"] == len(os.listdir(good))


CASES = schema_cases()  # every output of every op in outputs.json, which OpSchema and result_schema read


@pytest.mark.parametrize("op,params", CASES, ids=["%s%s" % c for c in CASES])
def test_schema_is_the_python_clients(spark, images, op, params):
    """Planned without a sidecar, by the same rule as client.result_schema."""
    df = spark.read.format("pixelflight").option("op", op).option("params", json.dumps(params)) \
        .load(os.path.join(images, "good"))
    got = ", ".join("`%s` %s" % (f.name, f.dataType.simpleString()) for f in df.schema.fields[3:])
    assert got == _ddl(result_schema(op, params))


def test_bad_options_fail_at_planning(spark, images):
    good = os.path.join(images, "good")
    with pytest.raises(Exception, match="unknown op 'sharpen'"):
        read_images(spark, good, "sharpen")
    with pytest.raises(ValueError) as known:  # the ops, in the words of OpSchema.OPS
        result_schema("sharpen")
    with pytest.raises(Exception, match=re.escape("the option op is missing: want " + str(known.value).split(": want ")[1])):
        spark.read.format("pixelflight").load(good)
    with pytest.raises(ValueError, match="fft_convolve: sigma applies only to kernel gaussian"):
        read_images(spark, good, "fft_convolve", kernel="box", sigma=2)  # on the driver, in Python
    with pytest.raises(Exception, match="fft_convolve parameter output='jpeg': want 'f32', 'png' or 'stats'"):
        spark.read.format("pixelflight").option("op", "fft_convolve").option("params", '{"output": "jpeg"}').load(good)
    with pytest.raises(Exception, match="path does not exist"):
        read_images(spark, good + "/nowhere", "info").collect()


BAD_PARAMS = [
    ("fft_convolve", {"sigam": 3}), ("fft_convolve", {"Sigma": 3}), ("fft_convolve", {"sigma": -1}),
    ("fft_convolve", {"sigma": "2"}), ("fft_convolve", {"sigma": 1e-7}), ("fft_convolve", {"kernel": "gausian"}),
    ("fft_convolve", {"kernel": "box", "sigma": 2}), ("fft_convolve", {"mode": "sam"}),
    ("fft_convolve", {"matrix": [[1, 2], [3]]}), ("fft_convolve", {"png_scale": "abs"}),
    ("fft_convolve", {"size": 2.5}), ("fft_convolve", {"kernel": "matrix"}), ("fft_convolve", {"output": "jpeg"}),
    ("detect_faces", {"scale_factor": 1}), ("detect_faces", {"min_size": [1, -2]}),
    ("detect_faces", {"annotate": "yes"}), ("detect_faces", {"minneighbours": 3}),
    ("detect_blobs", {"min_sigma": 5, "max_sigma": 2}), ("detect_blobs", {"overlap": 2}),
    ("detect_blobs", {"threshold": -0.5}), ("watershed", {"min_distanc": 3}), ("echo", {"x": 1}),
    ("detect_blobs", {"axsima": 3}), ("detect_faces", {"caecdt": "x"}), ("fft_convolve", {"mode": "sa\rme"}),
    ("fft_convolve", {"sigma": -0.0}),
]


@pytest.mark.parametrize("op,params", BAD_PARAMS, ids=["%s%s" % c for c in BAD_PARAMS])
def test_data_source_checks_params_on_the_driver_as_map_images(spark, images, op, params):
    """The data source refuses bad params when the query is planned, before
    any task runs, in the words map_images and read_images use
    (pixelflight.params.check_params), did-you-mean included."""
    with pytest.raises(ValueError) as want:
        check_params(op, params, limits=None)
    t0 = time.monotonic()
    with pytest.raises(Exception) as got:
        spark.read.format("pixelflight").option("op", op).option("params", json.dumps(params)) \
            .load(os.path.join(images, "good"))
    assert time.monotonic() - t0 < 10
    said = re.search(r"pixelflight: (.*)", str(got.value)).group(1)
    assert said == str(want.value), (said, str(want.value))


@pytest.mark.skipif(CONNECT, reason="calls the driver's JVM")
def test_driver_check_under_the_plugin_as_map_images(spark):
    """Under the executor plugin the driver knows the sidecars' flags from
    the conf (plugin_limits) and checks the bounds they set: the data
    source's port of both says what the Python client says."""
    jvm = spark.sparkContext._jvm.org.pixelflight.spark.ParamCheck
    plugin = "org.pixelflight.spark.PixelflightPlugin"
    for conf in ({}, {"spark.plugins": plugin}, {"spark.plugins": "x, " + plugin, "spark.pixelflight.args": "--max-kernel 15"},
                 {"spark.plugins.defaultList": plugin, "spark.pixelflight.args": "--workers 2 --max-kernel=21 -max-kernel=31"},
                 {"spark.plugins": plugin, "spark.executorEnv.PIXELFLIGHT_MAX_KERNEL": "9"},
                 {"spark.plugins": plugin, "spark.executorEnv.PIXELFLIGHT_ENDPOINT": "grpc://h:1"},
                 {"spark.plugins": plugin, "spark.pixelflight.args": "--max-kernel x"},
                 {"spark.plugins": plugin, "spark.pixelflight.args": "--cascade-dir /opt/cascades --max-kernel 7"},
                 {"spark.plugins": plugin, "spark.executorEnv.PIXELFLIGHT_CASCADE_DIR": "/opt/cascades"},
                 {"spark.plugins": plugin, "spark.pixelflight.args": "--cascade-dir="}):
        want = plugin_limits(conf.get)
        got = jvm.limitsOf(json.dumps(conf))
        assert (json.loads(got) if got is not None else None) == want, conf
    # Cascade names: checked against Debian's (params.json's names) unless
    # the sidecars have --cascade-dir.
    cascades = [("detect_faces", {"cascade": "haarcascade_frontalfce_default"}), ("detect_faces", {"cascade": "haarcascade_eye"}),
                ("detect_faces", {"cascade": "mine"}), ("detect_faces", {"cascade": ""})]
    for limits in ({"max-kernel": 15}, {"cascade-dir": 1}):
        for op, params in BAD_PARAMS + cascades + [("fft_convolve", {"sigma": 3}), ("fft_convolve", {"size": 31}),
                                                   ("fft_convolve", {"sigma": 0}), ("detect_blobs", {"max_sigma": 20}),
                                                   ("fft_convolve", {"sigma": 2, "size": 5}), ("detect_blobs", {})]:
            try:
                check_params(op, params, limits=limits, endpoint="grpc://127.0.0.1:1", timeout=0.5)
                want = None
            except ValueError as e:
                want = str(e)
            assert jvm.problem(op, json.dumps(params), json.dumps(limits)) == want, (op, params)
            if params in ({"cascade": "mine"}, {"cascade": "haarcascade_frontalfce_default"}):
                assert (want is None) == ("cascade-dir" in limits), (limits, want)
                assert want is None or "did you mean 'haarcascade_frontalface_default'" in want or "mine" in want


@pytest.mark.matrix
def test_column_pruning_still_runs_the_op(spark, sidecar, images):
    """count(*) and select(path, error) run the op on every file, and the
    sidecar sends only the error column (the command's columns list)."""
    paths = files(os.path.join(images, "good")) + files(os.path.join(images, "bad"))
    n = len(paths)

    def stats():
        with Client(sidecar.location) as c:
            s = c.stats()
        return s["rows"], s["bytes_out"]

    rows0, out0 = stats()
    df = read_images(spark, paths, "echo")  # data: each file's bytes back
    assert df.count() == n
    rows1, out1 = stats()
    slim = df.select("path", "error")
    [scanned] = re.findall(r"BatchScan \S+\[([^\]]*)\]", slim._jdf.queryExecution().executedPlan().toString())
    assert [c.split("#")[0] for c in scanned.split(", ")] == ["path", "error"], scanned
    pruned = {os.path.basename(r["path"]): r["error"] for r in slim.collect()}
    rows2, out2 = stats()
    full = {os.path.basename(r["path"]): r for r in df.collect()}
    rows3, out3 = stats()
    assert rows1 - rows0 == rows2 - rows1 == rows3 - rows2 == n  # every query ran the op on every file
    assert pruned == {k: r["error"] for k, r in full.items()}
    data = sum(len(r["data"]) for r in full.values() if r["data"] is not None)
    assert out3 - out2 >= data
    assert out1 - out0 < data / 20 and out2 - out1 < data / 20, (out1 - out0, out2 - out1, data)


@pytest.mark.matrix
def test_listing_options_and_many_small_files(spark, images, tmp_path):
    one = open(os.path.join(images, "good", "pixel_1x1.png"), "rb").read()
    (tmp_path / "sub").mkdir()
    for i in range(120):
        (tmp_path / ("p%03d.png" % i)).write_bytes(one)
    (tmp_path / "sub" / "deep.png").write_bytes(one)
    for hidden in ("_tmp", ".cache"):  # hidden directories: nothing below them is read
        (tmp_path / hidden).mkdir()
        (tmp_path / hidden / "deep.png").write_bytes(one)
    (tmp_path / "_hidden.png").write_bytes(one)
    (tmp_path / "notes.txt").write_bytes(b"not an image")
    spark.conf.set("spark.sql.files.openCostInBytes", "1000")
    spark.conf.set("spark.sql.files.maxPartitionBytes", "20000")
    try:
        df = read_images(spark, str(tmp_path), "info", options={"pathGlobFilter": "*.png"})
        # 120 files of (len + 1000 bytes open cost), at most 20000 bytes a partition
        per = 20000 // (len(one) + 1000)
        assert df.rdd.getNumPartitions() in (120 // per, 120 // per + 1)
        rows = df.collect()
        assert sorted(os.path.basename(r["path"]) for r in rows) == ["p%03d.png" % i for i in range(120)]
        assert all(r["width"] == 1 and r["error"] is None for r in rows)
    finally:
        spark.conf.unset("spark.sql.files.openCostInBytes")
        spark.conf.unset("spark.sql.files.maxPartitionBytes")
    # Unset, the open cost is 64 KB, not Spark's 4 MB (FileListing.OPEN_COST):
    # 120 small files are a task per core, where binaryFile makes 4.
    small = read_images(spark, str(tmp_path), "info", options={"pathGlobFilter": "*.png"})
    assert small.rdd.getNumPartitions() == spark.sparkContext.defaultParallelism
    rec = read_images(spark, str(tmp_path), "info", options={"recursiveFileLookup": "true",
                                                              "pathGlobFilter": "[dn]*"}).collect()
    assert sorted(os.path.basename(r["path"]) for r in rec) == ["deep.png", "notes.txt"]
    future = read_images(spark, str(tmp_path), "info", options={"modifiedAfter": "2999-01-01T00:00:00"})
    assert future.count() == 0
    # Names that a URI would escape, read from the local file system.
    odd = tmp_path / "o d%20d"
    odd.mkdir()
    (odd / "a b%2Fc+é.png").write_bytes(one)
    [r] = read_images(spark, str(odd), "info").collect()
    assert r["error"] is None and r["width"] == 1 and r["path"].endswith("o d%20d/a b%2Fc+é.png"), r


@pytest.mark.matrix
def test_sidecar_killed_mid_read(spark, images, tmp_path):
    """SIGKILL under the job, the sidecar back 1 s later on the same socket:
    every file answered once, as without the fault."""
    data = tmp_path / "data"
    data.mkdir()
    good = files(os.path.join(images, "good"))
    for i in range(2):
        for p in good:
            shutil.copy(p, data / ("%d-%s" % (i, os.path.basename(p))))
    listen = "grpc+unix://%s/s.sock" % tmp_path
    args = ("--workers", "1", "--metrics-listen", "")
    first, later = Sidecar(listen, *args), []
    want = client_results(first.location, good, "detect_blobs")

    def kill():
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            with Client(listen) as c:
                if c.stats()["rows"] >= 8:
                    break
            time.sleep(0.05)
        first.proc.send_signal(signal.SIGKILL)
        first.proc.wait()
        time.sleep(1)
        later.append(Sidecar(listen, *args))

    t = threading.Thread(target=kill, daemon=True)
    t.start()
    try:
        rows = read_images(spark, str(data), "detect_blobs", endpoint=listen,
                           options={"maxRows": 2, "window": 2, "retrySeconds": 30}).collect()
        t.join(30)
    finally:
        for s in [first] + later:
            s.stop()
    assert later, "the sidecar was not killed and restarted under the job"
    names = sorted(os.path.basename(r["path"]) for r in rows)
    assert names == sorted(p.name for p in data.iterdir())
    for r in rows:
        name = os.path.basename(r["path"]).split("-", 1)[1]
        assert r["error"] is None, r
        assert [list(b.asDict().values()) for b in r["blobs"]] == \
            [[b["y"], b["x"], b["sigma"]] for b in want[name]["blobs"]], name


@pytest.mark.matrix
def test_nested_fields_are_the_whole_structs_fields(spark, images):
    """faces.w is each face's w: Spark asks for part of a struct column,
    the reader reads the whole column (the sidecar sends it whole) and Spark
    takes the fields from it, not the struct's first fields."""
    faces = read_images(spark, os.path.join(images, "faces"), "detect_faces")
    whole = {r["path"]: r["faces"] for r in faces.select("path", "faces").collect()}
    assert any(whole.values()), whole
    fields = ("w", "neighbors", "y")
    part = faces.selectExpr("path", *["faces.%s AS %s" % (f, f) for f in fields]).collect()
    assert {r["path"]: tuple(r[f] for f in fields) for r in part} == \
        {p: tuple(None if fs is None else [face[f] for face in fs] for f in fields) for p, fs in whole.items()}
    blobs = read_images(spark, os.path.join(images, "good", "coins.png"), "detect_blobs")
    [r] = blobs.select("blobs").collect()
    [s] = blobs.selectExpr("blobs.sigma AS sigma", "blobs.x AS x").collect()
    assert r["blobs"] and s["sigma"] == [b["sigma"] for b in r["blobs"]] and s["x"] == [b["x"] for b in r["blobs"]]


@pytest.mark.matrix
def test_hidden_files_as_binary_file(spark, images, tmp_path):
    """Hidden and in-progress files are not read, whether a directory's
    listing, a glob or their own path gives them: the files are binaryFile's."""
    png = open(os.path.join(images, "good", "pixel_1x1.png"), "rb").read()
    for name, content in [("part-0.png", png), ("_p=1.png", png), ("_SUCCESS", b""), ("_metadata", png),
                          (".hidden", png), ("x.png._COPYING_", png[:20]), ("sub/s.png", png),
                          ("sub/_SUCCESS", b""), ("sub/y.png._COPYING_", png[:20]), ("_tmp/t.png", png)]:
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_bytes(content)

    def names(fmt, path, **options):
        r = spark.read.format(fmt)
        if fmt == "pixelflight":
            r = r.option("op", "info")
        for k, v in options.items():
            r = r.option(k, v)
        return sorted(os.path.relpath(re.sub("^file:", "", x["path"]), tmp_path)
                      for x in r.load(path).select("path").collect())

    d = str(tmp_path)
    assert names("binaryFile", d) == ["_p=1.png", "part-0.png"]
    for path, options in [(d, {}), (d, {"recursiveFileLookup": "true"}), (d + "/*", {}), (d + "/_SUCCESS", {}),
                          (d + "/.hidden", {}), (d + "/x.png._COPYING_", {}), (d + "/_metadata", {}),
                          (d + "/_tmp", {})]:
        want = names("binaryFile", path, **options)
        assert names("pixelflight", path, **options) == want, (path, options)
    rows = read_images(spark, d + "/*", "info", strict=True).collect()
    assert len(rows) == 4 and all(r["error"] is None for r in rows), rows


def test_too_large_window_or_max_rows_refused(spark, images):
    good = os.path.join(images, "good")
    for key, value in [("window", 2**32), ("window", 2**31), ("maxRows", 2**31), ("maxRows", "many")]:
        with pytest.raises(Exception, match="the option %s must be (at most 2147483647|a whole number)" % key):
            read_images(spark, good, "info", options={key: value}).collect()


@pytest.mark.matrix
def test_strict_error_names_the_file(spark, images, tmp_path):
    png = open(os.path.join(images, "good", "pixel_1x1.png"), "rb").read()
    for i in range(5):
        (tmp_path / ("ok-%d.png" % i)).write_bytes(png)
    shutil.copy(os.path.join(images, "bad", "notes.png"), tmp_path / "the-bad-one.png")
    with pytest.raises(Exception, match=r"the-bad-one\.png: the sidecar at .*strict mode: row \d+ of the batch"):
        read_images(spark, str(tmp_path), "info", strict=True).collect()


def test_endpoint_setting_comes_before_the_plugins_file(spark, sidecar, images, tmp_path):
    """spark.executorEnv.PIXELFLIGHT_ENDPOINT comes before the executor
    plugin's pixelflight.endpoint file, as for map_images' Python workers: a
    file in the (local mode) executor's working directory that names no
    sidecar changes nothing."""
    if CONNECT:
        pytest.skip("the executor is the Spark Connect server's JVM")
    jvm = spark.sparkContext._jvm
    if jvm.System.getenv("PIXELFLIGHT_ENDPOINT"):
        pytest.skip("PIXELFLIGHT_ENDPOINT is set in the executor's environment, and comes first")
    endpoint_file = os.path.join(jvm.System.getProperty("user.dir"), "pixelflight.endpoint")
    if os.path.exists(endpoint_file):
        pytest.skip("%s exists: not overwriting it" % endpoint_file)
    good = os.path.join(images, "good")

    def rows():
        with Client(sidecar.location) as c:
            return c.stats()["rows"]

    with open(endpoint_file, "w") as f:
        f.write("grpc+unix://%s/none.sock\n" % tmp_path)
    try:
        before = rows()
        got = read_images(spark, good, "info", options={"retrySeconds": 0}).collect()
        after = rows()
    finally:
        os.unlink(endpoint_file)
    assert len(got) == len(os.listdir(good)) == after - before
    assert all(r["error"] is None for r in got)


def test_unix_endpoint_form(spark, sidecar, images):
    """unix:///path, as serve and the Python client take it."""
    assert sidecar.location.startswith("grpc+unix://")
    good = os.path.join(images, "good")
    got = read_images(spark, good, "info", endpoint=sidecar.location[len("grpc+"):]).collect()
    assert len(got) == len(os.listdir(good)) and all(r["error"] is None for r in got)


def test_unreachable_endpoint_fails_in_seconds(spark, images, tmp_path):
    """A sidecar that never answered is tried for 5 s, not the 60 s a
    sidecar that has answered gets: a wrong endpoint fails the job fast."""
    missing = "grpc+unix://%s/none.sock" % tmp_path
    with pytest.raises(Exception) as e:
        read_images(spark, os.path.join(images, "good"), "info", endpoint=missing).collect()
    assert "no sidecar answers at " + missing in str(e.value)
    assert "It never answered: tried for 5." in str(e.value), str(e.value)[:2000]


# The pixelflight_map table function (MapFunction, spark.sql.extensions), and
# map_images through it.

def binary_files(spark, images):
    return spark.read.format("binaryFile").load([os.path.join(images, "good"), os.path.join(images, "bad")])


@pytest.mark.matrix
@pytest.mark.connect
@pytest.mark.parametrize("op,params", [("fft_convolve", {"output": "stats", "sigma": 2.0}), ("detect_faces", {}),
                                       ("watershed", {})])
def test_map_images_jvm_and_python_give_the_same_rows(spark, images, op, params):
    """map_images takes the table function by itself where the session has
    the extensions (classic and Connect), with the same columns, types and
    rows as mapInArrow gives, bad files' errors included, in the same order."""
    df = binary_files(spark, images)
    auto = map_images(df, op, keep=("path", "length"), **params)
    if not CONNECT:
        assert "MapPartitions" in auto._jdf.queryExecution().analyzed().toString()  # the JVM's, not Python's
    jvm = map_images(df, op, keep=("path", "length"), runner="jvm", **params)
    py = map_images(df, op, keep=("path", "length"), runner="python", **params)
    if not CONNECT:  # analysed at once: the views are gone
        assert not [t.name for t in spark.catalog.listTables() if t.name.startswith("_pixelflight_map_")]
    assert auto.schema == jvm.schema == py.schema
    a, b = jvm.collect(), py.collect()
    assert a == b
    bad = [n for n in os.listdir(os.path.join(images, "bad")) if os.path.getsize(os.path.join(images, "bad", n))]
    assert len(a) == df.count() and sum(r["error"] is not None for r in a) == len(bad)  # Spark skips empty files


@pytest.mark.matrix
@pytest.mark.connect
def test_table_function_sql(spark, images, tmp_path):
    df = binary_files(spark, images)
    df.createOrReplaceTempView("pf_files")
    info = spark.sql("SELECT * FROM pixelflight_map(TABLE(pf_files), 'info')")
    assert info.columns == META + result_schema("info", {}).names  # every column but content, by default
    rows = by_name(info.collect())
    assert len(rows) == df.count() and "unknown image format" in rows["notes.png"]["error"]
    assert rows["astronaut.png"]["width"] == 512
    # A query as the input, the image column and kept columns as options.
    got = spark.sql("""SELECT * FROM pixelflight_map(TABLE(SELECT path AS p, content AS bytes FROM pf_files
                       WHERE path LIKE '%.png'), 'fft_convolve', '{"sigma": 3, "output": "stats"}',
                       map('column', 'bytes', 'keep', 'p'))""")
    assert got.columns == ["p"] + result_schema("fft_convolve", {"output": "stats"}).names
    stats = {os.path.basename(r["p"]): r for r in got.collect()}
    assert sorted(stats) == sorted(n for n in rows if n.endswith(".png"))
    # A Parquet table of images gives what the files give.
    df.write.parquet(str(tmp_path / "t"))
    spark.read.parquet(str(tmp_path / "t")).createOrReplaceTempView("pf_table")
    again = spark.sql("""SELECT p, mean, error FROM pixelflight_map(TABLE(SELECT path AS p, content FROM pf_table),
                         'fft_convolve', '{"sigma": 3, "output": "stats"}')""").collect()
    assert {os.path.basename(r["p"]): (r["mean"], r["error"]) for r in again if r["p"].endswith(".png")} == \
        {n: (r["mean"], r["error"]) for n, r in stats.items()}
    if not CONNECT:
        # An input of many small partitions (here one file each) is
        # coalesced to about its bytes over maxPartitionBytes, at least a
        # task per core.
        spark.conf.set("spark.sql.files.maxPartitionBytes", "1m")
        try:
            many = spark.read.format("binaryFile").load(os.path.join(images, "good"))
            many.createOrReplaceTempView("pf_many")
            mapped = spark.sql("SELECT * FROM pixelflight_map(TABLE(pf_many), 'info')")
            size = sum(os.path.getsize(p) for p in files(os.path.join(images, "good")))
            assert many.rdd.getNumPartitions() == len(os.listdir(os.path.join(images, "good")))
            assert mapped.rdd.getNumPartitions() == max(size // (1 << 20) + 1, spark.sparkContext.defaultParallelism)
            assert mapped.count() == many.count()
        finally:
            spark.conf.unset("spark.sql.files.maxPartitionBytes")
    # A query that stops early (LIMIT) ends its exchanges.
    assert len(spark.sql("SELECT * FROM pixelflight_map(TABLE(pf_files), 'info') LIMIT 2").collect()) == 2


@pytest.mark.skipif(CONNECT, reason="the REST API of the Connect server's UI, not the client's")
def test_table_function_metrics_in_spark_ui(spark, images):
    """pixelflight_map's tasks add the scan node's counts to named
    accumulators, on the stage's page of Spark's UI and in its REST API."""
    import urllib.request
    binary_files(spark, images).createOrReplaceTempView("pf_metrics")
    rows = spark.sql("SELECT * FROM pixelflight_map(TABLE(pf_metrics), 'fft_convolve', '{\"output\": \"stats\"}')") \
        .collect()
    url = "%s/api/v1/applications/%s/stages" % (spark.sparkContext.uiWebUrl, spark.sparkContext.applicationId)
    deadline = time.time() + 20
    while True:
        with urllib.request.urlopen(url, timeout=10) as r:
            stages = sorted(json.load(r), key=lambda st: st["stageId"])
        got = {}
        for st in stages:  # the last stage that has them: this query's
            acc = {a["name"]: int(a["value"]) for a in st.get("accumulatorUpdates", [])}
            if "pixelflight rows" in acc:
                got = acc
        if got.get("pixelflight rows") == len(rows) or time.time() > deadline:
            break
        time.sleep(0.5)
    errors = sum(1 for r in rows if r["error"])
    assert got.get("pixelflight rows") == len(rows) and got["pixelflight error rows"] == errors > 0, got
    assert got["pixelflight rows run on the CPU"] == len(rows) - errors and got["pixelflight rows run on a GPU"] == 0
    assert got["pixelflight image bytes sent"] > 0 and got["pixelflight result bytes received"] > 0, got


@pytest.mark.matrix
def test_table_function_errors_on_the_driver(spark, images):
    """Wrong arguments fail the query before any task runs, saying what to write."""
    binary_files(spark, images).createOrReplaceTempView("pf_files")
    cases = [
        ("'fft_convolve', '{\"sigam\": 2}'", "did you mean 'sigma'"),
        ("'fft_convolve', '{}', map('colum', 'x')", "unknown option 'colum' (did you mean 'column'?)"),
        ("'info', '{}', map('column', 'path')", "column path is string: want binary image bytes"),
        ("'info', '{}', map('keep', '[\"nope\"]')", "the input has no column nope"),
        ("'nosuchop'", "unknown op 'nosuchop'"),
        ("", "takes 2 to 4 arguments"),
    ]
    for args, want in cases:
        q = "SELECT * FROM pixelflight_map(TABLE(pf_files)%s)" % ((", " + args) if args else "")
        with pytest.raises(Exception, match=re.escape(want)):
            spark.sql(q).collect()
    if not pyspark.__version__.startswith("3."):  # Spark 3.5 parses none of these
        with pytest.raises(Exception, match="without PARTITION BY, ORDER BY or WITH SINGLE PARTITION"):
            spark.sql("SELECT * FROM pixelflight_map(TABLE(pf_files) WITH SINGLE PARTITION, 'info')").collect()
    with pytest.raises(Exception, match=re.escape("first argument must be TABLE(name) or TABLE(query)")):
        spark.sql("SELECT * FROM pixelflight_map('pf_files', 'info')").collect()
    with pytest.raises(Exception, match="runner='jvm' takes a binary column"):
        map_images(spark.read.format("image").load(os.path.join(images, "good", "camera.png")), "info",
                   column="image", keep=(), runner="jvm")


@pytest.mark.matrix
def test_table_function_strict_names_the_row(spark, images):
    spark.read.format("binaryFile").load(os.path.join(images, "bad")).createOrReplaceTempView("pf_bad")
    with pytest.raises(Exception, match=r"bad/\w+\.png: .*strict"):
        spark.sql("SELECT * FROM pixelflight_map(TABLE(pf_bad), 'info', '{}', map('strict', 'true'))").collect()


def test_doc_examples(spark, images, tmp_path):
    """docs/datasource.md's examples as written, on local files (the
    packing example without its repartition(256): 256 tasks for 24 files)."""
    good, faces = os.path.join(images, "good"), os.path.join(images, "faces")
    ns = {"spark": spark}
    n = run_block(doc_block("docs/datasource.md", 'spark.read.format("pixelflight")'), ns,
                  **{"s3a://bucket/frames/": faces})
    assert n == [len(os.listdir(faces))] * 2
    for stmt in filter(str.strip, doc_block("docs/datasource.md", "CREATE TEMPORARY VIEW blurred")
                       .replace("s3a://bucket/photos/", good).split(";")):
        spark.sql(stmt)
    assert spark.table("blurred").filter("png is not null").count() == len(os.listdir(good))
    spark.read.format("binaryFile").load(good).selectExpr(
        "path", "content", "content AS bytes", "path AS id", "'2026-11-27' AS day").createOrReplaceTempView("images")
    sql = doc_block("docs/datasource.md", "SELECT * FROM pixelflight_map")
    assert [spark.sql(s).count() for s in filter(str.strip, sql.split(";"))] == [len(os.listdir(good))] * 2
    packed = str(tmp_path / "photos.parquet")
    [_, n] = run_block(doc_block("docs/datasource.md", '(spark.read.format("binaryFile")'), ns,
                    **{"s3a://bucket/photos/": good, "s3a://bucket/photos.parquet": packed, ".repartition(256)": ""})
    assert n == len(os.listdir(good))
