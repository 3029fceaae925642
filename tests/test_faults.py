"""Faults and load: the sidecar killed (SIGKILL) or stopped (SIGTERM) in the
middle of a stream and of a PySpark job, a sidecar that stays down, errors
that must not be retried, and 1,000 cancelled or abandoned streams."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa
import pyarrow.flight as flight
import pyspark
import pytest

from conftest import BIN, ROOT, Sidecar, free_port
from test_plugin import find_jar
from pixelflight import Client, SidecarUnavailable
from pixelflight.client import RETRY_ENV

JOB = os.path.join(ROOT, "tests", "fault_job.py")
SIGNALS = pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])


def wait_for(what, check, timeout):
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            pytest.fail("waited %d s for %s" % (timeout, what))
        time.sleep(0.05)


def good_batch(images, copies=1):
    """The good images, `copies` times over, with an id and the file name."""
    d = os.path.join(images, "good")
    names = sorted(os.listdir(d)) * copies
    data = {n: open(os.path.join(d, n), "rb").read() for n in names}
    return pa.record_batch([pa.array(range(len(names))), pa.array(names), pa.array([data[n] for n in names])],
                           names=["id", "name", "content"])


@pytest.fixture(scope="module")
def reference(sidecar, images):
    """detect_blobs of every good image, without faults: name -> blobs."""
    with Client(sidecar.location) as c:
        rows = pa.Table.from_batches(list(c.map_batches("detect_blobs", [good_batch(images)], keep=("name",))))
    assert rows.column("error").null_count == rows.num_rows
    return {r["name"]: [[b["y"], b["x"], b["sigma"]] for b in r["blobs"]] for r in rows.to_pylist()}


# The Python client alone.

@pytest.mark.check
@SIGNALS
def test_client_resends_what_a_dead_sidecar_did_not_answer(images, reference, tmp_path, sig, caplog):
    """The sidecar dies under a stream of 240 images and comes back 1 s
    later on the same socket: every result once, in order, as without
    faults. SIGTERM drains for 0.1 s, then cuts the stream (the 220 images
    left take longer than that: with 1 s, a fast enough detect_blobs
    finished them in the drain, and nothing was resent)."""
    listen = "grpc+unix://%s/s.sock" % tmp_path
    args = ("--workers", "2", "--drain-timeout", "100ms", "--metrics-listen", "")
    first, later = Sidecar(listen, *args), []

    def restart():
        first.proc.wait()
        time.sleep(1)
        later.append(Sidecar(listen, *args))

    batch = good_batch(images, copies=10)
    got = []
    try:
        with Client(listen, max_rows=2, retry_seconds=30) as c:
            for b in c.map_batches("detect_blobs", [batch], keep=("id", "name")):
                got += b.to_pylist()
                if len(got) == 20:
                    first.proc.send_signal(sig)
                    threading.Thread(target=restart, daemon=True).start()
    finally:
        for s in [first] + later:
            s.stop()
    assert later, "the sidecar was not restarted"
    assert [r["id"] for r in got] == list(range(batch.num_rows))
    for r in got:
        assert r["error"] is None, r
        assert [[b["y"], b["x"], b["sigma"]] for b in r["blobs"]] == reference[r["name"]], r["name"]
    assert "answers again after" in caplog.text  # it did reconnect


@pytest.mark.check
def test_sidecar_down_for_good_names_endpoint_and_cause(images, tmp_path):
    missing = "grpc+unix://%s/none.sock" % tmp_path
    batch = good_batch(images).slice(0, 1)
    for seconds, retried in ((1.5, r"Retried for 1\.\d s \(1\.5 s from the retry_seconds argument\)"),
                             (0, r"Not retried \(0 s from the retry_seconds argument\)")):
        start = time.monotonic()
        with Client(missing, retry_seconds=seconds) as c, pytest.raises(SidecarUnavailable) as e:
            list(c.map_batches("echo", [batch]))
        assert seconds <= time.monotonic() - start < seconds + 5
        msg = str(e.value)
        assert "no pixelflight sidecar answers at %s (from the endpoint argument)" % missing in msg
        assert "No such file or directory" in msg, msg
        assert re.search(retried, msg), msg


@pytest.mark.check
def test_retry_seconds_from_the_environment(monkeypatch):
    monkeypatch.setenv(RETRY_ENV, "2.5")
    with Client("grpc://127.0.0.1:1") as c:
        assert (c.retry_seconds, c.retry_source) == (2.5, RETRY_ENV)
    for bad in ("soon", "-1", "nan"):
        monkeypatch.setenv(RETRY_ENV, bad)
        with pytest.raises(ValueError, match=RETRY_ENV):
            Client("grpc://127.0.0.1:1")


@pytest.mark.check
def test_errors_that_are_not_transient_are_not_retried(sidecar, tmp_path, monkeypatch):
    junk = pa.record_batch([pa.array([b"junk"])], names=["content"])
    token = tmp_path / "token"
    token.write_text("right-token")
    token.chmod(0o600)
    monkeypatch.setenv("PIXELFLIGHT_TOKEN", "right-token")  # for Sidecar's readiness check
    guarded = Sidecar("grpc+unix://%s/t.sock" % tmp_path, "--token-file", str(token), "--metrics-listen", "")
    monkeypatch.delenv("PIXELFLIGHT_TOKEN")
    start = time.monotonic()
    try:
        with Client(sidecar.location, retry_seconds=60) as c:
            with pytest.raises(pa.ArrowInvalid, match="sigma -1"):  # INVALID_ARGUMENT: bad params
                list(c.map_batches("fft_convolve", [junk], sigma=-1))
            with pytest.raises(pa.ArrowInvalid, match="strict mode"):  # INVALID_ARGUMENT: a failing row
                list(c.map_batches("fft_convolve", [junk], strict=True))
            [row] = pa.Table.from_batches(list(c.map_batches("fft_convolve", [junk]))).to_pylist()
            assert "unknown image format" in row["error"]  # a bad row is a result, not an error
        with Client(guarded.location, token="wrong-token", retry_seconds=60) as c:
            with pytest.raises(flight.FlightUnauthenticatedError):
                list(c.map_batches("echo", [junk]))
    finally:
        guarded.stop()
    assert time.monotonic() - start < 10


# 1,000 streams that end badly.

# Opens streams on connections of its own, sends a batch on each, and exits
# without closing anything: the sidecar sees the connections drop.
ABANDON = r"""
import json, os, sys
import pyarrow as pa, pyarrow.flight as flight
location, n, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
batch = pa.record_batch([pa.array([open(path, "rb").read()] * 4)], names=["content"])
cmd = json.dumps({"op": "fft_convolve", "params": {"sigma": 8, "output": "stats"}}).encode()
open_ = []
for _ in range(n):
    c = flight.FlightClient(location)
    w, r = c.do_exchange(flight.FlightDescriptor.for_command(cmd))
    w.begin(batch.schema)
    w.write_batch(batch)
    open_.append((c, w, r))
