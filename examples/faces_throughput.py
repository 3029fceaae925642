"""Face detection throughput: the CPU alone, the GPU alone, both.

    python examples/faces_throughput.py --out build/experiments/faces [--quick]

The experiment of "A CUDA-enabled Hadoop Cluster for Fast Distributed Image
Processing" (Haar/AdaBoost face detection over video frames; the GPU added
25% of throughput, the processors idled 45% of the time), with pixelflight:
detect_faces over the frames through PySpark and a sidecar with

- the CPU backend only (``serve --backend cpu``),
- the GPU backend only (``--backend cuda --workers 0``),
- both (``--backend cuda``: one queue, each backend takes rows when free),

the GPU ones where the sidecar's capabilities list a GPU backend, else
written with status ``absent`` and no figures. While each job runs the
sidecar's ``stats`` action is polled: each backend's busy fraction (its
lanes' busy seconds over wall time and lanes) and its share of the rows
over time.

Writes to --out: throughput.csv and throughput.png (frames/s per
configuration), busy.csv and busy.png (per poll: configuration, seconds,
backend, and since the job started: rows, busy fraction, share), stats.jsonl (every stats answer
polled), and frames/ (the distinct frames annotated by the sidecar).

Spark's master and the sidecars: expkit.OWN_SIDECARS (printed by --help).
"""

import argparse
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import expkit  # noqa: E402
from pixelflight import plots, write_images  # noqa: E402
from pixelflight.spark import map_images  # noqa: E402

FIELDS = ["config", "status", "frames", "errors", "faces", "seconds", "frames_per_s", "rows_by_backend", "busy_by_backend",
          "note"]
BUSY_FIELDS = ["config", "t", "backend", "rows", "busy", "share"]


def busy_seconds(stats):
    """Per backend: its lanes' busy seconds (wall time of the batches they
    ran, device waits included: the stats answer's stages)."""
    return {b["name"]: b["busy_seconds"] for b in (stats.get("stages") or {}).get("backends", [])}


class Poller:
    """Polls a sidecar's stats every interval seconds in a thread."""

    def __init__(self, sidecar, interval):
        self.polls, self.interval = [], interval
        self.client = sidecar.client()
        self.done = threading.Event()
        self.t0 = time.perf_counter()
        self.poll()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def poll(self):
        self.polls.append((time.perf_counter() - self.t0, self.client.stats()))

    def run(self):
        while not self.done.wait(self.interval):
            self.poll()

    def stop(self):
        self.done.set()
        self.thread.join()
        self.poll()
        self.client.close()
        return self.polls


