#!/usr/bin/env python3
"""Soak: one sidecar under many streams of good and bad images for minutes.

Starts `bin/pixelflight serve` on its own socket with metrics on a free
port, then runs `pixelflight bench --endpoint ... --json` in rounds (each a
fresh set of --streams connections) over a folder of the good test images
and the bad ones (corrupt, truncated, oversized, empty, not an image) until
--minutes have passed. Every --sample seconds it records throughput (the
server's rows), RSS, threads and open files (/proc), goroutines (/metrics),
open streams, in-flight bytes and queue depth; between rounds, once the
streams are closed, the same at rest. Prints a table and a verdict, and
exits 1 when:

- a round failed (bench checks that every batch came back with its rows);
- the server counted other rows or row errors than the clients got, or the
  bad images did not come back as errors of their kinds;
- after the warm-up, RSS, goroutines or open files under full load (the
  median of a round's samples with every stream open) was more than 10%
  from its median over the rounds, or goroutines or open files at rest
  between rounds grew by more than 2. (RSS at rest is not a leak signal: it is the heap Go has kept
  for reuse, which depends on where the last GC cycle fell.)

Rounds are whole: as many as fit in --minutes, at least one.

    .venv/bin/python scripts/soak.py --minutes 5      # make soak (SOAK_MINUTES=5)
"""
import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

from pixelflight import Client

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BAD_KINDS = {"corrupt", "too_large", "empty", "unknown_format"}
BENCH_EXTS = (".png", ".jpg", ".jpeg", ".pgm", ".bmp", ".tif", ".tiff", ".webp")  # what loadgen.ReadImages takes


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def image_folder(images, into):
    """The good and bad images side by side, as bench reads them (regular
    files directly in one folder, of the kinds it takes)."""
    n = {}
    for kind in ("good", "bad"):
        names = [f for f in sorted(os.listdir(os.path.join(images, kind))) if f.lower().endswith(BENCH_EXTS)]
        for name in names:
            shutil.copyfile(os.path.join(images, kind, name), os.path.join(into, "%s-%s" % (kind, name)))
        n[kind] = len(names)
    return n


class Sampler(threading.Thread):
    """Samples the sidecar every `every` seconds until stopped."""

    def __init__(self, pid, endpoint, metrics, every):
        super().__init__(daemon=True)
        self.pid, self.endpoint, self.metrics, self.every = pid, endpoint, metrics, every
        self.rows, self.errors, self.stop, self.start_time = [], [], threading.Event(), time.monotonic()

    def sample(self):
        with Client(self.endpoint, retry_seconds=0) as c:
            st = c.stats()
        text = urllib.request.urlopen("http://%s/metrics" % self.metrics, timeout=30).read().decode()
        [goroutines] = [float(line.split()[1]) for line in text.splitlines() if line.startswith("go_goroutines ")]
        with open("/proc/%d/status" % self.pid) as f:
            status = dict(line.split(":", 1) for line in f)
        return {"t": time.monotonic() - self.start_time, "rows": st["rows"], "row_errors": st["row_errors"],
                "kinds": st["row_errors_by_kind"], "streams": st["streams_open"], "inflight": st["inflight_bytes"],
                "queue": st["queue_depth"], "goroutines": int(goroutines), "threads": int(status["Threads"]),
                "rss": int(status["VmRSS"].split()[0]) << 10, "fds": len(os.listdir("/proc/%d/fd" % self.pid))}

    def run(self):
        while not self.stop.wait(self.every):
            try:
                self.rows.append(self.sample())
            except Exception as e:  # a busy machine: note it, sample again
                self.errors.append("%.0f s: %s" % (time.monotonic() - self.start_time, e))


def at_rest(sampler, timeout=30):
    """A sample once no stream is open and nothing is queued or in flight."""
    deadline = time.monotonic() + timeout
    while True:
        s = sampler.sample()
        if s["streams"] == s["queue"] == s["inflight"] == 0 or time.monotonic() > deadline:
            return s
        time.sleep(0.2)


