"""pixelflight.results and pixelflight.plots against known arrays and images,
and results of a real sidecar turned into arrays and images."""

import io
import json
import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest
from PIL import Image

from conftest import ROOT, decode_f32, scipy_ref, check_close
from pixelflight import Client, color_labels, draw_blobs, draw_faces, to_image, to_numpy, write_images
from pixelflight import plots

pytestmark = pytest.mark.check  # the whole module is in make check


def png(a, mode=None):
    buf = io.BytesIO()
    Image.fromarray(a, mode).save(buf, "PNG") if mode else Image.fromarray(a).save(buf, "PNG")
    return buf.getvalue()


def test_to_numpy_known_array():
    a = np.arange(12, dtype="<f4").reshape(3, 4) - 5.5
    row = {"height": 3, "width": 4, "data": a.tobytes(), "error": None}
    got = to_numpy(row)
    assert got.dtype == np.float32 and got.shape == (3, 4)
    np.testing.assert_array_equal(got, a)
    # Spark gives bytearray.
    np.testing.assert_array_equal(to_numpy(dict(row, data=bytearray(a.tobytes()))), a)


def test_to_numpy_errors():
    with pytest.raises(ValueError, match="corrupt"):
        to_numpy({"height": None, "width": None, "data": None, "error": "corrupt: bad header"})
    with pytest.raises(ValueError, match="want 4"):
        to_numpy({"height": 3, "width": 4, "data": b"\0" * 8, "error": None})


def test_to_image_columns():
    gray = np.array([[0, 128], [255, 7]], np.uint8)
    img = to_image({"height": 2, "width": 2, "png": png(gray), "error": None})
    np.testing.assert_array_equal(np.asarray(img), gray)
    lab = np.array([[0, 1, 1], [2, 2, 300]], np.uint16)
    img = to_image({"segments": 3, "labels": png(lab), "error": None})
    np.testing.assert_array_equal(np.asarray(img), lab)
    faces = {"faces": [], "annotated": png(gray), "error": None}
    np.testing.assert_array_equal(np.asarray(to_image(faces)), gray)
    with pytest.raises(ValueError, match="image columns"):
        to_image({"blobs": [], "error": None})
    with pytest.raises(ValueError, match="too_large"):
        to_image({"png": None, "error": "too_large"})


def test_color_labels():
    lab = np.array([[0, 1], [2, 1]], np.uint16)
    rgb = np.asarray(color_labels({"labels": png(lab), "error": None}))
    assert rgb.shape == (2, 2, 3)
    assert (rgb[0, 0] == 0).all(), "background is black"
    assert (rgb[0, 1] == rgb[1, 1]).all(), "one label, one colour"
    assert (rgb[0, 1] != rgb[1, 0]).any() and rgb[0, 1].max() >= 64 and rgb[1, 0].max() >= 64


def test_draw_blobs_radius():
    img = Image.fromarray(np.zeros((40, 40), np.uint8))
    out = np.asarray(draw_blobs(img, [{"y": 20.0, "x": 15.0, "sigma": 5.0}], width=1))
    assert out.shape == (40, 40, 3)
    r = 5 * np.sqrt(2)  # 7.07
    red = (out[:, :, 0] == 255) & (out[:, :, 1] == 0)
    ys, xs = np.nonzero(red)
    dist = np.hypot(ys - 20, xs - 15)
    assert len(ys) > 20 and abs(dist.mean() - r) < 1.0 and dist.max() < r + 1.5
    assert not red[20, 15], "a circle, not a disc"


def test_draw_faces_box():
    img = Image.fromarray(np.full((30, 30), 50, np.uint8))
    out = np.asarray(draw_faces(img, [{"x": 5, "y": 8, "w": 10, "h": 6, "neighbors": 3}], width=1))
    green = (out[:, :, 1] == 255) & (out[:, :, 0] == 0)
    ys, xs = np.nonzero(green)
    assert (ys.min(), ys.max(), xs.min(), xs.max()) == (8, 13, 5, 14)
    assert not green[10, 10] and (out[0, 0] == 50).all()


