# pixelflight's image: the sidecar binaries (CPU and CUDA builds), the Spark
# executor plugin jars, OpenCV's Haar cascades, and Java 17 + Python 3 with
# the client, so the same image is the Kubernetes sidecar (spark-conf/k8s)
# and a YARN Docker executor image (spark-conf/emr). It runs on GPU and
# CPU-only nodes alike.
#
# Two ways to build it (`make image` picks docker, podman or buildah):
#   from source, the repository as the context (Go, Maven and the CUDA
#   wheels in build stages; needs Docker Hub's golang and maven images):
#     docker build --build-arg VERSION=$(git describe --always --dirty) -t pixelflight:dev .
#   from what `make build build-cuda plugin` made (CI's way, and `make image`'s):
#     make image            (scripts/image.sh: assembles build/image/context with
#                            prebuilt/ in it, then builds with ARTIFACTS=prebuilt)
# Running it:
#   docker run --rm -v pixelflight-sock:/var/run/pixelflight pixelflight:dev
#       serves grpc+unix:///var/run/pixelflight/pixelflight.sock; other containers
#       mounting the pixelflight-sock volume reach it (as uid 10001: it is mode 0600)
#   docker run --rm pixelflight:dev serve -h          every flag; PIXELFLIGHT_* variables work too
#
# The base images are build arguments, so a builder that cannot pull from
# Docker Hub passes its own (make image does, with buildah: a Debian
# bookworm made by debootstrap, scripts/debootstrap-base.sh). No `# syntax=`
# line: BuildKit's built-in frontend (Docker 23 and later) reads this file,
# where a syntax line would pull a frontend image from Docker Hub.
ARG VERSION=dev
ARG BASE_IMAGE=debian:bookworm-slim
ARG GO_IMAGE=golang:1.26.8-bookworm
ARG MAVEN_IMAGE=maven:3.9.11-eclipse-temurin-17
# source: build the binaries and jars in the stages below; prebuilt: take
# them from the context's prebuilt/ (laid out as in the image), so CI
# reuses what `make build`, `make build-cuda` and `make plugin` made. The
# stages the choice leaves out are not built (BuildKit, Podman, buildah;
# Docker's legacy builder, DOCKER_BUILDKIT=0, builds every stage and
# cannot build this file: RUN --mount needs BuildKit too).
ARG ARTIFACTS=source

# The Go binary: `make build` (bin/pixelflight).
FROM ${GO_IMAGE} AS go
ARG VERSION
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN make build VERSION="${VERSION}"

# The Spark executor plugin: `make plugin` (Maven, JDK 17).
FROM ${MAVEN_IMAGE} AS jvm
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
# serves it. The PTX is rebuilt here, never taken from the context.
# The same wheels give the two libraries pixelflight-cuda opens at run time
# (dlopen, so not NEEDED): cuFFT's libcufft.so.11 and nvJPEG's libnvjpeg.so.12.
FROM ${GO_IMAGE} AS cuda
ARG VERSION
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3 python3-venv \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN rm -f cuda/kernels.ptx && make build-cuda VERSION="${VERSION}" \
 && mkdir -p /out/lib \
 && cp build/cuda-venv/lib/python3*/site-packages/nvidia/cufft/lib/libcufft.so.11 \
       build/cuda-venv/lib/python3*/site-packages/nvidia/nvjpeg/lib/libnvjpeg.so.12 /out/lib/

# The artifacts, laid out as in the image, built here from source...
FROM scratch AS source
COPY --from=go /src/bin/pixelflight /usr/local/bin/pixelflight
COPY --from=cuda /src/bin/pixelflight-cuda /usr/local/bin/pixelflight-cuda
COPY --from=cuda /out/lib/ /opt/pixelflight/cuda/lib/
COPY --from=jvm /src/spark-plugin/target/pixelflight-spark-plugin.jar /opt/pixelflight/pixelflight-spark-plugin.jar
COPY --from=jvm /src/spark-plugin/target/spark3.5/pixelflight-spark-plugin-spark3.5.jar /opt/pixelflight/pixelflight-spark-plugin-spark3.5.jar

# ...or taken from the context: prebuilt/ as scripts/image.sh assembles it
# (the same files, from bin/, spark-plugin/target/ and build/cuda-venv/).
FROM scratch AS prebuilt
COPY prebuilt/ /

FROM ${ARTIFACTS} AS artifacts

# The runtime: Debian 12, as the binaries are built on (glibc 2.36).
# CUDA's libraries: only the two pixelflight-cuda opens (cuFFT, nvJPEG),
# from NVIDIA's pinned PyPI wheels (the ones `make build-cuda` and
# `make cuda-check` use), in /opt/pixelflight/cuda/lib on the loader's path:
# about 300 MB of the image's 1.1 GB, where the nvidia/cuda runtime image as the base would add
# some 3 GB of libraries nothing opens, and a second distribution to keep
# the binaries' glibc in line with. The driver (libcuda.so.1) is the node's,
# mounted by the NVIDIA container toolkit; without one, pixelflight serves
# on the CPU and the CUDA libraries are never opened.
FROM ${BASE_IMAGE}

# serve's default location (and health's): a socket in a directory the
# sidecar's user owns; mount a volume there to share it.
# The NVIDIA container toolkit mounts the GPU's hardware JPEG engines (A100,
# A30, H100), which nvJPEG decodes with, only for the video capability.
ENV JAVA_HOME=/opt/java \
    PIXELFLIGHT_LISTEN=grpc+unix:///var/run/pixelflight/pixelflight.sock \
    NVIDIA_DRIVER_CAPABILITIES=compute,utility,video

