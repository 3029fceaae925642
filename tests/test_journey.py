"""The first hour on a cluster, as one journey: the wheel installed into a
fresh venv by its own pip, a standalone cluster started as
spark-conf/README.md says, the spark-defaults of the README's first screen
(spark.jars what `python -m pixelflight.sidecar --jar` prints,
spark.plugins), then one application: map_images, the data source and SQL
over the same photos; each mistake a new user makes and the message they
get, on the driver and at once where it can be known there; a row too
large for the sidecar, an error in its own row that says how to raise the
limit under the plugin; and the data source's metrics in Spark's REST API.
Classic PySpark, and Spark Connect: a Connect server started from pip's
PySpark as spark-conf/README.md says, on the same cluster, and the same
driver program as a Connect client."""

import json
import os
import subprocess
import sys
import time

import numpy as np
import pyspark
import pytest
from PIL import Image

from conftest import start_connect_server, start_standalone, stop_connect_server, stop_standalone
from pixelflight.spark import EXTENSIONS
from test_docs import doc_block
from test_plugin import env
from test_wheel import running, venv, wheel  # noqa: F401 (fixtures)

# The driver program: python -c JOURNEY MASTER PHOTOS BAD BIG UI; MASTER
# sc://... for a Connect client, UI the Spark UI to ask (empty: the
# session's own).
JOURNEY = r"""
import json, sys, time, urllib.request
from pyspark.sql import SparkSession
master, photos, bad, big, ui, readme = sys.argv[1:]
if master.startswith("sc://"):
    spark = SparkSession.builder.remote(master).getOrCreate()
else:
    spark = SparkSession.builder.master(master).appName("pixelflight-journey").getOrCreate()
    ui = spark.sparkContext.uiWebUrl
import pixelflight
from pixelflight.spark import map_images, read_images
out = {"client": pixelflight.__file__, "mistakes": {}}
def step(name):  # where it is, for a run that hangs
    print("journey: %s" % name, file=sys.stderr, flush=True)
step("the README's call")
exec(readme, {"spark": spark})
out["extensions"] = spark.conf.get("spark.sql.extensions", "")  # map_images in the JVM
step("map_images")
files = spark.read.format("binaryFile").load(photos)
rows = map_images(files, "fft_convolve", sigma=2, output="stats").collect()
out["map_rows"], out["map_errors"] = len(rows), [r.error for r in rows if r.error]
step("read_images")
out["ds_rows"] = read_images(spark, photos, "fft_convolve", sigma=2, output="stats").filter("error IS NULL").count()
step("sql")
spark.sql("CREATE TEMPORARY VIEW photos USING pixelflight OPTIONS (path '%s', op 'info')" % photos)
out["sql_rows"] = spark.sql("SELECT count(*) AS n FROM photos WHERE error IS NULL AND width > 0").first().n

step("metrics")
[app] = json.load(urllib.request.urlopen(ui + "/api/v1/applications", timeout=10))
url = "%s/api/v1/applications/%s/sql?details=true&planDescription=false" % (ui, app["id"])
deadline = time.time() + 20
while True:
    runs = json.load(urllib.request.urlopen(url, timeout=10))
    metrics = {m["name"]: m["value"] for q in runs if q.get("status") == "COMPLETED"
               for n in q.get("nodes", []) for m in n.get("metrics", [])}
    if metrics.get("pixelflight rows") or time.time() > deadline:
        break
    time.sleep(0.5)
out["metrics"] = {k: v for k, v in metrics.items() if k.startswith("pixelflight")}

def mistake(name, f):
    step(name)
    t0 = time.time()
    try:
        f()
        said = None
    except Exception as e:
        said = str(e)
    out["mistakes"][name] = {"said": said, "seconds": time.time() - t0}

mistake("param", lambda: map_images(files, "fft_convolve", sigam=3))
mistake("ds_param", lambda: spark.read.format("pixelflight").option("op", "fft_convolve")
        .option("params", '{"sigam": 3}').load(photos).collect())
mistake("cascade", lambda: map_images(files, "detect_faces", cascade="haarcascade_frontalfce_default"))
mistake("op", lambda: read_images(spark, photos, "blur"))
mistake("strict", lambda: map_images(spark.read.format("binaryFile").load(bad), "info", strict=True).collect())
step("big")
out["big"] = [r.error for r in map_images(spark.read.format("binaryFile").load(big), "fft_convolve").collect()]
spark.stop()
print(json.dumps(out))
"""


