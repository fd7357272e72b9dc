#!/usr/bin/env bash
# measure-fresh-test.sh [DIR]: times `make test` as a fresh machine runs it.
#
# It clones this repository's HEAD into DIR (default: a new temporary
# directory) and runs `make test` there with every cache the run fills
# empty: Go's build and module caches, GOPATH (so goreleaser is built again),
# the lab's cache of Kafka jars and Valkey wheels (FAILOVER_LAB_CACHE) and
# Maven's local repository (so the jars come from Maven Central again). Only
# Debian's packages, which scripts/install-deps.sh installs once per machine,
# stay installed. It prints the wall time of `make test` on its last line;
# the clone and its caches are removed afterwards unless KEEP=1.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$(mktemp -d /tmp/fresh-make-test.XXXXXX)}
mkdir -p "$dir"
git clone --quiet --no-hardlinks "$repo" "$dir/clone"
rev=$(git -C "$dir/clone" rev-parse --short HEAD)
for d in gocache gomodcache gopath labcache m2; do mkdir -p "$dir/$d"; done
cleanup() {
	if [[ ${KEEP:-0} != 1 ]]; then
		# Go's module cache is read-only on disk.
		chmod -R u+w "$dir" 2>/dev/null || true
		rm -rf "$dir"
	fi
}
trap cleanup EXIT

start=$(date +%s)
rc=0
(
	cd "$dir/clone"
	export GOCACHE=$dir/gocache GOMODCACHE=$dir/gomodcache GOPATH=$dir/gopath \
		FAILOVER_LAB_CACHE=$dir/labcache MAVEN_OPTS="-Dmaven.repo.local=$dir/m2 ${MAVEN_OPTS:-}"
	export PATH=$GOPATH/bin:$PATH
	make test
) || rc=$?
elapsed=$(($(date +%s) - start))
printf 'fresh clone of %s: make test exit %d in %dm%02ds\n' "$rev" "$rc" $((elapsed / 60)) $((elapsed % 60))
exit "$rc"
