"""The platform wheel (make wheel): installed into a fresh venv, it gives
the client, the sidecar binary and the plugin jars; the binary it installed
serves, and the executor plugin from its jar runs it under a PySpark job."""

import glob
import json
import os
import re
import shutil
import subprocess
import sys
import time
import zipfile

import pytest

from conftest import Sidecar
import pyspark

from test_plugin import JOB, env

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def wheel():
    found = glob.glob(os.path.join(ROOT, "build", "dist", "pixelflight-*.whl"))
    if len(found) != 1:
        pytest.fail("want one wheel in build/dist, found %s: run `make wheel` (make test does)" % found)
    return found[0]


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory):
    """A fresh venv with the wheel installed by its own pip (pyarrow, its
    one dependency, comes from pip's cache or PyPI)."""
    d = tmp_path_factory.mktemp("wheel") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(d)], check=True)
    subprocess.run([str(d / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check", wheel],
                   check=True)
    return d


def test_wheel_tag_and_contents(wheel):
    name = os.path.basename(wheel)
    assert re.fullmatch(r"pixelflight-0\.1\.0-py3-none-manylinux_2_\d+_x86_64\.whl", name), name
    with zipfile.ZipFile(wheel) as z:
        info = {i.filename: i for i in z.infolist()}
        wheel_meta = z.read("pixelflight-0.1.0.dist-info/WHEEL").decode()
        meta = z.read("pixelflight-0.1.0.dist-info/METADATA").decode()
    # pip install 'pixelflight...whl[spark]' brings what map_images needs
    # (PySpark's mapInArrow fails without pandas).
    assert 'Requires-Dist: pyspark[sql]>=3.5; extra == "spark"' in meta, meta
    assert 'Requires-Dist: pyspark[connect]>=3.5; extra == "connect"' in meta, meta
    binary = info["pixelflight-0.1.0.data/scripts/pixelflight"]
    assert binary.external_attr >> 16 & 0o111, "the binary is not executable in the wheel"
    assert "pixelflight/spark.py" in info and "pixelflight/sidecar.py" in info
    assert "Root-Is-Purelib: false" in wheel_meta
    tag = name[:-len(".whl")].split("-", 2)[2]
    assert "Tag: %s" % tag in wheel_meta
    cuda = os.path.join(ROOT, "bin", "pixelflight-cuda")
    assert ("pixelflight-0.1.0.data/scripts/pixelflight-cuda" in info) == os.path.exists(cuda)
    assert {"pixelflight/jars/pixelflight-spark-plugin.jar", "pixelflight/jars/pixelflight-spark-plugin-spark3.5.jar"} \
        <= set(info)


def test_installed_binary_is_found_and_serves(venv, tmp_path):
    py = str(venv / "bin" / "python")
    found = subprocess.run([py, "-m", "pixelflight.sidecar", "--path"], capture_output=True, text=True, check=True)
    binary = found.stdout.strip()
    assert binary == str(venv / "bin" / "pixelflight")
    version = subprocess.run([py, "-m", "pixelflight.sidecar", "version"], capture_output=True, text=True,
                             check=True)
    assert version.stdout.startswith("pixelflight ")
    cuda = subprocess.run([py, "-m", "pixelflight.sidecar", "--path", "--cuda"], capture_output=True, text=True)
    if not os.path.exists(os.path.join(ROOT, "bin", "pixelflight-cuda")):
        assert cuda.returncode == 1 and "make build-cuda" in cuda.stderr
    jars = str(venv / "lib" / ("python%d.%d" % sys.version_info[:2]) / "site-packages" / "pixelflight" / "jars")
    for spark, want in (("3.5.6", "pixelflight-spark-plugin-spark3.5.jar"), ("4.1.4", "pixelflight-spark-plugin.jar"),
                        ("4.3.0", "pixelflight-spark-plugin.jar")):
        found = subprocess.run([py, "-m", "pixelflight.sidecar", "--jar", spark], capture_output=True, text=True)
        assert found.stdout.strip() == os.path.join(jars, want), (spark, found.stdout, found.stderr)
    old = subprocess.run([py, "-m", "pixelflight.sidecar", "--jar", "3.4.1"], capture_output=True, text=True)
    assert old.returncode == 1 and "built for Spark 3.5 and 4.x, not 3.4.1" in old.stderr

    import conftest
    s = conftest.BIN
    try:
        conftest.BIN = binary
        sidecar = Sidecar("grpc+unix://%s" % (tmp_path / "s.sock"))
    finally:
        conftest.BIN = s
    try:
        from pixelflight import Client
        with Client(sidecar.location) as c:
            assert c.health()["status"] == "SERVING"
    finally:
        assert sidecar.stop() == 0


def test_plugin_runs_the_wheels_binary(venv, images, tmp_path):
    """map_images and the data source under the executor plugin, with
    spark.jars what `python -m pixelflight.sidecar --jar` printed and no
    spark.pixelflight.binary: the plugin finds the wheel's binary beside the
    workers' Python (PYSPARK_PYTHON in the wheel's venv, not on PATH)."""
    binary = str(venv / "bin" / "pixelflight")
    jar = subprocess.run([str(venv / "bin" / "python"), "-m", "pixelflight.sidecar", "--jar", pyspark.__version__],
                         capture_output=True, text=True, check=True).stdout.strip()
    # The workers need pyspark, which the wheel's venv lacks: its Python
    # here is a script that runs the test's own.
    python = venv / "bin" / "python-for-spark"
    python.write_text("#!/bin/sh\nexec %s \"$@\"\n" % sys.executable)
    python.chmod(0o755)
    e = dict(env(), PYSPARK_PYTHON=str(python))
    assert shutil.which("pixelflight", path=e["PATH"]) is None, "a pixelflight on PATH would hide the lookup"
    good = os.path.join(images, "good")
    p = subprocess.run([sys.executable, JOB, "local[2]", jar, "pixelflight", good], cwd=tmp_path, env=e,
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-4000:]
    res = json.loads(p.stdout.strip().splitlines()[-1])
    assert res["rows"] == res["paths"] == res["ds_rows"] == len(os.listdir(good))
    assert res["errors"] == [] and res["ds_differ"] == []
    deadline = time.time() + 10
    while running(binary) and time.time() < deadline:
        time.sleep(0.2)
    assert not running(binary), "a sidecar of the wheel's binary outlived the application"


def running(binary):
    """pids of processes of binary (other tests' sidecars may run beside ours)."""
    pids = set()
    for d in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                if f.read().split(b"\0")[0] == binary.encode():
                    pids.add(int(d))
        except OSError:
            pass
    return pids
