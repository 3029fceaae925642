#!/usr/bin/env bash
# fuzz.sh TIME PKG:FUNC... — runs each Go fuzz target for TIME.
#
# A failure prints the fuzzer's own output. When go test wrote a failing
# input under PKG/testdata/fuzz/FUNC, that input is a finding: it is
# printed, kept for `go test` to replay, and the run fails. A failure that
# recorded no input (a worker killed by the OOM killer, or lost contact with
# the coordinator) is about the machine, not an input; it is retried once,
# and fails the run if it happens again.
set -uo pipefail
GO=${GO:-go}
time=$1
shift
log=
trap 'rm -f "$log"' EXIT
for t in "$@"; do
	pkg=${t%%:*} fn=${t##*:}
	for try in 1 2; do
		echo "fuzz $pkg $fn for $time (try $try)"
		log=$(mktemp)
		before=$(ls "$pkg/testdata/fuzz/$fn" 2>/dev/null)
		if "$GO" test -run='^$' -fuzz="^$fn\$" -fuzztime="$time" -parallel=2 "./$pkg/" >"$log" 2>&1; then
			rm -f "$log"
			break
		fi
		grep -v '^fuzz: elapsed' "$log" | tail -40
		rm -f "$log"
		new=$(comm -13 <(echo "$before") <(ls "$pkg/testdata/fuzz/$fn" 2>/dev/null))
		if [[ -n $new ]]; then
			for f in $new; do
				echo "failing input $pkg/testdata/fuzz/$fn/$f:"
				cat "$pkg/testdata/fuzz/$fn/$f"
			done
			exit 1
		fi
		if [[ $try == 2 ]]; then
			echo "fuzz $pkg $fn failed twice without recording an input" >&2
			exit 1
		fi
		echo "fuzz $pkg $fn failed without recording an input; retrying once" >&2
	done
done
