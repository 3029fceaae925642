#!/bin/sh
# Spark's GPU discovery script for pixelflight. It prints Spark's resource
# JSON for the NVIDIA GPUs of this machine that CUDA_VISIBLE_DEVICES leaves
# visible, e.g. {"name":"gpu","addresses":["0","1"]}, and
# {"name":"gpu","addresses":[]} when there is no driver or no GPU.
#
#   spark.executor.resource.gpu.discoveryScript  /opt/pixelflight/discover-gpus.sh
#   spark.worker.resource.gpu.discoveryScript    /opt/pixelflight/discover-gpus.sh
#
# It runs `pixelflight discover`: $PIXELFLIGHT_BINARY when set, else the
# pixelflight next to this script, else the one on PATH. Spark runs it as
# the executor (or standalone worker) starts, before the files shipped
# with spark.files arrive, so the binary must already be on the machine.
# Arguments are passed on: `discover-gpus.sh --verbose` also lists the
# GPUs, with memory and MIG mode, on stderr.
set -eu

bin=${PIXELFLIGHT_BINARY:-}
if [ -z "$bin" ]; then
	bin=pixelflight
	here=$(dirname -- "$0")
	if [ -x "$here/pixelflight" ]; then
		bin=$here/pixelflight
	fi
fi
exec "$bin" discover "$@"
