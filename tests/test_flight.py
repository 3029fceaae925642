"""The sidecar through the real pyarrow.flight client, over both transports."""

import os
import re

import numpy as np
import pyarrow as pa
import pyarrow.flight as flight
import pytest
import scipy.signal as ss

from conftest import Sidecar, check_close, decode_f32, gaussian, gray_of, scipy_ref
from pixelflight import Client, SidecarUnavailable
from test_docs import doc_block, run_block

pytestmark = pytest.mark.check  # the whole module is in make check


def files(images, sub):
    d = os.path.join(images, sub)
    return sorted(os.path.join(d, f) for f in os.listdir(d))


def batch_of(paths, binary_type=pa.binary()):
    contents = [open(p, "rb").read() for p in paths]
    return pa.RecordBatch.from_arrays([pa.array(contents, binary_type), pa.array(paths)], names=["content", "path"])


@pytest.fixture(scope="module", params=["unix", "tcp"])
def endpoint(request, sidecar):
    if request.param == "unix":
        yield sidecar.location
        return
    s = Sidecar("grpc://127.0.0.1:0")
    yield s.location
    assert s.stop() == 0


def test_every_row_back_good_match_scipy(endpoint, images):
    good, bad = files(images, "good"), files(images, "bad")
    paths = [p for pair in zip(good, bad + good[len(bad):]) for p in pair]  # mix good and bad
    paths = list(dict.fromkeys(paths))
    with Client(endpoint, max_rows=5) as c:
        out = pa.Table.from_batches(list(c.map_batches("fft_convolve", [batch_of(paths)], keep=("path",), sigma=2.0)))
    assert out.column("path").to_pylist() == paths  # same rows, same order
    for row in out.to_pylist():
        if row["path"] in bad:
            assert row["error"] and row["data"] is None, row["path"]
        else:
            assert row["error"] is None, (row["path"], row["error"])
            check_close(decode_f32(row), scipy_ref(row["path"]), row["path"])


@pytest.mark.parametrize("size", [9, 31])
@pytest.mark.parametrize("mode", ["same", "full", "valid"])
def test_box_by_running_sums_matches_scipy(sidecar, images, size, mode):
    """Boxes from 5 up go by running sums (docs/ops.md): the same result as
    scipy's fftconvolve with the size×size mean kernel, on the lossless
    test images, every mode."""
    paths = [p for p in files(images, "good") if p.lower().endswith((".png", ".bmp", ".tif", ".tiff", ".pgm"))][:4]
    assert paths
    with Client(sidecar.location) as c:
        out = pa.Table.from_batches(list(c.map_batches("fft_convolve", [batch_of(paths)], keep=("path",),
                                                       kernel="box", size=size, mode=mode)))
    for row in out.to_pylist():
        assert row["error"] is None, (row["path"], row["error"])
        ref = ss.fftconvolve(gray_of(row["path"]), np.full((size, size), 1 / size**2), mode=mode)
        check_close(decode_f32(row), ref, row["path"])


def test_bad_rows_say_why(sidecar, images):
    bad = files(images, "bad")
    with Client(sidecar.location) as c:
        out = pa.Table.from_batches(list(c.map_batches("fft_convolve", [batch_of(bad)], keep=("path",))))
    errors = {os.path.basename(p): e for p, e in zip(out.column("path").to_pylist(), out.column("error").to_pylist())}
    assert "empty" in errors["empty.png"]
    assert "unknown image format" in errors["notes.png"]
    assert "60000x60000" in errors["oversized.png"] and "limit" in errors["oversized.png"]
    assert "corrupt" in errors["truncated.png"]
    assert "corrupt" in errors["corrupt.png"]


def test_large_binary_and_outputs(sidecar, images):
    path = os.path.join(images, "good", "coins.png")
    b = batch_of([path], pa.large_binary())
    ref = ss.fftconvolve(gray_of(path), np.array([[1, 0, -1], [2, 0, -2], [1, 0, -1]]), mode="full")
    with Client(sidecar.location) as c:
        [st] = c.map_batches("fft_convolve", [b], kernel="sobel_x", mode="full", output="stats")
        [pg] = c.map_batches("fft_convolve", [b], kernel="sobel_x", mode="full", output="png")
    st = st.to_pylist()[0]
    for name, want in [("min", ref.min()), ("max", ref.max()), ("mean", ref.mean()), ("std", ref.std())]:
        assert abs(st[name] - want) <= 1e-3 * (1 + abs(want)), (name, st[name], want)
    from io import BytesIO

    from PIL import Image
    png = np.asarray(Image.open(BytesIO(pg.column("png")[0].as_py())))
    assert png.shape == ref.shape
    assert np.abs(png.astype(int) - np.clip(np.round(ref), 0, 255)).max() <= 1
    # png_scale keeps a sobel's negative half: abs, and min..max stretched.
    with Client(sidecar.location) as c:
        [ab] = c.map_batches("fft_convolve", [b], kernel="sobel_x", mode="full", output="png", png_scale="abs")
        [mm] = c.map_batches("fft_convolve", [b], kernel="sobel_x", mode="full", output="png", png_scale="minmax")
    for got, want in [(ab, np.clip(np.round(np.abs(ref)), 0, 255)),
                      (mm, np.round((ref - ref.min()) * 255 / (ref.max() - ref.min())))]:
        png = np.asarray(Image.open(BytesIO(got.column("png")[0].as_py())))
        assert png.shape == ref.shape and np.abs(png.astype(int) - want).max() <= 1


