"""PySpark on a real YARN cluster: Hadoop's MiniYARNCluster (tests/yarn/,
a ResourceManager and two NodeManagers in one JVM, on the local file
system), jobs submitted with `spark-submit --master yarn` and the Spark
settings of the templates, paths made local: the executor plugin with the
GPU discovery script (spark-conf/dataproc/create-cluster.sh's) in client
deploy mode, the node daemon on loopback TCP (spark-conf/emr's
configurations-daemon.json) in cluster deploy mode. The other template's
settings for each mode are checked to be the same but for paths and, on
EMR, the Docker runtime's (a Docker engine is not here).

This machine has no GPU: the NodeManagers offer yarn.io/gpu as a plain
countable resource and the discovery script runs a stand-in for
`pixelflight discover` (PIXELFLIGHT_BINARY) that reports one GPU, so the
template's GPU settings are requested, scheduled and discovered as on a
cluster, while the sidecars serve on the CPU."""

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time

import pyspark
import pytest

from conftest import Sidecar
from pixelflight import Client, SidecarUnavailable
from test_plugin import find_jar, free_port, gone, sidecars

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "bin", "pixelflight")
LAUNCHER = os.path.join(ROOT, "tests", "yarn", "target")
JOB = os.path.join(ROOT, "tests", "yarn_job.py")
SPARK_HOME = os.path.dirname(pyspark.__file__)


@pytest.fixture(scope="module")
def yarn(tmp_path_factory):
    """The cluster; yields its HADOOP_CONF_DIR."""
    cp = os.path.join(LAUNCHER, "classpath.txt")
    if not os.path.exists(cp):
        pytest.fail("%s is missing: run `make yarn-cluster` (make test does)" % cp)
    pom = open(os.path.join(ROOT, "tests", "yarn", "pom.xml")).read()
    hadoop = re.search(r"<hadoop.version>(.*?)</hadoop.version>", pom).group(1)
    assert os.path.exists(os.path.join(SPARK_HOME, "jars", "hadoop-client-api-%s.jar" % hadoop)), \
        "tests/yarn/pom.xml's hadoop.version %s is not the Hadoop that pyspark bundles" % hadoop
    work = tmp_path_factory.mktemp("yarn")
    conf = work / "conf"
    classpath = os.path.join(LAUNCHER, "classes") + ":" + open(cp).read().strip()
    log = open(work / "cluster.log", "w")
    p = subprocess.Popen(["java", "-Xmx1g", "--add-opens", "java.base/java.lang=ALL-UNNAMED", "-cp", classpath,
                          "org.pixelflight.yarn.MiniYarn", str(conf), str(work)],
                         cwd=work, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True)
    ready = threading.Event()
    threading.Thread(target=lambda: (p.stdout.readline(), ready.set()), daemon=True).start()
    try:
        if not ready.wait(180) or p.poll() is not None:
            pytest.fail("the YARN cluster did not start: %s" % (work / "cluster.log").read_text()[-3000:])
        yield conf
    finally:
        p.stdin.close()
        try:
            p.wait(60)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        log.close()


def dataproc_settings(mode):
    """The spark: properties of create-cluster.sh's MODE=plugin or MODE=daemon."""
    text = open(os.path.join(ROOT, "spark-conf", "dataproc", "create-cluster.sh")).read()
    block = re.search(r"^%s=\((.*?)^\)" % mode, text, re.S | re.M).group(1)
    return dict(w[len("spark:"):].split("=", 1) for w in shlex.split(block, comments=True))


def emr_settings(name):
    """The spark-defaults classification of spark-conf/emr/NAME."""
    with open(os.path.join(ROOT, "spark-conf", "emr", name)) as f:
        return next(c["Properties"] for c in json.load(f) if c["Classification"] == "spark-defaults")


def test_emr_and_dataproc_templates_agree():
    """EMR's Spark settings are Dataproc's but for where the files are, and
    (plugin mode) the Docker runtime, its JAVA_HOME and the log format."""
    paths = {"spark.jars", "spark.pixelflight.binary", "spark.executor.resource.gpu.discoveryScript"}
    docker = re.compile(r"spark\.(executorEnv|yarn\.appMasterEnv)\.(YARN_CONTAINER_RUNTIME_\w+|JAVA_HOME)$")
    for emr, mode in (("configurations.json", "plugin"), ("configurations-daemon.json", "daemon")):
        e, d = emr_settings(emr), dataproc_settings(mode)
        extra = {k for k in e if not docker.match(k)} - set(d)
        assert extra <= {"spark.pixelflight.args", "spark.pixelflight.stopTimeout"}, (mode, extra)
        assert set(d) <= set(e), (mode, set(d) - set(e))
        assert {k: v for k, v in d.items() if k not in paths} == {k: e[k] for k in d if k not in paths}, mode
        for k in paths & set(d):
            assert os.path.basename(e[k]) == os.path.basename(d[k]), k


