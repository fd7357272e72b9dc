#!/usr/bin/env bash
# MirrorMaker 2 between two lab Kafka clusters on 127.0.0.1, for the
# cross-cluster replication tests (internal/lab/mirror.go) and the demo, in
# one JVM started and stopped by PID like the cluster nodes of cluster.sh,
# Kafka 4.1.2's jars from Maven Central. Two modes (MIRROR_LAB_MODE):
#   dedicated  (default) MirrorMaker's dedicated mode
#              (org.apache.kafka.connect.mirror.MirrorMaker,
#              scripts/kafka/mirror-pom.xml): no public REST API;
#   connect    one Kafka Connect distributed worker
#              (org.apache.kafka.connect.cli.ConnectDistributed,
#              scripts/kafka/connect-pom.xml) whose own Kafka is the target,
#              its REST API on http://127.0.0.1:MIRROR_LAB_CONNECT_PORT, and
#              the flow's three connectors created through it
#              (PUT /connectors/<name>/config), named as Strimzi names them:
#              SOURCE->TARGET.MirrorSourceConnector, ...MirrorCheckpointConnector
#              and ...MirrorHeartbeatConnector ('>' is %3E in a URL path).
#
# One flow, SOURCE->TARGET (aliases MIRROR_LAB_SOURCE_ALIAS and
# MIRROR_LAB_TARGET_ALIAS); the reverse flow is disabled. What MirrorMaker
# then does, in either mode, and what the tests look at:
#   * replicates the source topics matching MIRROR_LAB_TOPICS to the target,
#     as SOURCE.<topic> (DefaultReplicationPolicy) or under the same name
#     (MIRROR_LAB_POLICY=identity), record timestamps kept;
#   * writes offset syncs (source offset -> target offset, one per partition
#     at first and whenever the two drift more than offset.lag.max apart) to
#     mm2-offset-syncs.TARGET.internal on the source;
#   * checkpoints the source's consumer groups (every group, MIRROR_LAB_GROUPS)
#     to SOURCE.checkpoints.internal on the target, every second: each group's
#     committed offsets translated to the target's;
#   * emits heartbeats every second into `heartbeats` on the source, and
#     SOURCE->TARGET replicates them to SOURCE.heartbeats on the target (under
#     either policy), which is how the target sees that the flow is alive.
#     Dedicated mode: the disabled TARGET->SOURCE flow still runs its
#     heartbeat connector (MM2's default), and SOURCE->TARGET's own writes
#     `heartbeats` on the target too. Connect mode does what the former
#     does: its MirrorHeartbeatConnector is configured as the reverse flow's
#     (source alias TARGET, target alias SOURCE, producer.override.* to the
#     source), and the target has no `heartbeats` of its own;
#   * keeps the Connect worker state: dedicated mode in
#     mm2-{configs,offsets,status}.<flow source>.internal on each flow's
#     target; Connect mode in mm2-connect-{configs,offsets,status}.
#     SOURCE-TARGET.internal on the target (group mm2-connect-SOURCE-TARGET).
# Every internal topic has replication factor 1, so one-node clusters do
# (MIRROR_LAB_SOURCE_REPLICATION_FACTOR raises it for those on the source).
#
# Usage: scripts/kafka/mirror.sh COMMAND [ARGS]
#   install          fetch the jars of both modes into the cache and compile
#                    MirrorOffsets.java (no-op when cached)
#   start            write the configuration into $MIRROR_LAB_DIR, start the
#                    JVM and wait until it says it started (dedicated), or
#                    until its REST API has accepted the three connectors
#                    (connect); their tasks then still take a few seconds to
#                    replicate. Prints its PID
#   stop             SIGTERM (SIGKILL after MIRROR_LAB_STOP_TIMEOUT seconds),
#                    also when paused; leaves nothing behind
#   pause / resume   SIGSTOP / SIGCONT the JVM: replication, heartbeats and
#                    checkpoints stop while its connections stay open
#   pid              print the JVM's PID (exit 1 if it is not running)
#   status           running, paused or stopped
#   logs             path of the log file
#   translate-offsets GROUP [TIMEOUT_MS]
#                    RemoteClusterUtils.translateOffsets on the target for
#                    GROUP of the source (scripts/kafka/MirrorOffsets.java):
#                    lines "TOPIC<TAB>PARTITION<TAB>OFFSET" of target topics
#   clean            stop and delete $MIRROR_LAB_DIR
#
# Environment (start records what later commands need in mirror.env):
#   MIRROR_LAB_DIR              state dir (default <repo>/.lab/mirror): mm2.properties
#                               (dedicated) or connect.properties and
#                               connectors/*.json (connect),
#                               target-client.properties, mm2.log, pid
#   MIRROR_LAB_MODE             dedicated (default) or connect
#   MIRROR_LAB_CONNECT_PORT     the Connect worker's REST port on 127.0.0.1
#                               (default 8083; connect mode only)
#   MIRROR_LAB_SOURCE_BOOTSTRAP source cluster's bootstrap servers (required by start)
#   MIRROR_LAB_TARGET_BOOTSTRAP target cluster's bootstrap servers (required by start)
#   MIRROR_LAB_SOURCE_ALIAS     default "primary"   } [A-Za-z0-9_-]: the alias is a
#   MIRROR_LAB_TARGET_ALIAS     default "backup"    } topic name prefix
#   MIRROR_LAB_TOPICS           source topics to replicate, comma-separated regexes
#                               (MM2's `topics`), default ".*"; MM2 itself never
#                               replicates internal topics
#   MIRROR_LAB_GROUPS           consumer groups to checkpoint, default ".*"
#   MIRROR_LAB_POLICY           default (DefaultReplicationPolicy) or identity
#                               (IdentityReplicationPolicy)
#   MIRROR_LAB_SEPARATOR        replication.policy.separator ([A-Za-z0-9._-]+);
#                               unset keeps MM2's default ".". It also joins the
#                               parts of the internal topics' names
#   MIRROR_LAB_OFFSET_LAG_MAX   offset.lag.max; unset keeps MM2's default (100)
#   MIRROR_LAB_SOURCE_REPLICATION_FACTOR
#                               replication factor of the topics MM2 creates on the
#                               source (offset syncs, heartbeats, the reverse flow's
#                               worker state), default 1. A source whose
#                               min.insync.replicas is above 1 (the demo's 3-node
#                               cluster, min ISR 2) refuses MM2's acks=all writes to
#                               a topic with fewer replicas: give it 3 there
#   MIRROR_LAB_HEAP             heap flags (default "-Xms64m -Xmx512m")
#   MIRROR_LAB_START_TIMEOUT / MIRROR_LAB_STOP_TIMEOUT  seconds (120 / 15)
#   MIRROR_LAB_OWNER_PID        a watchdog runs `stop` once this process is gone
#                               (the Go lab sets its test binary's PID)
#   FAILOVER_LAB_CACHE          jar cache root (default ~/.cache/failover_exporter)
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/process.sh
source "$SCRIPT_DIR/../lib/process.sh"
# shellcheck source=../lib/java.sh
source "$SCRIPT_DIR/../lib/java.sh"
REPO_ROOT=$(cd "$SCRIPT_DIR/../.." && pwd)