def test_spark_image_struct(sidecar, images):
    """Spark's image source struct: BGR bytes, converted with Pillow's L rule."""
    rng = np.random.default_rng(1)
    bgr = rng.integers(0, 256, (37, 52, 3), dtype=np.uint8)
    struct = pa.StructArray.from_arrays(
        [pa.array(["mem://x"]), pa.array([37], pa.int32()), pa.array([52], pa.int32()),
         pa.array([3], pa.int32()), pa.array([16], pa.int32()), pa.array([bgr.tobytes()], pa.binary())],
        names=["origin", "height", "width", "nChannels", "mode", "data"])
    b = pa.RecordBatch.from_arrays([struct], names=["image"])
    b16 = bgr.astype(np.int64)
    gray = (b16[..., 2] * 19595 + b16[..., 1] * 38470 + b16[..., 0] * 7471 + 0x8000) >> 16
    with Client(sidecar.location) as c:
        [out] = c.map_batches("fft_convolve", [b], column="image", kernel="box", size=4)
    got = decode_f32(out.to_pylist()[0])
    ref = ss.fftconvolve(gray.astype(np.float64), np.full((4, 4), 1 / 16), mode="same")
    assert np.abs(got - ref).max() <= 1e-4 * (1 + np.abs(ref).max())


def test_echo_and_info(sidecar, images):
    paths = files(images, "good")[:4]
    with Client(sidecar.location) as c:
        echo = pa.Table.from_batches(list(c.map_batches("echo", [batch_of(paths)])))
        info = pa.Table.from_batches(list(c.map_batches("info", [batch_of(paths)], keep=("path",))))
    assert echo.column("data").to_pylist() == [open(p, "rb").read() for p in paths]
    from PIL import Image
    for row in info.to_pylist():
        with Image.open(row["path"]) as im:
            assert (row["width"], row["height"]) == im.size, row


def test_bad_command_is_invalid_argument(sidecar, images):
    b = batch_of(files(images, "good")[:1])
    with Client(sidecar.location) as c:
        # gRPC INVALID_ARGUMENT arrives in pyarrow as ArrowInvalid.
        with pytest.raises(pa.ArrowInvalid, match=r"sigma -1: want more than 0"):
            list(c.map_batches("fft_convolve", [b], sigma=-1))
        with pytest.raises(pa.ArrowInvalid, match=r"input has no column \"pixels\""):
            _raw_exchange(c, b'{"op": "echo", "column": "pixels"}', b)
        with pytest.raises(pa.ArrowInvalid, match=r"strict mode") as e:
            list(c.map_batches("fft_convolve", [batch_of(files(images, "good")[:1] + files(images, "bad")[:1])], strict=True))
        # One line: the file (the batch's path column) and the cause; without a path, the row.
        assert str(e.value).startswith("pixelflight: %s: " % files(images, "bad")[0]) and "\n" not in str(e.value), e.value
        bad = files(images, "bad")[0]
        nameless = pa.record_batch([pa.array([open(bad, "rb").read()])], names=["content"])
        with pytest.raises(pa.ArrowInvalid) as e:
            list(c.map_batches("fft_convolve", [nameless], strict=True))
        assert str(e.value).startswith("pixelflight: row 0 of the slice: "), str(e.value)


def _raw_exchange(client, cmd, batch):
    writer, reader = client._client.do_exchange(flight.FlightDescriptor.for_command(cmd))
    writer.begin(batch.schema)
    writer.write_batch(batch)
    writer.done_writing()
    try:
        return reader.read_all()
    finally:
        try:
            writer.close()
        except pa.ArrowException:
            pass


