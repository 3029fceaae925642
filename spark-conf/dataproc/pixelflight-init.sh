#!/usr/bin/env bash
# Dataproc initialization action for pixelflight: runs as root on every
# node once the cluster is set up (create-cluster.sh passes it). It reads
# instance metadata:
#
#   pixelflight-url     (required) gs:// or https:// folder holding what
#                       `make build plugin wheel` made: pixelflight,
#                       pixelflight-spark-plugin-spark3.5.jar (the plugin's
#                       Spark 3.5 build), discover-gpus.sh and the client wheel
#   pixelflight-wheel   the wheel's file name (default pixelflight-0.1.0-py3-none-manylinux_2_34_x86_64.whl)
#   pixelflight-daemon  "true": also run one sidecar per node under systemd
#                       on grpc://127.0.0.1:8815 (the node-daemon variant)
#
# Everything goes to /opt/pixelflight; the client goes into the Python
# that PySpark uses (Dataproc's conda, else python3); Debian/Ubuntu's
# opencv-data gives detect_faces its cascades. The binary from `make
# build` on Debian 12 needs glibc 2.34 or later: Dataproc 2.2+ Debian or
# Ubuntu images.
set -euo pipefail

meta() { /usr/share/google/get_metadata_value "attributes/$1" 2>/dev/null || true; }

url=$(meta pixelflight-url)
url=${url%/}
wheel=$(meta pixelflight-wheel)
wheel=${wheel:-pixelflight-0.1.0-py3-none-manylinux_2_34_x86_64.whl}
daemon=$(meta pixelflight-daemon)
if [ -z "$url" ]; then
	echo "pixelflight-init.sh: set the pixelflight-url metadata (gs://BUCKET/pixelflight)" >&2
	exit 1
fi

dir=/opt/pixelflight
mkdir -p "$dir"
for f in pixelflight pixelflight-spark-plugin-spark3.5.jar discover-gpus.sh "$wheel"; do
	case "$url" in
	gs://*) gcloud storage cp --quiet "$url/$f" "$dir/$f" ;;
	*) curl -fsSL --retry 3 -o "$dir/$f" "$url/$f" ;;
	esac
done
chmod 0755 "$dir/pixelflight" "$dir/discover-gpus.sh"
"$dir/pixelflight" version

python=/opt/conda/default/bin/python
[ -x "$python" ] || python=python3
"$python" -m pip install --quiet "$dir/$wheel"

if command -v apt-get >/dev/null; then
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q opencv-data ||
		{ apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q opencv-data; }
fi

if [ "$daemon" = true ]; then
	# TCP on loopback, not a Unix socket: serve makes its socket mode 0600,
	# which only one user could reach, and the executors' user depends on
	# YARN's container executor.
	id pixelflight >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin pixelflight
	cat >/etc/systemd/system/pixelflight.service <<EOF
[Unit]
Description=pixelflight sidecar for the Spark executors of this node
After=network-online.target

[Service]
User=pixelflight
ExecStart=$dir/pixelflight serve --listen grpc://127.0.0.1:8815 --log-format json
# SIGTERM drains open streams for up to --drain-timeout (30s).
KillSignal=SIGTERM
TimeoutStopSec=45
Restart=on-failure
NoNewPrivileges=yes

[Install]
WantedBy=multi-user.target
EOF
	systemctl daemon-reload
	systemctl enable --now pixelflight.service
	for _ in $(seq 50); do
		if "$dir/pixelflight" health --endpoint grpc://127.0.0.1:8815 >/dev/null 2>&1; then
			break
		fi
		sleep 0.2
	done
	"$dir/pixelflight" health --endpoint grpc://127.0.0.1:8815
fi