# Keep in step with mirror.version in mirror-pom.xml. MirrorMaker 4.1 replicates
# between any two Kafkas the lab runs (checked: 3.9 -> 4.4 and 4.4 -> 3.9).
MIRROR_VERSION=4.1.2
CACHE_ROOT=${FAILOVER_LAB_CACHE:-${HOME:-/tmp}/.cache/failover_exporter}
MIRROR_HOME=$CACHE_ROOT/kafka-mirror-$MIRROR_VERSION
MIRROR_LIBS=$MIRROR_HOME/libs
MIRROR_CLASSES=$MIRROR_HOME/classes
POM=$SCRIPT_DIR/mirror-pom.xml
HELPER_SRC=$SCRIPT_DIR/MirrorOffsets.java
# Connect mode's jars: MirrorMaker's plus the REST server's, in a cache dir
# of their own so that the dedicated mode keeps loading only what it uses.
CONNECT_HOME=$CACHE_ROOT/kafka-connect-$MIRROR_VERSION
CONNECT_LIBS=$CONNECT_HOME/libs
CONNECT_POM=$SCRIPT_DIR/connect-pom.xml

LAB_DIR=${MIRROR_LAB_DIR:-$REPO_ROOT/.lab/mirror}
# Absolute, because the process is found by the config path on its command line.
LAB_DIR=$(realpath -m -- "$LAB_DIR")
CONF=$LAB_DIR/mm2.properties
CONNECT_CONF=$LAB_DIR/connect.properties
CONNECTORS_DIR=$LAB_DIR/connectors
CLIENT_CONF=$LAB_DIR/target-client.properties
LOGF=$LAB_DIR/mm2.log
PIDFILE=$LAB_DIR/pid
HEAP=${MIRROR_LAB_HEAP:--Xms64m -Xmx512m}
START_TIMEOUT=${MIRROR_LAB_START_TIMEOUT:-120}
STOP_TIMEOUT=${MIRROR_LAB_STOP_TIMEOUT:-15}
MAIN_CLASS=org.apache.kafka.connect.mirror.MirrorMaker
CONNECT_CLASS=org.apache.kafka.connect.cli.ConnectDistributed
MODE=${MIRROR_LAB_MODE:-dedicated}
CONNECT_PORT=${MIRROR_LAB_CONNECT_PORT:-8083}
CONNECT_URL=http://127.0.0.1:$CONNECT_PORT
# The flow's connectors in Connect mode, SOURCE->TARGET.<kind>, in the order
# start creates them: the heartbeats first, so that the source connector's
# first topic scan already finds the source's heartbeats topic.
CONNECTOR_KINDS=(MirrorHeartbeatConnector MirrorSourceConnector MirrorCheckpointConnector)

