"""The Spark executor plugin (spark-plugin/): every executor gets its own
sidecar, PySpark jobs find it with no endpoint configured, and no sidecar
outlives its executor. Real Spark: local mode and a standalone cluster (a
master and two workers started from pyspark's own jars)."""

import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pyspark
import pytest

from conftest import free_port, start_connect_server, start_standalone, stop_connect_server, stop_standalone
from pixelflight.sidecar import jar as plugin_jar
from pixelflight.spark import EXTENSIONS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "bin", "pixelflight")
JOB = os.path.join(ROOT, "tests", "plugin_job.py")


def find_jar():
    """The plugin jar built for the installed pyspark (the wheel's on the
    version matrix's legs, spark-plugin/target's in the source checkout)."""
    try:
        return plugin_jar()
    except FileNotFoundError as e:
        pytest.fail("%s (make test builds them)" % e)


@pytest.fixture(scope="module")
def jar():
    return find_jar()


def sidecars(under):
    """pids of sidecars started by the plugin (they run with
    --exit-with-parent) whose working directory, the executor's, lies under
    the folder ``under``: a test's own, whatever other tests run beside it."""
    pids = set()
    prefix = os.path.join(os.path.realpath(under), "")
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                argv = f.read().split(b"\0")
            cwd = os.path.join(os.readlink("/proc/%s/cwd" % d), "")
        except OSError:
            continue
        if argv[0].endswith(b"pixelflight") and b"--exit-with-parent" in argv and cwd.startswith(prefix):
            pids.add(int(d))
    return pids


def gone(before, under, timeout=10):
    """Whether every sidecar under ``under`` but those in before has exited (waits up to timeout s)."""
    deadline = time.time() + timeout
    while sidecars(under) - before and time.time() < deadline:
        time.sleep(0.2)
    return not (sidecars(under) - before)


def env():
    e = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable,
             SPARK_HOME=os.path.dirname(pyspark.__file__))
    e.pop("PIXELFLIGHT_ENDPOINT", None)
    return e


def run_job(master, jar, cwd, images, *extra, binary=BIN, python=sys.executable):
    """plugin_job.py with spark.pixelflight.binary=binary; python: the
    driver's PYSPARK_PYTHON, the Python the PySpark workers run."""
    p = subprocess.run([sys.executable, JOB, master, jar, binary, images, *extra], cwd=cwd,
                       env=dict(env(), PYSPARK_PYTHON=python), capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-4000:]
    return dict(json.loads(p.stdout.strip().splitlines()[-1]), stderr=p.stderr)


@pytest.mark.matrix
@pytest.mark.connect
def test_local_mode(jar, images, tmp_path):
    good = os.path.join(images, "good")
    before = sidecars(tmp_path)
    metrics = "127.0.0.1:%d" % free_port()  # for spark.pixelflight.metricsListen
    # A working directory 70 characters long: the socket's own directory in
    # there would pass sun_path's 108 bytes, so the plugin makes it in the temp dir.
    if len(str(tmp_path)) > 68:
        pytest.skip("pytest's temp dir %s is too long for a 70-character working directory" % tmp_path)
    cwd = tmp_path / "w".ljust(69 - len(str(tmp_path)), "w")
    cwd.mkdir()
    res = run_job("local[2]", jar, str(cwd), good, metrics)
    assert res["rows"] == res["paths"] == len(os.listdir(good))
    assert res["metrics_rows"] == res["rows"], "the sidecar's /metrics counted other rows"
    assert res["metrics_executors"] == ["driver"], res  # its series name the executor (local mode: the driver)
    assert res["errors"] == []
    [(endpoint, source)] = res["endpoints"]
    assert endpoint.startswith("grpc+unix://") and "executor plugin" in source
    assert not endpoint.startswith("grpc+unix://" + str(cwd)) and len(endpoint) - len("grpc+unix://") <= 100
    assert res["ds_rows"] == res["rows"] and res["ds_differ"] == [], res  # the data source, same sidecar
    assert gone(before, tmp_path), "a sidecar outlived the application"
    log = (cwd / "pixelflight-driver.log").read_text()
    assert '"serving"' in log and '"stopped"' in log
    assert "sidecar started: grpc+unix://" in res["stderr"] and "pixelflight-driver.log" in res["stderr"], res["stderr"]
    assert not (cwd / "pixelflight.endpoint").exists()