def submit(conf_dir, mode, settings, images, out, tmp_path, op="fft_convolve", wait=True):
    env = dict(os.environ, HADOOP_CONF_DIR=str(conf_dir), YARN_CONF_DIR=str(conf_dir), SPARK_HOME=SPARK_HOME,
               SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable,
               # pip's pyspark has no python/lib/pyspark.zip to ship: the
               # containers import pyspark from this venv, as PYSPARK_PYTHON does.
               PYSPARK_ARCHIVES_PATH="local:" + os.path.dirname(SPARK_HOME))
    env.pop("PIXELFLIGHT_ENDPOINT", None)
    args = [os.path.join(SPARK_HOME, "bin", "spark-submit"), "--master", "yarn", "--deploy-mode", mode]
    for k, v in settings.items():
        args += ["--conf", "%s=%s" % (k, v)]
    args += ["--conf", "spark.yarn.jars=local:%s/jars/*" % SPARK_HOME,
             "--conf", "spark.pyspark.python=" + sys.executable,
             "--conf", "spark.executor.instances=2", "--conf", "spark.executor.memory=512m",
             "--conf", "spark.driver.memory=512m", "--conf", "spark.yarn.am.memory=512m",
             "--conf", "spark.ui.enabled=false", "--conf", "spark.yarn.submit.waitAppCompletion=true",
             JOB, images, str(out), op]
    if not wait:
        return subprocess.Popen(args, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL,
                                stderr=open(tmp_path / "submit.err", "w"))
    p = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-5000:]
    return json.loads(out.read_text())


def fake_discover(tmp_path):
    """Stands in for `pixelflight discover` on a machine without a GPU."""
    f = tmp_path / "discover"
    f.write_text('#!/bin/sh\necho \'{"name":"gpu","addresses":["0"]}\'\n')
    f.chmod(0o755)
    return str(f)


def plugin_settings(tmp_path):
    s = dataproc_settings("plugin")
    assert s["spark.plugins"] == "org.pixelflight.spark.PixelflightPlugin", s
    s["spark.jars"] = "file://" + find_jar()
    s["spark.pixelflight.binary"] = BIN
    s["spark.executor.resource.gpu.discoveryScript"] = os.path.join(ROOT, "spark-conf", "discover-gpus.sh")
    s["spark.executorEnv.PIXELFLIGHT_BINARY"] = fake_discover(tmp_path)
    s["spark.pixelflight.args"] = "--workers 1 --metrics-listen="
    return s


def check_rows(res, images):
    """Every file once and without error, through map_images and the data source."""
    paths = sorted(r["path"] for r in res["rows"])
    assert len(paths) == len(set(paths)) == len(os.listdir(images))
    assert [r for r in res["rows"] if r["error"]] == []
    assert sorted(r["path"] for r in res["ds_rows"]) == paths
    assert [r for r in res["ds_rows"] if r["error"]] == []


def test_emr_daemon_template_cluster_mode(yarn, images, tmp_path):
    """The node daemon on loopback TCP (a free port in place of the
    template's 8815, which another process here may hold); the driver runs
    in YARN's application master."""
    s = emr_settings("configurations-daemon.json")
    assert s["spark.executorEnv.PIXELFLIGHT_ENDPOINT"] == "grpc://127.0.0.1:8815", s
    port = free_port()
    s["spark.executorEnv.PIXELFLIGHT_ENDPOINT"] = "grpc://127.0.0.1:%d" % port
    assert s["spark.jars"].endswith("/pixelflight-spark-plugin-spark3.5.jar"), s
    s["spark.jars"] = "file://" + find_jar()
    s["spark.yarn.appMasterEnv.PYSPARK_PYTHON"] = sys.executable
    daemon = Sidecar("grpc://127.0.0.1:%d" % port, "--workers", "1", "--metrics-listen=")
    try:
        good = os.path.join(images, "good")
        res = submit(yarn, "cluster", s, good, tmp_path / "out.json", tmp_path)
    finally:
        assert daemon.stop() == 0
    check_rows(res, good)
    assert res["endpoints"] == [["grpc://127.0.0.1:%d" % port, "the environment variable PIXELFLIGHT_ENDPOINT"]]