os._exit(0)
"""


def test_1000_cancelled_or_abandoned_streams_free_everything(images, tmp_path):
    """Per round of 200: 120 streams cancelled by the client, 30 whose
    deadline passes, 50 whose client process exits without a word; each
    sent rows that were still queued or running. After a warm-up round and
    then after 5 more, the sidecar has no stream, queued row or in-flight
    byte left, and as many goroutines and open files as before. Go keeps
    freed heap pages for reuse, so RSS is not back to its level before the
    first round; instead it must not grow from the warm-up's level."""
    metrics = "127.0.0.1:%d" % free_port()
    s = Sidecar("grpc+unix://%s/s.sock" % tmp_path, "--workers", "2", "--metrics-listen", metrics)
    image = os.path.join(images, "good", "moon.png")
    batch = pa.record_batch([pa.array([open(image, "rb").read()] * 4)], names=["content"])
    desc = flight.FlightDescriptor.for_command(
        json.dumps({"op": "fft_convolve", "params": {"sigma": 8, "output": "stats"}}).encode())

    def cancelled(_):
        c = flight.FlightClient(s.location)
        w, r = c.do_exchange(desc)
        w.begin(batch.schema)
        w.write_batch(batch)
        w.write_batch(batch)
        r.cancel()
        try:
            w.close()
        except pa.ArrowException:
            pass  # CANCELLED
        c.close()

    early = []  # timed-out streams whose deadline passed before do_exchange returned

    def timed_out(_):
        c = flight.FlightClient(s.location)
        try:
            # On a loaded machine the deadline may pass before the call
            # itself returns; the server may then never see the stream.
            w, r = c.do_exchange(desc, flight.FlightCallOptions(timeout=0.05))
        except flight.FlightTimedOutError:
            early.append(1)
            c.close()
            return
        try:
            w.begin(batch.schema)
            w.write_batch(batch)
            w.write_batch(batch)
            time.sleep(0.06)
            r.read_chunk()
            r.read_chunk()
        except pa.ArrowException:
            pass  # DEADLINE_EXCEEDED
        try:
            w.close()
        except pa.ArrowException:
            pass
        c.close()

    def one_round():
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(cancelled, range(120)))
            list(pool.map(timed_out, range(30)))
        subprocess.run([sys.executable, "-c", ABANDON, s.location, "50", image], check=True, timeout=120)

    def settled(most_goroutines=float("inf")):
        with Client(s.location) as c:
            st = c.stats()
        now = state(s.proc.pid, metrics)
        idle = st["streams_open"] == st["queue_depth"] == st["inflight_bytes"] == 0
        if idle and now["goroutines"] <= most_goroutines:
            ran = st["rows"] - st["rows_by_backend"].get("none", 0)  # "none": ended before they ran
            return dict(now, streams=st["streams_total"], rows=ran, kinds=st["row_errors_by_kind"])
        return None

    try:
        start = time.monotonic()
        one_round()
        base = wait_for("the warm-up's streams to end", settled, 30)
        early.clear()
        for _ in range(5):
            one_round()
        end = wait_for("the streams to end and their goroutines", lambda: settled(base["goroutines"] + 2), 30)
        took = time.monotonic() - start
    finally:
        assert s.stop() == 0, "".join(s.logs[-20:])
    # Every cancelled and abandoned stream reached the sidecar; a timed-out
    # one may not have on a loaded machine, even when do_exchange returned
    # before its deadline.
    assert 850 <= end["streams"] - base["streams"] <= 1000, (base, end, len(early))
    assert end["goroutines"] <= base["goroutines"] + 2, (base, end)
    assert end["fds"] <= base["fds"] + 2, (base, end)
    assert end["threads"] <= base["threads"] + 4, (base, end)
    assert end["rss"] <= base["rss"] * 1.1 + (8 << 20), (base, end)
    # The work was cut short: most of the 7,000 rows sent never ran.
    assert end["rows"] - base["rows"] < 3500 and end["kinds"]["cancelled"] > base["kinds"]["cancelled"], (base, end)
    print("1000 bad streams in %.1f s: before %s, after %s" % (took, base, end))


