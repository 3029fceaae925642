# syntax=docker/dockerfile:1
#
# pixelflight's image: the sidecar binary, the Spark executor plugin jar,
# OpenCV's Haar cascades, and Java 17 + Python 3 with the client, so the
# same image is the Kubernetes sidecar (spark-conf/k8s) and a YARN Docker
# executor image (spark-conf/emr). It runs on GPU and CPU-only nodes alike.
#
#   docker build --build-arg VERSION=$(git describe --always --dirty) -t pixelflight:dev .
#   docker run --rm -v pixelflight-sock:/var/run/pixelflight pixelflight:dev
#       serves grpc+unix:///var/run/pixelflight/pixelflight.sock; other containers
#       mounting the pixelflight-sock volume reach it (as uid 10001: it is mode 0600)
#   docker run --rm pixelflight:dev serve -h          every flag; PIXELFLIGHT_* variables work too
#
# The binary and the jar are built by the same Makefile targets as CI.

ARG VERSION=dev

# The Go binary: `make build` (bin/pixelflight).
FROM golang:1.26.8-bookworm AS go
ARG VERSION
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN make build VERSION="${VERSION}"

# The Spark executor plugin: `make plugin` (Maven, JDK 17).
FROM maven:3.9.11-eclipse-temurin-17 AS jvm
RUN apt-get update && apt-get install -y --no-install-recommends make && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Makefile ./
COPY scripts/mvn.sh ./scripts/
COPY python/pixelflight/params.json python/pixelflight/outputs.json ./python/pixelflight/
COPY spark-plugin ./spark-plugin
RUN make plugin

# The CUDA build: `make build-cuda` (bin/pixelflight-cuda: -tags cuda, the
# kernels' PTX embedded), exactly as CI checks it. cuda.h, NVRTC and
# ptxas come from NVIDIA's PyPI wheels pinned in cuda/requirements-cuda.txt,
# and a stub libcuda.so.1 made from cuda.h is linked against; at run time
# the node's driver (the NVIDIA container toolkit mounts libcuda.so.1)
# serves it, and it opens the runtime stage's libcufft.so.11 (CUDA 12's
# cuFFT, which runs under CUDA 12 and 13 drivers).
# The PTX is rebuilt here, never taken from the context.
FROM golang:1.26.8-bookworm AS cuda
ARG VERSION
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3 python3-venv \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN rm -f cuda/kernels.ptx && make build-cuda VERSION="${VERSION}"

# The runtime: CUDA's runtime libraries, cuFFT and nvJPEG among them, for
# pixelflight-cuda (unused on CPU-only nodes).
FROM nvidia/cuda:12.9.1-runtime-ubuntu24.04
ARG VERSION
LABEL org.opencontainers.image.title="pixelflight" \
      org.opencontainers.image.description="Image kernels for Apache Spark over Arrow Flight: sidecar, Spark executor plugin, Python client" \
      org.opencontainers.image.source="https://github.com/pixelflight/pixelflight" \
      org.opencontainers.image.version="${VERSION}"

# Java 17 and Python 3 so that Spark can run executors in this image (YARN's
# Docker runtime); Debian/Ubuntu's opencv-data for detect_faces' cascades.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      openjdk-17-jre-headless python3 python3-pip opencv-data libturbojpeg libdeflate0 ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && test -f /usr/share/opencv4/haarcascades/haarcascade_frontalface_default.xml \
 && ln -s "$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")" /opt/java

# The Python client with the runtime pins of python/requirements.txt
# (pyarrow, pandas, numpy; not the test-only ones), in the system python3:
# Spark's executors run the Python the driver names (python3 or
# /usr/bin/python3 by default), so it has to be that one.
COPY python /tmp/pixelflight-python
RUN grep -E '^(pyarrow|pandas|numpy)==' /tmp/pixelflight-python/requirements.txt > /tmp/runtime-pins.txt \
 && python3 -m pip install --no-cache-dir --disable-pip-version-check --break-system-packages \
      -r /tmp/runtime-pins.txt /tmp/pixelflight-python \
 && rm -rf /tmp/pixelflight-python /tmp/runtime-pins.txt \
 && python3 -c "import pixelflight, pyarrow.flight, pandas"

COPY --from=go /src/bin/pixelflight /usr/local/bin/pixelflight
# On a node with a usable GPU, `pixelflight serve` (--backend auto) execs
# this one in its place; elsewhere it is never started (see cuda/doc.go).
COPY --from=cuda /src/bin/pixelflight-cuda /usr/local/bin/pixelflight-cuda
# The plugin jar for Spark 4.x (Scala 2.13) and for Spark 3.5 (Scala 2.12).
COPY --from=jvm /src/spark-plugin/target/pixelflight-spark-plugin.jar /opt/pixelflight/pixelflight-spark-plugin.jar
COPY --from=jvm /src/spark-plugin/target/spark3.5/pixelflight-spark-plugin-spark3.5.jar /opt/pixelflight/pixelflight-spark-plugin-spark3.5.jar
# Spark's GPU discovery script (spark.executor.resource.gpu.discoveryScript).
COPY --chmod=0755 spark-conf/discover-gpus.sh /opt/pixelflight/discover-gpus.sh

# The entrypoint runs pixelflight, except for a command that exists in the
# image: YARN's Docker runtime starts executors as `docker run IMAGE bash
# launch_container.sh` (no --entrypoint), which must run bash.
COPY --chmod=0755 <<'EOF' /usr/local/bin/docker-entrypoint
#!/bin/sh
# pixelflight's image entrypoint: `IMAGE serve ...`, `IMAGE health` or
# `IMAGE --help` run pixelflight; `IMAGE bash ...` (or any command on PATH)
# runs that command.
set -e
if [ "$#" -gt 0 ] && [ "${1#-}" = "$1" ] && command -v "$1" >/dev/null 2>&1; then
	exec "$@"
fi
exec pixelflight "$@"
EOF

# serve's default location (and health's): a socket in a directory the
# sidecar's user owns; mount a volume there to share it.
# The NVIDIA container toolkit mounts the GPU's hardware JPEG engines (A100,
# A30, H100), which nvJPEG decodes with, only for the video capability.
ENV JAVA_HOME=/opt/java \
    PIXELFLIGHT_LISTEN=grpc+unix:///var/run/pixelflight/pixelflight.sock \
    NVIDIA_DRIVER_CAPABILITIES=compute,utility,video

RUN groupadd --gid 10001 pixelflight \
 && useradd --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin pixelflight \
 && install -d -o pixelflight -g pixelflight -m 0755 /var/run/pixelflight \
 && pixelflight version \
 && ldconfig -p | grep -q 'libcufft.so.11 ' \
 && ldconfig -p | grep -q 'libnvjpeg.so.12 '
USER 10001:10001

# Docker's probe: the sidecar at $PIXELFLIGHT_LISTEN, or, in a YARN
# executor container, the plugin's (pixelflight.endpoint in the working
# directory). Kubernetes ignores it; the pod template has its own probes.
HEALTHCHECK --interval=30s --timeout=10s --start-period=10s --retries=3 \
    CMD ["pixelflight", "health", "--timeout", "5s"]
ENTRYPOINT ["/usr/local/bin/docker-entrypoint"]
CMD ["serve"]
