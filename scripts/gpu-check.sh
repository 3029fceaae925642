#!/usr/bin/env bash
# gpu-check.sh [OUT]: the GPU half in one call (issue 25), on a GPU machine
# without Go, from the kit `make gpu-kit` packs into build/gpu-kit (carry
# that folder to the machine and run `bash build/gpu-kit/gpu-check.sh "$OUT"`):
#   1. nvidia-smi, `pixelflight-cuda discover`;
#   2. the cuda package's tests (cuda.test) on the GPU: every op's
#      conformance against the CPU backend, the fault paths, nvJPEG's luma
#      of real photos against libjpeg-turbo's (TestNVJPEGGray: max and mean
#      |difference| per image) and JPEG rows decoded on the GPU through the
#      scheduler (TestJPEGOnGPU);
#   3. compute-sanitizer's memcheck over the JPEG decode path, where the
#      machine has compute-sanitizer; nvJPEG's own speed (BenchmarkNVJPEG:
#      images/s by lanes and batch size);
#   4. schedbench.py hostcost and sweep with --backend cuda: the host CPU per
#      image beyond decoding, and the default settings against a --workers
#      sweep for each op (512² JPEG photos);
#   5. in-process `pixelflight-cuda bench`, default settings, with the GPU's
#      busy fraction from NVML (nvidia-smi sampled during each run): 512²
#      JPEG fft stats (also --workers 0 and 1, --gpu-lanes 4 and 8), 512²
#      PNG fft stats, detect_faces 512² JPEG (also --gpu-lanes 4),
#      1920×1080 JPEG fft stats.
# OUT gets summary.md, the figures as a markdown section for BENCHMARKS.md,
# and results.tar.gz, every result's own file. About 6 minutes with
# SECONDS_EACH=5 on 16 cores; every step is bounded so that the summary is
# written within KIT_SECONDS (default 480: give the device call 560), and a
# step the time does not reach says "skipped" in the summary. To try the
# kit without a GPU: BACKEND=sim BIN=bin/pixelflight
# (the cuda build does not start without a driver) runs steps 4 and 5 with
# the sim backend, decoding JPEGs as a GPU would (--sim decode_jpeg), and
# skips steps 1 to 3.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[[ -n ${BIN:-} ]] && BIN=$(realpath "$BIN")
out=$(mkdir -p "${1:-${OUT:-out}}" && cd "${1:-${OUT:-out}}" && pwd)
backend=${BACKEND:-cuda}
secs=${SECONDS_EACH:-5}
deadline=${KIT_SECONDS:-480}
# within SECS CMD...: CMD under a time limit of SECS or what is left of the
# kit's time less a minute for the summary, whichever is less; 124 if the
# kit's time is spent before it starts.
within() {
	local t=$1 left=$((deadline - 60 - SECONDS))
	shift
	((left < t)) && t=$left
	((t > 0)) || return 124
	timeout -k 5 "$t" "$@"
}
kit=$(mktemp -d)
tar -xzf "$here/kit.tar.gz" -C "$kit" || exit 1
cd "$kit" || exit 1
cuda_lib=/usr/local/cuda-13.0/targets/x86_64-linux/lib
export LD_LIBRARY_PATH=$kit/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
[[ -d $cuda_lib ]] && export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$cuda_lib
export PIXELFLIGHT_CASCADE_DIR=$kit/cascades
bin=${BIN:-$kit/bin/pixelflight-cuda}
status=0
if [[ $backend == cuda ]]; then
	nvidia-smi >"$out/nvidia-smi.txt" 2>&1
	nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >"$out/gpu.txt" 2>&1
	"$bin" discover >"$out/discover.json" 2>&1 || status=1
	# The faces tests read the cascades where Debian's opencv-data puts them.
	if [[ ! -d /usr/share/opencv4/haarcascades ]]; then
		mkdir -p /usr/share/opencv4 && cp -r "$kit/cascades" /usr/share/opencv4/haarcascades
	fi
	(cd cuda && within 150 ../bin/cuda.test -test.run 'Conformance|Fault|Accepts|Tilted|Integral|Blob|Faces|JPEG|DecodesOn' -test.count=1 -test.v) \
		>"$out/conformance.txt" 2>&1 || status=1
	sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda-13.0/bin/compute-sanitizer)
	if [[ -x $sanitizer ]]; then
		(cd cuda && within 90 "$sanitizer" --tool memcheck --error-exitcode 9 ../bin/cuda.test -test.run 'NVJPEG|JPEGOnGPU' -test.count=1) \
			>"$out/memcheck-jpeg.txt" 2>&1 || status=1
	else
		echo "no compute-sanitizer on this machine" >"$out/memcheck-jpeg.txt"
	fi
	(cd cuda && within 60 ../bin/cuda.test -test.run '^$' -test.bench 'NVJPEG' -test.benchtime 1s) \
		>"$out/nvjpeg-bench.txt" 2>&1 || status=1
	# fft_convolve's two methods on the GPU, box kernels 3 to 63: where they
	# cross is the figure gpuMethod's fftMulAddsPerLog awaits.
	(cd cuda && within 120 ../bin/cuda.test -test.run '^$' -test.bench 'ConvolveMethod' -test.benchtime 5x) \
		>"$out/convolve-method-bench.txt" 2>&1 || status=1
