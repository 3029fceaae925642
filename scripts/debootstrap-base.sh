#!/bin/bash
# A local stand-in for debian:bookworm-slim, for builders that cannot pull
# from Docker Hub (this repository's CI): `debootstrap --variant=minbase
# bookworm` from Debian's own mirror, packed as OUT/rootfs.tar, then made an
# image named TAG with buildah (FROM scratch + ADD; scripts/buildah.sh's store). The tarball is kept, so
# the root file system is made once; the image is remade from it when
# buildah's storage lacks it.
#   scripts/debootstrap-base.sh build/image-base localhost/pixelflight-base:bookworm
set -euo pipefail
out=${1:?usage: debootstrap-base.sh OUT TAG}
tag=${2:?usage: debootstrap-base.sh OUT TAG}
suite=${SUITE:-bookworm}
mirror=${MIRROR:-http://deb.debian.org/debian}
buildah=("$(dirname "$0")/buildah.sh")

mkdir -p "$out"
out=$(cd "$out" && pwd)
if [ ! -s "$out/rootfs.tar" ]; then
	root=$(mktemp -d "$out/rootfs.XXXXXX")
	trap 'rm -rf "$root"' EXIT
	debootstrap --variant=minbase "$suite" "$root" "$mirror" >"$out/debootstrap.log" 2>&1 \
		|| { tail -20 "$out/debootstrap.log" >&2; exit 1; }
	# What debian:*-slim leaves out: package caches, lists, logs; and, as its
	# dpkg configuration says, the documentation of what is installed later.
	rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/cache/apt/*.bin "$root"/var/lib/apt/lists/* \
		"$root"/var/log/* "$root"/tmp/* "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/*
	printf '%s\n' 'path-exclude /usr/share/doc/*' 'path-include /usr/share/doc/*/copyright' \
		'path-exclude /usr/share/man/*' 'path-exclude /usr/share/info/*' \
		>"$root/etc/dpkg/dpkg.cfg.d/slim"
	printf 'deb %s %s main\ndeb %s %s-updates main\ndeb http://deb.debian.org/debian-security %s-security main\n' \
		"$mirror" "$suite" "$mirror" "$suite" "$suite" >"$root/etc/apt/sources.list"
	tar --numeric-owner -C "$root" -cf "$out/rootfs.tar.tmp" .
	mv "$out/rootfs.tar.tmp" "$out/rootfs.tar"
fi
if ! "${buildah[@]}" inspect --type image "$tag" >/dev/null 2>&1; then
	printf 'FROM scratch\nADD rootfs.tar /\nCMD ["bash"]\n' >"$out/Containerfile"
	"${buildah[@]}" bud -q -f "$out/Containerfile" -t "$tag" "$out" >/dev/null
fi
echo "$tag"
