"""Results of any size: a batch whose results pass what one Arrow binary
column or one gRPC message holds (2 GiB) comes back whole, split into
result batches of at most 64 MiB (udf.MaxResultBatchBytes), through the
real sidecar and pyarrow.flight client; and a client that loses its sidecar
after part of a slice was answered sends only the rest again (the Python
client and the data source's JVM client, against a scripted Flight server
that fails on cue)."""

import io
import json
import os
import sys
import threading
import time

import numpy as np
import pyarrow as pa
import pyarrow.flight as flight
import pytest
from PIL import Image

from conftest import Sidecar, session_builder
from pixelflight import Client, result_schema
from pixelflight.spark import read_images
from test_plugin import find_jar

MAX_RESULT_BATCH = 64 << 20


def zeros_png(side):
    buf = io.BytesIO()
    Image.fromarray(np.zeros((side, side), np.uint8)).save(buf, "PNG")
    return buf.getvalue()


def test_results_over_2gib_in_one_batch(tmp_path):
    """64 all-zero 3000x3000 PNGs (8.8 KB each) in one batch, fft_convolve
    output=f32: 2.3 GB of results for one input batch. Every row comes
    back, in order, 36 MB of float32 zeros each, in result batches of at
    most 64 MiB."""
    side, n = 3000, 64
    png = zeros_png(side)
    s = Sidecar("grpc+unix://%s" % (tmp_path / "pf.sock"))
    try:
        names = ["%02d" % i for i in range(n)]
        batch = pa.record_batch([pa.array(names), pa.array([png] * n, pa.binary())], names=["name", "content"])
        got, batches = [], 0
        with Client(s.location, max_rows=n) as c:
            for res in c.map_batches("fft_convolve", [batch], keep=("name",), output="f32", sigma=1.0):
                batches += 1
                assert res.get_total_buffer_size() <= MAX_RESULT_BATCH + (1 << 20) or res.num_rows == 1
                assert res.column("error").null_count == res.num_rows, res.column("error").drop_null()
                for name, h, w, data in zip(*(res.column(k).to_pylist() if k != "data" else res.column(k)
                                              for k in ("name", "height", "width", "data"))):
                    assert (h, w) == (side, side)
                    v = np.frombuffer(data.as_buffer(), np.float32)
                    assert v.size == side * side and not v.any(), name
                    got.append(name)
        assert got == names
        assert batches >= 4 * side * side * n // MAX_RESULT_BATCH
        st = Client(s.location).stats()
        assert st["rows"] == n and st["bytes_out"] > 2 << 30, st
    finally:
        assert s.stop() == 0, "".join(s.logs[-20:])


class Scripted(flight.FlightServerBase):
    """A Flight server that answers each exchange's batches with the op's
    result schema (rows of nulls, error "row <i>" where i is the row's
    global index, carried in the input as the first byte pair), split into
    parts of `part` rows; the first exchange with rows fails with
    UNAVAILABLE once it has sent `fail_after` rows or the next part would
    pass that. It records the row counts of the batches of each exchange
    with rows."""

    def __init__(self, location, op, params, part, fail_after):
        super().__init__(location)
        self.schema = result_schema(op, params)
        self.part, self.fail_after = part, fail_after
        self.received = []  # per exchange with rows: the row counts of its batches
        self.failed = False
        self.lock = threading.Lock()

    def do_exchange(self, context, descriptor, reader, writer):
        schema = self.schema
        cols = json.loads(descriptor.command).get("columns")
        if cols is not None:  # the op's columns the client asked for, and error
            schema = pa.schema([f for f in schema if f.name in cols or f.name == "error"])
        writer.begin(schema)
        sent, mine = 0, []
        for chunk in reader:
            batch = chunk.data
            if not mine:
                with self.lock:
                    self.received.append(mine)
            mine.append(batch.num_rows)
            content = batch.column(0).to_pylist()
            for lo in range(0, batch.num_rows, self.part):
                rows = content[lo:lo + self.part]
                if not self.failed and sent + len(rows) > self.fail_after:
                    self.failed = True
                    # What was written reaches the client before the
                    # status only once gRPC has sent it: give it time.
                    time.sleep(0.5)
                    raise flight.FlightUnavailableError("scripted: the sidecar goes away")
                nulls = [pa.nulls(len(rows), f.type) for f in schema][:-1]
                errs = pa.array(["row %d" % int.from_bytes(r[:2], "big") for r in rows])
                writer.write_batch(pa.record_batch(nulls + [errs], schema=schema))
                sent += len(rows)


