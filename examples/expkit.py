"""What the experiment scripts and the notebook share: a sidecar started
and stopped around a run, a Spark session, a Spark standalone cluster on
this machine, the image DataFrame and CSV output."""

import csv
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BINARY = os.path.join(ROOT, "bin", "pixelflight")
PLUGIN_JAR = os.path.join(ROOT, "spark-plugin", "target", "pixelflight-spark-plugin.jar")

sys.path.insert(0, os.path.join(ROOT, "python"))
from pixelflight import Client  # noqa: E402


class Sidecar:
    """A `pixelflight serve` on a Unix socket of its own, stopped (SIGTERM)
    by stop() or at the end of a with block. ``args`` are extra serve flags
    (--backend, --workers); start-up failures raise RuntimeError with the
    sidecar's log."""

    def __init__(self, *args, binary=BINARY):
        if not os.path.exists(binary):
            raise RuntimeError("%s is missing: run `make build`" % binary)
        self.dir = tempfile.mkdtemp(prefix="pixelflight-")
        self.endpoint = "grpc+unix://" + os.path.join(self.dir, "pf.sock")
        self.args = list(args)
        self.proc = subprocess.Popen(
            [binary, "serve", "--listen", self.endpoint, "--log-format", "json", "--metrics-listen", "",
             "--exit-with-parent", *args], stderr=subprocess.PIPE, text=True)
        self.logs = []
        ready = threading.Event()

        def read():
            for line in self.proc.stderr:
                self.logs.append(line)
                if '"serving"' in line:
                    ready.set()
            ready.set()

        threading.Thread(target=read, daemon=True).start()
        if not ready.wait(30) or self.proc.poll() is not None:
            self.stop()
            raise RuntimeError("pixelflight serve %s did not start: %s" % (" ".join(args), "".join(self.logs[-5:])))

    def client(self):
        return Client(self.endpoint)

    def backends(self):
        """The sidecar's backends, from its capabilities: name -> lanes."""
        with self.client() as c:
            return {b["name"]: b["lanes"] for b in c.capabilities()["backends"]}

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        try:
            os.rmdir(self.dir)
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def gpu_backends(binary=BINARY):
    """Which GPU backends a sidecar here gets (`serve --backend auto`, asked
    through its capabilities), and why none when none: ([names], reason)."""
    with Sidecar("--backend", "auto", "--workers", "1", binary=binary) as s:
        names = [n for n in s.backends() if n != "cpu"]
        with s.client() as c:
            gpus = c.capabilities().get("gpus")
    if names:
        return names, ""
    return [], "no GPU backend in the sidecar's capabilities (backends: cpu; gpus: %s)" % json.dumps(gpus)


# What the experiments that start their own sidecars (cpu_vs_gpu,
# faces_throughput) say of their master and sidecars in --help.
OWN_SIDECARS = """
Spark's master is --master, else $SPARK_MASTER, else the one Spark's
configuration sets (spark-submit's --master, spark.master in
spark-defaults.conf), else local[*]; a session already active in the
process is used as it is. The sidecars are not the executors' own, on
purpose: to compare backends, the script starts each configuration's
sidecar itself (``pixelflight serve`` from --binary, on a Unix socket on
this machine) and passes its endpoint to every task, so PIXELFLIGHT_ENDPOINT
and the executor plugin's sidecars are not used, and the executors must run
on this machine (local mode, or a cluster whose executors are all here).
"""


def add_master(ap):
    """Adds --master to an argparse parser, defaulting to $SPARK_MASTER,
    else None: see session()."""
    ap.add_argument("--master", default=os.environ.get("SPARK_MASTER") or None,
                    help="Spark master (default: $SPARK_MASTER, else Spark's own: spark-submit's --master or "
                         "spark.master in spark-defaults.conf, else local[*]; a session already active is used as "
                         "it is); the executors must run on this machine, where the script starts its sidecars")


def session(master, app, **conf):
    """Returns (spark, owned): the SparkSession already active in this
    process (owned False: the caller leaves it running), else a new one on
    master (this interpreter for the Python workers, no UI; owned True).
    master None: the one Spark's configuration sets (spark-submit's
    --master, spark.master in spark-defaults.conf), else local[*], which
    is what Spark itself falls back to (as examples/blobs.py does). The
    driver binds 127.0.0.1 (SPARK_LOCAL_IP, unless set) only for a master
    given here that is local or on this host: a cluster's executors must
    reach it."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if master and (master.startswith("local") or any(h in master for h in ("//127.0.0.1:", "//localhost:"))):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active, False
    b = SparkSession.builder.appName(app).config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress",
                                                                                     "false")
    if master:
        b = b.master(master)
    for k, v in conf.items():
        b = b.config(k, str(v))
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark, True


def images(spark, folder, copies=1, partitions=None, pattern="*"):
    """The images under folder whose names match pattern (binaryFile: path,
    content), each ``copies`` times (copy numbers kept in ``path``),
    cached, in ``partitions``."""
    from pyspark.sql import functions as F

    df = (spark.read.format("binaryFile").option("recursiveFileLookup", "true").option("pathGlobFilter", pattern)
          .load(folder).select("path", "content"))
    if copies > 1:
        df = (df.crossJoin(spark.range(copies).withColumnRenamed("id", "copy"))
              .select(F.concat_ws("#", "path", "copy").alias("path"), "content"))
    df = df.repartition(partitions or spark.sparkContext.defaultParallelism * 2).cache()
    df.count()
    return df


def write_csv(path, rows, fields):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fields)
        w.writeheader()
        for r in rows:
            w.writerow({k: _cell(r.get(k)) for k in fields})
    return path


def _cell(v):
    if v is None:
        return ""
    if isinstance(v, float):
        return "%.6g" % v
    return v


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class StandaloneCluster:
    """A Spark standalone master and ``workers`` workers of one core each,
    started from pyspark's own jars on this machine (bound to 127.0.0.1),
    stopped at the end of a with block."""

    def __init__(self, workers, memory="1g"):
        import pyspark

        home = os.path.dirname(pyspark.__file__)
        spark_class = os.path.join(home, "bin", "spark-class")
        self.dir = tempfile.mkdtemp(prefix="pixelflight-cluster-")
        env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", SPARK_HOME=home, PYSPARK_PYTHON=sys.executable)
        port = free_port()
        self.master = "spark://127.0.0.1:%d" % port
        self.procs = []

        def start(name, *args):
            log = open(os.path.join(self.dir, name + ".log"), "w")
            self.procs.append(subprocess.Popen([spark_class, *args], env=env, stdout=log, stderr=subprocess.STDOUT,
                                               start_new_session=True))

        try:
            start("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
                  "--webui-port", str(free_port()))
            for i in range(workers):
                work = os.path.join(self.dir, "work%d" % i)
                os.mkdir(work)
                start("worker%d" % i, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--cores",
                      "1", "--memory", memory, "--work-dir", work, "--webui-port", str(free_port()), self.master)
            log = os.path.join(self.dir, "master.log")
            deadline = time.time() + 120
            while time.time() < deadline:
                with open(log) as f:
                    if f.read().count("Registering worker") >= workers:
                        return
                time.sleep(0.3)
            with open(log) as f:
                raise RuntimeError("%d Spark workers did not register within 120 s; the master's log ends: %s"
                                   % (workers, f.read()[-3000:]))
        except BaseException:
            self.stop()
            raise

    def stop(self):
        """Stops the master and workers and removes their logs and work dirs."""
        for p in self.procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