def test_capabilities_and_stats(sidecar):
    batch = pa.record_batch([pa.array([b"a", b"bc"])], names=["content"])
    with Client(sidecar.location) as c:
        caps = c.capabilities()
        before = c.stats()
        list(c.map_batches("echo", [batch]))
        after = c.stats()
    ops = {o["name"]: o for o in caps["ops"]}
    assert set(ops) == {"echo", "info", "fft_convolve", "detect_blobs", "watershed", "detect_faces"}
    assert [f["name"] for f in ops["fft_convolve"]["outputs"]["f32"]] == ["height", "width", "data", "error"]
    assert caps["limits"]["max_pixels"] == 100_000_000
    assert caps["backends"][0]["name"] == "cpu"
    assert caps["input"]["png_decoder"] == "libdeflate"  # the Makefile installs it; the binary opens it
    # This test's stream alone ran in between (a worker runs one test at a time).
    assert after["streams_total"] == before["streams_total"] + 1, (before, after)
    assert after["rows"] == before["rows"] + 2 and after["bytes_in"] > before["bytes_in"], (before, after)
    assert after["streams_open"] == 0


def test_unreachable_sidecar_says_where_and_how(tmp_path, monkeypatch):
    missing = "grpc+unix://%s/none.sock" % tmp_path
    monkeypatch.setenv("PIXELFLIGHT_ENDPOINT", missing)
    with pytest.raises(SidecarUnavailable) as e:
        Client().health()
    msg = str(e.value)
    assert missing in msg and "PIXELFLIGHT_ENDPOINT" in msg and "pixelflight serve" in msg
    b = pa.RecordBatch.from_arrays([pa.array([b"x"])], names=["content"])
    with pytest.raises(SidecarUnavailable):
        list(Client().map_batches("echo", [b]))
    # With nothing configured (the default socket), it names the executor plugin.
    monkeypatch.delenv("PIXELFLIGHT_ENDPOINT")
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SidecarUnavailable) as e:
        Client(retry_seconds=0).health()
    msg = str(e.value)
    assert "spark.plugins=org.pixelflight.spark.PixelflightPlugin" in msg and "spark.jars" in msg, msg


def schema_cases():
    """(op, params) for every output of every op in the client's
    outputs.json (the registry's, tools/paramschema), and the params that
    mean a selecting param's default: absent, null and ""."""
    from pixelflight.client import _known_outputs
    cases = []
    for op, out in _known_outputs().items():
        cases.append((op, {}))
        if "values" in out:
            p = out["param"]
            cases += [(op, {p: None})] + ([(op, {p: ""})] if out["param_type"] == "string" else [])
            cases += [(op, {p: {"true": True, "false": False}.get(v, v) if out["param_type"] == "bool" else v})
                      for v in out["values"]]
    return cases


def test_python_schemas_mirror_the_server(sidecar, images):
    """pixelflight.client.result_schema (used to plan Spark jobs without a
    sidecar) must give exactly the types the server returns, for every op
    and each of its outputs."""
    from pixelflight.client import result_schema
    cases = schema_cases()
    assert ("fft_convolve", {"output": "stats"}) in cases and ("detect_faces", {"annotate": True}) in cases
    with Client(sidecar.location) as c:
        caps = {o["name"]: o for o in c.capabilities()["ops"]}
        assert set(caps) == {op for op, _ in cases}
        img = open(os.path.join(images, "good", "camera.png"), "rb").read()
        b = pa.RecordBatch.from_arrays([pa.array([img], pa.binary())], names=["content"])
        seen = {op: set() for op in caps}
        for op, params in cases:
            [out] = list(c.map_batches(op, [b], **params))
            want = result_schema(op, params)
            assert out.schema.equals(want), (op, params, out.schema)
            seen[op].add(tuple(want.names))
        for op, o in caps.items():  # every output capabilities lists, and no other
            assert seen[op] == {tuple(f["name"] for f in fields) for fields in o["outputs"].values()}, (op, o["outputs"])


def test_result_schema_without_a_sidecar():
    """result_schema reads outputs.json: defaults, list children non-null,
    and its refusals' words."""
    from pixelflight.client import result_schema
    assert result_schema("fft_convolve").names == result_schema("fft_convolve", {"output": ""}).names \
        == ["height", "width", "data", "error"]
    assert result_schema("fft_convolve", {"output": "stats"}).types == [pa.float64()] * 4 + [pa.string()]
    assert result_schema("detect_faces", {"annotate": None}).names == ["faces", "error"]
    assert result_schema("detect_faces", {"annotate": True}).names == ["faces", "annotated", "error"]
    face = pa.struct([pa.field(n, pa.int32(), nullable=False) for n in ("x", "y", "w", "h", "neighbors")])
    assert result_schema("detect_faces").field("faces").type == pa.list_(face)
    assert all(f.nullable for f in result_schema("detect_blobs"))
    with pytest.raises(ValueError, match=r"^fft_convolve output 'jpeg': want f32, png or stats$"):
        result_schema("fft_convolve", {"output": "jpeg"})
    with pytest.raises(ValueError, match=r"^unknown op 'blur': want detect_blobs, detect_faces, echo, fft_convolve, "
                                         r"info or watershed$"):
        result_schema("blur")