@pytest.fixture
def scripted(tmp_path):
    servers = []

    def start(part, fail_after, op="fft_convolve", params={"output": "stats"}):
        s = Scripted("grpc+unix://%s" % (tmp_path / ("s%d.sock" % len(servers))), op, params, part, fail_after)
        threading.Thread(target=s.serve, daemon=True).start()
        servers.append(s)
        return s, "grpc+unix://%s" % (tmp_path / ("s%d.sock" % (len(servers) - 1)))

    yield start
    for s in servers:
        s.shutdown()


def test_python_client_resends_only_what_is_unanswered(scripted):
    """Slices of 10 rows answered 4 rows at a time; the sidecar goes away
    after 4 rows (inside the first slice): the new exchange gets the first
    slice's last 6 rows, then the rest, and every row comes back once, in
    order."""
    server, location = scripted(part=4, fail_after=6)
    rows = [i.to_bytes(2, "big") + b"x" for i in range(30)]
    batch = pa.record_batch([pa.array(range(30)), pa.array(rows, pa.binary())], names=["i", "content"])
    with Client(location, max_rows=10, retry_seconds=10) as c:
        out = list(c.map_batches("fft_convolve", [batch], keep=("i",), output="stats"))
    got = pa.Table.from_batches(out).to_pydict()
    assert got["i"] == list(range(30))
    assert got["error"] == ["row %d" % i for i in range(30)]
    assert [b.num_rows for b in out] == [4, 4, 2, 4, 4, 2, 4, 4, 2], [b.num_rows for b in out]
    assert len(server.received) == 2
    assert server.received[1][0] == 6, server.received  # the first slice's rows 4..9 only


@pytest.fixture(scope="module")
def spark():
    jar = find_jar()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    s = (session_builder("local[1]").appName("pixelflight-big-results-test")
         .config("spark.jars", jar)
         .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
         .getOrCreate())
    s.sparkContext.setLogLevel("ERROR")
    s.sql("ADD JAR '%s'" % jar)
    yield s
    s.stop()


def test_data_source_resends_only_what_is_unanswered(spark, scripted, tmp_path):
    """The data source's JVM client, as the Python client above: 25 files in
    slices of 10, answered 4 rows at a time, the sidecar gone after 4: every
    file once, its own row (the scripted error names the file's index)."""
    server, location = scripted(part=4, fail_after=6)
    d = tmp_path / "files"
    d.mkdir()
    for i in range(25):
        (d / ("%02d.bin" % i)).write_bytes(i.to_bytes(2, "big") + b"x")
    df = read_images(spark, str(d), "fft_convolve", endpoint=location, output="stats",
                     options={"maxRows": "10", "retrySeconds": "10"})
    got = sorted((os.path.basename(r["path"]), r["error"]) for r in df.select("path", "error").collect())
    assert got == [("%02d.bin" % i, "row %d" % i) for i in range(25)]
    assert len(server.received) == 2 and server.received[1][0] == 6, server.received


def test_data_source_and_map_images_with_split_results(spark, tmp_path):
    """Six all-zero 3000x3000 PNGs in one slice, output=f32: 216 MB of
    results come back in several result batches, each file's 36 MB in its
    own row, through the data source (the JVM client) and map_images (the
    Python client in Spark's Python workers)."""
    from pixelflight.spark import map_images
    side = 3000
    d = tmp_path / "zeros"
    d.mkdir()
    png = zeros_png(side)
    for i in range(6):
        (d / ("%d.png" % i)).write_bytes(png)
    s = Sidecar("grpc+unix://%s" % (tmp_path / "pf.sock"))
    try:
        df = read_images(spark, str(d), "fft_convolve", output="f32", sigma=1.0, endpoint=s.location)
        rows = df.selectExpr("path", "height", "width", "length(data) AS n", "error").collect()
        assert sorted(os.path.basename(r["path"]) for r in rows) == ["%d.png" % i for i in range(6)]
        assert all((r["height"], r["width"], r["n"], r["error"]) == (side, side, 4 * side * side, None)
                   for r in rows), rows
        files = spark.read.format("binaryFile").load(str(d))
        out = map_images(files, "fft_convolve", keep=["path"], endpoint=s.location, output="f32", sigma=1.0)
        rows = out.selectExpr("path", "length(data) AS n", "error").collect()
        assert len(rows) == 6 and all((r["n"], r["error"]) == (4 * side * side, None) for r in rows), rows
        assert json.loads(json.dumps(Client(s.location).stats()))["rows"] == 12
    finally:
        assert s.stop() == 0, "".join(s.logs[-20:])
