#!/usr/bin/env bash
# mvn.sh ARGS...: mvn -q -B ARGS, its output without terminal escape codes.
# Debian's Maven 3.8.7 writes colour resets (ESC[0m) even in batch mode,
# and reads neither -Dstyle.color=never nor TERM; the exit status is
# Maven's.
set -o pipefail
mvn -q -B "$@" 2>&1 | sed -u 's/\x1b\[[0-9;]*m//g'
