#!/bin/bash
# `make image`: pixelflight's container image from what `make build`,
# `make build-cuda` and `make plugin` made (the Dockerfile's
# ARTIFACTS=prebuilt), with whichever of docker, podman or buildah is here.
#   scripts/image.sh TAG
# The context is build/image/context, assembled from scratch each time:
# the Dockerfile, the client's tracked sources (python/), the entrypoint
# and the GPU discovery script, and prebuilt/ (the binaries, the plugin
# jars, and libcufft.so.11 and libnvjpeg.so.12 from the pinned CUDA wheels
# in build/cuda-venv) laid out as in the image. Nothing else of the host's
# reaches the build.
# BUILDER=docker|podman|buildah picks one; BASE_IMAGE overrides the
# runtime's base. With buildah (root; chroot isolation; its own store under
# build/image, scripts/buildah.sh) the base is a local Debian bookworm made
# once by debootstrap (scripts/debootstrap-base.sh, kept under
# build/image-base), as Docker Hub may be out of reach.
set -euo pipefail
tag=${1:?usage: image.sh TAG}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
version=${VERSION:-$(git describe --always --dirty 2>/dev/null || echo dev)}
nv=$(ls -d build/cuda-venv/lib/python3*/site-packages/nvidia 2>/dev/null | head -1 || true)
for f in bin/pixelflight bin/pixelflight-cuda \
	spark-plugin/target/pixelflight-spark-plugin.jar \
	spark-plugin/target/spark3.5/pixelflight-spark-plugin-spark3.5.jar \
	"$nv/cufft/lib/libcufft.so.11" "$nv/nvjpeg/lib/libnvjpeg.so.12"; do
	[ -f "$f" ] || { echo "image.sh: $f is missing: make build build-cuda plugin first" >&2; exit 1; }
done

ctx=build/image/context
rm -rf "$ctx"
mkdir -p "$ctx/prebuilt/usr/local/bin" "$ctx/prebuilt/opt/pixelflight/cuda/lib" "$ctx/spark-conf" "$ctx/scripts"
# Hard links where they can be (the same file system): 300 MB of cuFFT.
put() { cp -l "$1" "$2" 2>/dev/null || cp "$1" "$2"; }
put bin/pixelflight "$ctx/prebuilt/usr/local/bin/"
put bin/pixelflight-cuda "$ctx/prebuilt/usr/local/bin/"
put spark-plugin/target/pixelflight-spark-plugin.jar "$ctx/prebuilt/opt/pixelflight/"
put spark-plugin/target/spark3.5/pixelflight-spark-plugin-spark3.5.jar "$ctx/prebuilt/opt/pixelflight/"
put "$nv/cufft/lib/libcufft.so.11" "$ctx/prebuilt/opt/pixelflight/cuda/lib/"
put "$nv/nvjpeg/lib/libnvjpeg.so.12" "$ctx/prebuilt/opt/pixelflight/cuda/lib/"
cp Dockerfile "$ctx/"
cp spark-conf/discover-gpus.sh "$ctx/spark-conf/"
cp scripts/docker-entrypoint.sh "$ctx/scripts/"
# The client: its files in git (a clean clone's), as they are in this tree.
git ls-files -z python | while IFS= read -r -d '' f; do
	[ -f "$f" ] || continue
	mkdir -p "$ctx/$(dirname "$f")" && cp "$f" "$ctx/$f"
done
printf 'Dockerfile\n' >"$ctx/.dockerignore"

builder=${BUILDER:-}
if [ -z "$builder" ]; then
	if command -v docker >/dev/null && docker info >/dev/null 2>&1; then builder=docker
	elif command -v podman >/dev/null; then builder=podman
	elif command -v buildah >/dev/null; then builder=buildah
	else echo "image.sh: no docker (with a running engine), podman or buildah here" >&2; exit 1
	fi
fi
args=(--build-arg ARTIFACTS=prebuilt --build-arg "VERSION=$version" -t "$tag")
[ -n "${BASE_IMAGE:-}" ] && args+=(--build-arg "BASE_IMAGE=$BASE_IMAGE")
# A TLS-intercepting proxy's CA for pip in the build (a secret: not kept).
cert=${PIP_CERT:-}
[ -n "$cert" ] && [ -s "$cert" ] && args+=(--secret "id=pip-cert,src=$cert")
start=$(date +%s)
case $builder in
docker|podman)
	"$builder" build "${args[@]}" "$ctx"
	;;
buildah)
	[ "$(id -u)" = 0 ] || { echo "image.sh: buildah here runs as root (vfs, chroot isolation)" >&2; exit 1; }
	if [ -z "${BASE_IMAGE:-}" ]; then
		base=$(scripts/debootstrap-base.sh build/image-base localhost/pixelflight-base:bookworm)
		args+=(--build-arg "BASE_IMAGE=$base")
	fi
	scripts/buildah.sh bud --layers --pull-never --format docker \
		${QUIET:+-q} "${args[@]}" "$ctx"
	# bud leaves the working container of a stage with no instructions
	# (FROM ${ARTIFACTS} AS artifacts) behind: remove those, and only those.
	scripts/buildah.sh containers -a --format '{{.ContainerName}}' | grep -E -- '-working-container(-[0-9]+)?$' \
		| xargs -r scripts/buildah.sh rm >/dev/null || true
	;;
*) echo "image.sh: BUILDER=$builder: docker, podman or buildah" >&2; exit 1 ;;
esac
echo "image.sh: built $tag with $builder in $(( $(date +%s) - start )) s"
