"""The memory budget with real processes: each op's memory model against
the real peak of a sidecar; a sidecar under a 2 GiB memory cgroup (as YARN
and Kubernetes set one), fed big and huge images of every op beside small
ones, never killed and answering every row; and a PySpark job under the
executor plugin with huge images in its folder, finishing with per-row
errors."""

import io
import json
import os
import re
import subprocess
import sys
import threading
import time

import numpy as np
import pyarrow as pa
import pytest
from PIL import Image

from conftest import BIN, ROOT, Sidecar
from pixelflight import Client
from test_plugin import env, find_jar

sys.path.insert(0, os.path.join(ROOT, "scripts"))
import mempeak  # noqa: E402

GiB = 1 << 30


def models():
    """docs/ops.md's Memory table: {row name: bytes per pixel (a function of params)}."""
    text = open(os.path.join(ROOT, "docs", "ops.md")).read().split("\n## Memory\n", 1)[1]
    rows = {op + (":" + out if out else ""): cell.strip()
            for op, out, cell in re.findall(r"^\| `(\w+)`(?:, `output` `(\w+)`)? \| ([^|]+) \|$", text, re.M)}
    blobs = int(re.match(r"\d+", rows["detect_blobs"]).group(0))  # "45, and more for thin and small images"
    faces, annotated = (int(x) for x in re.findall(r"\d+", rows["detect_faces"]))

    fft_mib = int(re.search(r"at most about (\d+) MiB for kernels up to 255 taps", text.replace("\n", " ")).group(1))

    def convolve(out):  # "32, and by FFT its transform's planes": bytes per pixel, and by FFT at most fft_mib more
        per = int(re.match(r"\d+", rows["fft_convolve:" + out]).group(0))
        return lambda p, pixels: per * pixels + (fft_mib << 20 if p.get("matrix") == mempeak.FFT_MATRIX else 0)
    return {
        ("fft_convolve", "f32"): convolve("f32"),
        ("fft_convolve", "png"): convolve("png"),
        ("fft_convolve", "stats"): convolve("stats"),
        ("detect_blobs", None): lambda p, pixels: blobs * pixels,
        ("detect_faces", None): lambda p, pixels: (annotated if p.get("annotate") else faces) * pixels,
        ("watershed", None): lambda p, pixels: int(rows["watershed"]) * pixels,
    }


def need(op, params, pixels):
    m = models()
    model = m[(op, params.get("output", "f32"))] if op == "fft_convolve" else m[(op, None)]
    return model(params, pixels) + (1 << 20)


@pytest.mark.parametrize("op,params", mempeak.CASES, ids=["%s%s" % (o, json.dumps(p)) for o, p in mempeak.CASES])
def test_model_holds_the_real_peak(op, params):
    """One 1500x1500 row on a fresh sidecar: its peak resident memory is
    within the op's model (docs/ops.md), and the model is not loose (the
    peak is at least half of it)."""
    side = 1500
    peak, err, _ = mempeak.peak(BIN, op, params, mempeak.image(side), side)
    assert err is None, err
    model = need(op, params, side * side)
    assert model / 2 <= peak <= model, "%s %s: peak %.1f MB, model %.1f MB" % (op, params, peak / 1e6, model / 1e6)