def state(pid, metrics):
    """The sidecar's goroutines (its /metrics), threads, RSS and open files (/proc)."""
    text = urllib.request.urlopen("http://%s/metrics" % metrics, timeout=10).read().decode()
    [goroutines] = [float(line.split()[1]) for line in text.splitlines() if line.startswith("go_goroutines ")]
    status = dict(line.split(":", 1) for line in open("/proc/%d/status" % pid))
    return {"goroutines": int(goroutines), "threads": int(status["Threads"]),
            "rss": int(status["VmRSS"].split()[0]) << 10, "fds": len(os.listdir("/proc/%d/fd" % pid))}


# Real PySpark, local mode, the executor plugin's sidecar.

@pytest.fixture(scope="module")
def jar():
    return find_jar()


def spark_env(**extra):
    e = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable,
             SPARK_HOME=os.path.dirname(pyspark.__file__), **extra)
    if "PIXELFLIGHT_ENDPOINT" not in extra:
        e.pop("PIXELFLIGHT_ENDPOINT", None)
    return e


def plugin(jar, **settings):
    """The job's settings for the executor plugin: two workers, a 2 s drain, no metrics."""
    conf = {"spark.jars": jar, "spark.plugins": "org.pixelflight.spark.PixelflightPlugin",
            "spark.pixelflight.binary": BIN, "spark.pixelflight.metricsListen": "",
            "spark.pixelflight.args": "--workers 2 --drain-timeout 2s --log-format json"}
    conf.update(("spark.pixelflight." + k, v) for k, v in settings.items())
    return ["%s=%s" % kv for kv in conf.items()]


