#!/usr/bin/env bash
# Runs every fuzz target of the module for a short time each: scripts/fuzz.sh DURATION.
set -euo pipefail
fuzztime=${1:-10s}
status=0
for pkg in $(go list ./...); do
	for target in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
		echo "== $pkg $target ($fuzztime)"
		go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg" || status=1
	done
done
exit $status