def plugin_sidecars(cluster):
    """{pid: endpoint} of the sidecars the plugin started from bin/pixelflight
    in the cluster's containers (their working directories are under its
    folder, the parent of its configuration's)."""
    found = {}
    for pid in sidecars(cluster.parent):
        try:
            argv = open("/proc/%d/cmdline" % pid, "rb").read().decode().split("\0")
        except OSError:
            continue
        if argv[0] == BIN:
            found[pid] = argv[argv.index("--listen") + 1]
    return found


def wait_for(what, check, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        got = check()
        if got:
            return got
        time.sleep(0.1)
    pytest.fail("timed out waiting for " + what)


def rows_done(client):
    """The sidecar's row count; 0 while it does not listen yet."""
    try:
        return client.stats()["rows"]
    except SidecarUnavailable:
        return 0


def parent(pid):
    """(ppid, command line) of pid's parent."""
    ppid = int(open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[1])
    return ppid, open("/proc/%d/cmdline" % ppid, "rb").read().decode().replace("\0", " ")


def test_dataproc_plugin_template_client_mode_sidecar_and_executor_killed(yarn, images, tmp_path):
    """Client mode, the plugin template (GPU discovery script included),
    detect_blobs over 240 images: one sidecar per executor. One sidecar is
    killed (SIGKILL) once it has done 20 rows: its plugin starts another on
    the same socket and the tasks' clients send again what was not
    answered. Then the other executor (its JVM, the other sidecar's
    parent) is killed once its sidecar has done 20 rows: Spark runs its
    tasks again elsewhere, its sidecar exits with it. Every file comes
    back once, and no sidecar outlives its container."""
    before = sidecars(yarn.parent)
    data = tmp_path / "images"
    data.mkdir()
    good = os.path.join(images, "good")
    for i in range(10):
        for name in os.listdir(good):
            shutil.copyfile(os.path.join(good, name), data / ("%02d-%s" % (i, name)))
    job = submit(yarn, "client", plugin_settings(tmp_path), str(data), tmp_path / "out.json", tmp_path,
                 op="detect_blobs", wait=False)
    try:
        wait_for("two sidecars", lambda: len(plugin_sidecars(yarn)) == 2, 300)
        (pid, endpoint), (other, other_endpoint) = sorted(plugin_sidecars(yarn).items())
        executor, cmdline = parent(other)
        assert "YarnCoarseGrainedExecutorBackend" in cmdline, cmdline
        # The executor's share of the node: its gpu resource's addresses
        # (the discovery script's "0") and the template's 4 cores, before
        # spark.pixelflight.args' --workers 1, which wins.
        environ = open("/proc/%d/environ" % other, "rb").read().decode().split("\0")
        assert "CUDA_VISIBLE_DEVICES=0" in environ, [e for e in environ if e.startswith("CUDA")]
        argv = open("/proc/%d/cmdline" % other, "rb").read().decode().split("\0")
        assert argv.index("--workers=4") < argv.index("--workers"), argv
        # Its log is in the container's log directory, which YARN keeps
        # after the container's working directory is gone.
        log_dir = re.search(r"-Dspark\.yarn\.app\.container\.log\.dir=(\S+)", cmdline).group(1)
        assert os.path.dirname(os.readlink("/proc/%d/fd/1" % other)) == log_dir, log_dir
        with Client(endpoint) as c:
            wait_for("20 rows done", lambda: rows_done(c) >= 20, 300)
        os.kill(pid, signal.SIGKILL)
        wait_for("the plugin to start another sidecar",
                 lambda: [p for p, e in plugin_sidecars(yarn).items() if e == endpoint and p != pid], 60)
        with Client(other_endpoint) as c:
            wait_for("20 rows done by the other", lambda: rows_done(c) >= 20, 300)
        os.kill(executor, signal.SIGKILL)
        assert job.wait(600) == 0, (tmp_path / "submit.err").read_text()[-5000:]
    finally:
        if job.poll() is None:
            job.kill()
            job.wait()
    res = json.loads((tmp_path / "out.json").read_text())
    check_rows(res, str(data))
    # The executors left: the first one, and the replacement of the one
    # killed once YARN has started it (one sidecar per executor).
    assert endpoint in [e for e, _ in res["endpoints"]] and len(res["endpoints"]) <= 2, res["endpoints"]
    assert other_endpoint not in [e for e, _ in res["endpoints"]], res["endpoints"]
    assert all("executor plugin" in src for _, src in res["endpoints"])
    assert gone(before, yarn.parent, 30), "a sidecar outlived its YARN container"
