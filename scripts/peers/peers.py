"""make bench-peers: pixelflight's Spark paths against Daft, Ray Data and a
plain process pool, side by side in one run, each on the same cores and the
same files, doing the same work.

The work, per image: decode the JPEG to 8-bit gray, Gaussian convolution
(sigma 2, size 13: pixelflight's default size for sigma 2,
2*ceil(3*sigma)+1, docs/ops.md) in float32 with mode "same", then the stats
pixelflight's `output: "stats"` returns: min, max, mean, std (ddof 0), as
float64. pixelflight runs fft_convolve in its sidecar; the peers run
scipy.signal.fftconvolve on float32 arrays with the same kernel.

The files: the JPEGs of build/images/photo512/jpg (`make data`: 8 photos,
512x512, quality 90) copied under distinct names into a temporary folder
until there are --images of them (960: each 120 times), and a Parquet table
(path, content binary) of the same files, written once, outside the timing.

The systems, each first warmed once on --warm images (their own copies, in
a folder of their own), then timed once over all the images:

  datasource  pixelflight.spark.read_images (the plugin jar's `pixelflight`
              data source: the JVM reads the files and streams them to the
              sidecar, no Python on the executors)
  sql         SELECT * FROM pixelflight_map(TABLE(v), 'fft_convolve', '{...}')
              over a view v of the binaryFile source (path, content), with
              spark.sql.extensions=org.pixelflight.spark.PixelflightExtensions
  binaryfile  pixelflight.spark.map_images over spark.read.format("binaryFile"),
              Spark's default partitioning (the session has the extensions:
              map_images runs through pixelflight_map)
  parquet     pixelflight.spark.map_images over spark.read.parquet of the table
  mapinarrow  binaryfile's, with runner="python": PySpark's mapInArrow, for
              reference (what map_images does without the extensions)
  pool        multiprocessing.Pool(cores): Pillow's convert("L") + fftconvolve
  daft        daft.from_glob_path, download().decode_image(mode="L") and a
              @daft.func with fftconvolve, native runner of `cores` threads
  ray         ray.data.read_images(mode="L") + map_batches with fftconvolve,
              ray.init(num_cpus=cores)

Every Spark path runs in one session, local[cores], the executor plugin
starting the sidecar (spark.executor.cores=cores, which the plugin passes on
as the sidecar's --workers). Each group (Spark, pool, Daft, Ray) runs in a
process of its own, pinned to the same `cores` CPUs (sched_setaffinity,
inherited by the JVM, the sidecar, Ray's and the pool's workers), its output
in build/peers-logs/GROUP.log; the group's processes are stopped with it.

What the timing leaves out (the same idea everywhere: what a long-lived
service pays once): Spark's session start (the JVM, the plugin starting the
sidecar); Ray's ray.init (GCS, raylet, the worker processes); Daft's import
and runner set-up; the pool's fork of its workers; and each system's warm-up
run. What it holds: the wall clock of one job from building the DataFrame
(or the file list) to having every image's stats in the driver (collect(),
to_pydict(), take_all(), Pool.map).

Each system must return one row per file, no errors, and stats within the
tolerance below of the pool's for the same file (all Pillow-gray and
float32 FFT, so the differences are the JPEG decoders' and float32
rounding's); a system that does not gets no figure. Daft's mode "L" weights
R, G, B as Rec. 709 (Rust's image crate), not ITU-R 601 as Pillow and
pixelflight (JPEG's own luma) do: its stats on the colour photos are checked
against the pool's function run on Rec. 709 gray instead, computed here
outside the timing.

Prints a markdown table (images/s, and the ratio to the best peer: the best
of pool, Daft and Ray) and writes it as JSON (--json, build/peers.json).

    build/venv-peers/bin/python scripts/peers/peers.py [--images 960] [--warm 16] [--cores 2]
        [--only spark,pool,daft,ray] [--src build/images/photo512/jpg] [--json build/peers.json]
"""

