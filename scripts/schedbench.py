#!/usr/bin/env python3
"""Scheduler benchmarks: the staged row path's host cost, defaults against a
--workers sweep, additivity, batching across streams, memory cap.

Each experiment starts `pixelflight serve` as its own process, drives it
with `pixelflight bench --endpoint ... --json` (a separate process), and
prints the figures side by side with their ratio. On a machine without a
GPU the device is the sim backend (--backend sim, the default): its lanes
do a GPU lane's host work and wait out an H100's device time. On a GPU
node `--backend cuda --bin bin/pixelflight-cuda` measures the real device
(hostcost and sweep; `make gpu-kit` packs this for a GPU machine without Go).

    .venv/bin/python scripts/schedbench.py            # all (make bench-sched)
    .venv/bin/python scripts/schedbench.py hostcost   # one of them
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time


def rss_peak_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def context_switches(pid):
    """The process's context switches so far, voluntary or not, all threads."""
    n = 0
    for t in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/status" % (pid, t)) as f:
                n += sum(int(line.split()[1]) for line in f if "ctxt_switches:" in line)
        except OSError:
            pass
    return n


class Sidecar:
    """`pixelflight serve` on a Unix socket in a temp dir."""

    def __init__(self, binary, *flags, cpus=None):
        self.dir = tempfile.mkdtemp(prefix="pf-schedbench-")
        self.endpoint = "grpc+unix://%s/s.sock" % self.dir
        self.log = open(os.path.join(self.dir, "serve.log"), "w")
        pin = ["taskset", "-c", cpus] if cpus else []
        self.proc = subprocess.Popen(
            pin + [binary, "serve", "--listen", self.endpoint, "--metrics-listen", "", *flags],
            stdout=self.log, stderr=self.log)
        for _ in range(1200):  # 60 s: a GPU backend starts first (PTX compiled for the device)
            if os.path.exists(self.endpoint[len("grpc+unix://"):]):
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise RuntimeError("sidecar did not start: %s" % open(self.log.name).read())

    def stop(self):
        self.switches = context_switches(self.proc.pid)
        peak = rss_peak_kib(self.proc.pid)
        self.proc.terminate()
        self.proc.wait(timeout=60)
        self.log.close()
        return peak