fi
# On a GPU node the sweep spans its cores: 0, 1, 2, 4 and nproc.
workers=(0 1 2)
[[ $backend == cuda ]] && workers+=(4 "$(nproc)")
within 200 python3 scripts/schedbench.py hostcost sweep --backend "$backend" --bin "$bin" --seconds "$secs" \
	--workers "${workers[@]}" --out "$out/schedbench.json" >"$out/schedbench.txt" 2>&1 || status=1
sim=()
[[ $backend == sim ]] && sim=(--sim "fft_convolve=12us,detect_faces=1ms,detect_blobs=2.3ms,copy=20e9,decode_jpeg=30us")
stats='{"kernel":"gaussian","sigma":2,"output":"stats"}'
# bench NAME IMAGES OP PARAMS [FLAGS...]: one in-process run, with the GPU's
# utilisation sampled every 200 ms (nvidia-smi) while it runs.
bench() {
	local name=$1 images=$2 op=$3 params=$4
	shift 4
	local smi=
	if [[ $backend == cuda ]] && command -v nvidia-smi >/dev/null; then
		nvidia-smi --query-gpu=utilization.gpu --format=csv,noheader,nounits -lms 200 >"$out/bench-$name.util" 2>/dev/null &
		smi=$!
	fi
	if ((deadline - 60 - SECONDS < 12)); then
		echo "skipped: the kit's time (KIT_SECONDS=$deadline) ran out" >"$out/bench-$name.err"
		return
	fi
	within 30 "$bin" bench --images "$images" --op "$op" --params "$params" --streams 16 --rows-per-batch 32 \
		--duration 6s --warmup 2s --json --backend "$backend" "${sim[@]}" "$@" \
		>"$out/bench-$name.json" 2>"$out/bench-$name.err" || status=1
	[[ -n $smi ]] && kill "$smi" 2>/dev/null
	wait 2>/dev/null
}
bench fft-jpeg512 build/images/photo512/jpg fft_convolve "$stats"
bench fft-jpeg512-workers0 build/images/photo512/jpg fft_convolve "$stats" --workers 0
bench fft-jpeg512-workers1 build/images/photo512/jpg fft_convolve "$stats" --workers 1
bench fft-jpeg512-lanes4 build/images/photo512/jpg fft_convolve "$stats" --gpu-lanes 4
bench fft-jpeg512-lanes8 build/images/photo512/jpg fft_convolve "$stats" --gpu-lanes 8
bench fft-png512 build/images/photo512/png fft_convolve "$stats"
bench faces-jpeg512 build/images/photo512/jpg detect_faces '{}'
bench faces-jpeg512-lanes4 build/images/photo512/jpg detect_faces '{}' --gpu-lanes 4
bench fft-jpeg1080 build/images/photo1080/jpg fft_convolve "$stats"
python3 - "$out" "$backend" "$status" >"$out/summary.md" 2>&1 <<'PY' || status=1
import glob, json, os, re, sys
out, backend, status = sys.argv[1:]
def read(p):
    return open(p).read() if os.path.exists(p) else ""
import datetime
gpu = read(os.path.join(out, "gpu.txt")).strip() or "no GPU (nvidia-smi did not run)"
print("### GPU kit, backend %s: %s; %s, %d cores" % (backend, gpu, datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), os.cpu_count()))
print()
print("Exit status before the summary: %s." % status)
conf = read(os.path.join(out, "conformance.txt"))
fails = re.findall(r"^--- FAIL: (\S+)", conf, re.M)
print("cuda.test on the GPU: %s; %d failed%s." % (
    "ran" if conf else "not run", len(fails), (": " + ", ".join(fails)) if fails else ""))
dec = re.findall(r"decoder: (.*)", conf)
if dec:
    print("JPEG decoder: %s." % dec[0])
gray = [(m[0], m[1], int(m[2]), float(m[3])) for m in re.findall(r"nvjpeg gray (\w+) (\S+) \S+: max \|diff\| (\d+), mean ([\d.]+)", conf)]
tol = re.findall(r"nvjpeg tolerance: (.*)", conf)
if gray:
    print("nvJPEG luma against libjpeg-turbo's, %d decodes of %d photos: max |diff| %d, largest mean %.4f (tolerance: %s)." % (
        len(gray), len({g[1] for g in gray}), max(g[2] for g in gray), max(g[3] for g in gray), tol[0] if tol else "?"))