import argparse
import datetime
import glob
import json
import math
import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np
from PIL import Image
from scipy.signal import fftconvolve

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SIGMA = 2.0
SIZE = 2 * math.ceil(3 * SIGMA) + 1  # pixelflight's default Gaussian size (docs/ops.md, params.json): 13
PARAMS = {"kernel": "gaussian", "sigma": SIGMA, "output": "stats"}
SQL_PARAMS = '{"kernel":"gaussian","sigma":2,"output":"stats"}'
STATS = ("min", "max", "mean", "std")
EXTENSIONS = "org.pixelflight.spark.PixelflightExtensions"
PLUGIN = "org.pixelflight.spark.PixelflightPlugin"

# Tolerance of a system's stats against the pool's for the same file:
# |a - b| <= ABS + REL * |b| for mean and std, MINMAX_ABS for min and max
# (gray levels, 0..255). The two JPEG decoders' gray images differ by a
# level or so at some pixels (colour files: pixelflight takes the decoded
# luma plane, Pillow rounds its RGB back to gray), the blur spreads that
# out; the float32 convolutions (the sidecar: two 1-D passes for a
# Gaussian; scipy: a 2-D FFT) differ by far less.
ABS, REL, MINMAX_ABS = 0.05, 1e-3, 2.0

# (key, row label, group): the groups run as processes of their own, in this order.
SYSTEMS = [
    ("pool", "a plain `multiprocessing.Pool(%(cores)d)` with PIL + `scipy.signal.fftconvolve`", "pool"),
    ("datasource", "pixelflight data source (`pixelflight.spark.read_images`, JVM only)", "spark"),
    ("sql", "pixelflight SQL table function (`SELECT * FROM pixelflight_map(TABLE(v), 'fft_convolve', "
            "'{\"kernel\":\"gaussian\",\"sigma\":2,\"output\":\"stats\"}')`)", "spark"),
    ("binaryfile", "pixelflight `map_images` over `spark.read.format(\"binaryFile\")` with default "
                   "partitioning", "spark"),
    ("parquet", "pixelflight `map_images` over a Parquet table with a binary column", "spark"),
    ("mapinarrow", "for reference: `map_images(..., runner=\"python\")` over binaryFile (PySpark's "
                   "`mapInArrow`)", "spark"),
    ("daft", "Daft (`download().decode_image(mode=\"L\")` + a `@daft.func` with scipy)", "daft"),
    ("ray", "Ray Data (`read_images(mode=\"L\")` + `map_batches` with scipy)", "ray"),
]
PEERS = ("pool", "daft", "ray")
TABLE_ORDER = ("datasource", "sql", "binaryfile", "parquet", "mapinarrow", "pool", "daft", "ray")


def kernel():
    """The Gaussian as pixelflight builds it: exp(-(x²+y²)/(2σ²)) on a
    SIZE×SIZE grid centred at (SIZE-1)/2, summing to 1; float32."""
    x = np.arange(SIZE) - (SIZE - 1) / 2
    g = np.exp(-(x ** 2) / (2 * SIGMA ** 2))
    k = np.outer(g, g)
    return (k / k.sum()).astype(np.float32)


KERNEL = kernel()


def blur_stats(gray):
    """The stats of the float32 convolution of an 8-bit gray image, as
    pixelflight's output "stats" gives them (float64, std with ddof 0)."""
    out = fftconvolve(np.asarray(gray, np.float32), KERNEL, mode="same")
    return (float(out.min()), float(out.max()), float(out.mean(dtype=np.float64)),
            float(out.std(dtype=np.float64)))


def file_stats(path):
    """The pool's work for one file: (file name, stats)."""
    return os.path.basename(path), blur_stats(Image.open(path).convert("L"))


# ---------------------------------------------------------------- the groups
# Each returns {key: {"status": "ok"|"failed", "seconds",
# "rows": {file name: [min, max, mean, std]}, "errors", "note", "reason"}}.