# Java 17 and Python 3 so that Spark can run executors in this image (YARN's
# Docker runtime); Debian's opencv-data for detect_faces' cascades;
# libjpeg-turbo and libdeflate, which pixelflight opens at run time.
# (man1: Java's postinst links its man pages there, which slim bases lack.)
# The Python client's runtime pins of python/requirements.txt
# (pyarrow, pandas, numpy; not the test-only ones), in the system python3:
# Spark's executors run the Python the driver names (python3 or
# /usr/bin/python3 by default), so it has to be that one. pyspark is not
# here: YARN ships Spark's jars and pyspark to its containers.
# The pip-cert secret (optional; not kept in the image): a CA bundle for a
# builder whose way to PyPI goes through a TLS-intercepting proxy
# (scripts/image.sh passes the host's PIP_CERT).
COPY python/requirements.txt /tmp/requirements.txt
RUN --mount=type=secret,id=pip-cert \
    if [ -s /run/secrets/pip-cert ]; then export PIP_CERT=/run/secrets/pip-cert; fi \
 && mkdir -p /usr/share/man/man1 \
 && apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      openjdk-17-jre-headless python3 python3-pip opencv-data libturbojpeg0 libdeflate0 ca-certificates \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb /var/log/apt /var/log/dpkg.log \
 && test -f /usr/share/opencv4/haarcascades/haarcascade_frontalface_default.xml \
 && ln -s "$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")" /opt/java \
 && grep -E '^(pyarrow|pandas|numpy)==' /tmp/requirements.txt > /tmp/runtime-pins.txt \
 && python3 -m pip install --no-cache-dir --disable-pip-version-check --break-system-packages \
      -r /tmp/runtime-pins.txt \
 && find /usr/local/lib/python3*/dist-packages -depth -type d -name tests -exec rm -rf {} + \
 && rm -rf /tmp/requirements.txt /tmp/runtime-pins.txt /var/cache/apt/*.bin /var/cache/debconf/*-old \
 && groupadd --gid 10001 pixelflight \
 && useradd --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin pixelflight \
 && install -d -o pixelflight -g pixelflight -m 0700 /var/run/pixelflight

# CUDA's two libraries (they change with the pins only, so before the rest).
COPY --from=artifacts /opt/pixelflight/cuda/lib/ /opt/pixelflight/cuda/lib/
RUN echo /opt/pixelflight/cuda/lib > /etc/ld.so.conf.d/pixelflight-cuda.conf \
 && ldconfig \
 && ldconfig -p | grep -q 'libcufft.so.11 ' \
 && ldconfig -p | grep -q 'libnvjpeg.so.12 '

COPY python /tmp/pixelflight-python
# Built with Debian's setuptools (python3-pip's dependency): no download.
RUN python3 -m pip install --no-cache-dir --disable-pip-version-check --break-system-packages --no-deps \
      --no-build-isolation /tmp/pixelflight-python \
 && rm -rf /tmp/pixelflight-python /root/.cache \
 && python3 -c "import pixelflight, pyarrow.flight, pandas"

COPY --from=artifacts /usr/local/bin/pixelflight /usr/local/bin/pixelflight
# On a node with a usable GPU, `pixelflight serve` (--backend auto) execs
# this one in its place; elsewhere it is never started (see cuda/doc.go).
COPY --from=artifacts /usr/local/bin/pixelflight-cuda /usr/local/bin/pixelflight-cuda
# The plugin jar for Spark 4.x (Scala 2.13) and for Spark 3.5 (Scala 2.12).
COPY --from=artifacts /opt/pixelflight/pixelflight-spark-plugin.jar /opt/pixelflight/pixelflight-spark-plugin.jar
COPY --from=artifacts /opt/pixelflight/pixelflight-spark-plugin-spark3.5.jar /opt/pixelflight/pixelflight-spark-plugin-spark3.5.jar
# Spark's GPU discovery script (spark.executor.resource.gpu.discoveryScript).
COPY --chmod=0755 spark-conf/discover-gpus.sh /opt/pixelflight/discover-gpus.sh
# The entrypoint runs pixelflight, except for a command that exists in the
# image: YARN's Docker runtime starts executors as `docker run IMAGE bash
# launch_container.sh` (no --entrypoint), which must run bash.
COPY --chmod=0755 scripts/docker-entrypoint.sh /usr/local/bin/docker-entrypoint

ARG VERSION
LABEL org.opencontainers.image.title="pixelflight" \
      org.opencontainers.image.description="Image kernels for Apache Spark over Arrow Flight: sidecar, Spark executor plugin, Python client" \
      org.opencontainers.image.source="https://github.com/pixelflight/pixelflight" \
      org.opencontainers.image.version="${VERSION}"
USER 10001:10001

# Docker's probe: the sidecar at $PIXELFLIGHT_LISTEN, or, in a YARN
# executor container, the plugin's (pixelflight.endpoint in the working
# directory). Kubernetes ignores it; the pod template has its own probes.
HEALTHCHECK --interval=30s --timeout=10s --start-period=10s --retries=3 \
    CMD ["pixelflight", "health", "--timeout", "5s"]
ENTRYPOINT ["/usr/local/bin/docker-entrypoint"]
CMD ["serve"]
