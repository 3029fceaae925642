#!/usr/bin/env bash
# make demo: start the sidecar on a Unix socket, run the PySpark example over
# real images, stop the sidecar. Run from the repository root.
set -euo pipefail
sock="${TMPDIR:-/tmp}/pixelflight-demo-$$.sock"
log=build/demo-sidecar.log
mkdir -p build
bin/pixelflight serve --listen "grpc+unix://$sock" --log-format console 2>"$log" &
pid=$!
stop() {
	kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
	echo "sidecar stopped (log: $log)"
}
trap stop EXIT
export PIXELFLIGHT_ENDPOINT="grpc+unix://$sock"
.venv/bin/python - <<'PY'
import time, sys
from pixelflight import Client
for _ in range(100):
    try:
        with Client() as c:
            if c.health()["status"] == "SERVING":
                print("sidecar serving at", c.endpoint)
                sys.exit(0)
    except Exception:
        time.sleep(0.1)
sys.exit("sidecar did not start: see build/demo-sidecar.log")
PY
.venv/bin/python examples/convolve.py --images build/images --out build/demo-out "$@"
.venv/bin/python examples/blobs.py --images build/images/good
.venv/bin/python examples/faces.py --images build/images/faces --out build/demo-out/faces