LOG4J_CONF=$SCRIPT_DIR/log4j2.properties
read -r -a HEAP_OPTS <<<"$HEAP"
# Small heap, no hsperfdata. Unlike the brokers, whose GC pauses would look
# like failures, MirrorMaker carries a test's trickle of records: the C1
# compiler alone and the serial collector leave more of a 2-core machine's
# CPU to the clusters while it starts. The same for both modes: the Connect
# worker's REST server adds threads that mostly sleep.
SERVER_JVM_OPTS=(
  "${HEAP_OPTS[@]}"
  -XX:TieredStopAtLevel=1 -XX:+UseSerialGC
  -XX:+ExitOnOutOfMemoryError -XX:-UsePerfData
  -Djava.awt.headless=true
  "-Dlog4j2.configurationFile=$LOG4J_CONF"
)
# Short-lived tool JVMs (MirrorOffsets).
tool_jvm_opts "$LOG4J_CONF"

log() { printf 'mirror.sh: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# ---------------------------------------------------------------- install ---

pom_hash() { sha256sum <"$1" | cut -d' ' -f1; }
helper_hash() { cat "$HELPER_SRC" "$MIRROR_LIBS/.pom.sha256" | sha256sum | cut -d' ' -f1; }
# libs_cached LIBS POM: LIBS holds what POM lists.
libs_cached() { [[ -f $1/.pom.sha256 && $(cat "$1/.pom.sha256") == "$(pom_hash "$2")" ]]; }
helper_cached() { [[ -f $MIRROR_CLASSES/.sha256 && $(cat "$MIRROR_CLASSES/.sha256") == "$(helper_hash)" ]]; }

# Jars as cluster.sh fetches Kafka's (a lock per cache dir so parallel test
# packages on a fresh machine never see a half-filled dir), then
# MirrorOffsets compiled once with the JDK's javac module (what `java
# File.java` would do on every call). Each mode fetches only its own jars on
# start; `install` fetches both.
cmd_install() {
  install_mirror
  install_connect
}

install_mirror() {
  libs_cached "$MIRROR_LIBS" "$POM" && helper_cached && return 0
  mkdir -p "$MIRROR_HOME"
  exec 9>"$MIRROR_HOME/.install.lock"
  flock 9
  libs_cached "$MIRROR_LIBS" "$POM" || fetch_libs "$POM" "$MIRROR_HOME" "$MIRROR_LIBS" MirrorMaker
  helper_cached || compile_helper
  flock -u 9
  exec 9>&-
}

# The Connect worker also runs translate-offsets' MirrorOffsets, from the
# dedicated mode's cache.
install_connect() {
  install_mirror
  libs_cached "$CONNECT_LIBS" "$CONNECT_POM" && return 0
  mkdir -p "$CONNECT_HOME"
  exec 9>"$CONNECT_HOME/.install.lock"
  flock 9
  libs_cached "$CONNECT_LIBS" "$CONNECT_POM" || fetch_libs "$CONNECT_POM" "$CONNECT_HOME" "$CONNECT_LIBS" "Kafka Connect"
  flock -u 9
  exec 9>&-
}

# fetch_libs POM HOME LIBS WHAT: the runtime jars of POM into LIBS (under
# HOME), whole or not at all.
fetch_libs() {
  local pom=$1 home=$2 libs=$3 what=$4 tmp
  command -v mvn >/dev/null 2>&1 || die "mvn not found: run scripts/install-deps.sh kafka"
  tmp=$(mktemp -d "$home/libs.tmp.XXXXXX")
  log "fetching $what $MIRROR_VERSION jars from Maven Central into $libs"
  if ! mvn_copy_dependencies "$pom" "$tmp" "$tmp.log"; then
    cat "$tmp.log" >&2
    rm -rf "$tmp" "$tmp.log"
    die "maven could not fetch the $what jars"
  fi
  rm -f "$tmp.log"
  pom_hash "$pom" >"$tmp/.pom.sha256"
  rm -rf "$libs"
  mv "$tmp" "$libs"
}

compile_helper() { compile_java "$HELPER_SRC" "$MIRROR_LIBS" "$MIRROR_CLASSES" "$(helper_hash)"; }

# ------------------------------------------------------------- processes ---

# The JVM of this state dir, found by its config path on the command line
# (the pid file first; a scan of /proc when it is lost, so stop leaves
# nothing behind). Guards against PID reuse.
# A java process (not, say, a grep for the same words) whose arguments end in
# "MirrorMaker <this dir>/mm2.properties" or, in Connect mode,
# "ConnectDistributed <this dir>/connect.properties".
is_ours() {
  local args=()
  mapfile -d '' -t args 2>/dev/null <"/proc/$1/cmdline" || return 1
  ((${#args[@]} >= 2)) && [[ ${args[0]##*/} == java ]] || return 1
  [[ ${args[-2]} == "$MAIN_CLASS" && ${args[-1]} == "$CONF" ]] ||
    [[ ${args[-2]} == "$CONNECT_CLASS" && ${args[-1]} == "$CONNECT_CONF" ]]
}

mirror_pid() {
  local pid f
  if [[ -f $PIDFILE ]]; then
    pid=$(<"$PIDFILE")
    if [[ $pid =~ ^[0-9]+$ ]] && pid_alive "$pid" && is_ours "$pid"; then
      echo "$pid"
      return 0
    fi
  fi
  for f in /proc/[0-9]*/cmdline; do
    pid=${f#/proc/}
    pid=${pid%/cmdline}
    is_ours "$pid" && pid_alive "$pid" && { echo "$pid"; return 0; }
  done
  return 1
}

# ---------------------------------------------------------- configuration ---

check_alias() {
  [[ $1 =~ ^[A-Za-z0-9_-]+$ ]] || die "cluster alias must be [A-Za-z0-9_-]+ (it prefixes topic names), got '$1'"
}

# A value for a .properties file: backslashes are escapes there, and a topic
# regex like orders\..* must reach MirrorMaker as written.
prop_value() { printf '%s' "${1//\\/\\\\}"; }

# The knobs both modes share, checked once: sets POLICY_CLASS and SRC_RF.
check_knobs() {
  SRC_RF=${MIRROR_LAB_SOURCE_REPLICATION_FACTOR:-1}
  [[ $SRC_RF =~ ^[1-9][0-9]*$ ]] || die "MIRROR_LAB_SOURCE_REPLICATION_FACTOR must be a positive number, got '$SRC_RF'"
  case ${MIRROR_LAB_POLICY:-default} in
  default) POLICY_CLASS=org.apache.kafka.connect.mirror.DefaultReplicationPolicy ;;
  identity) POLICY_CLASS=org.apache.kafka.connect.mirror.IdentityReplicationPolicy ;;
  *) die "MIRROR_LAB_POLICY must be default or identity, got '$MIRROR_LAB_POLICY'" ;;
  esac
  if [[ -n ${MIRROR_LAB_SEPARATOR:-} && ! $MIRROR_LAB_SEPARATOR =~ ^[A-Za-z0-9._-]+$ ]]; then
    die "MIRROR_LAB_SEPARATOR must be [A-Za-z0-9._-]+ (it is part of topic names), got '$MIRROR_LAB_SEPARATOR'"
  fi
  [[ ${MIRROR_LAB_OFFSET_LAG_MAX:-0} =~ ^[0-9]+$ ]] || die "MIRROR_LAB_OFFSET_LAG_MAX must be a number"
  case $MODE in
  dedicated) ;;
  connect) [[ $CONNECT_PORT =~ ^[0-9]+$ ]] || die "MIRROR_LAB_CONNECT_PORT must be a port number, got '$CONNECT_PORT'" ;;
  *) die "MIRROR_LAB_MODE must be dedicated or connect, got '$MODE'" ;;
  esac
}

