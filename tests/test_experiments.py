"""The experiments of examples/ at their --quick size, through real PySpark
and real sidecars: every configuration has its CSV row, every image is
answered, the figures are positive, each plot is a PNG of plots.PIXELS, and
a GPU backend is reported absent where the sidecar has none (never faked).
The notebook runs with no error and shows images."""

import csv
import glob
import os
import subprocess
import sys

import pytest
from PIL import Image

from conftest import ROOT

sys.path.insert(0, os.path.join(ROOT, "examples"))
import cpu_vs_gpu  # noqa: E402
import expkit  # noqa: E402
import faces_throughput  # noqa: E402
from pixelflight import plots  # noqa: E402


@pytest.fixture(scope="class")
def spark():
    """One local Spark session the scripts share (they leave a session they
    did not start running), stopped before the tests that start their own."""
    s, owned = expkit.session("local[2]", "pixelflight-experiments-test")
    yield s
    if owned:
        s.stop()


@pytest.fixture(scope="module")
def gpus():
    names, _ = expkit.gpu_backends()
    return names


def read(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def check_pngs(paths):
    for p in paths:
        with Image.open(p) as im:
            assert im.format == "PNG" and im.size == plots.PIXELS, p


def check_ran(row, images, count_key, per_s_key):
    assert row["status"] == "ran", row
    assert int(row[count_key]) == images and int(row["errors"]) == 0, row
    assert float(row["seconds"]) > 0 and float(row[per_s_key]) > 0, row


def check_absent(row, gpus):
    if gpus:
        assert row["status"] == "ran", row
    else:
        assert row["status"] == "absent" and row["seconds"] == "" and "no GPU backend" in row["note"], row


@pytest.mark.usefixtures("spark")
class TestLocal:
    def test_cpu_vs_gpu(self, images, gpus, tmp_path):
        cpu_vs_gpu_run(images, gpus, tmp_path)

    def test_faces_throughput(self, images, gpus, tmp_path):
        faces_run(images, gpus, tmp_path)


def cpu_vs_gpu_run(images, gpus, tmp_path):
    csv_path, pngs = cpu_vs_gpu.main(["--quick", "--out", str(tmp_path)])
    n = len(glob.glob(os.path.join(images, "good", "c*")))
    rows = {r["method"]: r for r in read(csv_path)}
    assert list(rows) == ["sidecar cpu", "sidecar gpu", "scipy in Python workers"]
    check_ran(rows["sidecar cpu"], n, "images", "images_per_s")
    check_ran(rows["scipy in Python workers"], n, "images", "images_per_s")
    check_absent(rows["sidecar gpu"], gpus)
    # The sidecar's means against scipy's: JPEG decoders differ a little, nothing more.
    assert 0 <= float(rows["sidecar cpu"]["max_mean_diff"]) < 1
    check_pngs(pngs)


def faces_run(images, gpus, tmp_path):
    csv_path, pngs = faces_throughput.main(["--quick", "--out", str(tmp_path)])
    rows = {r["config"]: r for r in read(csv_path)}
    assert list(rows) == ["cpu", "gpu", "cpu+gpu"]
    check_ran(rows["cpu"], 4, "frames", "frames_per_s")
    assert int(rows["cpu"]["faces"]) >= 4, "every frame has a face"
    check_absent(rows["gpu"], gpus)
    check_absent(rows["cpu+gpu"], gpus)
    busy = [r for r in read(os.path.join(tmp_path, "busy.csv")) if r["config"] == "cpu"]
    assert busy and {r["backend"] for r in busy} == {"cpu"}
    # Since the first poll (taken before the job), after the job: every batch the lanes ran lies between the
    # two polls, and a lane runs one batch at a time, so its busy seconds cannot pass wall time x lanes.
    last = busy[-1]
    assert int(last["rows"]) == 4 and float(last["share"]) == 1 and 0 < float(last["busy"]) <= 1, last
    frames = sorted(os.listdir(tmp_path / "frames"))
    assert frames == ["frame_0%d_annotated.png" % i for i in range(4)]
    for f in frames:
        assert Image.open(tmp_path / "frames" / f).size == (320, 240)
    check_pngs(pngs)


def test_scaling(images, tmp_path):
    """A standalone cluster of two workers started here; its own process (it runs Spark applications of its own)."""
    p = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "scaling.py"), "--quick", "--out", str(tmp_path)],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-4000:]
    rows = read(tmp_path / "scaling.csv")
    got = sorted((r["op"], r["kind"], int(r["workers"])) for r in rows)
    assert got == sorted((op, kind, n) for op in ("detect_blobs", "watershed") for kind in ("weak", "strong")
                         for n in (1, 2))
    for r in rows:
        want = 3 * int(r["workers"]) if r["kind"] == "weak" else 6
        assert int(r["images"]) == want and int(r["errors"]) == 0, r
        assert float(r["seconds"]) > 0 and float(r["speedup"]) > 0, r
    check_pngs([tmp_path / "scaling.png"])


@pytest.mark.parametrize("where", ["started here", "PIXELFLIGHT_ENDPOINT"])
def test_notebook(images, where, request, monkeypatch):
    """Local mode: the notebook starts its own sidecar and names it to map_images, or (PIXELFLIGHT_ENDPOINT
    set) names none and the tasks find the one the variable names, as executors find theirs on a cluster."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(os.path.join(ROOT, "examples", "pixelflight.ipynb"), as_version=4)
    monkeypatch.setenv("NOTEBOOK_COPIES", "1")
    monkeypatch.setenv("PIXELFLIGHT_IMAGES", images)
    monkeypatch.delenv("SPARK_MASTER", raising=False)
    monkeypatch.setenv("SPARK_LOCAL_IP", "127.0.0.1")  # local mode here, whatever the hostname resolves to
    if where == "started here":
        monkeypatch.delenv("PIXELFLIGHT_ENDPOINT", raising=False)
    else:
        monkeypatch.setenv("PIXELFLIGHT_ENDPOINT", request.getfixturevalue("sidecar").location)
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": os.path.join(ROOT, "examples")}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    errors = [o for o in outputs if o.output_type == "error"]
    assert not errors, errors
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "Spark master: local[" in text, text
    if where == "started here":
        assert "sidecar" in text and "at grpc+unix://" in text, text
    else:
        assert "at each executor's own" in text, text
    images_shown = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images_shown) >= 6, ("faces, blobs, two watersheds, convolutions, throughput", outputs)
