#!/bin/bash
# buildah with this repository's own image store (make image, the image
# test): build/image/storage, apart from the host's containers/storage, so
# nothing here touches another user's images and `make clean` drops it.
# The driver: overlay where the kernel has it (native, root only: layers
# are diffs), else vfs (every layer a full copy: slow and large);
# STORAGE_DRIVER chooses for a new store. Containers run with --isolation chroot (no
# user namespaces or cgroups needed).
#   scripts/buildah.sh images
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)/build/image
mkdir -p "$root/storage" "$root/run"
# A store keeps the driver it was made with: the first call chooses it
# (written whole, once: calls may run side by side), later ones read it.
if [ -z "$(tr -d '[:space:]' <"$root/storage/driver" 2>/dev/null)" ]; then
	driver=${STORAGE_DRIVER:-}
	if [ -z "$driver" ]; then
		if grep -qw overlay /proc/filesystems; then driver=overlay; else driver=vfs; fi
	fi
	tmp=$(mktemp "$root/storage/driver.XXXXXX")
	echo "$driver" >"$tmp"
	mv "$tmp" "$root/storage/driver"
fi
driver=$(cat "$root/storage/driver")
export BUILDAH_ISOLATION=chroot
# In a mount namespace of its own, as rootless buildah always is: the
# store's mounts (overlay's own bind mount, containers' layers) go with the
# process, so nothing stays mounted under build/ (`make clean` removes it).
exec unshare --mount --propagation private buildah --root "$root/storage" --runroot "$root/run" --storage-driver "$driver" "$@"