write_config() {
  local src=$1 dst=$2
  if [[ $MODE == connect ]]; then
    write_connect_config "$src" "$dst"
  else
    write_dedicated_config "$src" "$dst"
  fi
  # A client of the target, for translate-offsets.
  cat >"$CLIENT_CONF" <<EOF
# Generated by scripts/kafka/mirror.sh for MirrorOffsets.java; rewritten on every start.
bootstrap.servers = $MIRROR_LAB_TARGET_BOOTSTRAP
replication.policy.class = $POLICY_CLASS
EOF
  if [[ -n ${MIRROR_LAB_SEPARATOR:-} ]]; then
    printf 'replication.policy.separator = %s\n' "$MIRROR_LAB_SEPARATOR" >>"$CLIENT_CONF"
  fi
  printf 'SOURCE_ALIAS=%s\nTARGET_ALIAS=%s\nPOLICY=%s\nMODE=%s\nCONNECT_URL=%s\n' \
    "$src" "$dst" "${MIRROR_LAB_POLICY:-default}" "$MODE" "$CONNECT_URL" >"$LAB_DIR/mirror.env"
}

write_dedicated_config() {
  local src=$1 dst=$2
  cat >"$CONF" <<EOF
# Generated by scripts/kafka/mirror.sh; rewritten on every start.
clusters = $src, $dst
$src.bootstrap.servers = $MIRROR_LAB_SOURCE_BOOTSTRAP
$dst.bootstrap.servers = $MIRROR_LAB_TARGET_BOOTSTRAP

# One flow. The reverse one stays disabled, but MirrorMaker still runs its
# heartbeat connector, which writes the source's heartbeats topic.
$src->$dst.enabled = true
$dst->$src.enabled = false
$src->$dst.topics = $(prop_value "${MIRROR_LAB_TOPICS:-.*}")
$src->$dst.groups = $(prop_value "${MIRROR_LAB_GROUPS:-.*}")
replication.policy.class = $POLICY_CLASS
tasks.max = 1

# Seconds, not MirrorMaker's minutes, so tests see heartbeats, checkpoints
# and new topics and groups quickly.
emit.heartbeats.interval.seconds = 1
emit.checkpoints.interval.seconds = 1
refresh.topics.interval.seconds = 2
refresh.groups.interval.seconds = 2
# Checkpoints only: the target's group offsets are the test's to set.
sync.group.offsets.enabled = false
# The lab clusters have no authorizer to read ACLs from.
sync.topic.acls.enabled = false

# Replication factor 1 on the target, so one-node clusters can hold every
# topic; on the source MIRROR_LAB_SOURCE_REPLICATION_FACTOR (default 1): the
# offset syncs, the heartbeats the reverse flow's heartbeat connector writes
# there, and that flow's worker state. The worker settings are per cluster
# (the flow's target): MM2 lets top-level *.storage.* ones override those.
replication.factor = 1
offset-syncs.topic.replication.factor = $SRC_RF
checkpoints.topic.replication.factor = 1
heartbeats.topic.replication.factor = 1
$dst->$src.heartbeats.topic.replication.factor = $SRC_RF
$dst.config.storage.replication.factor = 1
$dst.offset.storage.replication.factor = 1
$dst.status.storage.replication.factor = 1
$src.config.storage.replication.factor = $SRC_RF
$src.offset.storage.replication.factor = $SRC_RF
$src.status.storage.replication.factor = $SRC_RF
# One partition for each worker's offsets and status topics (default 25 and
# 5): fewer partitions for the broker to create and the worker to read before
# it starts.
offset.storage.partitions = 1
status.storage.partitions = 1

# Connect finds its plugins (the Mirror connectors, converters) through
# their ServiceLoader manifests. The default also scans every class on the
# class path by reflection, three times over (the config and each flow's
# worker): 30 s of a 2-core machine's CPU before anything starts.
plugin.discovery = service_load
$src.plugin.discovery = service_load
$dst.plugin.discovery = service_load
EOF
  if [[ -n ${MIRROR_LAB_SEPARATOR:-} ]]; then
    printf '\n# MIRROR_LAB_SEPARATOR\nreplication.policy.separator = %s\n' "$MIRROR_LAB_SEPARATOR" >>"$CONF"
  fi
  if [[ -n ${MIRROR_LAB_OFFSET_LAG_MAX:-} ]]; then
    printf '\n# MIRROR_LAB_OFFSET_LAG_MAX\noffset.lag.max = %s\n' "$MIRROR_LAB_OFFSET_LAG_MAX" >>"$CONF"
  fi
}

