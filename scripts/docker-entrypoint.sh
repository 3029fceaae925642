#!/bin/sh
# pixelflight's image entrypoint (the Dockerfile copies it to
# /usr/local/bin/docker-entrypoint): `IMAGE serve ...`, `IMAGE health` or
# `IMAGE --help` run pixelflight; `IMAGE bash ...` (or any command on PATH)
# runs that command, as YARN's Docker runtime starts executors
# (`docker run IMAGE bash launch_container.sh`, no --entrypoint).
set -e
if [ "$#" -gt 0 ] && [ "${1#-}" = "$1" ] && command -v "$1" >/dev/null 2>&1; then
	exec "$@"
fi
exec pixelflight "$@"