def endpoint_file(work, job, err):
    """The plugin's endpoint, once it has written it; fails with the job's
    stderr if the job ends first."""
    def check():
        f = work / "pixelflight.endpoint"
        if f.exists():
            return f.read_text().strip()
        if job.poll() is not None:
            pytest.fail("the job exited (status %d) before the plugin wrote its endpoint file:\n%s"
                        % (job.returncode, err.read_text()[-4000:]))
        return None
    return wait_for("the plugin's endpoint file", check, 180)


def serving(sock):
    """pids of the sidecars listening on sock."""
    want = b"grpc+unix://" + sock.encode()
    pids = set()
    for d in os.listdir("/proc"):
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if argv[0].endswith(b"pixelflight") and want in argv:
            pids.add(int(d))
    return pids


@pytest.mark.parametrize("sig", [pytest.param(signal.SIGKILL, marks=pytest.mark.matrix), signal.SIGTERM],
                         ids=["SIGKILL", "SIGTERM"])
def test_spark_job_survives_its_sidecar_dying(jar, images, reference, tmp_path, sig):
    """A job over 240 images (local[2]: no task retries) whose sidecar is
    killed, or stopped with a 2 s drain, once 40 rows are done: the plugin
    starts another on the same socket, the tasks' clients send again what
    was not answered, and the job ends with every file once and the same
    blobs as without faults."""
    data = tmp_path / "images"
    data.mkdir()
    good = os.path.join(images, "good")
    for i in range(10):
        for name in os.listdir(good):
            shutil.copyfile(os.path.join(good, name), data / ("%02d-%s" % (i, name)))
    work = tmp_path / "work"
    work.mkdir()
    out, err = tmp_path / "out.json", tmp_path / "job.err"
    with open(err, "w") as f:
        job = subprocess.Popen([sys.executable, JOB, "local[2]", str(data), str(out), *plugin(jar)], cwd=work,
                               env=spark_env(), stdout=subprocess.DEVNULL, stderr=f)
    try:
        endpoint = endpoint_file(work, job, err)
        sock = endpoint[len("grpc+unix://"):]
        with Client(endpoint) as c:
            wait_for("40 rows done", lambda: c.stats()["rows"] >= 40, 180)
        [pid] = serving(sock)
        os.kill(pid, sig)
        wait_for("the plugin to start another sidecar", lambda: serving(sock) - {pid}, 60)
        assert job.wait(600) == 0, err.read_text()[-4000:]
    finally:
        if job.poll() is None:
            job.kill()
    rows = json.loads(out.read_text())
    names = sorted(os.path.basename(r["path"]) for r in rows)
    assert names == sorted(os.listdir(data))  # every file, once
    for r in rows:
        assert r["error"] is None, r
        assert r["blobs"] == reference[os.path.basename(r["path"])[3:]], r["path"]
    log = err.read_text()
    status = "status 137 (signal 9)" if sig == signal.SIGKILL else "status "
    assert "the sidecar exited with %s" % status in log and "restarting it on " + sock in log, log[-4000:]
    assert "the sidecar serves again on " + sock in log
    assert "answers again after" in log, log[-4000:]  # a task's client reconnected


