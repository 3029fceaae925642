#!/usr/bin/env bash
# EMR bootstrap action for pixelflight (Amazon EMR 7.x, Amazon Linux 2023).
# It runs on every node, as the hadoop user, before EMR installs YARN and
# Spark. See README.md in this folder for the cluster commands.
#
#   bootstrap.sh [--gpu] [--daemon] s3://BUCKET/pixelflight/
#
# The S3 prefix holds what `make build plugin wheel` made:
#   pixelflight                         the binary
#   pixelflight-spark-plugin-spark3.5.jar  the executor plugin, Spark 3.5 build
#   discover-gpus.sh                    Spark's GPU discovery script
#   pixelflight-*.whl                   the Python client
#   haarcascades/*.xml                  optional: cascades for detect_faces
# They go to /opt/pixelflight on every node, and the client into python3
# (where a client-mode driver runs).
#
# --gpu     mount the cgroup v1 devices controller that YARN's GPU isolation
#           uses (EMR 7.x runs cgroup v2); configurations.json points
#           yarn-site and container-executor at /yarn-gpu-cgroup.
# --daemon  the node-daemon variant (configurations-daemon.json): one
#           sidecar per node under systemd, on grpc://127.0.0.1:8815.
set -euo pipefail

gpu=false
daemon=false
src=
while [ "$#" -gt 0 ]; do
	case "$1" in
	--gpu) gpu=true ;;
	--daemon) daemon=true ;;
	s3://*) src=${1%/} ;;
	*)
		echo "bootstrap.sh: unknown argument $1 (usage: bootstrap.sh [--gpu] [--daemon] s3://BUCKET/prefix/)" >&2
		exit 2
		;;
	esac
	shift
done
if [ -z "$src" ]; then
	echo "bootstrap.sh: give the s3:// prefix that holds the pixelflight files" >&2
	exit 2
fi

dir=/opt/pixelflight
sudo mkdir -p "$dir"
sudo aws s3 cp --recursive --only-show-errors "$src/" "$dir/"
sudo chmod 0755 "$dir/pixelflight" "$dir/discover-gpus.sh"
"$dir/pixelflight" version
shopt -s nullglob
wheels=("$dir"/pixelflight-*.whl)
if [ "${#wheels[@]}" -ne 1 ]; then
	echo "bootstrap.sh: want one pixelflight-*.whl under $src, found ${#wheels[@]}" >&2
	exit 1
fi
sudo python3 -m pip install --quiet "${wheels[0]}"

if "$gpu"; then
	# As in EMR's guide for GPU scheduling on YARN with EMR 7.x.
	sudo mkdir -p /yarn-gpu-cgroup/devices
	sudo mount -t cgroup -o devices cgroupv1-devices /yarn-gpu-cgroup/devices
	sudo chmod -R a+rwx /yarn-gpu-cgroup
fi

if "$daemon"; then
	# TCP on loopback, not a Unix socket: serve makes its socket mode 0600,
	# which only one user could reach, and YARN containers run as yarn or
	# as the submitting user depending on the container executor.
	cascades=
	if [ -d "$dir/haarcascades" ]; then
		cascades="--cascade-dir $dir/haarcascades"
	fi
	id pixelflight >/dev/null 2>&1 || sudo useradd --system --no-create-home --shell /sbin/nologin pixelflight
	sudo tee /etc/systemd/system/pixelflight.service >/dev/null <<EOF
[Unit]
Description=pixelflight sidecar for the Spark executors of this node
After=network-online.target

[Service]
User=pixelflight
ExecStart=$dir/pixelflight serve --listen grpc://127.0.0.1:8815 --log-format json $cascades
# SIGTERM drains open streams for up to --drain-timeout (30s).
KillSignal=SIGTERM
TimeoutStopSec=45
Restart=on-failure
NoNewPrivileges=yes

[Install]
WantedBy=multi-user.target
EOF
	sudo systemctl daemon-reload
	sudo systemctl enable --now pixelflight.service
	for _ in $(seq 50); do
		if "$dir/pixelflight" health --endpoint grpc://127.0.0.1:8815 >/dev/null 2>&1; then
			break
		fi
		sleep 0.2
	done
	"$dir/pixelflight" health --endpoint grpc://127.0.0.1:8815
fi
