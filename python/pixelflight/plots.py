"""Figures of ``pixelflight bench --json`` reports and of the examples' CSVs.

Every figure is a PNG of PIXELS (width, height). Rows are dicts as
csv.DictReader gives them (numbers may be strings; an empty figure is a
configuration that did not run, drawn as "absent"). matplotlib is imported
when a figure is drawn (pip install 'pixelflight[plots]').

    python -m pixelflight.plots bench OUT.png A.json [B.json ...]
    python -m pixelflight.plots cpu_vs_gpu|throughput|busy|scaling CSV OUT.png
"""

import csv
import json
import sys

DPI = 100
PIXELS = (1000, 450)


def _figure(ncols):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(PIXELS[0] / DPI, PIXELS[1] / DPI), dpi=DPI, layout="constrained")
    return fig, fig.subplots(1, ncols, squeeze=False)[0]


def _save(fig, path):
    """Writes fig as a PNG of exactly PIXELS (no tight bounding box)."""
    fig.savefig(path, format="png", dpi=DPI)
    return path


def _num(v):
    """A CSV cell as a float; None when empty (did not run)."""
    if v is None or v == "":
        return None
    return float(v)


def _bars(ax, labels, values, ylabel, fmt="%.3g"):
    """Bars with their value on top; a None value is written as absent."""
    xs = range(len(labels))
    heights = [v or 0 for v in values]
    bars = ax.bar(xs, heights, color=["C%d" % i for i in xs])
    top = max(heights, default=0) or 1
    for x, b, v in zip(xs, bars, values):
        ax.text(x, b.get_height() + top * 0.01, "absent" if v is None else fmt % v, ha="center", va="bottom",
                fontsize=8)
    ax.set_xticks(list(xs), labels, rotation=15, fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_ylim(0, top * 1.15)


def cpu_vs_gpu(rows, path):
    """examples/cpu_vs_gpu.py: seconds and images/s per method."""
    fig, (a, b) = _figure(2)
    labels = [r["method"] for r in rows]
    _bars(a, labels, [_num(r["seconds"]) for r in rows], "seconds (lower is better)")
    _bars(b, labels, [_num(r["images_per_s"]) for r in rows], "images/s (higher is better)")
    fig.suptitle("fft_convolve job: %s images" % rows[0]["images"] if rows else "fft_convolve job")
    return _save(fig, path)


def throughput(rows, path, unit="frames/s", title="detect_faces throughput"):
    """examples/faces_throughput.py: frames/s per configuration (the
    notebook: images/s per op)."""
    fig, (a,) = _figure(1)
    _bars(a, [r["config"] for r in rows], [_num(r["frames_per_s"]) for r in rows], unit)
    a.set_title(title)
    return _save(fig, path)


def busy(samples, path):
    """examples/faces_throughput.py: each backend's busy fraction (its lanes'
    busy seconds, the wall time of the batches they ran as the sidecar's
    stats stages give it, over wall time and lanes) and its share of the
    rows since the job started, over time, per configuration."""
    fig, (a, b) = _figure(2)
    series = {}
    for s in samples:
        series.setdefault((s["config"], s["backend"]), []).append(s)
    for (config, backend), ss in sorted(series.items()):
        t = [_num(s["t"]) for s in ss]
        a.plot(t, [_num(s["busy"]) for s in ss], marker=".", label="%s: %s" % (config, backend))
        b.plot(t, [_num(s["share"]) for s in ss], marker=".", label="%s: %s" % (config, backend))
    a.set_ylabel("busy fraction of the backend's lanes")
    b.set_ylabel("share of the rows")
    a.set_title("busy since the job started")
    b.set_title("rows since the job started")
    for ax in (a, b):
        ax.set_xlabel("seconds")
        ax.set_ylim(bottom=0)
        if series:
            ax.legend(fontsize=8)
    return _save(fig, path)


def scaling(rows, path):
    """examples/scaling.py, in the paper's form: weak scaling time against
    workers (ideal: flat), strong scaling time and speedup (ideal: the
    number of workers)."""
    fig, (weak, strong, speed) = _figure(3)
    ops = sorted({r["op"] for r in rows})
    for i, op in enumerate(ops):
        for kind, ax in (("weak", weak), ("strong", strong)):
            pts = sorted((int(r["workers"]), _num(r["seconds"])) for r in rows if r["op"] == op and r["kind"] == kind)
            if not pts:
                continue
            ws, secs = zip(*pts)
            ax.plot(ws, secs, marker="o", color="C%d" % i, label=op)
            ideal = secs[0] if kind == "weak" else [secs[0] * ws[0] / w for w in ws]
            ax.plot(ws, [ideal] * len(ws) if kind == "weak" else ideal, ls="--", color="C%d" % i, alpha=0.5,
                    label="%s ideal" % op)
            if kind == "strong":
                speed.plot(ws, [secs[0] / s for s in secs], marker="o", color="C%d" % i, label=op)
    ws = sorted({int(r["workers"]) for r in rows})
    if ws:
        speed.plot(ws, [w / ws[0] for w in ws], ls="--", color="gray", label="ideal")
    weak.set_title("weak scaling (images per worker fixed)")
    strong.set_title("strong scaling (images fixed)")
    speed.set_title("strong scaling speedup")
    weak.set_ylabel("seconds")
    strong.set_ylabel("seconds")
    speed.set_ylabel("speedup")
    for ax in (weak, strong, speed):
        ax.set_xlabel("workers")
        ax.set_xticks(ws)
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=7)
    return _save(fig, path)


def bench(reports, path, labels=None):
    """``pixelflight bench --json`` reports side by side: images/s, batch
    latency p50/p90/p99 and, where the reports have it,
    host_cpu_us_per_image. Keys a report lacks are drawn as absent; keys
    this module does not know are ignored."""
    labels = labels or ["%s %s" % (r.get("op", "?"), r.get("source", "")) for r in reports]
    cpu = [r.get("host_cpu_us_per_image") for r in reports]
    fig, axes = _figure(3 if any(c is not None for c in cpu) else 2)
    _bars(axes[0], labels, [r.get("images_per_s") for r in reports], "images/s")
    lat = axes[1]
    width = 0.8 / 3
    for j, q in enumerate(("p50", "p90", "p99")):
        vals = [(r.get("latency_ms") or {}).get(q) or 0 for r in reports]
        lat.bar([i + (j - 1) * width for i in range(len(reports))], vals, width, label=q)
    lat.set_xticks(range(len(reports)), labels, rotation=15, fontsize=8)
    lat.set_ylabel("batch latency, ms")
    lat.legend(fontsize=8)
    if len(axes) == 3:
        _bars(axes[2], labels, cpu, "host CPU µs per image")
    return _save(fig, path)


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def main(argv):
    usage = __doc__.strip().splitlines()[-2:]
    if len(argv) >= 3 and argv[0] == "bench":
        reports = []
        for p in argv[2:]:
            with open(p) as f:
                reports.append(json.load(f))
        bench(reports, argv[1])
    elif len(argv) == 3 and argv[0] in ("cpu_vs_gpu", "throughput", "busy", "scaling"):
        globals()[argv[0]](read_csv(argv[1]), argv[2])
    else:
        print("usage:\n" + "\n".join(usage), file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