@pytest.mark.parametrize("mode", ["classic", "connect"])
def test_first_hour(venv, images, tmp_path, mode):  # noqa: F811 (the fixture)
    py = str(venv / "bin" / "python")
    # The version is what `--jar` reads from the venv's pyspark, which the
    # [spark] extra brings; this venv has none (the executors run this
    # Python's, below).
    jar = subprocess.run([py, "-m", "pixelflight.sidecar", "--jar", pyspark.__version__], capture_output=True,
                         text=True, check=True).stdout.strip()
    site = subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    binary = str(venv / "bin" / "pixelflight")
    # The executors' Python: this one (it has pyspark, which the user brings),
    # with the wheel's pixelflight first, and the wheel's bin/ beside it.
    python = venv / "bin" / "python-with-pyspark"
    python.write_text("#!/bin/sh\nexport PYTHONPATH=%s\nexec %s \"$@\"\n" % (site, sys.executable))
    python.chmod(0o755)
    conf = tmp_path / "conf"
    conf.mkdir()
    # The README's spark-defaults as written but for the jar's path, and the
    # test's own: a lower --max-pixels, the executors' Python.
    readme_conf = doc_block("README.md", "spark.jars")
    placeholder = "/path/the/command/above/printed/pixelflight-spark-plugin.jar"
    assert placeholder in readme_conf
    (conf / "spark-defaults.conf").write_text(
        readme_conf.replace(placeholder, jar) + "\n"
        "spark.pixelflight.args --max-pixels 1000000\n"
        "spark.pyspark.python %s\n" % python)
    readme_call = doc_block("README.md", "from pixelflight.spark import map_images")
    assert '"photos/"' in readme_call
    readme_call = readme_call.replace('"photos/"', repr(os.path.join(images, "good")))
    e = dict(env(), SPARK_CONF_DIR=str(conf), PYTHONPATH=site, PYSPARK_PYTHON=str(python))
    big = tmp_path / "big"
    big.mkdir()
    Image.fromarray(np.zeros((1000, 1200), np.uint8)).save(big / "wide.png")
    master, procs = start_standalone(str(tmp_path), e, workers=1, cores=2)
    server, ui = None, ""
    try:
        if mode == "connect":  # the conf from SPARK_CONF_DIR's spark-defaults, as the classic driver's
            server, master, ui = start_connect_server(str(tmp_path), e, master)
        p = subprocess.Popen([sys.executable, "-c", JOURNEY, master, os.path.join(images, "good"),
                              os.path.join(images, "bad"), str(big), ui, readme_call],
                             cwd=tmp_path, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            stdout, stderr = p.communicate(timeout=420)
        except subprocess.TimeoutExpired:
            p.kill()
            stdout, stderr = p.communicate()
            pytest.fail("the journey hung: %s" % stderr[-4000:])
    finally:
        try:
            if server is not None:
                stop_connect_server(server)
        finally:
            stop_standalone(procs)
    assert p.returncode == 0, stderr[-5000:]
    out = json.loads(stdout.strip().splitlines()[-1])
    n = len(os.listdir(os.path.join(images, "good")))
    assert out["client"].startswith(site), out["client"]  # the wheel's client, not the checkout's
    assert out["map_rows"] == n and out["map_errors"] == [], out
    assert out["extensions"] == EXTENSIONS, out
    assert out["ds_rows"] == out["sql_rows"] == n, out
    m = {k: int(str(v).replace(",", "")) for k, v in out["metrics"].items() if str(v).replace(",", "").isdigit()}
    assert m.get("pixelflight rows") == n and m.get("pixelflight error rows") == 0, out["metrics"]
    said = {k: v["said"] for k, v in out["mistakes"].items()}
    # Found on the driver: no task runs (strict mode's runs a job: the row's
    # error is only known there).
    slow = {k: round(v["seconds"], 1) for k, v in out["mistakes"].items() if v["seconds"] > 15 and k != "strict"}
    assert not slow, "mistakes a user waits for: %s" % slow
    assert "fft_convolve has no parameter 'sigam' (did you mean 'sigma'?)" in said["param"], said
    assert "fft_convolve has no parameter 'sigam' (did you mean 'sigma'?)" in said["ds_param"], said
    assert "did you mean 'haarcascade_frontalface_default'?" in said["cascade"].splitlines()[0], said
    assert "unknown op 'blur'" in said["op"], said
    # Strict mode: a line of ours in what PySpark wraps around the task's
    # exception (map_images runs in the JVM under the README's settings:
    # Spark's text repeats it in its driver stack trace), naming the file
    # and its cause.
    ours = [line for line in said["strict"].splitlines() if "pixelflight: file:" in line]
    bad = sorted(os.listdir(os.path.join(images, "bad")))
    assert ours and any(b in ours[0] for b in bad) and "strict mode" in ours[0], said["strict"][-2000:]
    [too_big] = out["big"]
    assert "too large" in too_big and "spark.pixelflight.args" in too_big and "--max-pixels" in too_big, too_big
    deadline = time.time() + 15  # the sidecars exit with their executors
    while running(binary) and time.time() < deadline:
        time.sleep(0.2)
    assert not running(binary), "a sidecar of the wheel's binary outlived the cluster"