def bench(binary, endpoint, *flags, cpus=None):
    pin = ["taskset", "-c", cpus] if cpus else []
    out = subprocess.run(pin + [binary, "bench", "--endpoint", endpoint, "--json", *flags],
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def run(binary, serve_flags, bench_flags, server_cpus=None, client_cpus=None, client=None):
    s = Sidecar(binary, *serve_flags, cpus=server_cpus)
    try:
        rep = bench(client or binary, s.endpoint, *bench_flags, cpus=client_cpus)
    finally:
        rep_peak = s.stop()
    rep["server_rss_peak_mib"] = rep_peak / 1024
    rep["server_context_switches"] = s.switches
    return rep


PHOTOS = "build/images/photo512"  # scripts/make_images.py: 8 photos, 512x512, JPEG q90 and PNG
OPS = {
    "fft_convolve": '{"kernel":"gaussian","sigma":2,"output":"stats"}',
    "detect_faces": "{}",
    "detect_blobs": "{}",
}


def load(a, op, fmt="jpg", streams=16, rows=32):
    return ["--images", os.path.join(PHOTOS, fmt), "--op", op, "--params", OPS[op],
            "--streams", str(streams), "--rows-per-batch", str(rows),
            "--duration", "%ds" % a.seconds, "--warmup", "2s"]


def hostcost(a):
    """The GPU path's host cost: the device backend alone, 512x512 JPEG fft stats.
    Target: server CPU per image <= the decode stage's CPU per image + 60 us."""
    delay = ["--max-delay", a.max_delay] if a.max_delay else []
    rep = run(a.bin, ["--backend", a.backend, "--workers", "0", *delay], load(a, "fft_convolve"))
    # The host decodes only the rows the device did not: its decode CPU
    # counts per image over the rows it decoded.
    st = rep.get("stages", {}).get("decode", {"cpu_us_per_row": 0, "rows": 0})
    # A run with no image in its window has no host cost per image.
    cpu = rep.get("host_cpu_us_per_image", float("nan"))
    dec = st["cpu_us_per_row"] * st["rows"] / max(rep["images"], 1)
    dev = rep["stages"].get(a.backend, {})
    print("host cost of the GPU path (%s), fft_convolve 512x512 JPEG stats, 16 streams x 32 rows, %ds:"
          % (a.backend, a.seconds))
    print("  %.0f images/s; server CPU %.0f us/image; JPEG decode on the host %.0f us/image"
          " (%.0f us per row it decoded, %d of %d rows; CPU, same run)"
          % (rep["images_per_s"], cpu, dec, st["cpu_us_per_row"], st["rows"], rep["images"]))
    print("  beyond decoding %.0f us/image  (target <= 60); %.1f context switches/image (warm-up included);"
          " %.1f rows per device batch" % (cpu - dec, rep["server_context_switches"] / max(rep["images"], 1),
                                          dev.get("rows", 0) / max(dev.get("batches", 0), 1)))
    return {"run": rep, "beyond_decode_us": cpu - dec}


def sweep(a):
    """Default settings against the best of a --workers sweep, with the device
    backend (sim or cuda), for each op; never below the device alone.
    Target: default >= 0.9x the best (0.95x on a real GPU)."""
    out = {}
    for op in OPS:
        runs = {}
        for w in a.workers:
            runs[str(w)] = run(a.bin, ["--backend", a.backend, "--workers", str(w)], load(a, op))
        runs["default"] = run(a.bin, ["--backend", a.backend], load(a, op))
        best = max((r["images_per_s"], w) for w, r in runs.items() if w != "default")
        d = runs["default"]["images_per_s"]
        print("%s 512x512 JPEG, %s backend, %ds each:" % (op, a.backend, a.seconds))
        for w, r in runs.items():
            print("  --workers %-8s %7.1f images/s  mix %s" % (w, r["images_per_s"], r.get("backend_mix")))
        # A run with no image in its window (too short, or a device that
        # failed) has no ratio: nan, not a crash of the whole sweep.
        ratio = lambda x, y: x / y if y else None  # noqa: E731 (None: null in the JSON)
        shown = lambda r: "n/a" if r is None else "%.2f" % r  # noqa: E731
        print("  default / best (%s) %s  (target >= 0.9); default / device alone %s  (target >= 1)"
              % (best[1], shown(ratio(d, best[0])), shown(ratio(d, runs["0"]["images_per_s"]))))
        out[op] = {"runs": runs, "default_over_best": ratio(d, best[0]),
                   "default_over_device_alone": ratio(d, runs["0"]["images_per_s"])}
    return out


def cpuonly(a):
    """A CPU-only node against a baseline build (--baseline BIN, e.g. the
    commit before the staged row path): each op on 512x512 JPEG (and fft on
    PNG), default settings, 4 streams x 4 rows, the two servers alternating, best of --rounds,
    driven by this build's bench. Target: no loss."""
    out = {}
    cases = [(op, "jpg") for op in OPS] + [("fft_convolve", "png")]
    print("CPU only, this build / %s, default settings, %ds each, best of %d:" % (a.baseline, a.seconds, a.rounds))
    for op, fmt in cases:
        best = {}
        for _ in range(a.rounds):
            for name, b in (("new", a.bin), ("old", a.baseline)):
                r = run(b, ["--backend", "cpu"], load(a, op, fmt, streams=4, rows=4), client=a.bin)
                if name not in best or r["images_per_s"] > best[name]["images_per_s"]:
                    best[name] = r
        ratio = best["new"]["images_per_s"] / best["old"]["images_per_s"]
        print("  %-13s %s  %7.1f vs %7.1f images/s  ratio %.2f  (target >= 1)"
              % (op, fmt, best["new"]["images_per_s"], best["old"]["images_per_s"], ratio))
        out["%s-%s" % (op, fmt)] = {"new": best["new"], "old": best["old"], "ratio": ratio}
    return out


def additivity(a):
    """A device about half as fast as the CPU lanes: the two together against the sum alone."""
    args = ["--generate", "512x512", "--op", "fft_convolve", "--params", '{"sigma":2,"output":"stats"}',
            "--streams", "8", "--rows-per-batch", "4", "--duration", "%ds" % a.seconds, "--warmup", "2s"]
    cpu = run(a.bin, ["--workers", "1", "--backend", "cpu"], args)
    sim = "fft_convolve=%dus" % (2e6 / cpu["images_per_s"])
    alone = run(a.bin, ["--workers", "0", "--backend", "sim", "--sim", sim, "--max-batch", "8"], args)
    both = run(a.bin, ["--workers", "1", "--backend", "sim", "--sim", sim, "--max-batch", "8"], args)
    ratio = both["images_per_s"] / (cpu["images_per_s"] + alone["images_per_s"])
    print("additivity, fft_convolve 512x512 stats, 8 streams x 4 rows, %ds each:" % a.seconds)
    print("  cpu lane alone           %7.1f images/s" % cpu["images_per_s"])
    print("  sim alone (%s) %7.1f images/s" % (sim, alone["images_per_s"]))
    print("  both at once             %7.1f images/s  mix %s" % (both["images_per_s"], both.get("backend_mix")))
    print("  ratio both / (sum alone) %7.2f  (target >= 0.9)" % ratio)
    return {"cpu": cpu, "sim": alone, "both": both, "ratio": ratio}


def batching(a):
    # The sidecar on CPU 1 with one lane, the load generator on CPU 0: the
    # client's own per-message work does not take the server's core.
    common = ["--generate", "128x128", "--op", "fft_convolve", "--params", '{"sigma":1,"output":"stats"}',
              "--duration", "%ds" % a.seconds, "--warmup", "2s"]
    pins = dict(server_cpus="1", client_cpus="0")
    one = many = few = None
    for _ in range(a.rounds):  # alternated, best of each: the VM's speed drifts
        r = run(a.bin, ["--workers", "1"], common + ["--streams", "1", "--rows-per-batch", "256"], **pins)
        one = r if one is None or r["images_per_s"] > one["images_per_s"] else one
        r = run(a.bin, ["--workers", "1"], common + ["--streams", "16", "--rows-per-batch", "1"], **pins)
        many = r if many is None or r["images_per_s"] > many["images_per_s"] else many
        r = run(a.bin, ["--workers", "1"], common + ["--streams", "16", "--rows-per-batch", "8"], **pins)
        few = r if few is None or r["images_per_s"] > few["images_per_s"] else few
    ratio = many["images_per_s"] / one["images_per_s"]
    print("batching, fft_convolve 128x128 stats, 1 CPU lane on CPU 1, client on CPU 0, %ds each:" % a.seconds)
    print("  1 stream x 256 rows/batch  %7.1f images/s" % one["images_per_s"])
    print("  16 streams x 1 row/batch   %7.1f images/s  ratio %.2f  (target >= 0.9)" % (many["images_per_s"], ratio))
    print("  16 streams x 8 rows/batch  %7.1f images/s  ratio %.2f" % (few["images_per_s"], few["images_per_s"] / one["images_per_s"]))
    return {"one_stream": one, "sixteen_streams": many, "sixteen_streams_8_rows": few, "ratio": ratio}


def memory(a):
    cap = 256 << 20
    rep = run(a.bin, ["--workers", "2", "--memory-budget", str(cap)],
              ["--generate", "2500x2500", "--op", "fft_convolve", "--params", '{"sigma":2,"output":"stats"}',
               "--streams", "64", "--rows-per-batch", "1", "--count", "256", "--warmup", "0"])
    mb = rep["bytes_sent"] / max(rep["images"], 1) / 1e6
    ratio = rep["server_rss_peak_mib"] * (1 << 20) / cap
    print("memory, 64 streams of %.1f MB PNGs (2500x2500), --memory-budget 256MiB, 256 images:" % mb)
    print("  %d images, %.1f images/s; server peak RSS %.0f MiB = %.2f x the budget  (target < 2)"
          % (rep["images"], rep["images_per_s"], rep["server_rss_peak_mib"], ratio))
    return {"run": rep, "image_mb": mb, "rss_over_cap": ratio}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("which", nargs="*", default=["hostcost", "sweep", "additivity", "batching", "memory"],
                   help="hostcost, sweep, additivity, batching, memory; cpuonly (needs --baseline)")
    p.add_argument("--baseline", help="cpuonly: another build's binary to compare with")
    p.add_argument("--workers", type=int, nargs="*", default=[0, 1, 2], help="sweep: the --workers values")
    p.add_argument("--bin", default="bin/pixelflight")
    p.add_argument("--backend", default="sim", help="hostcost, sweep: the device backend, sim or cuda")
    p.add_argument("--max-delay", help="hostcost: the server's --max-delay (default: its own, 2ms)")
    p.add_argument("--seconds", type=int, default=10)
    p.add_argument("--rounds", type=int, default=3, help="batching: alternated rounds, best of each")
    p.add_argument("--out", default="build/schedbench.json")
    a = p.parse_args()
    print("machine: %d CPUs; server and load generator share them" % os.cpu_count())
    results = {}
    for name in a.which:
        results[name] = {"hostcost": hostcost, "sweep": sweep, "cpuonly": cpuonly, "additivity": additivity,
                         "batching": batching, "memory": memory}[name](a)
        sys.stdout.flush()
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(results, f, indent=1)
    print("details: %s" % a.out)


if __name__ == "__main__":
    main()