def timed(fn, warm_dir, img_dir):
    """fn(warm_dir) once, then fn(img_dir) timed: (seconds, rows)."""
    fn(warm_dir)
    t0 = time.perf_counter()
    rows = fn(img_dir)
    return time.perf_counter() - t0, rows


def result(seconds, rows, errors=0, note=""):
    return {"status": "ok", "seconds": seconds, "rows": rows, "errors": errors, "note": note}


def run_pool(d, cores):
    # Pool start (fork of the workers) is left out of the timing; the file
    # listing is in it, as Spark's, Daft's and Ray's listings are in theirs.
    def job(folder):
        paths = sorted(glob.glob(os.path.join(folder, "*.jpg")))
        return dict(pool.map(file_stats, paths, chunksize=8))

    with multiprocessing.get_context("fork").Pool(cores) as pool:
        seconds, rows = timed(job, d["warm"], d["img"])
    return {"pool": result(seconds, {k: list(v) for k, v in rows.items()},
                           note="%d processes, chunks of 8 files" % cores)}


def run_spark(d, cores):
    from pyspark.sql import SparkSession

    import pixelflight.sidecar
    from pixelflight.spark import map_images, read_images

    jar = pixelflight.sidecar.jar()
    os.environ.pop("PIXELFLIGHT_ENDPOINT", None)  # the plugin's sidecar, no other
    builder = (SparkSession.builder.master("local[%d]" % cores).appName("pixelflight-peers")
               .config("spark.jars", jar)
               .config("spark.plugins", PLUGIN)
               # The plugin gives its sidecar the executor's cores as --workers.
               .config("spark.executor.cores", str(cores))
               .config("spark.sql.extensions", EXTENSIONS)
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false"))
    # Left out of the timing: the session start (JVM, the plugin starting
    # the sidecar) and each path's warm-up run.
    spark = builder.getOrCreate()
    out = {}
    try:
        spark.sparkContext.setLogLevel("ERROR")

        def collect(df):
            cols = [c for c in ("path",) + STATS + ("error",) if c in df.columns]
            if "path" not in cols:
                raise RuntimeError("no path column in the result (columns: %s)" % df.columns)
            rows, errors = {}, 0
            for r in df.select(*cols).collect():
                if "error" in cols and r["error"] is not None:
                    errors += 1
                    continue
                rows[os.path.basename(r["path"])] = [r[s] for s in STATS]
            return rows, errors

        def sql_frame(folder):
            spark.read.format("binaryFile").load(folder).select("path", "content").createOrReplaceTempView("v")
            return spark.sql("SELECT * FROM pixelflight_map(TABLE(v), 'fft_convolve', '%s')" % SQL_PARAMS)

        # Each path's DataFrame over a folder of files.
        frames = {
            "datasource": lambda folder: read_images(spark, folder, "fft_convolve", **PARAMS),
            "sql": sql_frame,
            "binaryfile": lambda folder: map_images(spark.read.format("binaryFile").load(folder), "fft_convolve",
                                                    **PARAMS),
            "parquet": lambda folder: map_images(spark.read.parquet(folder + "-parquet"), "fft_convolve", **PARAMS),
            "mapinarrow": lambda folder: map_images(spark.read.format("binaryFile").load(folder), "fft_convolve",
                                                    runner="python", **PARAMS),
        }

        for key, frame in frames.items():
            def fn(folder, frame=frame):
                return collect(frame(folder))

            try:
                seconds, (rows, errors) = timed(fn, d["warm"], d["img"])
                n = frame(d["img"]).rdd.getNumPartitions()  # the tasks of the job's last stage
                out[key] = result(seconds, rows, errors, "%d Spark task%s" % (n, "" if n == 1 else "s"))
            except Exception as e:  # noqa: BLE001  one path's failure is its row's, not the run's
                msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                out[key] = {"status": "failed", "reason": "%s: %s" % (type(e).__name__, msg[:300])}
                print("%s: %r" % (key, e), file=sys.stderr)
    finally:
        spark.stop()
    return out


def run_daft(d, cores):
    import daft
    from daft import DataType, col

    # Daft's native runner with `cores` worker threads (set_runner_native's
    # num_threads); the process is pinned to the same cores as the others.
    daft.set_runner_native(num_threads=cores)
    struct = DataType.struct({s: DataType.float64() for s in STATS})

    @daft.func(return_dtype=struct, unnest=True)
    def stats(img):
        a = np.asarray(img)
        return dict(zip(STATS, blur_stats(a.reshape(a.shape[0], a.shape[1]))))

    def job(folder):
        df = daft.from_glob_path(os.path.join(folder, "*.jpg"))
        df = df.select(col("path"), stats(col("path").download().decode_image(mode="L")))
        res = df.to_pydict()
        return {os.path.basename(p): [res[s][i] for s in STATS] for i, p in enumerate(res["path"])}

    # Left out: import and runner set-up, the warm-up run.
    seconds, rows = timed(job, d["warm"], d["img"])
    return {"daft": result(seconds, rows, note="native runner, %d threads" % cores)}


def run_ray(d, cores):
    import logging

    import ray

    # Left out: ray.init (GCS, raylet, workers) and the warm-up run.
    ray.init(num_cpus=cores, include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR,
             object_store_memory=1 << 30, _temp_dir=os.path.join(d["tmp"], "ray"))
    try:
        ctx = ray.data.DataContext.get_current()
        ctx.enable_progress_bars = False
        ctx.print_on_execution_start = False

        def fn(batch):
            res = [blur_stats(img) for img in batch["image"]]
            out = {s: np.array([r[i] for r in res]) for i, s in enumerate(STATS)}
            out["path"] = batch["path"]
            return out

        def job(folder):
            ds = ray.data.read_images(folder, mode="L", include_paths=True)
            rows = ds.map_batches(fn, batch_size=16, batch_format="numpy").take_all()
            return {os.path.basename(r["path"]): [float(r[s]) for s in STATS] for r in rows}

        seconds, rows = timed(job, d["warm"], d["img"])
    finally:
        ray.shutdown()
    return {"ray": result(seconds, rows, note="num_cpus=%d, batches of 16" % cores)}


GROUPS = {"pool": run_pool, "spark": run_spark, "daft": run_daft, "ray": run_ray}


def child(group, tmp, cores, out):
    d = {"tmp": tmp, "img": os.path.join(tmp, "img"), "warm": os.path.join(tmp, "warm")}
    try:
        res = GROUPS[group](d, cores)
    except Exception as e:  # noqa: BLE001  reported as every one of the group's rows
        import traceback
        traceback.print_exc()
        msg = (str(e).strip().splitlines() or [type(e).__name__])[0]
        res = {k: {"status": "failed", "reason": "%s: %s" % (type(e).__name__, msg[:300])}
               for k, _, g in SYSTEMS if g == group}
    with open(out, "w") as f:
        json.dump(res, f)


# ---------------------------------------------------------------- the driver


def make_files(src, tmp, n, warm):
    """n copies of src's JPEGs in tmp/img and warm in tmp/warm, under
    distinct names (f00000-astronaut.jpg, ...), and each folder's Parquet
    table (path, content) beside it (img-parquet/, warm-parquet/). Returns
    {file name: source name}."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    srcs = sorted(glob.glob(os.path.join(src, "*.jpg")))
    if not srcs:
        sys.exit("peers: no JPEGs in %s: run `make data`" % src)
    names = {}
    for folder, count in (("img", n), ("warm", warm)):
        dst = os.path.join(tmp, folder)
        os.makedirs(dst)
        paths, content = [], []
        for i in range(count):
            s = srcs[i % len(srcs)]
            stem = os.path.splitext(os.path.basename(s))[0]
            name = "%s%05d-%s.jpg" % ("w" if folder == "warm" else "f", i, stem)
            shutil.copyfile(s, os.path.join(dst, name))
            names[name] = stem
            paths.append("file:" + os.path.join(dst, name))
            with open(s, "rb") as f:
                content.append(f.read())
        # One file in row groups of 32 rows: Spark's default split
        # (maxPartitionBytes, openCostInBytes, the default parallelism)
        # then reads it in `cores` tasks, as a table of several files would.
        os.makedirs(dst + "-parquet")
        pq.write_table(pa.table({"path": pa.array(paths, pa.string()), "content": pa.array(content, pa.binary())}),
                       os.path.join(dst + "-parquet", "part-00000.parquet"), row_group_size=32)
    return names, srcs


def references(srcs):
    """Per source photo: the pool's stats (Pillow's gray) and, for the
    colour ones, the same on Rec. 709 gray (Daft's mode "L")."""
    ref601, ref709 = {}, {}
    for s in srcs:
        stem = os.path.splitext(os.path.basename(s))[0]
        im = Image.open(s)
        ref601[stem] = blur_stats(im.convert("L"))
        if im.mode == "RGB":
            rgb = np.asarray(im, np.float64)
            gray = np.clip(np.rint(rgb @ np.array([0.2126, 0.7152, 0.0722])), 0, 255).astype(np.uint8)
            ref709[stem] = blur_stats(gray)
    return ref601, ref709


def close(a, b):
    """Max excess over the tolerance (<= 0: within it) and the largest
    differences, (min/max, mean/std), of stats a against b."""
    dmm = max(abs(a[0] - b[0]), abs(a[1] - b[1]))
    dms = max(abs(a[2] - b[2]), abs(a[3] - b[3]))
    over = max(dmm - MINMAX_ABS, abs(a[2] - b[2]) - (ABS + REL * abs(b[2])),
               abs(a[3] - b[3]) - (ABS + REL * abs(b[3])))
    return over, dmm, dms


def check(key, res, names, reference, ref709):
    """Sets res["status"] to "failed" (with the reason) unless res has one
    row per file, no errors, and stats within the tolerance of reference's
    (by file name; Daft's colour files: ref709's, by source)."""
    rows = res["rows"]
    if res.get("errors"):
        res.update(status="failed", reason="%d rows with an error" % res["errors"])
        return
    missing, extra = sorted(set(names) - set(rows)), sorted(set(rows) - set(names))
    if missing or extra or len(rows) != len(names):
        res.update(status="failed", reason="%d rows for %d files (missing %s, unknown %s)" % (
            len(rows), len(names), missing[:3], extra[:3]))
        return
    worst, dmm, dms = -1e9, 0.0, 0.0
    for name, stats in rows.items():
        if any(v is None or not math.isfinite(v) for v in stats):
            res.update(status="failed", reason="%s: stats %s" % (name, stats))
            return
        ref = reference[name]
        if key == "daft" and names[name] in ref709:
            ref = ref709[names[name]]
        over, a, b = close(stats, ref)
        if over > 0:
            res.update(status="failed", reason="%s: stats %s, the pool's %s: outside the tolerance" % (
                name, ["%.4f" % v for v in stats], ["%.4f" % v for v in ref]))
            return
        worst, dmm, dms = max(worst, over), max(dmm, a), max(dms, b)
    res["max_diff"] = {"min_max": dmm, "mean_std": dms}


def group_run(group, tmp, cores, logs):
    """Runs a group in a process (and process group) of its own, in tmp,
    pinned to the benchmark's CPUs; stops whatever of its group is left
    after it."""
    out = os.path.join(tmp, group + ".json")
    log = os.path.join(logs, group + ".log")
    env = dict(os.environ)
    # No telemetry, no dashboards, no progress bars; the executors' Python
    # is this one (the Makefile exports the main venv's as PYSPARK_PYTHON).
    env.update(PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
               SPARK_LOCAL_IP=env.get("SPARK_LOCAL_IP", "127.0.0.1"),
               RAY_USAGE_STATS_ENABLED="0", RAY_DEDUP_LOGS="0", DAFT_ANALYTICS_ENABLED="0",
               DAFT_PROGRESS_BAR="0", DO_NOT_TRACK="true", TQDM_DISABLE="1", PYTHONWARNINGS="ignore")
    load = os.getloadavg()[0]
    with open(log, "w") as lf:
        p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--child", group, "--tmp", tmp,
                              "--cores", str(cores), "--out", out],
                             stdin=subprocess.DEVNULL, stdout=lf, stderr=subprocess.STDOUT, env=env,
                             cwd=tmp, start_new_session=True)
        try:
            rc = p.wait(timeout=1800)
        except subprocess.TimeoutExpired:
            rc = "timed out after 1800 s"
        finally:
            try:
                os.killpg(p.pid, signal.SIGTERM)  # its group: JVM, sidecar, Ray's processes, pool workers
                time.sleep(1)
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()
    # In local mode the plugin writes its sidecar's socket and log in the
    # working directory (tmp): the log joins the group's.
    for name in glob.glob(os.path.join(tmp, "pixelflight-*.log")):
        shutil.move(name, os.path.join(logs, "%s-%s" % (group, os.path.basename(name))))
    if not os.path.exists(out):
        with open(log) as f:
            tail = f.read()[-2000:]
        sys.stderr.write("--- %s (exit %s), the end of %s:\n%s\n" % (group, rc, log, tail))
        return {k: {"status": "failed", "reason": "exit %s, no result (see %s)" % (rc, log)}
                for k, _, g in SYSTEMS if g == group}, load
    with open(out) as f:
        return json.load(f), load