# A local-mode application that prints its sidecar's endpoint and CUDA_*
# environment as JSON: python -c LOCAL_JOB JAR BINARY [KEY=VALUE ...].
LOCAL_JOB = r"""
import json, os, sys
from pyspark.sql import SparkSession
jar, binary, *confs = sys.argv[1:]
b = (SparkSession.builder.master("local[1]").appName("pixelflight-plugin-test").config("spark.jars", jar)
     .config("spark.plugins", "org.pixelflight.spark.PixelflightPlugin").config("spark.pixelflight.binary", binary)
     .config("spark.pixelflight.metricsListen", "").config("spark.ui.enabled", "false"))
for kv in confs:
    b = b.config(*kv.split("=", 1))
spark = b.getOrCreate()
jvm = spark.sparkContext._jvm.ProcessHandle.current().pid()
env = None
for d in filter(str.isdigit, os.listdir("/proc")):
    try:
        ppid = int(open("/proc/%s/stat" % d).read().rsplit(")", 1)[1].split()[1])
        argv = open("/proc/%s/cmdline" % d, "rb").read().split(b"\0")
        if ppid == jvm and b"--exit-with-parent" in argv:
            env = dict(e.split("=", 1) for e in open("/proc/%s/environ" % d, "rb").read().decode().split("\0")
                       if e.startswith("CUDA_"))
    except OSError:
        pass
print(json.dumps({"endpoint": open("pixelflight.endpoint").read().strip(), "env": env}))
spark.stop()
"""


@pytest.mark.matrix
def test_local_mode_driver_gpu_and_relative_socket_dir(jar):
    """Local mode: the executor has no resources of its own, so its sidecar
    gets the driver's gpu addresses (a discovery script's) as
    CUDA_VISIBLE_DEVICES, in PCI bus order (CUDA_DEVICE_ORDER, as NVML
    numbers them); a relative spark.pixelflight.socketDir is the working
    directory's."""
    cwd = tempfile.mkdtemp(prefix="pf-")  # short: the socket's path stays under sun_path's limit
    try:
        os.mkdir(os.path.join(cwd, "socks"))
        discover = os.path.join(cwd, "discover.sh")
        with open(discover, "w") as f:
            f.write('#!/bin/sh\necho \'{"name":"gpu","addresses":["3"]}\'\n')
        os.chmod(discover, 0o755)
        p = subprocess.run([sys.executable, "-c", LOCAL_JOB, jar, BIN, "spark.pixelflight.socketDir=socks",
                            "spark.driver.resource.gpu.amount=1", "spark.driver.resource.gpu.discoveryScript=" + discover],
                           cwd=cwd, env=env(), capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr[-4000:]
        res = json.loads(p.stdout.strip().splitlines()[-1])
        assert res["env"] == {"CUDA_VISIBLE_DEVICES": "3", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}, res
        assert res["endpoint"].startswith("grpc+unix://%s/socks/pixelflight-" % os.path.realpath(cwd)), res
    finally:
        shutil.rmtree(cwd, ignore_errors=True)


@pytest.mark.check
def test_endpoint_file_of_a_connect_session(tmp_path, monkeypatch):
    """The Python workers of a Spark Connect session run in a directory of
    their own in the executor's files directory, where the plugin also
    writes its endpoint file: the client looks one level up."""
    from pixelflight.client import resolve_endpoint

    (tmp_path / "pixelflight.endpoint").write_text("grpc+unix:///x/s.sock\n")
    session = tmp_path / "8ae3b8ca-887a"
    session.mkdir()
    monkeypatch.chdir(session)
    monkeypatch.delenv("PIXELFLIGHT_ENDPOINT", raising=False)
    monkeypatch.delenv("SPARK_JOB_ARTIFACT_UUID", raising=False)
    assert resolve_endpoint()[0] != "grpc+unix:///x/s.sock"  # not a session's directory
    monkeypatch.setenv("SPARK_JOB_ARTIFACT_UUID", "8ae3b8ca-887a")
    endpoint, source = resolve_endpoint()
    assert endpoint == "grpc+unix:///x/s.sock" and str(tmp_path / "pixelflight.endpoint") in source


@pytest.fixture(scope="module")
def standalone(tmp_path_factory):
    """A standalone cluster: one master, two workers of one core each.
    Yields the master's URL; the workers' directories are work1 and work2
    beside it (cluster_dir)."""
    tmp_path = tmp_path_factory.mktemp("standalone")
    master, procs = start_standalone(str(tmp_path), env(), workers=2, cores=1)
    try:
        yield master, tmp_path
    finally:
        stop_standalone(procs)


def sidecar_logs(cluster_dir):
    """The sidecars' logs in the workers' directories, one per executor."""
    return set(glob.glob(str(cluster_dir / "work*" / "app-*" / "*" / "pixelflight-*.log")))


@pytest.mark.check
def test_sidecar_exits_with_its_parent(tmp_path):
    """If the executor dies without calling shutdown (SIGKILL, OOM killer),
    the sidecar notices and stops."""
    sock = tmp_path / "s.sock"
    p = subprocess.run(["bash", "-c", '"$0" serve --listen "grpc+unix://$1" --exit-with-parent 2>/dev/null & echo $!; sleep 1',
                        BIN, str(sock)], capture_output=True, text=True, timeout=30)
    pid = int(p.stdout.strip())
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)
    pytest.fail("the sidecar kept running after its parent exited")