def test_draw_on_the_file_a_row_names(tmp_path):
    """draw_faces and draw_blobs open the original image from a row's path
    (a local path or Spark's file: URI) when the row has no PNG of its own."""
    p = tmp_path / "a b.png"
    Image.fromarray(np.full((20, 30), 40, np.uint8)).save(p)
    faces = [{"x": 2, "y": 3, "w": 5, "h": 4, "neighbors": 3}]
    for image in (str(p), p, {"path": "file:" + str(p).replace(" ", "%20"), "faces": faces, "error": None},
                  {"path": str(p), "faces": faces, "error": None}):
        out = np.asarray(draw_faces(image, faces, width=1))
        assert out.shape == (20, 30, 3) and tuple(out[3, 2]) == (0, 255, 0) and tuple(out[10, 20]) == (40, 40, 40)
    assert np.asarray(draw_blobs({"path": str(p), "error": None}, [{"y": 10, "x": 10, "sigma": 2}])).shape == (20, 30, 3)
    with pytest.raises(ValueError, match="the row failed: corrupt"):
        draw_faces({"path": str(p), "error": "corrupt"}, [])
    with pytest.raises(ValueError, match="s3a: only local files"):
        draw_faces("s3a://bucket/a.png", [])


def test_write_images_arrow_and_pandas(tmp_path):
    a, b = png(np.zeros((2, 3), np.uint8)), png(np.ones((4, 5), np.uint8))
    t = pa.table({"path": ["file:/x/a.png", "file:/y/a.png", "file:/x/bad.png", "file:/x/b.jpg"],
                  "png": [a, a, None, b], "error": [None, None, "corrupt", None]})
    got = write_images(t, "png", str(tmp_path / "arrow"))
    assert [os.path.basename(p) for p in got] == ["a_png.png", "a_2_png.png", "b_png.png"]
    assert Image.open(got[2]).size == (5, 4)
    got = write_images(t.to_pandas(), "png", str(tmp_path / "pandas"), name_column=None)
    assert [os.path.basename(p) for p in got] == ["000000_png.png", "000001_png.png", "000003_png.png"]
    # watershed labels: coloured by default (16-bit label numbers look black), raw on request.
    lab = np.array([[0, 1, 1], [2, 2, 0]], np.uint16)
    b = io.BytesIO()
    Image.fromarray(lab).save(b, "PNG")
    t = pa.table({"path": ["c.png"], "labels": [b.getvalue()]})
    [colored] = write_images(t, "labels", str(tmp_path / "color"))
    rgb = np.asarray(Image.open(colored))
    assert rgb.shape == (2, 3, 3) and (rgb[0, 0] == 0).all() and (rgb[0, 1] == rgb[0, 2]).all()
    assert (rgb[0, 1] != rgb[1, 0]).any() and rgb[0, 1].min() >= 64
    [raw] = write_images(t, "labels", str(tmp_path / "raw"), labels="raw")
    assert open(raw, "rb").read() == b.getvalue()
    with pytest.raises(ValueError, match="labels='grey'"):
        write_images(t, "labels", str(tmp_path / "x"), labels="grey")


def test_client_imports_without_numpy_or_pillow():
    code = ("import sys; sys.modules['numpy'] = sys.modules['PIL'] = None; import pixelflight, pixelflight.plots; "
            "print(pixelflight.Client.__name__)")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python")))
    assert p.returncode == 0 and p.stdout.strip() == "Client", p.stderr


