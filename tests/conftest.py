"""Fixtures for the end-to-end tests: a real sidecar process, real images."""

import importlib.util
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
import scipy.signal as ss
from PIL import Image

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "bin", "pixelflight")
IMAGES = os.environ.get("PIXELFLIGHT_TEST_IMAGES", os.path.join(ROOT, "build", "images"))

# The client from python/, unless this Python has it installed (the version
# matrix's venvs install the platform wheel).
if importlib.util.find_spec("pixelflight") is None:
    sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
# PIXELFLIGHT_TEST_CONNECT=1: the Spark sessions of the tests and their jobs
# are Spark Connect ones (SparkSession.builder.remote("local[2]")).
CONNECT = os.environ.get("PIXELFLIGHT_TEST_CONNECT") == "1"
# Every JVM the tests start (Spark drivers and executors, clusters, Connect
# servers) lives seconds to a minute: C1 alone and the serial collector
# start it on about half the CPU of the default JIT and GC, and 2 cores are
# shared by two test workers. Not a setting users need; a JVM option of the
# caller's own is kept.
os.environ.setdefault("JAVA_TOOL_OPTIONS", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
from convref import gaussian  # noqa: E402,F401  the kernels as scipy would build them
from pixelflight import Client  # noqa: E402
from pixelflight.spark import EXTENSIONS  # noqa: E402


def pytest_configure(config):
    config.addinivalue_line("markers", "matrix: run on every classic leg of the version matrix (make test-matrix)")
    config.addinivalue_line("markers", "connect: run on the Spark Connect legs (PIXELFLIGHT_TEST_CONNECT=1)")
    config.addinivalue_line("markers", "check: in make check, the quick check after a change (docs/testing.md)")


# The modules that take longest (clusters, Spark applications of their own),
# slowest first: make test runs the suite under pytest-xdist, a module to a
# worker (--dist loadfile --no-loadscope-reorder), and handing out the long
# ones first keeps one of them from starting last. Without xdist the order
# stays the files': the Spark Connect legs start their one Connect server
# with the first module's session (test_spark's).
SLOW_FIRST = ["test_image.py", "test_journey.py", "test_yarn.py", "test_experiments.py", "test_faults.py",
              "test_plugin.py", "test_security.py", "test_datasource.py", "test_wheel.py", "test_spark.py", "test_faces.py", "test_templates.py"]


def pytest_collection_modifyitems(config, items):
    if config.getoption("dist", "no") == "no":
        return

    def rank(item):
        name = os.path.basename(str(item.path))
        return SLOW_FIRST.index(name) if name in SLOW_FIRST else len(SLOW_FIRST)
    items.sort(key=rank)  # stable: each module's own order is kept


def session_builder(master, extensions=False):
    """SparkSession.builder for master, a Spark Connect one under CONNECT,
    with the plugin jar for this pyspark in spark.jars, and pixelflight's
    SQL extensions (so map_images takes the JVM path) or none, as
    extensions says. The tests' sessions share one JVM per test process,
    which keeps the settings of the session that started it as defaults,
    and spark.jars reaches the driver's class path (where
    spark.sql.extensions' classes load from) only then: so every session
    names the jar and sets the extensions either way. Under CONNECT the one
    Connect server has the extensions, as spark-conf/README.md starts one."""
    from pyspark.sql import SparkSession

    from pixelflight.sidecar import jar
    b = SparkSession.builder.remote(master) if CONNECT else SparkSession.builder.master(master)
    return b.config("spark.jars", jar()).config("spark.sql.extensions", EXTENSIONS if extensions or CONNECT else "")


def free_port():
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as sk:
        sk.bind(("127.0.0.1", 0))
        return sk.getsockname()[1]


def start_standalone(d, env, workers, cores, memory="1g"):
    """A standalone cluster started as spark-conf/README.md says
    (spark-class, from pip's pyspark, in env): a master and workers of cores
    cores each, their directories d/work1, d/work2, ..., logs in d. Returns the
    master's URL once every worker has registered, and the processes (stop
    them with stop_standalone)."""
    import pyspark
    home = os.path.dirname(pyspark.__file__)
    spark_class = os.path.join(home, "bin", "spark-class")
    env = dict(env, SPARK_LOCAL_IP="127.0.0.1", SPARK_HOME=home)
    port = free_port()
    master = "spark://127.0.0.1:%d" % port
    procs = []

    def start(name, *args):
        log = open(os.path.join(d, name + ".log"), "w")
        procs.append(subprocess.Popen([spark_class, *args], env=env, stdout=log, stderr=subprocess.STDOUT,
                                      start_new_session=True))

    start("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
          "--webui-port", str(free_port()))
    for i in range(1, workers + 1):
        work = os.path.join(d, "work%d" % i)
        os.makedirs(work)
        start("worker%d" % i, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--cores", str(cores),
              "--memory", memory, "--work-dir", work, "--webui-port", str(free_port()), master)
    log = os.path.join(d, "master.log")
    deadline = time.time() + 120
    while open(log).read().count("Registering worker") < workers:
        if time.time() > deadline:
            stop_standalone(procs)
            raise RuntimeError("the workers did not register:\n" + open(log).read()[-3000:])
        time.sleep(0.5)
    return master, procs


def stop_standalone(procs):
    for p in procs:
        os.killpg(p.pid, signal.SIGTERM)
    for p in procs:
        p.wait(timeout=30)


def start_connect_server(d, env, master, *conf):
    """A Spark Connect server as spark-conf/README.md starts one from pip's
    PySpark (spark-submit of its class), on master, with the extra --conf
    pairs conf ("key=value"), its log in d/connect-server.log (a pipe nobody
    reads would fill and stall it). Returns the process, its sc:// URL and
    its UI's URL ("" with spark.ui.enabled=false) once it listens; stop it
    with stop_connect_server."""
    port = free_port()
    args = [os.path.join(env["SPARK_HOME"], "bin", "spark-submit"),
            "--class", "org.apache.spark.sql.connect.service.SparkConnectServer", "--master", master,
            "--conf", "spark.connect.grpc.binding.port=%d" % port]
    for c in conf:
        args += ["--conf", c]
    log = os.path.join(d, "connect-server.log")
    server = subprocess.Popen(args, cwd=d, env=env, stdout=subprocess.DEVNULL, stderr=open(log, "w"))
    deadline = time.time() + 120
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if server.poll() is not None or time.time() > deadline:
                stop_connect_server(server)
                raise RuntimeError("the Connect server did not listen:\n" + open(log).read()[-3000:])
            time.sleep(0.5)
    ui = re.findall(r"started service 'SparkUI' on port (\d+)", open(log).read())  # 4040, or the next free one
    return server, "sc://127.0.0.1:%d" % port, "http://127.0.0.1:%s" % ui[-1] if ui else ""


def stop_connect_server(server):
    server.terminate()
    try:
        server.wait(60)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait(10)


class Sidecar:
    """A `pixelflight serve` process, started and stopped by a test."""

    def __init__(self, listen, *args, preexec_fn=None):
        if not os.path.exists(BIN):
            pytest.fail("%s is missing: run `make build` (make test does)" % BIN)
        self.proc = subprocess.Popen([BIN, "serve", "--listen", listen, "--log-format", "json", *args],
                                     stderr=subprocess.PIPE, text=True, preexec_fn=preexec_fn)
        self.logs = []
        self.location = None
        ready = threading.Event()

        def read():
            for line in self.proc.stderr:
                self.logs.append(line)
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                if rec.get("msg") == "serving":
                    self.location = rec["location"]
                    ready.set()
            ready.set()

        threading.Thread(target=read, daemon=True).start()
        if not ready.wait(20) or self.location is None:
            self.proc.kill()
            pytest.fail("sidecar did not start: %s" % "".join(self.logs))
        deadline = time.time() + 20
        while True:
            try:
                with Client(self.location) as c:
                    if c.health()["status"] == "SERVING":
                        break
            except Exception:
                if time.time() > deadline:
                    raise
                time.sleep(0.1)

    def stop(self):
        """SIGTERM; returns the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise


@pytest.fixture(scope="session")
def sidecar(tmp_path_factory):
    sock = tmp_path_factory.mktemp("sock") / "pf.sock"
    s = Sidecar("grpc+unix://%s" % sock)
    yield s
    assert s.stop() == 0, "".join(s.logs[-20:])


@pytest.fixture(scope="session")
def images():
    good = os.path.join(IMAGES, "good")
    if not os.path.isdir(good):
        pytest.fail("%s is missing: run `make data` (make test does)" % good)
    return IMAGES


def gray_of(path):
    """The image as Pillow's convert("L") gives it, as float64."""
    return np.asarray(Image.open(path).convert("L"), dtype=np.float64)


def check_close(got, ref, path):
    """Our float32 result against scipy's float64 one.

    Lossless formats: |ours - scipy| <= 1e-4 * (1 + max|scipy|) everywhere.
    JPEG: decoders differ (Go's IDCT and luma vs libjpeg's RGB), so the
    bound is 8 gray levels per pixel and 0.5 on average.
    """
    assert got.shape == ref.shape, path
    diff = np.abs(got.astype(np.float64) - ref)
    if path.lower().endswith((".jpg", ".jpeg")):
        assert diff.max() <= 8 and diff.mean() <= 0.5, (path, diff.max(), diff.mean())
    else:
        tol = 1e-4 * (1 + np.abs(ref).max())
        assert diff.max() <= tol, (path, diff.max(), tol)


def decode_f32(row):
    return np.frombuffer(row["data"], "<f4").reshape(row["height"], row["width"])


def scipy_ref(path, sigma=2.0):
    return ss.fftconvolve(gray_of(path), gaussian(sigma), mode="same")