def versions():
    from importlib.metadata import PackageNotFoundError, version

    v = {"python": "%d.%d.%d" % sys.version_info[:3]}
    for p in ("pixelflight", "pyspark", "pyarrow", "daft", "ray", "scipy", "numpy", "pillow", "pandas"):
        try:
            v[p] = version(p)
        except PackageNotFoundError:
            v[p] = None
    try:
        import pixelflight.sidecar
        v["pixelflight binary"] = subprocess.run([pixelflight.sidecar.path(), "--version"], capture_output=True,
                                                 text=True, timeout=30).stdout.strip()
    except Exception as e:  # noqa: BLE001
        v["pixelflight binary"] = "unknown (%s)" % e
    try:
        v["java"] = subprocess.run(["java", "-version"], capture_output=True, text=True,
                                   timeout=30).stderr.splitlines()[0]
    except Exception:  # noqa: BLE001
        v["java"] = None
    return v


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--images", type=int, default=960)
    ap.add_argument("--warm", type=int, default=16)
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--only", default="spark,pool,daft,ray", help="groups to run, of spark, pool, daft, ray")
    ap.add_argument("--src", default=os.path.join(ROOT, "build", "images", "photo512", "jpg"))
    ap.add_argument("--json", default=os.path.join(ROOT, "build", "peers.json"))
    ap.add_argument("--logs", default=os.path.join(ROOT, "build", "peers-logs"))
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--tmp", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        return child(a.child, a.tmp, a.cores, a.out)

    only = [g.strip() for g in a.only.split(",") if g.strip()]
    unknown = sorted(set(only) - set(GROUPS))
    if unknown:
        sys.exit("peers: unknown groups %s (known: %s)" % (unknown, ", ".join(GROUPS)))
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < a.cores:
        sys.exit("peers: --cores %d, but this process may run on %d CPUs" % (a.cores, len(cpus)))
    # Every group, and all it starts, on the same cores.
    os.sched_setaffinity(0, cpus[:a.cores])
    os.makedirs(a.logs, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="peers-")
    results, loads = {}, {}
    try:
        names, srcs = make_files(a.src, tmp, a.images, a.warm)
        names = {k: v for k, v in names.items() if k.startswith("f")}
        started = datetime.datetime.now(datetime.timezone.utc)
        print("%d JPEGs (%d photos of %s, %.1f KB on average) on CPUs %s; warm-up on %d each; logs in %s"
              % (a.images, len(srcs), os.path.relpath(a.src, ROOT),
                 sum(os.path.getsize(s) for s in srcs) / len(srcs) / 1e3, cpus[:a.cores], a.warm,
                 os.path.relpath(a.logs, ROOT)), flush=True)
        for group in [g for g in GROUPS if g in only]:
            t0 = time.perf_counter()
            res, loads[group] = group_run(group, tmp, a.cores, a.logs)
            results.update(res)
            print("  %-5s done in %.0f s (load average before: %.2f): %s" % (
                group, time.perf_counter() - t0, loads[group],
                ", ".join("%s %s" % (k, r["status"]) for k, r in res.items())), flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    # The checks, outside every timing.
    ref601, ref709 = references(srcs)
    computed = {name: ref601[src] for name, src in names.items()}
    pool = results.get("pool")
    reference = computed
    if pool and pool["status"] == "ok":
        check("pool", pool, names, computed, {})
        if pool["status"] == "ok":
            reference = pool["rows"]
    for key, res in results.items():
        if key != "pool" and res["status"] == "ok":
            check(key, res, names, reference, ref709)

    for res in results.values():
        if res["status"] == "ok":
            res["images_per_s"] = a.images / res["seconds"]
    peers = [results[k]["images_per_s"] for k in PEERS if k in results and results[k]["status"] == "ok"]
    best = max(peers) if peers else None
    info = {k: lbl % {"cores": a.cores} if "%(" in lbl else lbl for k, lbl, _ in SYSTEMS}

    print("\n| system | images/s | vs best peer | seconds | notes |\n|---|---|---|---|---|")
    for key in TABLE_ORDER:
        res = results.get(key)
        if res is None:
            continue
        if res["status"] == "ok":
            ratio = "%.2f" % (res["images_per_s"] / best) if best else ""
            print("| %s | %.1f | %s | %.2f | %s |" % (info[key], res["images_per_s"], ratio, res["seconds"],
                                                    res.get("note", "")))
        else:
            print("| %s | %s | | | %s |" % (info[key], res["status"], res.get("reason", "").replace("|", "/")))
    print("\nbest peer: %s; stats checked against the pool's: min/max within %.1f, mean/std within %g + %g·|value|"
          % ("%.1f images/s" % best if best else "none", MINMAX_ABS, ABS, REL))
    print("largest differences from the pool's stats (min/max, mean/std): " + ", ".join(
        "%s %.3f/%.3f" % (k, results[k]["max_diff"]["min_max"], results[k]["max_diff"]["mean_std"])
        for k in TABLE_ORDER if k in results and "max_diff" in results[k]))

    v = versions()
    print("versions: " + ", ".join("%s %s" % kv for kv in v.items()))
    doc = {"date": started.isoformat(timespec="seconds"), "images": a.images, "warm": a.warm, "cores": a.cores,
           "cpus": cpus[:a.cores], "machine_cpus": os.cpu_count(), "source": os.path.relpath(a.src, ROOT),
           "kernel": {"sigma": SIGMA, "size": SIZE}, "stats": list(STATS),
           "tolerance": {"min_max_abs": MINMAX_ABS, "mean_std_abs": ABS, "mean_std_rel": REL},
           "load_average_before": loads, "best_peer_images_per_s": best, "versions": v, "systems": []}
    for key in TABLE_ORDER:
        if key in results:
            r = {k: v for k, v in results[key].items() if k != "rows"}
            doc["systems"].append(dict(key=key, system=info[key], **r))
    os.makedirs(os.path.dirname(os.path.abspath(a.json)), exist_ok=True)
    with open(a.json, "w") as f:
        json.dump(doc, f, indent=1)
    print("wrote %s" % os.path.relpath(a.json, ROOT) if a.json.startswith(ROOT) else a.json)
    failed = [k for k, r in results.items() if r["status"] == "failed"]
    if failed:
        print("peers: failed: %s" % ", ".join(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
