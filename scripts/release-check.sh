#!/usr/bin/env bash
# Proves the release configuration without publishing anything and without a
# Docker daemon: `goreleaser check`, a snapshot build of the current
# platform's binary, that binary's --version showing the stamped version,
# revision, branch and build date, and the mixin tarball and the Helm chart
# of the before hooks.
#
# Usage: scripts/release-check.sh   (installs goreleaser via scripts/install-deps.sh)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

log() { printf 'release-check: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

scripts/install-deps.sh goreleaser
goreleaser="$(go env GOPATH)/bin/goreleaser"

log "goreleaser check"
"$goreleaser" check

# `build` never touches Docker (images are built only by `release`), so this
# works on machines without a daemon.
# goreleaser reads the commit, branch and date from git, but gives all of them
# up ("none") when `git ls-remote --get-url` fails, as in a clone without
# remotes. Then lend it a remote URL for this process only (through git's
# environment config; nothing is written and the URL is never contacted).
git_env=()
if [[ -z $(git remote) ]]; then
  git_env=(GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=remote.origin.url
    GIT_CONFIG_VALUE_0=https://github.com/failover-exporter/failover_exporter.git)
fi
log "goreleaser build --snapshot --clean --single-target"
env "${git_env[@]}" "$goreleaser" build --snapshot --clean --single-target

mapfile -t bins < <(find dist -type f \( -name failover_exporter -o -name failover_exporter.exe \))
((${#bins[@]} == 1)) || die "want one binary under dist/, found ${#bins[@]}: ${bins[*]}"
bin=${bins[0]}
log "$bin --version"
out=$("$bin" --version 2>&1)
printf '%s\n' "$out"

# failover_exporter, version 0.0.1-SNAPSHOT-1a2b3c4 (branch: main, revision: <sha>)
#   build user:       goreleaser
#   build date:       2026-01-02T03:04:05Z
field() { sed -n "$1" <<<"$out" | head -n1; }
version=$(field 's/.* version \([^ ]*\) (.*/\1/p')
branch=$(field 's/.*(branch: \([^,]*\),.*/\1/p')
revision=$(field 's/.*revision: \([^)]*\)).*/\1/p')
build_date=$(field 's/^ *build date: *\(.*\)$/\1/p')
build_user=$(field 's/^ *build user: *\(.*\)$/\1/p')

bad=()
[[ $version =~ SNAPSHOT ]] || bad+=("version '$version' is not the snapshot version")
[[ -n $branch && $branch != unknown ]] || bad+=("branch '$branch'")
[[ $revision == "$(git rev-parse HEAD)" ]] || bad+=("revision '$revision', HEAD is $(git rev-parse HEAD)")
[[ $build_date =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T ]] || bad+=("build date '$build_date'")
[[ $build_user == goreleaser ]] || bad+=("build user '$build_user'")
((${#bad[@]} == 0)) || die "not stamped: ${bad[*]}"

# The before hook packed the monitoring mixin for release.extra_files.
mixin_tarball="build/mixin/failover_exporter-mixin-$version.tar.gz"
[[ -f $mixin_tarball ]] || die "the before hook wrote no $mixin_tarball: $(ls build/mixin 2>&1)"
# grep reads the whole listing: with -q it could exit first and fail the pipe.
tar -tzf "$mixin_tarball" | grep -x 'failover_exporter-mixin/mixin/mixin.libsonnet' >/dev/null ||
  die "$mixin_tarball lacks failover_exporter-mixin/mixin/mixin.libsonnet"

# The before hook packaged the Helm chart for release.extra_files, versioned
# as the release.
chart_tgz="build/chart/failover-exporter-$version.tgz"
[[ -f $chart_tgz ]] || die "the before hook wrote no $chart_tgz: $(ls build/chart 2>&1)"
# Its files/ is generated (not committed): the rules as prometheus/alerts.yml.
tar -tzf "$chart_tgz" | grep -x 'failover-exporter/files/alerts.yml' >/dev/null ||
  die "$chart_tgz lacks failover-exporter/files/alerts.yml"
tar -xzOf "$chart_tgz" failover-exporter/files/alerts.yml | cmp -s - prometheus/alerts.yml ||
  die "$chart_tgz: files/alerts.yml is not prometheus/alerts.yml"
tar -xzOf "$chart_tgz" failover-exporter/Chart.yaml | grep -x "version: $version" >/dev/null ||
  die "$chart_tgz: Chart.yaml's version is not $version"

# Static (CGO_ENABLED=0): no dynamic section/interpreter on ELF platforms.
if command -v file >/dev/null 2>&1 && file "$bin" | grep -q ELF; then
  file "$bin" | grep -q 'statically linked' || die "$bin is not statically linked: $(file "$bin")"
fi
log "ok: version $version, branch $branch, revision $revision, built $build_date"