def test_standalone_cluster(jar, images, tmp_path, standalone):
    """spark-conf/standalone's template (its paths replaced) on workers of
    one core, examples/blobs.py through spark-submit, as spark-conf/README.md
    says: the example takes the master from the properties and leaves the
    endpoint to the plugin; each executor starts its own sidecar, which gets
    the executor's cores as --workers (the template leaves
    spark.executor.cores unset: each executor has its worker's one core),
    and none outlives its executor."""
    master, cluster_dir = standalone
    good = tmp_path / "images"  # a few images: the job's speed is not the point
    good.mkdir()
    for name in sorted(os.listdir(os.path.join(images, "good")))[:6]:
        shutil.copy(os.path.join(images, "good", name), good / name)
    template = open(os.path.join(ROOT, "spark-conf", "standalone", "spark-defaults.conf")).read()
    props = template
    for old, new in (("spark://master.example.com:7077", master),
                     ("/opt/pixelflight/pixelflight-spark-plugin.jar", jar), ("/opt/pixelflight/pixelflight", BIN)):
        assert old in props, old
        props = props.replace(old, new)
    (tmp_path / "spark-defaults.conf").write_text(props)
    submit = os.path.join(os.path.dirname(pyspark.__file__), "bin", "spark-submit")
    before, earlier = sidecars(cluster_dir), sidecar_logs(cluster_dir)
    p = subprocess.run([submit, "--properties-file", str(tmp_path / "spark-defaults.conf"),
                        os.path.join(ROOT, "examples", "blobs.py"), "--images", str(good)],
                       cwd=tmp_path, env=dict(env(), PIXELFLIGHT_RETRY_SECONDS="10"), capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0, p.stderr[-4000:]
    out = p.stdout
    assert "sidecar: each executor's own, started by the executor plugin" in out, out
    names = sorted(os.listdir(good))
    rows = [line.split() for line in out.splitlines() if line[:36].strip() in {n[:36] for n in names}]
    assert len(rows) == len(names), out
    assert all(len(r) == 3 and r[1].isdigit() and r[2].isdigit() for r in rows), out  # no error column
    assert "%d images through detect_blobs and watershed" % len(names) in out, out
    logs = sidecar_logs(cluster_dir) - earlier
    assert len(logs) == 2, logs  # one sidecar per executor, one executor per worker
    for log in logs:
        serving = [json.loads(line) for line in open(log) if '"serving"' in line]
        assert serving and all(s["workers"] == 1 for s in serving), serving  # the executor's --cores
    # The binary ran from each executor's SparkFiles folder, in the cluster's directory.
    assert gone(before, cluster_dir), "a sidecar outlived its executor"


def test_datasource_on_standalone_cluster(jar, images, tmp_path, standalone):
    """The data source on two executors of one core, each with its own
    sidecar from the executor plugin and no endpoint configured: every file
    answered once, as map_images answers it on the same cluster. The
    binary is spark.pixelflight.binary's default, `pixelflight`, found
    beside the Python that the driver's PYSPARK_PYTHON names (where pip
    puts the wheel's), which the PySpark workers run; the executors'
    environment names another (the cluster's)."""
    master, cluster_dir = standalone
    good = os.path.join(images, "good")
    venv = tmp_path / "venv" / "bin"
    venv.mkdir(parents=True)
    started = tmp_path / "started"
    for name, script in (("python", 'exec "%s" "$@"' % sys.executable),
                         ("pixelflight", 'echo "$$" >> "%s"; exec "%s" "$@"' % (started, BIN))):
        (venv / name).write_text("#!/bin/sh\n%s\n" % script)
        (venv / name).chmod(0o755)
    before, earlier = sidecars(cluster_dir), sidecar_logs(cluster_dir)
    res = run_job(master, jar, str(tmp_path), good, binary="pixelflight", python=str(venv / "python"))
    assert len(started.read_text().split()) == 2, "the sidecars did not start from beside the workers' Python"
    assert res["rows"] == res["paths"] == res["ds_rows"] == len(os.listdir(good)), res
    assert res["errors"] == [] and res["ds_differ"] == [], res
    assert all("executor plugin" in source for _, source in res["endpoints"]), res["endpoints"]
    assert len(sidecar_logs(cluster_dir) - earlier) == 2  # one sidecar per executor
    assert gone(before, cluster_dir), "a sidecar outlived its executor"


# A Spark Connect client's job: python -c CONNECT_JOB URL IMAGES.
CONNECT_JOB = r"""
import json, sys
from pyspark.sql import SparkSession
from pixelflight.spark import map_images
url, images = sys.argv[1:]
spark = SparkSession.builder.remote(url).getOrCreate()
rows = map_images(spark.read.format("binaryFile").load(images), "fft_convolve", output="stats").collect()
print(json.dumps({"rows": len(rows), "errors": [r["error"] for r in rows if r["error"]]}))
"""


def test_connect_server_from_pip(jar, images, tmp_path):
    """spark-conf/README.md's Spark Connect recipe, as written: a pip
    install's PySpark has no start-connect-server.sh, so spark-submit
    starts the server's class, with the plugin jar and spark.plugins; a
    Connect client then runs map_images through the executors' sidecars."""
    e = env()
    server, url, _ = start_connect_server(str(tmp_path), e, "local[2]", "spark.jars=" + jar,
                                          "spark.plugins=org.pixelflight.spark.PixelflightPlugin",
                                          "spark.sql.extensions=" + EXTENSIONS,
                                          "spark.pixelflight.binary=" + BIN, "spark.ui.enabled=false")
    try:
        good = os.path.join(images, "good")
        p = subprocess.run([sys.executable, "-c", CONNECT_JOB, url, good], env=e,
                           capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr[-4000:]
        res = json.loads(p.stdout.strip().splitlines()[-1])
        assert res["rows"] == len(os.listdir(good)) and res["errors"] == [], res
        assert sidecars(tmp_path), "no sidecar of the Connect server's executor"
    finally:
        stop_connect_server(server)
    assert gone(set(), tmp_path), "a sidecar outlived the Connect server"


# A local-mode application with Spark's CSV metrics sink writing every
# second to a folder: python -c METRICS_JOB JAR BINARY FOLDER.
METRICS_JOB = r"""
import sys, time
from pyspark.sql import SparkSession
jar, binary, folder = sys.argv[1:]
s = (SparkSession.builder.master("local[1]").appName("pixelflight-metrics-test").config("spark.jars", jar)
     .config("spark.plugins", "org.pixelflight.spark.PixelflightPlugin").config("spark.pixelflight.binary", binary)
     .config("spark.pixelflight.metricsListen", "").config("spark.ui.enabled", "false")
     .config("spark.metrics.conf.*.sink.csv.class", "org.apache.spark.metrics.sink.CsvSink")
     .config("spark.metrics.conf.*.sink.csv.directory", folder)
     .config("spark.metrics.conf.*.sink.csv.period", "1").config("spark.metrics.conf.*.sink.csv.unit", "seconds")
     .getOrCreate())
s.range(1).count()
time.sleep(2.5)
s.stop()
"""


def test_plugin_gauges_in_sparks_metrics_system(jar, tmp_path):
    """The executor plugin's gauges (its sidecar up, its restarts) reach
    Spark's metrics system, here through its CSV sink."""
    folder = tmp_path / "metrics"
    folder.mkdir()
    p = subprocess.run([sys.executable, "-c", METRICS_JOB, jar, BIN, str(folder)], cwd=tmp_path, env=env(),
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-4000:]

    def values(name):
        [f] = [f for f in os.listdir(folder) if f.endswith("PixelflightPlugin.%s.csv" % name)]
        return [int(line.split(",")[1]) for line in (folder / f).read_text().splitlines()[1:]]
    assert 1 in values("sidecarUp"), values("sidecarUp")
    assert values("sidecarRestarts") and set(values("sidecarRestarts")) == {0}