@pytest.mark.parametrize("w,h,over", [(100000, 7, 2), (1151, 1151, 1.2)])
def test_blobs_within_their_model_at_other_sizes(tmp_path, w, h, over):
    """detect_blobs where its transforms' lengths are not the image's sides
    (docs/ops.md): on a 100,000×7 image they reach the largest kernel's
    radius past its 7 rows, and their line buffers go with its 100,000
    columns; 1151 is not a product of 2, 3 and 5. The row's model is then
    more than the table's 45 B per pixel (`over` times at least); the need
    the sidecar states for it (its over_budget error under a small budget)
    holds the row's real peak on a fresh sidecar, and is not loose (the
    peak is at least half of it)."""
    rng = np.random.default_rng(3)
    buf = io.BytesIO()
    small = rng.integers(0, 256, (max(h // 8, 1), w // 8), dtype=np.uint8)
    Image.fromarray(small).resize((w, h), Image.BILINEAR).save(buf, "PNG")
    png = buf.getvalue()
    peak, err, _ = mempeak.peak(BIN, "detect_blobs", {}, png, 0)
    assert err is None, err
    s = Sidecar("grpc+unix://%s" % (tmp_path / "b.sock"), "--memory-budget", str(64 << 20))
    try:
        with Client(s.location) as c:
            batch = pa.record_batch([pa.array([png], pa.binary())], names=["content"])
            [res] = list(c.map_batches("detect_blobs", [batch]))
        err = res.column("error")[0].as_py()
    finally:
        assert s.stop() == 0, "".join(s.logs[-20:])
    m = re.search(r"a %d×%d image needs about ([\d.]+) (MiB|GiB) for detect_blobs" % (w, h), err or "")
    assert m, err
    stated = float(m.group(1)) * (1 << (20 if m.group(2) == "MiB" else 30))
    assert stated > over * need("detect_blobs", {}, w * h), m.group(0)  # the table's 45 B per pixel
    assert stated / 2 <= peak <= stated, "peak %.1f MB, model %.1f MB" % (peak / 1e6, stated / 1e6)


def test_blob_peaks_take_memory_as_they_go(tmp_path):
    """detect_blobs' peaks and pairs grow with a low threshold, not with the
    image: coins at threshold 0 has 4.45 million overlapping pairs (~210 MB)
    in 116,000 pixels. Under a 96 MiB budget that row gets over_budget, naming
    the peaks and what to change, and its neighbours their blobs; under
    1 GiB it gets its blobs."""
    from skimage import data

    buf = io.BytesIO()
    Image.fromarray(data.coins()).save(buf, "PNG")
    coins = buf.getvalue()
    batch = pa.record_batch([pa.array([coins] * 3, pa.binary())], names=["content"])
    for budget, ok in ((96 << 20, False), (1 << 30, True)):
        s = Sidecar("grpc+unix://%s" % (tmp_path / ("b%d.sock" % budget)), "--memory-budget", str(budget))
        try:
            with Client(s.location) as c:
                rows = []
                for thr in (0.2, 0, 0.2):
                    one = batch.slice(len(rows), 1)
                    res = next(iter(c.map_batches("detect_blobs", [one], threshold=thr)))
                    rows.append((res.column("error")[0].as_py(), res.column("blobs")[0].as_py()))
            assert rows[0][0] is None and rows[2][0] is None and len(rows[0][1]) == len(rows[2][1]) == 51, rows[0][0]
            err, blobs = rows[1]
            if ok:
                assert err is None and len(blobs) > 51, err
            else:
                assert blobs is None and err.startswith("over the memory budget: detect_blobs: blob: too many peaks"), err
                assert "above threshold 0" in err and "raise threshold or lower max_sigma" in err, err
                st = Client(s.location).stats()
                assert st["row_errors_by_kind"].get("over_budget") == 1, st["row_errors_by_kind"]
                assert st["working_bytes"] == 0, st
        finally:
            assert s.stop() == 0, "".join(s.logs[-20:])


def noise_png(side, seed):
    rng = np.random.default_rng(seed)
    small = rng.integers(0, 256, (side // 8, side // 8), dtype=np.uint8)
    buf = io.BytesIO()
    Image.fromarray(small).resize((side, side), Image.BILINEAR).save(buf, "PNG")
    return buf.getvalue()


def zeros_png(side):
    buf = io.BytesIO()
    Image.fromarray(np.zeros((side, side), np.uint8)).save(buf, "PNG")
    return buf.getvalue()


CGROUP = "/sys/fs/cgroup/memory"


class Cgroup:
    """A cgroup v1 memory cgroup of limit bytes (swap included), or None
    where this process cannot make one (not root, no v1 memory controller)."""

    def __init__(self, name, limit):
        self.path = os.path.join(CGROUP, name)
        os.mkdir(self.path)
        self.write("memory.limit_in_bytes", limit)
        if os.path.exists(os.path.join(self.path, "memory.memsw.limit_in_bytes")):
            self.write("memory.memsw.limit_in_bytes", limit)

    def write(self, name, value):
        with open(os.path.join(self.path, name), "w") as f:
            f.write(str(value))

    def read(self, name):
        with open(os.path.join(self.path, name)) as f:
            return f.read()

    def enter(self):
        """In a child before exec: the child joins the cgroup."""
        self.write("cgroup.procs", os.getpid())

    def remove(self):
        for _ in range(50):
            try:
                os.rmdir(self.path)
                return
            except OSError:
                time.sleep(0.1)

    @staticmethod
    def usable():
        return os.geteuid() == 0 and os.access(CGROUP, os.W_OK)


# Per stream: an op, its params, and its batch: small and big images that
# fit the budget of a 2 GiB cgroup (1.2 GiB: 0.9 GiB a row), a 10000x10000
# one that does not (an error in its row).
STREAMS = [
    ("fft_convolve", {"output": "stats", "sigma": 2}, [("small", 256), ("huge", 10000), ("big", 5000), ("small", 300)]),
    ("fft_convolve", {"output": "f32"}, [("big", 4000), ("small", 200), ("huge", 10000), ("big", 4000)]),
    ("detect_blobs", {}, [("small", 256), ("huge", 10000), ("big", 2500), ("small", 128)]),
    ("watershed", {}, [("huge", 10000), ("big", 3000), ("small", 256)]),
    ("detect_faces", {}, [("small", 320), ("huge", 10000), ("big", 2000)]),
]


def test_sidecar_under_a_2gib_memory_cgroup(tmp_path):
    """A sidecar in a 2 GiB memory cgroup (swap included), its budget
    derived from it (60%: 1.2 GiB), five streams at once mixing small,
    big and 10000x10000 images of every op: it is never killed, every row
    comes back in order, the huge ones as errors naming their need and the
    flag, the others as results; its peak resident memory stays under the
    limit, within the budget and 400 MiB, and once the rows are done (and
    its CPU lanes, idle for a second, let go of their large buffers) what it
    took goes back to the system within 10 s, but for 128 MiB at most.
    Without a writable cgroup v1 (not root), the same with --memory-budget
    and the peak checked alone."""
    limit = 2 * GiB
    cg = s = None
    flags = []
    if Cgroup.usable():
        cg = Cgroup("pixelflight-test-%d" % os.getpid(), limit)
    else:
        flags = ["--memory-budget", str(int(0.6 * limit)), "--gc-memory-limit", str(int(0.9 * limit))]
    try:
        zero = zeros_png(10000)
        images = {("big", s): noise_png(s, s) for _, _, rows in STREAMS for kind, s in rows if kind == "big"}
        s = Sidecar("grpc+unix://%s" % (tmp_path / "s.sock"), "--workers", "2", *flags,
                    preexec_fn=cg.enter if cg else None)
        with Client(s.location) as c:
            budget = c.capabilities()["limits"]["memory_budget"]
        assert budget == int(0.6 * limit), budget
        rss0 = int(re.search(r"VmRSS:\s+(\d+) kB", open("/proc/%d/status" % s.proc.pid).read()).group(1)) << 10
        rest = rss0 + 128 * (1 << 20)  # what may stay: small workers' buffers, pools
        results = {}

        def stream(i, op, params, rows):
            content = [zero if kind == "huge" else images[("big", side)] if kind == "big" else noise_png(side, i)
                       for kind, side in rows]
            names = ["%d-%d-%s%d" % (i, j, kind, side) for j, (kind, side) in enumerate(rows)]
            batch = pa.record_batch([pa.array(names), pa.array(content, pa.binary())], names=["name", "content"])
            with Client(s.location, retry_seconds=0) as c:
                results[i] = pa.Table.from_batches(list(c.map_batches(op, [batch], keep=("name",), **params)))

        threads = [threading.Thread(target=stream, args=(i, *spec)) for i, spec in enumerate(STREAMS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(600)
        status = open("/proc/%d/status" % s.proc.pid).read()
        hwm = int(re.search(r"VmHWM:\s+(\d+) kB", status).group(1)) << 10
        assert s.proc.poll() is None, "the sidecar died: %s" % "".join(s.logs[-20:])
        # After the big rows their memory goes back to the system.
        deadline = time.time() + 10
        while True:
            rss = int(re.search(r"VmRSS:\s+(\d+) kB", open("/proc/%d/status" % s.proc.pid).read()).group(1)) << 10
            if rss <= rest or time.time() > deadline:
                break
            time.sleep(0.2)
        assert s.stop() == 0, "".join(s.logs[-20:])
    finally:
        if s is not None and s.proc.poll() is None:
            s.proc.kill()
        if cg:
            cg.remove()
    assert rss <= rest, "resident %.0f MiB after the rows (%.0f MiB before them), peak %.0f MiB" % (
        rss / (1 << 20), rss0 / (1 << 20), hwm / (1 << 20))
    for i, (op, params, rows) in enumerate(STREAMS):
        got = results[i].to_pydict()
        assert got["name"] == ["%d-%d-%s%d" % (i, j, kind, side) for j, (kind, side) in enumerate(rows)]
        for (kind, side), err in zip(rows, got["error"]):
            if kind == "huge":
                assert err and "over the memory budget" in err and "--memory-budget" in err \
                    and "10000×10000" in err, (op, err)
            else:
                assert err is None, (op, kind, side, err)
    assert hwm < limit and hwm <= budget + 400 * (1 << 20), "peak resident %.0f MiB" % (hwm / (1 << 20))
    print("peak resident %.0f MiB, budget %.0f MiB, %.0f MiB after" % (hwm / (1 << 20), budget / (1 << 20), rss / (1 << 20)))


JOB = r"""
import json, os, sys
from pyspark.sql import SparkSession
from pixelflight.spark import map_images
jar, binary, folder = sys.argv[1:4]
spark = (SparkSession.builder.master("local[2]").appName("pixelflight-memory-test").config("spark.jars", jar)
         .config("spark.plugins", "org.pixelflight.spark.PixelflightPlugin").config("spark.pixelflight.binary", binary)
         .config("spark.pixelflight.metricsListen", "").config("spark.pixelflight.memoryBudget", "400m")
         .config("spark.ui.enabled", "false").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
df = spark.read.format("binaryFile").load(folder)
rows = map_images(df, "detect_blobs", keep=["path"]).select("path", "error").collect()
print(json.dumps({os.path.basename(r["path"]): r["error"] for r in rows}))
spark.stop()
"""


def test_spark_job_with_huge_images_finishes_with_row_errors(images, tmp_path):
    """A PySpark job (local mode, the executor plugin's sidecar with
    spark.pixelflight.memoryBudget=400m) over a folder of small images and
    two 10000x10000 ones: the job finishes; the huge ones have their
    over-budget error, naming the budget and the plugin's setting, the
    others results."""
    folder = tmp_path / "images"
    folder.mkdir()
    good = os.path.join(images, "good")
    for name in sorted(os.listdir(good))[:6]:
        (folder / name).write_bytes(open(os.path.join(good, name), "rb").read())
    zero = zeros_png(10000)
    for name in ("huge-1.png", "huge-2.png"):
        (folder / name).write_bytes(zero)
    p = subprocess.run([sys.executable, "-c", JOB, find_jar(), BIN, str(folder)], cwd=tmp_path, env=env(),
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-4000:]
    got = json.loads(p.stdout.strip().splitlines()[-1])
    assert sorted(got) == sorted(os.listdir(folder))
    for name, err in got.items():
        if name.startswith("huge"):
            assert err and "over the memory budget" in err and "budget of 400.0 MiB" in err \
                and "spark.pixelflight.memoryBudget" in err, err
        else:
            assert err is None, (name, err)