mc = read(os.path.join(out, "memcheck-jpeg.txt"))
m = re.search(r"ERROR SUMMARY: .*", mc)
print("compute-sanitizer memcheck over the JPEG decode: %s." % (m.group(0) if m else (mc.strip().splitlines() or ["not run"])[-1]))
nb = re.findall(r"^BenchmarkNVJPEG/lanes-(\d+)-batch-(\d+)\S*\s+\d+\s+\S+ ns/op\s+(\S+) images/s", read(os.path.join(out, "nvjpeg-bench.txt")), re.M)
if nb:
    print()
    print("nvJPEG alone (BenchmarkNVJPEG, 512² photos to luma on the device), images/s:")
    print()
    batches = sorted({int(b) for _, b, _ in nb})
    print("| lanes | " + " | ".join("batch %d" % b for b in batches) + " |")
    print("|---|" + "---|" * len(batches))
    for lanes in sorted({int(l) for l, _, _ in nb}):
        got = {int(b): float(v) for l, b, v in nb if int(l) == lanes}
        print("| %d | " % lanes + " | ".join("%.0f" % got[b] if b in got else "" for b in batches) + " |")
cm = re.findall(r"^BenchmarkConvolveMethod/(\w+)-k(\d+)-(separable|fft)\S*\s+\d+\s+(\d+) ns/op.*?([\d.]+) chosen-sep",
                read(os.path.join(out, "convolve-method-bench.txt")), re.M)
if cm:
    print()
    print("fft_convolve's methods on the GPU (BenchmarkConvolveMethod, box kernels, stats), ms a batch:")
    print()
    print("| image | kernel | separable | cuFFT | cuFFT / separable | gpuMethod chose |")
    print("|---|---|---|---|---|---|")
    t = {(sz, int(k), m): (int(ns), float(ch)) for sz, k, m, ns, ch in cm}
    for sz, k in sorted({(sz, k) for sz, k, _ in t}, key=lambda x: (x[0], x[1])):
        sep, fft = t.get((sz, k, "separable")), t.get((sz, k, "fft"))
        if sep and fft:
            print("| %s | %d×%d | %.2f | %.2f | %.2f | %s |" % (sz, k, k, sep[0] / 1e6, fft[0] / 1e6, fft[0] / sep[0],
                                                            "separable" if sep[1] else "cuFFT"))
print()
print("| case | images/s | GPU busy (NVML) | rows decoded on the device | device's decode share | target (H100) |")
print("|---|---|---|---|---|---|")
targets = {"fft-jpeg512": "≥ 30,000", "fft-png512": "≥ 2,500", "faces-jpeg512": "≥ 2,000", "fft-jpeg1080": "≥ 2,000"}
for name in ("fft-jpeg512", "fft-jpeg512-workers0", "fft-jpeg512-workers1", "fft-jpeg512-lanes4", "fft-jpeg512-lanes8",
             "fft-png512", "faces-jpeg512", "faces-jpeg512-lanes4", "fft-jpeg1080"):
    p = os.path.join(out, "bench-%s.json" % name)
    try:
        r = json.load(open(p))
    except (OSError, ValueError):
        err = read(p.replace(".json", ".err"))
        first = re.search(r"^(skipped|panic|fatal error|runtime: ).*", err, re.M)
        why = first.group(0) if first else err.strip()[-200:]
        lead = "" if why.startswith("skipped") else "failed: "
        print("| %s | %s%s | | | | %s |" % (name, lead, why[:300].replace("|", "/").replace("\n", " "), targets.get(name, "")))
        continue
    u = [float(x) for x in read(p.replace(".json", ".util")).split() if x.replace(".", "").isdigit()]
    busy = "%.0f%%" % (sum(u) / len(u)) if u else "n/a"
    dev = [f for k, f in (r.get("stages") or {}).items() if k not in ("decode", "encode", "cpu")]
    decoded = sum(f.get("decoded", 0) for f in dev)
    share = max((f.get("decode_share", 0) for f in dev), default=0)
    print("| %s | %.0f | %s | %d of %d | %.2f | %s |" % (name, r["images_per_s"], busy, decoded, r["images"], share, targets.get(name, "")))
print()
print("--workers sweep (schedbench.py):")
print()
print("```")
print("\n".join(l for l in read(os.path.join(out, "schedbench.txt")).splitlines() if not re.match(r"^(machine|details):", l)))
print("```")
PY
cat "$out/summary.md"
# Two files come back whole (the device tool returns only a few): the
# summary, and every other result in results.tar.gz.
# Only the files written here: OUT may hold others.
(cd "$out" && { ls -d nvidia-smi.txt gpu.txt discover.json conformance.txt memcheck-jpeg.txt nvjpeg-bench.txt \
	schedbench.txt schedbench.json bench-*.json bench-*.err bench-*.util 2>/dev/null || true; } |
	tar -czf results.tar.gz -T - --remove-files) || echo "could not pack the results: they stay in $out" >&2
rm -rf "$kit"
exit $status