def test_spark_job_with_its_sidecar_down_names_endpoint_and_cause(images, tmp_path):
    """No plugin, PIXELFLIGHT_ENDPOINT names a socket nobody serves, 2 s of
    retries: the job fails with the client's error."""
    missing = "grpc+unix://%s/none.sock" % tmp_path
    p = subprocess.run([sys.executable, JOB, "local[1]", os.path.join(images, "good"), str(tmp_path / "out.json")],
                       cwd=tmp_path, env=spark_env(PIXELFLIGHT_ENDPOINT=missing, **{RETRY_ENV: "2"}),
                       capture_output=True, text=True, timeout=600)
    assert p.returncode != 0
    assert ("no pixelflight sidecar answers at %s (from the environment variable PIXELFLIGHT_ENDPOINT)" % missing
            in p.stderr), p.stderr[-4000:]
    assert "No such file or directory" in p.stderr
    assert re.search(r"Retried for 2\.\d s \(2 s from PIXELFLIGHT_RETRY_SECONDS\)", p.stderr), p.stderr[-4000:]


def test_spark_job_after_the_plugin_gives_up(jar, images, tmp_path):
    """spark.pixelflight.maxRestarts=0: the sidecar, killed as the job
    starts, stays down; the executor says so and the tasks fail, after 2 s
    of retries, with an error naming the plugin's endpoint and the cause."""
    err = tmp_path / "job.err"
    with open(err, "w") as f:
        job = subprocess.Popen([sys.executable, JOB, "local[1]", os.path.join(images, "good"),
                                str(tmp_path / "out.json"), *plugin(jar, maxRestarts="0")],
                               cwd=tmp_path, env=spark_env(**{RETRY_ENV: "2"}), stdout=subprocess.DEVNULL, stderr=f)
    try:
        sock = endpoint_file(tmp_path, job, err)[len("grpc+unix://"):]
        [pid] = serving(sock)
        os.kill(pid, signal.SIGKILL)
        assert job.wait(600) != 0
    finally:
        if job.poll() is None:
            job.kill()
    log = err.read_text()
    assert "the sidecar exited with status 137 (signal 9); not restarting it" in log, log[-4000:]
    assert ("no pixelflight sidecar answers at grpc+unix://%s (from %s (written by the executor plugin))"
            % (sock, tmp_path / "pixelflight.endpoint") in log), log[-4000:]
    assert "Retried for 2." in log and "The executor plugin restarts its sidecar" in log


@pytest.mark.check
def test_an_endpoint_never_reached_fails_fast(images, tmp_path, monkeypatch):
    """A sidecar that never answered is tried for FIRST_CONTACT_SECONDS, not
    the whole retry time; the plugin's endpoint is waited for in full."""
    import pixelflight.client as pc

    monkeypatch.setattr(pc, "FIRST_CONTACT_SECONDS", 1.0)
    missing = "grpc+unix://%s/none.sock" % tmp_path
    batch = good_batch(images).slice(0, 1)
    start = time.monotonic()
    with Client(missing, retry_seconds=60) as c, pytest.raises(SidecarUnavailable) as e:
        list(c.map_batches("echo", [batch]))
    assert time.monotonic() - start < 10
    msg = str(e.value)
    assert "no pixelflight sidecar answers at %s" % missing in msg and "No such file or directory" in msg, msg
    assert re.search(r"It never answered: tried for 1\.\d s \(a sidecar that has answered is waited for 60 s", msg), msg
    (tmp_path / "pixelflight.endpoint").write_text(missing)
    monkeypatch.chdir(tmp_path)
    with Client(retry_seconds=2.5) as c, pytest.raises(SidecarUnavailable) as e:
        list(c.map_batches("echo", [batch]))
    assert "executor plugin" in c.source and re.search(r"Retried for 2\.\d s", str(e.value)), str(e.value)
