#!/usr/bin/env bash
# gpu-check.sh [OUT]: the staged row path's GPU figures (issue 13's GPU
# targets) and the cuda conformance tests, on a GPU machine without Go,
# from the kit `make gpu-kit` packs into build/gpu-kit (carry that folder
# to the machine and run `bash build/gpu-kit/gpu-check.sh "$OUT"`):
#   1. nvidia-smi, `pixelflight-cuda discover`;
#   2. the cuda package's conformance and fault tests (cuda.test), on the
#      GPU: every op against the CPU backend;
#   3. schedbench.py hostcost and sweep with --backend cuda: the host CPU per
#      image beyond decoding, and the default settings against a --workers
#      sweep for each op (BENCHMARKS.md's commands, 512² JPEG photos);
#   4. in-process `pixelflight-cuda bench`, 512² JPEG fft stats: default
#      and --workers 1 as ../shared/gpu/h100-2026-11-24.md measured them,
#      and --workers 0 (the GPU with host decoding alone).
# Each result is a file under OUT; summary.txt has the figures. About 6
# minutes with SECONDS_EACH=5 on 16 cores (the sweep: --workers 0 1 2 4 8
# 16 and the default, for each op). To try the kit without a GPU: BACKEND=sim
# BIN=bin/pixelflight (the cuda build does not start without a driver) runs
# steps 3 and 4 with the sim backend and skips steps 1 and 2.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[[ -n ${BIN:-} ]] && BIN=$(realpath "$BIN")
out=$(mkdir -p "${1:-${OUT:-out}}" && cd "${1:-${OUT:-out}}" && pwd)
backend=${BACKEND:-cuda}
secs=${SECONDS_EACH:-5}
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
	"$bin" discover >"$out/discover.json" 2>&1 || status=1
	# The faces tests read the cascades where Debian's opencv-data puts them.
	if [[ ! -d /usr/share/opencv4/haarcascades ]]; then
		mkdir -p /usr/share/opencv4 && cp -r "$kit/cascades" /usr/share/opencv4/haarcascades
	fi
	(cd cuda && ../bin/cuda.test -test.run 'Conformance|Fault|Accepts|Tilted|Integral|Blob|Faces' -test.count=1 -test.v) \
		>"$out/conformance.txt" 2>&1 || status=1
fi
# On a GPU node the sweep spans its cores: 0, 1, 2, 4, ... up to nproc.
workers=(0 1 2)
if [[ $backend == cuda ]]; then
	for ((w = 4; w <= $(nproc); w *= 2)); do workers+=("$w"); done
fi
python3 scripts/schedbench.py hostcost sweep --backend "$backend" --bin "$bin" --seconds "$secs" \
	--workers "${workers[@]}" --out "$out/schedbench.json" >"$out/schedbench.txt" 2>&1 || status=1
fft=(--images build/images/photo512/jpg --op fft_convolve --params '{"kernel":"gaussian","sigma":2,"output":"stats"}'
	--streams 16 --rows-per-batch 32 --duration 8s --warmup 2s --json --backend "$backend")
"$bin" bench "${fft[@]}" >"$out/bench-fft-default.json" 2>"$out/bench-fft-default.err" || status=1
for w in 0 1; do
	"$bin" bench "${fft[@]}" --workers "$w" >"$out/bench-fft-workers$w.json" 2>"$out/bench-fft-workers$w.err" || status=1
done
{
	echo "backend $backend; exit status so far $status"
	[[ -f $out/conformance.txt ]] && grep -E '^(--- FAIL|ok|FAIL|PASS)' "$out/conformance.txt"
	grep -vE '^(machine|details):' "$out/schedbench.txt"
	for f in default workers0 workers1; do
		python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(sys.argv[2], "%.0f images/s" % r["images_per_s"], r.get("backend_mix"))' \
			"$out/bench-fft-$f.json" "in-process bench, fft 512² JPEG stats, $f:" || status=1
	done
} >"$out/summary.txt" 2>&1
cat "$out/summary.txt"
rm -rf "$kit"
exit $status