def test_sidecar_results(sidecar, images):
    """Real results: f32 equals scipy, png and labels decode to the image's size, blobs and faces draw."""
    path = os.path.join(images, "good", "coins.tif")
    with open(path, "rb") as f:
        data = f.read()
    batch = pa.record_batch([pa.array([data], pa.binary())], names=["content"])
    with Client(sidecar.location) as c:
        [f32] = c.map_batches("fft_convolve", [batch], kernel="gaussian", sigma=2.0, output="f32")
        [pngs] = c.map_batches("fft_convolve", [batch], kernel="gaussian", sigma=2.0, output="png")
        [ws] = c.map_batches("watershed", [batch])
        [bl] = c.map_batches("detect_blobs", [batch], min_sigma=3, max_sigma=20, threshold=0.1)
    row = f32.to_pylist()[0]
    check_close(to_numpy(row), scipy_ref(path), path)
    np.testing.assert_array_equal(to_numpy(row), decode_f32(row))
    h, w = row["height"], row["width"]
    assert to_image(pngs.to_pylist()[0]).size == (w, h)
    wrow = ws.to_pylist()[0]
    lab = np.asarray(to_image(wrow))
    assert lab.shape == (h, w) and lab.max() == wrow["segments"]
    assert np.asarray(color_labels(wrow)).shape == (h, w, 3)
    blobs = bl.to_pylist()[0]["blobs"]
    assert blobs
    drawn = draw_blobs(Image.open(path), blobs)
    assert drawn.size == (w, h) and drawn.mode == "RGB"


def test_plots_sizes(tmp_path):
    rows = [{"method": "sidecar cpu", "images": "4", "seconds": "2.5", "images_per_s": "1.6"},
            {"method": "sidecar gpu", "images": "4", "seconds": "", "images_per_s": ""}]
    report = {"op": "fft_convolve", "source": "generated 64x64", "images_per_s": 100.0,
              "latency_ms": {"per": "batch", "p50": 1.0, "p90": 2.0, "p99": 3.0}, "stages": {"future": 1}}
    outs = [plots.cpu_vs_gpu(rows, str(tmp_path / "a.png")),
            plots.bench([report, dict(report, host_cpu_us_per_image=50.0)], str(tmp_path / "b.png"))]
    for p in outs:
        assert Image.open(p).format == "PNG" and Image.open(p).size == plots.PIXELS
    with open(tmp_path / "r.json", "w") as f:
        json.dump(report, f)
    p = subprocess.run([sys.executable, "-m", "pixelflight.plots", "bench", str(tmp_path / "c.png"),
                        str(tmp_path / "r.json")], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert Image.open(tmp_path / "c.png").size == plots.PIXELS


class _Report(dict):
    """A bench report that fails the test when the plot asks for a key it
    lacks (plots.bench draws a missing key as absent), recording the keys
    asked for."""

    def __init__(self, d, asked):
        super().__init__(d)
        self.asked = asked

    def get(self, key, default=None):
        self.asked.add(key)
        assert key in self, "pixelflight bench --json has no %r, which plots.bench reads (keys: %s)" % (key, sorted(self))
        v = self[key]
        return _Report(v, self.asked) if isinstance(v, dict) else v


def test_plots_real_bench(tmp_path):
    """The real `pixelflight bench --json` (a server of its own, a second of generated images) drawn by plots.bench."""
    from conftest import BIN

    p = subprocess.run([BIN, "bench", "--serve", "--json", "--duration", "1s", "--warmup", "0s", "--generate", "64x64",
                        "--streams", "2", "--workers", "1"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr[-4000:]
    report = json.loads(p.stdout)
    assert report["images"] > 0 and report["row_errors"] == 0, report
    asked = set()
    out = plots.bench([_Report(report, asked)], str(tmp_path / "bench.png"))
    with Image.open(out) as im:
        im.load()
        assert im.format == "PNG" and im.size == plots.PIXELS
    want = {"op", "source", "images_per_s", "latency_ms", "p50", "p90", "p99", "host_cpu_us_per_image"}
    assert want <= asked, ("plots.bench no longer reads", want - asked)
    assert report["images_per_s"] > 0 and report["host_cpu_us_per_image"] > 0, report
    assert 0 < report["latency_ms"]["p50"] <= report["latency_ms"]["p90"] <= report["latency_ms"]["p99"], report