def test_unix_endpoint_is_grpc_unix(sidecar, monkeypatch):
    """unix:///path, as serve and `pixelflight health` take it, from any source."""
    from pixelflight import resolve_endpoint

    path = sidecar.location[len("grpc+unix://"):]
    assert resolve_endpoint("unix://" + path) == (sidecar.location, "the endpoint argument")
    monkeypatch.setenv("PIXELFLIGHT_ENDPOINT", "unix://" + path)
    with Client() as c:
        assert c.endpoint == sidecar.location and c.health()["status"] == "SERVING"
        b = pa.RecordBatch.from_arrays([pa.array([b"x"])], names=["content"])
        [out] = list(c.map_batches("echo", [b]))
        assert out.column("data").to_pylist() == [b"x"]


@pytest.mark.parametrize("bad", ["127.0.0.1:8815", "/tmp/pixelflight.sock", "http://127.0.0.1:8815"])
def test_endpoint_pyarrow_cannot_use(bad, monkeypatch):
    """A ValueError naming the endpoint and its source, on the driver's
    check of the parameters too."""
    from pixelflight.params import check_params

    with pytest.raises(ValueError, match=r"the pixelflight endpoint '%s' \(from the endpoint argument\) is not one "
                                         r"a Flight client can use: .*; want grpc\+unix:///path\.sock" % re.escape(bad)):
        Client(bad)
    monkeypatch.setenv("PIXELFLIGHT_ENDPOINT", bad)
    from pixelflight import InvalidEndpoint
    with pytest.raises(InvalidEndpoint, match=r"'%s' \(from the environment variable PIXELFLIGHT_ENDPOINT\)"
                                              % re.escape(bad)):
        check_params("fft_convolve", {"sigma": 2.0})


@pytest.mark.parametrize("bad", ["grpc+unix://tmp/pixelflight.sock", "unix://tmp/pixelflight.sock",
                                 "grpc+unix:tmp/pixelflight.sock"])
def test_unix_endpoint_with_a_host(bad, monkeypatch):
    """Two slashes for three: pyarrow would take "tmp" as a host and
    connect to /pixelflight.sock; the client refuses it, on the driver's
    check of the parameters too."""
    from pixelflight import InvalidEndpoint
    from pixelflight.params import check_params

    want = ("would be read as a host" if "//" in bad else "want an absolute socket path")
    with pytest.raises(InvalidEndpoint, match=r"the pixelflight endpoint 'grpc\+unix:%s' \(from the endpoint argument\) "
                                              r"is not one a Flight client can use: .*%s" % (re.escape(bad.split(":", 1)[1]), want)):
        Client(bad)
    monkeypatch.setenv("PIXELFLIGHT_ENDPOINT", bad)
    with pytest.raises(InvalidEndpoint, match=r"\(from the environment variable PIXELFLIGHT_ENDPOINT\)"):
        check_params("fft_convolve", {"sigma": 2.0})


def test_exchange_closes_a_writer_that_failed_to_begin(sidecar):
    """A stream whose begin fails is closed, not left to the garbage collector."""
    closed = []

    class Writer:
        def begin(self, schema):
            raise pa.ArrowInvalid("begin failed")

        def close(self):
            closed.append(True)

    with Client(sidecar.location) as c:
        c._client.close()
        c._client = type("Fake", (), {"do_exchange": lambda self, desc, options: (Writer(), None),
                                      "close": lambda self: None})()
        b = pa.RecordBatch.from_arrays([pa.array([b"x"])], names=["content"])
        with pytest.raises(pa.ArrowInvalid, match="begin failed"):
            list(c.map_batches("echo", [b]))
    assert closed == [True]


def test_protocol_doc_example(images, capsys):
    """docs/protocol.md's pyarrow example as written, against a sidecar."""
    s = Sidecar("grpc+unix://%s" % os.path.join(os.environ.get("TMPDIR", "/tmp"), "pf-doc-%d.sock" % os.getpid()))
    try:
        run_block(doc_block("docs/protocol.md", "import json, pyarrow as pa"), {}, **{
            "grpc+unix:///run/pixelflight/pixelflight.sock": s.location,
            '"photo.png"': repr(os.path.join(images, "good", "coins.png"))})
        printed = capsys.readouterr().out
        assert "'mean': " in printed and "'error': None" in printed, printed
    finally:
        assert s.stop() == 0, "".join(s.logs[-20:])