def samples(config, polls, lanes):
    """Per poll and backend, since the job started: rows, busy fraction (its
    lanes' busy seconds over wall time and lanes) and share of the rows.
    The sidecar counts a batch's seconds when the batch ends, so figures
    since the start rather than between two polls, which a long batch
    would push past 1."""
    (t0, a), out = polls[0], []
    busy0 = busy_seconds(a)
    for t1, b in polls[1:]:
        rows = {k: b["rows_by_backend"].get(k, 0) - a["rows_by_backend"].get(k, 0) for k in lanes}
        busy1 = busy_seconds(b)
        total = sum(rows.values())
        for k, n in lanes.items():
            out.append({"config": config, "t": t1, "backend": k, "rows": rows[k],
                        "busy": (busy1.get(k, 0) - busy0.get(k, 0)) / ((t1 - t0) * n) if n else 0.0,
                        "share": rows[k] / total if total else 0.0})
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__ + expkit.OWN_SIDECARS,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--images", default=os.path.join(expkit.ROOT, "build", "images", "faces"))
    ap.add_argument("--out", default="build/experiments/faces")
    expkit.add_master(ap)
    ap.add_argument("--binary", default=expkit.BINARY)
    ap.add_argument("--copies", type=int, default=10, help="times each frame is in the job")
    ap.add_argument("--interval", type=float, default=0.5, help="seconds between stats polls")
    ap.add_argument("--min-neighbors", type=int, default=3)
    ap.add_argument("--pattern", default="*", help="file names to take (a glob)")
    ap.add_argument("--quick", action="store_true", help="frame_00..03 once, no warm-up run (the test's size)")
    args = ap.parse_args(argv)
    copies = 1 if args.quick else args.copies
    pattern = "frame_0[0-3].png" if args.quick else args.pattern
    interval = min(args.interval, 0.25) if args.quick else args.interval
    params = {"min_neighbors": args.min_neighbors}

    gpus, why = expkit.gpu_backends(args.binary)
    configs = [("cpu", ["--backend", "cpu"], None),
               ("gpu", ["--backend", "cuda", "--workers", "0"], None if gpus else why),
               ("cpu+gpu", ["--backend", "cuda"], None if gpus else why)]
    os.makedirs(args.out, exist_ok=True)
    spark, owned = expkit.session(args.master, "pixelflight-faces-throughput")
    print("Spark master: %s; sidecars started here, one per configuration" % spark.conf.get("spark.master"))
    df = frames = None
    rows, busy = [], []
    try:
        df = expkit.images(spark, args.images, copies, pattern=pattern)
        n = df.count()
        with open(os.path.join(args.out, "stats.jsonl"), "w") as log:
            for config, serve, absent in configs:
                if absent:
                    rows.append({"config": config, "status": "absent", "frames": n, "note": absent})
                    print("%-8s absent: %s" % (config, absent))
                    continue
                with expkit.Sidecar(*serve, binary=args.binary) as sidecar:
                    lanes = sidecar.backends()
                    job = map_images(df, "detect_faces", endpoint=sidecar.endpoint, **params).select("faces", "error")
                    if not args.quick:
                        job.collect()  # warm-up: Python workers started
                    poller = Poller(sidecar, interval)
                    try:
                        t0 = time.perf_counter()
                        got = job.collect()
                        dt = time.perf_counter() - t0
                    finally:
                        polls = poller.stop()
                    if frames is None:  # the distinct frames, annotated, once
                        frames = expkit.images(spark, args.images, 1, partitions=2, pattern=pattern)
                        annotated = map_images(frames, "detect_faces", endpoint=sidecar.endpoint, annotate=True,
                                               **params)
                        write_images(annotated, "annotated", os.path.join(args.out, "frames"))
                for t, st in polls:
                    log.write(json.dumps({"config": config, "t": t, "stats": st}) + "\n")
                mix = {k: polls[-1][1]["rows_by_backend"].get(k, 0) - polls[0][1]["rows_by_backend"].get(k, 0)
                       for k in lanes}
                final = samples(config, [polls[0], polls[-1]], lanes)
                errors = sum(r["error"] is not None for r in got)
                faces = sum(len(r["faces"] or []) for r in got)
                rows.append({"config": config, "status": "ran" if len(got) == n else "lost rows", "frames": n,
                             "errors": errors, "faces": faces, "seconds": dt, "frames_per_s": n / dt,
                             "rows_by_backend": json.dumps(mix),
                             "busy_by_backend": json.dumps({s["backend"]: round(s["busy"], 3) for s in final}),
                             "note": "lanes %s" % json.dumps(lanes)})
                busy += samples(config, polls, lanes)
                print("%-8s %d frames (%d answered, %d errors, %d faces) in %.2f s: %.1f frames/s; rows by backend %s, busy %s"
                      % (config, n, len(got), errors, faces, dt, n / dt, mix, rows[-1]["busy_by_backend"]))
    finally:
        for d in (df, frames):
            if d is not None:
                d.unpersist()
        if owned:
            spark.stop()
    csv_path = expkit.write_csv(os.path.join(args.out, "throughput.csv"), rows, FIELDS)
    busy_path = expkit.write_csv(os.path.join(args.out, "busy.csv"), busy, BUSY_FIELDS)
    pngs = [plots.throughput(plots.read_csv(csv_path), os.path.join(args.out, "throughput.png")),
            plots.busy(plots.read_csv(busy_path), os.path.join(args.out, "busy.png"))]
    print("wrote %s, %s, %s and %s" % (csv_path, busy_path, ", ".join(pngs), os.path.join(args.out, "frames")))
    return csv_path, pngs


if __name__ == "__main__":
    main()