# The worker's own settings; the flow's are the connectors' (below).
write_connect_config() {
  local src=$1 dst=$2 state=mm2-connect
  cat >"$CONNECT_CONF" <<EOF
# Generated by scripts/kafka/mirror.sh (MIRROR_LAB_MODE=connect); rewritten on
# every start. A Kafka Connect distributed worker whose own Kafka is the
# target; the flow's connectors are in connectors/*.json.
bootstrap.servers = $MIRROR_LAB_TARGET_BOOTSTRAP
group.id = $state-$src-$dst
# Named per flow, and .internal so that MM2 never replicates them.
config.storage.topic = $state-configs.$src-$dst.internal
offset.storage.topic = $state-offsets.$src-$dst.internal
status.storage.topic = $state-status.$src-$dst.internal
config.storage.replication.factor = 1
offset.storage.replication.factor = 1
status.storage.replication.factor = 1
# One partition each (default 25 and 5): fewer for the broker to create and
# the worker to read before it starts.
offset.storage.partitions = 1
status.storage.partitions = 1

# MirrorMaker copies bytes, as its dedicated mode sets for its workers.
key.converter = org.apache.kafka.connect.converters.ByteArrayConverter
value.converter = org.apache.kafka.connect.converters.ByteArrayConverter
header.converter = org.apache.kafka.connect.converters.ByteArrayConverter

listeners = $CONNECT_URL
rest.advertised.host.name = 127.0.0.1
rest.advertised.port = $CONNECT_PORT

# The heartbeat connector's producer writes to the source
# (producer.override.bootstrap.servers), which the default policy refuses.
connector.client.config.override.policy = All
# A task that restarts (after FAILED, or a config change) resumes from the
# last offsets flushed: every second, not every minute, so that it copies
# again at most a second's records.
offset.flush.interval.ms = 1000
# A worker that lost its group (a SIGSTOP past the session timeout) and
# rejoins gets its connectors back within seconds, not the default 5 minutes
# the group leader waits for a lost worker.
scheduled.rebalance.max.delay.ms = 3000

# Plugins through their ServiceLoader manifests only: scanning every class
# on the class path by reflection costs 30 s of a 2-core machine's CPU.
plugin.discovery = service_load
EOF
  mkdir -p "$CONNECTORS_DIR"
  rm -f "$CONNECTORS_DIR"/*.json
  local kind
  for kind in "${CONNECTOR_KINDS[@]}"; do
    connector_config "$src" "$dst" "$kind" | json_object >"$CONNECTORS_DIR/$kind.json"
  done
}

# connector_config SRC DST KIND: the connector's settings, KEY=VALUE a line:
# what the dedicated mode's mm2.properties says for the flow, per connector.
connector_config() {
  local src=$1 dst=$2 kind=$3
  echo "connector.class=org.apache.kafka.connect.mirror.$kind"
  echo "tasks.max=1"
  echo "replication.policy.class=$POLICY_CLASS"
  [[ -z ${MIRROR_LAB_SEPARATOR:-} ]] || echo "replication.policy.separator=$MIRROR_LAB_SEPARATOR"
  case $kind in
  MirrorHeartbeatConnector)
    # As the dedicated mode's disabled reverse flow: heartbeats land in the
    # source's `heartbeats`, which the source connector replicates to
    # SOURCE.heartbeats on the target. The connector creates the topic on
    # its target cluster; its records go where the worker's producer
    # writes, hence the override.
    echo "source.cluster.alias=$dst"
    echo "target.cluster.alias=$src"
    echo "source.cluster.bootstrap.servers=$MIRROR_LAB_TARGET_BOOTSTRAP"
    echo "target.cluster.bootstrap.servers=$MIRROR_LAB_SOURCE_BOOTSTRAP"
    echo "producer.override.bootstrap.servers=$MIRROR_LAB_SOURCE_BOOTSTRAP"
    echo "emit.heartbeats.interval.seconds=1"
    echo "heartbeats.topic.replication.factor=$SRC_RF"
    return
    ;;
  esac
  echo "source.cluster.alias=$src"
  echo "target.cluster.alias=$dst"
  echo "source.cluster.bootstrap.servers=$MIRROR_LAB_SOURCE_BOOTSTRAP"
  echo "target.cluster.bootstrap.servers=$MIRROR_LAB_TARGET_BOOTSTRAP"
  echo "topics=${MIRROR_LAB_TOPICS:-.*}"
  case $kind in
  MirrorSourceConnector)
    echo "refresh.topics.interval.seconds=2"
    echo "sync.topic.acls.enabled=false"
    echo "replication.factor=1"
    echo "offset-syncs.topic.replication.factor=$SRC_RF"
    [[ -z ${MIRROR_LAB_OFFSET_LAG_MAX:-} ]] || echo "offset.lag.max=$MIRROR_LAB_OFFSET_LAG_MAX"
    ;;
  MirrorCheckpointConnector)
    echo "groups=${MIRROR_LAB_GROUPS:-.*}"
    echo "emit.checkpoints.interval.seconds=1"
    echo "refresh.groups.interval.seconds=2"
    echo "sync.group.offsets.enabled=false"
    echo "checkpoints.topic.replication.factor=1"
    ;;
  esac
}

# json_object: KEY=VALUE lines on stdin as a JSON object of strings. Values
# have no control characters (aliases, addresses, regexes, class names).
json_object() {
  local line sep=''
  printf '{'
  while IFS= read -r line; do
    printf '%s\n  %s: %s' "$sep" "$(json_string "${line%%=*}")" "$(json_string "${line#*=}")"
    sep=,
  done
  printf '\n}\n'
}

json_string() {
  local s=${1//\\/\\\\}
  printf '"%s"' "${s//\"/\\\"}"
}

load_env() {
  [[ -f $LAB_DIR/mirror.env ]] || die "$LAB_DIR has no mirror.env: run start first"
  SOURCE_ALIAS=$(sed -n 's/^SOURCE_ALIAS=//p' "$LAB_DIR/mirror.env")
  TARGET_ALIAS=$(sed -n 's/^TARGET_ALIAS=//p' "$LAB_DIR/mirror.env")
}

# ------------------------------------------------------------ start/stop ---

cmd_start() {
  local src=${MIRROR_LAB_SOURCE_ALIAS:-primary} dst=${MIRROR_LAB_TARGET_ALIAS:-backup}
  local pid off t0=$SECONDS deadline classpath main conf kind
  need_java
  [[ -n ${MIRROR_LAB_SOURCE_BOOTSTRAP:-} && -n ${MIRROR_LAB_TARGET_BOOTSTRAP:-} ]] ||
    die "start needs MIRROR_LAB_SOURCE_BOOTSTRAP and MIRROR_LAB_TARGET_BOOTSTRAP"
  check_alias "$src"
  check_alias "$dst"
  [[ $src != "$dst" ]] || die "source and target aliases are both '$src'"
  check_knobs
  mkdir -p "$LAB_DIR"
  if pid=$(mirror_pid); then die "MirrorMaker of $LAB_DIR already running (pid $pid)"; fi
  if [[ $MODE == connect ]]; then
    install_connect
    classpath=$CONNECT_LIBS/* main=$CONNECT_CLASS conf=$CONNECT_CONF
  else
    install_mirror
    classpath=$MIRROR_LIBS/* main=$MAIN_CLASS conf=$CONF
  fi
  write_config "$src" "$dst"
  # With MIRROR_LAB_OWNER_PID set, `stop` runs once that process is gone.
  start_watchdog mirror-lab-watchdog "${MIRROR_LAB_OWNER_PID:-}" "$LAB_DIR" env MIRROR_LAB_DIR="$LAB_DIR" "$SCRIPT_DIR/mirror.sh" stop
  off=$(stat -c %s "$LOGF" 2>/dev/null || echo 0)
  echo "=== mirror.sh: starting MirrorMaker $src->$dst ($MODE mode) at $(date '+%F %T') ===" >>"$LOGF"
  # nohup and setsid exec in place, so $! is the JVM's PID; own session, so
  # it outlives this script and a Ctrl-C in the caller's terminal.
  nohup setsid java "${SERVER_JVM_OPTS[@]}" -cp "$classpath" \
    "$main" "$conf" >>"$LOGF" 2>&1 </dev/null &
  pid=$!
  echo "$pid" >"$PIDFILE"
  deadline=$((SECONDS + START_TIMEOUT))
  if [[ $MODE == dedicated ]]; then
    # MirrorMaker logs this once both flows' workers run; their connectors
    # then create topics and start tasks on their own.
    wait_until "$pid" "$deadline" logged_since "$off" 'Kafka MirrorMaker started'
    log "MirrorMaker $MIRROR_VERSION $src->$dst started in $((SECONDS - t0))s (pid $pid, log $LOGF)"
  else
    # The REST server answers before the worker has joined its group; until
    # then a PUT gets a 409 (no leader yet) or a refused connection.
    for kind in "${CONNECTOR_KINDS[@]}"; do
      wait_until "$pid" "$deadline" put_connector "$src->$dst.$kind" "$CONNECTORS_DIR/$kind.json"
    done
    log "Kafka Connect $MIRROR_VERSION worker started and the connectors of $src->$dst created in $((SECONDS - t0))s (pid $pid, REST $CONNECT_URL, log $LOGF)"
  fi
  echo "$pid"
}

# wait_until PID DEADLINE CHECK...: run CHECK until it succeeds; if the JVM
# dies or DEADLINE (in $SECONDS) passes first, stop it and fail.
wait_until() {
  local pid=$1 deadline=$2
  shift 2
  until "$@"; do
    if ! pid_alive "$pid" || ((SECONDS >= deadline)); then
      log "MirrorMaker (pid $pid) did not start within ${START_TIMEOUT}s (waiting for: $*${REST_ERROR:+; last answer: $REST_ERROR}); last lines of $LOGF:"
      tail -n 30 "$LOGF" >&2
      cmd_stop
      die "MirrorMaker did not start"
    fi
    sleep 0.2
  done
}

# logged_since OFFSET TEXT: the log has TEXT past byte OFFSET. (grep reads
# from a process substitution: in a pipeline, tail could die of SIGPIPE once
# grep has found the line, and pipefail would say no.)
logged_since() { grep -q "$2" < <(tail -c +$(($1 + 1)) "$LOGF"); }

# put_connector NAME FILE: create or update connector NAME with the config
# in FILE; REST_ERROR says why not.
put_connector() {
  local code body=$LAB_DIR/rest-response
  code=$(curl -sS -o "$body" -w '%{http_code}' --max-time 30 -X PUT \
    -H 'Content-Type: application/json' --data-binary "@$2" \
    "$CONNECT_URL/connectors/$(url_path_name "$1")/config" 2>"$body.err") || code=000
  if [[ $code == 200 || $code == 201 ]]; then
    rm -f "$body" "$body.err"
    return 0
  fi
  REST_ERROR="PUT $1: HTTP $code $(cat "$body" "$body.err" 2>/dev/null | head -c 300)"
  return 1
}

# A connector name in a URL path: the aliases are [A-Za-z0-9_-], so '>' is
# the one character to escape.
url_path_name() { printf '%s' "${1//>/%3E}"; }

cmd_stop() {
  local pid deadline
  [[ -d $LAB_DIR ]] || return 0
  if pid=$(mirror_pid); then
    kill -TERM "$pid" 2>/dev/null || true
    # A paused JVM gets the SIGTERM only once it runs again.
    kill -CONT "$pid" 2>/dev/null || true
    deadline=$((SECONDS + STOP_TIMEOUT))
    while pid_alive "$pid" && ((SECONDS < deadline)); do sleep 0.2; done
    if pid_alive "$pid"; then
      log "pid $pid ignored SIGTERM for ${STOP_TIMEOUT}s; sending SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
      wait_exit "$pid" 10 || die "pid $pid survived SIGKILL"
    fi
    log "stopped MirrorMaker (pid $pid)"
  fi
  rm -f "$PIDFILE"
  stop_watchdog mirror-lab-watchdog "$LAB_DIR"
}

cmd_signal() {
  local pid
  pid=$(mirror_pid) || die "MirrorMaker of $LAB_DIR is not running"
  kill "-$1" "$pid"
}

cmd_status() {
  local pid state
  if pid=$(mirror_pid); then
    state=$(awk '{print $3}' "/proc/$pid/stat")
    if [[ $state == T ]]; then echo "paused pid $pid"; else echo "running pid $pid"; fi
  else
    echo "stopped"
  fi
}

cmd_translate() {
  local group=${1:-} timeout=${2:-10000}
  [[ -n $group ]] || die "usage: translate-offsets GROUP [TIMEOUT_MS]"
  [[ $timeout =~ ^[0-9]+$ ]] || die "TIMEOUT_MS must be a number"
  need_java
  load_env
  install_mirror
  java "${TOOL_JVM_OPTS[@]}" -cp "$MIRROR_CLASSES:$MIRROR_LIBS/*" MirrorOffsets \
    "$CLIENT_CONF" "$SOURCE_ALIAS" "$group" "$timeout"
}

cmd_clean() {
  cmd_stop
  if [[ -d $LAB_DIR ]]; then
    [[ -f $LAB_DIR/mirror.env || -f $CONF ]] || die "$LAB_DIR does not look like a mirror lab dir; not deleting"
    rm -rf "$LAB_DIR"
  fi
}

main() {
  local cmd=${1:-}
  (($# > 0)) && shift
  case $cmd in
  install) need_java; cmd_install ;;
  start) cmd_start ;;
  stop) cmd_stop ;;
  pause) cmd_signal STOP ;;
  resume) cmd_signal CONT ;;
  pid) mirror_pid ;;
  status) cmd_status ;;
  logs) echo "$LOGF" ;;
  translate-offsets) cmd_translate "$@" ;;
  clean) cmd_clean ;;
  -h | --help | help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' ;;
  *) die "unknown command '${cmd}'; see $0 help" ;;
  esac
}

main "$@"