def flat(name, values, within=0.10):
    """A problem when a value is more than `within` from their median."""
    if not values:
        return "%s: no rounds after the warm-up" % name
    mid = statistics.median(values)
    worst = max(values, key=lambda v: abs(v - mid))
    if abs(worst - mid) > within * mid:
        return "%s not flat: %s against a median of %s (more than %d%%); all: %s" % (
            name, worst, mid, within * 100, values)
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=5)
    ap.add_argument("--streams", type=int, default=32, help="concurrent streams (16 to 64 is a busy node)")
    ap.add_argument("--round", type=float, default=30, help="seconds per bench round (new connections each)")
    ap.add_argument("--sample", type=float, default=5, help="seconds between samples")
    ap.add_argument("--warmup", type=float, default=60, help="seconds left out of the flatness checks")
    ap.add_argument("--workers", type=int, default=0, help="sidecar CPU workers (0: its default, the CPU count)")
    ap.add_argument("--op", default="fft_convolve")
    ap.add_argument("--params", default='{"kernel": "gaussian", "sigma": 3, "output": "stats"}')
    ap.add_argument("--images", default=os.path.join(ROOT, "build", "images"))
    ap.add_argument("--binary", default=os.path.join(ROOT, "bin", "pixelflight"))
    args = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix="pf-soak-")
    folder = os.path.join(tmp, "images")
    os.mkdir(folder)
    counts = image_folder(args.images, folder)
    endpoint, metrics = "grpc+unix://%s/s.sock" % tmp, "127.0.0.1:%d" % free_port()
    flags = ["--listen", endpoint, "--metrics-listen", metrics, "--log-format", "json"]
    if args.workers:
        flags += ["--workers", str(args.workers)]
    log = open(os.path.join(tmp, "serve.log"), "w")
    proc = subprocess.Popen([args.binary, "serve", *flags], stdout=log, stderr=log)
    deadline = time.monotonic() + 30
    while True:
        try:
            with Client(endpoint, retry_seconds=0) as c:
                if c.health()["status"] == "SERVING":
                    break
        except Exception:
            if proc.poll() is not None or time.monotonic() > deadline:
                sys.exit("the sidecar did not start; its log: %s" % open(log.name).read())
            time.sleep(0.1)

    print("soak: %s, %d streams, rounds of %gs for %g min; %d good and %d bad images; sidecar log %s"
          % (args.op, args.streams, args.round, args.minutes, counts["good"], counts["bad"], log.name), flush=True)
    sampler = Sampler(proc.pid, endpoint, metrics, args.sample)
    first = sampler.sample()
    sampler.start()
    rounds, spans, rests, problems = [], [], [], []
    end = time.monotonic() + args.minutes * 60
    while not rounds or time.monotonic() + args.round <= end:
        begin = time.monotonic() - sampler.start_time
        p = subprocess.run([args.binary, "bench", "--endpoint", endpoint, "--images", folder, "--json",
                            "--streams", str(args.streams), "--duration", "%gs" % args.round, "--warmup", "0",
                            "--op", args.op, "--params", args.params], capture_output=True, text=True)
        if p.returncode != 0:
            problems.append("round %d failed: %s" % (len(rounds) + 1, p.stderr.strip()[-2000:]))
            break
        rounds.append(json.loads(p.stdout))
        spans.append((begin, time.monotonic() - sampler.start_time))
        rests.append(at_rest(sampler))
    sampler.stop.set()
    sampler.join()
    last = at_rest(sampler)
    proc.send_signal(signal.SIGTERM)
    code = proc.wait(60)

    samples = sampler.rows
    print("\n%7s %9s %9s %8s %8s %10s %7s %4s %8s %10s %6s"
          % ("t (s)", "images/s", "rows", "errors", "RSS MiB", "goroutines", "threads", "fds", "streams",
             "in-flight", "queue"))
    prev = first
    for s in samples:
        rate = (s["rows"] - prev["rows"]) / (s["t"] - prev["t"])
        print("%7.0f %9.1f %9d %8d %8.1f %10d %7d %4d %8d %9.1fM %6d"
              % (s["t"], rate, s["rows"], s["row_errors"], s["rss"] / 2**20, s["goroutines"], s["threads"],
                 s["fds"], s["streams"], s["inflight"] / 1e6, s["queue"]))
        prev = s

    print("\n%5s %11s %8s %9s %8s %9s %10s %10s %9s"
          % ("round", "t (s)", "images", "images/s", "p99 (ms)", "RSS MiB", "goroutines", "goroutines", "fds"))
    print("%5s %11s %8s %9s %8s %9s %10s %10s %9s" % ("", "", "", "", "batch", "load", "load", "at rest", "at rest"))
    for i, (r, (t0, t1), rest) in enumerate(zip(rounds, spans, rests), 1):
        ss = [s for s in samples if t0 <= s["t"] <= t1 and s["streams"] == args.streams]
        med = {k: statistics.median(s[k] for s in ss) if ss else float("nan") for k in ("rss", "goroutines")}
        print("%5d %5.0f-%-5.0f %8d %9.1f %8.0f %9.1f %10.0f %10d %9d"
              % (i, t0, t1, r["images"], r["images_per_s"], r["latency_ms"]["p99"], med["rss"] / 2**20,
                 med["goroutines"], rest["goroutines"], rest["fds"]))

    images = sum(r["images"] for r in rounds)
    errors = sum(r["row_errors"] for r in rounds)
    if last["rows"] - first["rows"] != images:
        problems.append("the server ran %d rows, the clients got %d" % (last["rows"] - first["rows"], images))
    if last["row_errors"] - first["row_errors"] != errors:
        problems.append("the server had %d row errors, the clients got %d"
                        % (last["row_errors"] - first["row_errors"], errors))
    # bench sends the images in turn, so the bad share is known to within a
    # lap of them per round.
    want = images * counts["bad"] / (counts["good"] + counts["bad"])
    if abs(errors - want) > len(rounds) * (counts["good"] + counts["bad"]):
        problems.append("%d row errors, expected about %d (one in %d images is bad)"
                        % (errors, want, (counts["good"] + counts["bad"]) // counts["bad"]))
    if not BAD_KINDS <= set(last["kinds"]):
        problems.append("row errors by kind %s: expected %s" % (last["kinds"], sorted(BAD_KINDS)))
    loaded = [[s for s in samples if t0 <= s["t"] <= t1 and s["streams"] == args.streams]
              for t0, t1 in spans if t0 >= args.warmup]
    for name in ("rss", "goroutines", "fds"):
        problems.append(flat(name + " under load (median of a round)",
                             [statistics.median(s[name] for s in ss) for ss in loaded if ss]))
    settled = [r for r in rests if r["t"] >= args.warmup] or rests[-1:]
    for name in ("goroutines", "fds"):
        if settled and settled[-1][name] > settled[0][name] + 2:
            problems.append("%s at rest grew from %d to %d between rounds"
                            % (name, settled[0][name], settled[-1][name]))
    if code != 0:
        problems.append("the sidecar exited with %d after SIGTERM" % code)
    problems = [p for p in problems if p]

    print("\n%d rounds, %d images (%d row errors): %.1f images/s on average; at rest before and after: RSS %.1f -> "
          "%.1f MiB, goroutines %d -> %d, fds %d -> %d"
          % (len(rounds), images, errors, statistics.mean(r["images_per_s"] for r in rounds) if rounds else 0,
             first["rss"] / 2**20, last["rss"] / 2**20, first["goroutines"], last["goroutines"], first["fds"],
             last["fds"]))
    if sampler.errors:
        print("%d samples failed, the first at %s" % (len(sampler.errors), sampler.errors[0]))
    if problems:
        print("FAIL:\n  " + "\n  ".join(problems))
        sys.exit(1)
    shutil.rmtree(tmp)
    print("PASS: every row came back; RSS, goroutines and open files flat under load; goroutines and open files "
          "back to their level at rest")


if __name__ == "__main__":
    main()
