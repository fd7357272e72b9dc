#!/usr/bin/env bash
# A real Apache Kafka cluster on 127.0.0.1, for the Go integration tests
# (internal/lab) and the demo: Kafka 4.1 in KRaft mode by default, or another
# version the lab runs (KAFKA_LAB_VERSION), 3.9 also in ZooKeeper mode
# (KAFKA_LAB_MODE).
#
# KRaft: every node is broker and controller at once
# (process.roles=broker,controller), node ids 1..N. Node i (1-based) listens on
#   broker     127.0.0.1:$((KAFKA_LAB_BASE_PORT + i - 1))
#   controller 127.0.0.1:$((KAFKA_LAB_BASE_PORT + 100 + i - 1))
# and keeps everything under $KAFKA_LAB_DIR/node-i/ (server.properties, data/,
# server.log, pid).
# ZooKeeper (3.9 only): nodes are brokers (broker.id i, one of them elected
# controller through ZooKeeper), and one ZooKeeper server, from the jars of
# the same Maven dependencies, listens on 127.0.0.1:$((KAFKA_LAB_BASE_PORT + 100))
# (node 1's controller port) with its state under $KAFKA_LAB_DIR/zookeeper/.
# It is started before the brokers and stopped after them, by PID like them.
#
# Usage: scripts/kafka/cluster.sh COMMAND [ARGS]
#   install          fetch the Kafka jars of KAFKA_LAB_VERSION from Maven Central
#                    (no-op when cached)
#   start            format storage if needed, start all nodes, wait until every
#                    broker is registered and metadata requests work; prints the
#                    bootstrap list on stdout
#   stop             stop all nodes (SIGTERM, wait, SIGKILL), leave nothing behind
#   kill ID          kill -9 node ID
#   stop-node ID     SIGTERM node ID and wait until it is gone
#   start-node ID    start node ID again on its existing storage and wait until
#                    it serves (registered and unfenced)
#   start-controller ID
#                    KRaft, plaintext: start a controller-only node ID
#                    (ID > KAFKA_LAB_NODES, controller port as node ID's),
#                    formatted without joining the voters
#                    (--no-initial-controllers): an observer of the quorum
#                    until `quorum --command-config <its server.properties>
#                    add-controller`; stop and clean stop it with the rest
#   pid ID           print node ID's PID (exit 1 if it is not running)
#   status           one line per node: running or stopped
#   bootstrap        comma-separated broker list
#   logs ID          path of node ID's log file
#   topics ARGS...   Kafka's TopicCommand with --bootstrap-server filled in,
#                    e.g. `cluster.sh topics --describe --topic demo`
#   configs ARGS...  Kafka's ConfigCommand with --bootstrap-server filled in,
#                    e.g. `cluster.sh configs --entity-type brokers
#                    --entity-name 1 --alter --add-config cordoned.log.dirs=DIR`
#   groups ARGS...   Kafka's ConsumerGroupCommand (kafka-consumer-groups.sh)
#                    with --bootstrap-server filled in, e.g. `cluster.sh groups
#                    --describe --group g --state` (names the group's coordinator)
#   offsets ARGS...  Kafka's GetOffsetShell (kafka-get-offsets.sh) with
#                    --bootstrap-server filled in, e.g. `cluster.sh offsets
#                    --topic t --time -5` (the newest tiered offsets, 3.9+)
#   share-groups ARGS...  Kafka's ShareGroupCommand (kafka-share-groups.sh, 4.1+)
#                    with --bootstrap-server filled in, e.g. `cluster.sh share-groups --list`
#   transactions ARGS...  Kafka's TransactionsCommand (kafka-transactions.sh,
#                    3.0+) with --bootstrap-server filled in, e.g.
#                    `cluster.sh transactions describe-producers --topic t --partition 0`
#   topics-batch ARGS... [';;' ARGS...]...
#                    several TopicCommand runs in one JVM (scripts/kafka/TopicsBatch.java),
#                    each with --bootstrap-server filled in; each run's output is
#                    framed by "=== run i" and "=== status i N" lines
#   quorum [ARGS]    Kafka's MetadataQuorumCommand against the controllers,
#                    default `describe --status` (shows the active controller);
#                    KRaft mode only
#   clean            stop and delete $KAFKA_LAB_DIR
#
# Environment:
#   KAFKA_LAB_VERSION    Kafka to run: 3.9, 4.1 (default) or 4.4, or the exact
#                        3.9.1, 4.1.2, 4.4.0; install fetches that version's
#                        jars into its own cache dir
#   KAFKA_LAB_MODE       kraft (default) or zookeeper (Kafka 3.9 only)
#   KAFKA_LAB_DIR        state dir (default <repo>/.lab/kafka)
#   KAFKA_LAB_BASE_PORT  first broker port (default 19092)
#   KAFKA_LAB_NODES      number of nodes (default 3)
#   KAFKA_LAB_HEAP       server heap flags (default "-Xms256m -Xmx512m")
#   KAFKA_LAB_ELR        eligible.leader.replicas.version at format time,
#                        1 (Kafka 4.1 default) or 0; see the ELR note below.
#                        Kafka 3.9 has no ELR: there it must be 0 (its default)
#   KAFKA_LAB_START_TIMEOUT / KAFKA_LAB_STOP_TIMEOUT  seconds (90 / 15)
#   KAFKA_LAB_SECURITY   plaintext (default) or sasl_ssl, recorded at format time.
#                        sasl_ssl: the client listener on the broker port is
#                        SASL_SSL (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512); a
#                        PLAINTEXT listener INTERNAL on
#                        127.0.0.1:$((KAFKA_LAB_BASE_PORT + 200 + i - 1)) carries
#                        broker-to-broker traffic and this script's own tools
#                        (readiness probe, `topics`); the controllers stay
#                        PLAINTEXT. It needs:
#   KAFKA_LAB_TLS_DIR    directory holding server-keystore.pem (PKCS#8 key
#                        followed by its certificate chain) and ca.pem (trusted
#                        for client certificates), as internal/certs writes
#                        them; read in place (ssl.keystore.type=PEM)
#   KAFKA_LAB_USERS_FILE lines "NAME PASSWORD" ([A-Za-z0-9._-]); each user gets
#                        SCRAM-SHA-256 and SCRAM-SHA-512 credentials at format
#                        time (--add-scram) and a PLAIN entry in the listener's
#                        JAAS config
#   KAFKA_LAB_CLIENT_AUTH ssl.client.auth of the client listener: none
#                        (default), requested or required
#   KAFKA_LAB_RACKS      number of racks (default 2): node i gets
#                        broker.rack=rack-$(( (i - 1) % RACKS + 1 )), so with
#                        3 nodes 1 and 3 share rack-1 and 2 is in rack-2
#   KAFKA_LAB_AUTHORIZER 1: enable ACLs (StandardAuthorizer, deny when no ACL
#                        matches); the PLAINTEXT listeners' principal
#                        User:ANONYMOUS is a super user, so brokers, controllers
#                        and tools on INTERNAL work; default 0
#   FAILOVER_LAB_CACHE   jar cache root (default ~/.cache/failover_exporter)
#   KAFKA_LAB_TIERED     1: tiered storage (KIP-405) on, Kafka 4.3 or 4.4 in
#                        KRaft mode: the brokers copy the segments of topics
#                        with remote.storage.enable=true, checking every
#                        second, to the lab's own RemoteStorageManager
#                        (scripts/kafka/LabRemoteStorage.java, compiled into
#                        the version's cache dir on start), which keeps them
#                        in a directory, $KAFKA_LAB_DIR/remote; default 0
#   KAFKA_LAB_TRANSACTION_MAX_TIMEOUT_MS
#                        transaction.max.timeout.ms of every broker (a static
#                        config), e.g. 60000 so that an open transaction counts
#                        as hanging after a minute instead of Kafka's 15;
#                        default: Kafka's
#   KAFKA_LAB_PROXIED    1: a plaintext KRaft cluster gets a second client
#                        listener, PROXIED, on 127.0.0.1:$((KAFKA_LAB_BASE_PORT + 300 + i - 1)),
#                        advertised as 127.0.0.1:$((KAFKA_LAB_BASE_PORT + 400 + i - 1)), where a
#                        test runs a TCP proxy to it: a client bootstrapped
#                        through the proxies reaches every broker through them,
#                        and a test cuts it alone off the cluster; default 0
#
# Port/node/version/mode settings are recorded in $KAFKA_LAB_DIR/lab.env when
# the storage is formatted; later commands on the same dir use the recorded
# values, so `KAFKA_LAB_DIR=x cluster.sh kill 2` works without repeating them.
#
# About Eligible Leader Replicas (ELR, KIP-966). Clusters formatted by Kafka
# 4.1 get eligible.leader.replicas.version=1 (ELR on); we keep that default.
# What it changes for a client, checked on this lab (5 nodes, RF 2 topic,
# min.insync.replicas=2, nodes killed with kill -9):
#   * A replica dropped from an ISR that is already below min ISR goes to the
#     ELR instead of just vanishing: kill leader 4 -> leader 5, ISR [5], ELR [4].
#   * The ISR can become EMPTY. Kill 5 too -> Metadata (what sarama sees):
#     leader -1, ISR [], offline [4 5]; ELR [4 5]. With ELR off
#     (KAFKA_LAB_ELR=0) the same step shows leader -1, ISR [5], the pre-4.1
#     behaviour where the last leader stays in the ISR. So with ELR a client
#     sees ISR sizes from min ISR-1 down to 0, and "leader in ISR" / "ISR
#     never empty" no longer hold for offline partitions.
#   * ELR/LastKnownElr are only in DescribeTopicPartitions (admin API,
#     `cluster.sh topics --describe` prints them), not in the Metadata response.
#   * A kill -9'd replica is dropped from the ELR when it comes back (unclean
#     shutdown, it may have lost unflushed data): restarting 4 left the
#     partition offline; it came back with 5, the last known leader.
#   * The high watermark does not advance while ISR < min ISR ("strict min
#     ISR", per the Kafka 4.x docs): acks=1 writes are accepted but not
#     readable until the ISR grows back (here a latest-offset query answered
#     OFFSET_NOT_AVAILABLE, with ELR on and off); acks=all fails as before.
#   * min.insync.replicas must be set cluster-wide (server.properties here);
#     per-broker dynamic overrides are rejected while ELR is on.
# The tests kill one node of three: ISR 3 -> 2 = min ISR, which ELR does not
# touch, so keeping the default costs nothing. Note that in this combined
# 3-node layout two dead nodes also mean no controller quorum: metadata then
# freezes at its last state (a dead leader stays leader, ISR unchanged), so
# "below min ISR" needs a topic with min.insync.replicas=3 or KAFKA_LAB_NODES=5.
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/process.sh
source "$SCRIPT_DIR/../lib/process.sh"
# shellcheck source=../lib/java.sh
source "$SCRIPT_DIR/../lib/java.sh"
REPO_ROOT=$(cd "$SCRIPT_DIR/../.." && pwd)

# The Kafka versions the lab runs, newest patch of each line that Maven
# Central serves here. Keep DEFAULT_KAFKA_VERSION in step with kafka.version
# in pom.xml, and the list with install-deps.sh (it installs them all).
KAFKA_VERSIONS=(3.9.1 4.1.2 4.3.1 4.4.0)
DEFAULT_KAFKA_VERSION=4.1.2
CACHE_ROOT=${FAILOVER_LAB_CACHE:-${HOME:-/tmp}/.cache/failover_exporter}

LAB_DIR=${KAFKA_LAB_DIR:-$REPO_ROOT/.lab/kafka}
# Absolute, because processes are found by the config path on their command line.
LAB_DIR=$(realpath -m -- "$LAB_DIR")
BASE_PORT=${KAFKA_LAB_BASE_PORT:-19092}
NODES=${KAFKA_LAB_NODES:-3}
MODE=${KAFKA_LAB_MODE:-kraft}
HEAP=${KAFKA_LAB_HEAP:--Xms256m -Xmx512m}
START_TIMEOUT=${KAFKA_LAB_START_TIMEOUT:-90}
STOP_TIMEOUT=${KAFKA_LAB_STOP_TIMEOUT:-15}
SECURITY=${KAFKA_LAB_SECURITY:-plaintext}
TLS_DIR=${KAFKA_LAB_TLS_DIR:-}
USERS_FILE=${KAFKA_LAB_USERS_FILE:-}
CLIENT_AUTH=${KAFKA_LAB_CLIENT_AUTH:-none}
AUTHORIZER=${KAFKA_LAB_AUTHORIZER:-0}
PROXIED=${KAFKA_LAB_PROXIED:-0}
TIERED=${KAFKA_LAB_TIERED:-0}
TXN_MAX_TIMEOUT_MS=${KAFKA_LAB_TRANSACTION_MAX_TIMEOUT_MS:-}
RACKS=${KAFKA_LAB_RACKS:-2}

LOG4J_CONF=$SCRIPT_DIR/log4j2.properties

# Server JVMs. Three of them share 2 cores, so: small heaps, G1 with short
# pauses (long GC pauses would look like failures with the short session
# timeouts below), and no hsperfdata files in /tmp. The C1 compiler only,
# one compiler and one GC thread each: a lab broker serves a few requests a
# second, and C2's compilations were most of a node's start. Measured on the
# 2-core machine, a 3-node cluster from start to ready (twice each): 23-30 s
# and 30-34 s of CPU with the JVM's defaults, 12.5-14.5 s and 14-17 s of CPU
# with these; idle, 5-6 s of CPU per 20 s against 3 s.
read -r -a HEAP_OPTS <<<"$HEAP"
SERVER_JVM_OPTS=(
  "${HEAP_OPTS[@]}"
  -XX:TieredStopAtLevel=1 -XX:CICompilerCount=1
  -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35
  -XX:ParallelGCThreads=1 -XX:ConcGCThreads=1
  -XX:+ExitOnOutOfMemoryError -XX:-UsePerfData
  -Djava.awt.headless=true
  "-Dlog4j2.configurationFile=$LOG4J_CONF"
)
# Short-lived tool JVMs (storage format, TopicCommand, readiness probe).
tool_jvm_opts "$LOG4J_CONF"

log() { printf 'cluster.sh: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# set_version V: pick the Kafka version (major.minor or exact, one of
# KAFKA_VERSIONS) and the paths and tool classes that go with it.
set_version() {
  local want=$1 v
  KAFKA_VERSION=
  for v in "${KAFKA_VERSIONS[@]}"; do
    [[ $v == "$want" || ${v%.*} == "$want" ]] && KAFKA_VERSION=$v
  done
  [[ -n $KAFKA_VERSION ]] || die "KAFKA_LAB_VERSION must be one of ${KAFKA_VERSIONS[*]} (or their major.minor), got '$want'"
  KAFKA_MAJOR=${KAFKA_VERSION%%.*}
  KAFKA_HOME=$CACHE_ROOT/kafka-$KAFKA_VERSION
  KAFKA_LIBS=$KAFKA_HOME/libs
  # LabRemoteStorage compiled against this version's jars (KAFKA_LAB_TIERED).
  # Always on the brokers' class path: a dir that does not exist adds nothing.
  REMOTE_STORAGE_CLASSES=$KAFKA_HOME/lab-remote-storage
  # Moved from core (Scala) to the tools module in 4.0.
  if ((KAFKA_MAJOR >= 4)); then
    BROKER_API_VERSIONS_CMD=org.apache.kafka.tools.BrokerApiVersionsCommand
  else
    BROKER_API_VERSIONS_CMD=kafka.admin.BrokerApiVersionsCommand
  fi
}
set_version "${KAFKA_LAB_VERSION:-$DEFAULT_KAFKA_VERSION}"
# ELR is on by default where it exists (4.x), and 3.9 has none.
if ((KAFKA_MAJOR >= 4)); then ELR=${KAFKA_LAB_ELR:-1}; else ELR=${KAFKA_LAB_ELR:-0}; fi

zookeeper_mode() { [[ $MODE == zookeeper ]]; }

# ---------------------------------------------------------------- install ---

# The pom and the version it is run for.
pom_hash() { { cat "$SCRIPT_DIR/pom.xml"; echo "kafka.version=$KAFKA_VERSION"; } | sha256sum | cut -d' ' -f1; }

# The cache is valid when it was filled from the current pom.xml.
libs_cached() {
  [[ -f $KAFKA_LIBS/.pom.sha256 && $(cat "$KAFKA_LIBS/.pom.sha256") == "$(pom_hash)" ]]
}

cmd_install() {
  libs_cached && return 0
  mkdir -p "$KAFKA_HOME"
  # Several test packages may start clusters at the same time on a fresh
  # machine: serialise the download so nobody sees a half-filled libs dir.
  exec 9>"$KAFKA_HOME/.install.lock"
  flock 9
  if ! libs_cached; then
    command -v mvn >/dev/null 2>&1 || die "mvn not found: run scripts/install-deps.sh kafka"
    local tmp
    tmp=$(mktemp -d "$KAFKA_HOME/libs.tmp.XXXXXX")
    log "fetching Kafka $KAFKA_VERSION jars from Maven Central into $KAFKA_LIBS"
    if ! mvn_copy_dependencies "$SCRIPT_DIR/pom.xml" "$tmp" "$tmp.log" -Dkafka.version="$KAFKA_VERSION"; then
      cat "$tmp.log" >&2
      rm -rf "$tmp" "$tmp.log"
      die "maven could not fetch the Kafka jars"
    fi
    rm -f "$tmp.log"
    pom_hash >"$tmp/.pom.sha256"
    rm -rf "$KAFKA_LIBS"
    mv "$tmp" "$KAFKA_LIBS"
  fi
  flock -u 9
  exec 9>&-
}

REMOTE_STORAGE_SRC=$SCRIPT_DIR/LabRemoteStorage.java

# The source and the jars it was compiled against.
remote_storage_hash() { cat "$REMOTE_STORAGE_SRC" "$KAFKA_LIBS/.pom.sha256" | sha256sum | cut -d' ' -f1; }
remote_storage_cached() {
  [[ -f $REMOTE_STORAGE_CLASSES/.sha256 && $(cat "$REMOTE_STORAGE_CLASSES/.sha256") == "$(remote_storage_hash)" ]]
}

# Compile LabRemoteStorage once per Kafka version (after cmd_install), with
# the JDK's javac module as mirror.sh compiles MirrorOffsets, under the
# install lock so that parallel starts never see a half-written dir.
install_remote_storage() {
  remote_storage_cached && return 0
  exec 9>"$KAFKA_HOME/.install.lock"
  flock 9
  if ! remote_storage_cached; then
    compile_java "$REMOTE_STORAGE_SRC" "$KAFKA_LIBS" "$REMOTE_STORAGE_CLASSES" "$(remote_storage_hash)"
  fi
  flock -u 9
  exec 9>&-
}

# -------------------------------------------------------------- layout ---

broker_port() { echo $((BASE_PORT + $1 - 1)); }
controller_port() { echo $((BASE_PORT + 100 + $1 - 1)); }
internal_port() { echo $((BASE_PORT + 200 + $1 - 1)); }
proxied_listener_port() { echo $((BASE_PORT + 300 + $1 - 1)); }
proxied_port() { echo $((BASE_PORT + 400 + $1 - 1)); }

# The listener lines of a plaintext KRaft node. With KAFKA_LAB_PROXIED=1, a
# second client listener, PROXIED, whose advertised port is a test's TCP
# proxy (proxied_port): a client bootstrapped through the proxies reaches
# every broker through them, and a test cuts that client alone off the
# cluster by cutting the proxies.
plaintext_listeners() {
  local i=$1 b c
  b=$(broker_port "$i") c=$(controller_port "$i")
  if [[ $PROXIED == 1 ]]; then
    echo "listeners=PLAINTEXT://127.0.0.1:$b,PROXIED://127.0.0.1:$(proxied_listener_port "$i"),CONTROLLER://127.0.0.1:$c"
    echo "advertised.listeners=PLAINTEXT://127.0.0.1:$b,PROXIED://127.0.0.1:$(proxied_port "$i"),CONTROLLER://127.0.0.1:$c"
    echo "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,PROXIED:PLAINTEXT,CONTROLLER:PLAINTEXT"
  else
    echo "listeners=PLAINTEXT://127.0.0.1:$b,CONTROLLER://127.0.0.1:$c"
    echo "advertised.listeners=PLAINTEXT://127.0.0.1:$b,CONTROLLER://127.0.0.1:$c"
    echo "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
  fi
}
secure() { [[ $SECURITY == sasl_ssl ]]; }
node_dir() { echo "$LAB_DIR/node-$1"; }
node_conf() { echo "$LAB_DIR/node-$1/server.properties"; }
node_log() { echo "$LAB_DIR/node-$1/server.log"; }
node_pidfile() { echo "$LAB_DIR/node-$1/pid"; }
zk_dir() { echo "$LAB_DIR/zookeeper"; }
zk_conf() { echo "$LAB_DIR/zookeeper/zoo.cfg"; }
zk_log() { echo "$LAB_DIR/zookeeper/zookeeper.log"; }
zk_pidfile() { echo "$LAB_DIR/zookeeper/pid"; }
zk_port() { controller_port 1; }

bootstrap() {
  local i out=()
  for ((i = 1; i <= NODES; i++)); do out+=("127.0.0.1:$(broker_port "$i")"); done
  (IFS=,; echo "${out[*]}")
}

# What this script's own tools connect to: the client listener, or with
# sasl_ssl the PLAINTEXT INTERNAL listener (no client credentials needed).
tool_bootstrap() {
  local i out=()
  secure || { bootstrap; return; }
  for ((i = 1; i <= NODES; i++)); do out+=("127.0.0.1:$(internal_port "$i")"); done
  (IFS=,; echo "${out[*]}")
}

controller_bootstrap() {
  local i out=()
  for ((i = 1; i <= NODES; i++)); do out+=("127.0.0.1:$(controller_port "$i")"); done
  (IFS=,; echo "${out[*]}")
}

# lab.env pins the ports and node count of an existing state dir.
load_lab_env() {
  [[ -f $LAB_DIR/lab.env ]] || return 0
  local base nodes security version mode
  version=$(sed -n 's/^KAFKA_VERSION=//p' "$LAB_DIR/lab.env")
  mode=$(sed -n 's/^MODE=//p' "$LAB_DIR/lab.env")
  # A dir from before versions were recorded is 4.1.2 in KRaft mode.
  version=${version:-4.1.2}
  mode=${mode:-kraft}
  if [[ -n ${KAFKA_LAB_VERSION:-} && $version != "$KAFKA_LAB_VERSION" && ${version%.*} != "$KAFKA_LAB_VERSION" ]] ||
    [[ -n ${KAFKA_LAB_MODE:-} && $KAFKA_LAB_MODE != "$mode" ]]; then
    log "warning: $LAB_DIR was formatted for Kafka $version in $mode mode; using that (run 'clean' to change)"
  fi
  set_version "$version"
  MODE=$mode
  base=$(sed -n 's/^BASE_PORT=//p' "$LAB_DIR/lab.env")
  nodes=$(sed -n 's/^NODES=//p' "$LAB_DIR/lab.env")
  security=$(sed -n 's/^SECURITY=//p' "$LAB_DIR/lab.env")
  security=${security:-plaintext}
  if [[ -n ${KAFKA_LAB_SECURITY:-} && $KAFKA_LAB_SECURITY != "$security" ]]; then
    log "warning: $LAB_DIR was formatted with SECURITY=$security; using that (run 'clean' to change)"
  fi
  SECURITY=$security
  if [[ -n ${KAFKA_LAB_BASE_PORT:-} && $KAFKA_LAB_BASE_PORT != "$base" ]] ||
    [[ -n ${KAFKA_LAB_NODES:-} && $KAFKA_LAB_NODES != "$nodes" ]]; then
    log "warning: $LAB_DIR was formatted with BASE_PORT=$base NODES=$nodes; using those (run 'clean' to change)"
  fi
  BASE_PORT=$base
  NODES=$nodes
}

check_id() {
  if ! [[ ${1:-} =~ ^[0-9]+$ ]] || (($1 < 1 || $1 > NODES)); then
    die "node id must be 1..$NODES, got '${1:-}'"
  fi
}

# ------------------------------------------------------------- processes ---

# The PID in node i's pid file if that process is alive and really is node i
# (its command line names this node's server.properties: guards against PID
# reuse). A zombie counts as dead: whoever reaps orphans here may be slow.
node_pid() {
  local pidfile pid
  pidfile=$(node_pidfile "$1")
  [[ -f $pidfile ]] || return 1
  pid=$(<"$pidfile")
  [[ $pid =~ ^[0-9]+$ ]] && pid_alive "$pid" || return 1
  tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | grep -qF -- "$(node_conf "$1")" || return 1
  echo "$pid"
}

port_open() { (: </dev/tcp/127.0.0.1/"$1") 2>/dev/null; }

# Every server JVM of this state dir, found by its config path, including
# ones whose pid file got lost. Used by stop so that nothing is left behind.
lab_pids() { pids_matching "kafka.Kafka $LAB_DIR/node-"; }

# The ZooKeeper server of this state dir, found the same way.
zk_pids() { pids_matching "ZooKeeperServerMain $(zk_conf)"; }

java_tool() { java "${TOOL_JVM_OPTS[@]}" -cp "$KAFKA_LIBS/*" "$@"; }

# ---------------------------------------------------------- configuration ---

write_config() {
  local i=$1 rf=3 min_isr=2
  # Fewer nodes (KAFKA_LAB_NODES=1 for a quick demo) cannot hold RF 3.
  ((NODES < rf)) && rf=$NODES
  ((rf < min_isr)) && min_isr=$rf
  mkdir -p "$(node_dir "$i")/data"
  if zookeeper_mode; then
    write_zookeeper_broker_config "$i"
  elif secure; then
    write_secure_listeners "$i"
  else
    cat >"$(node_conf "$i")" <<EOF
# Generated by scripts/kafka/cluster.sh; rewritten on every start.
process.roles=broker,controller
node.id=$i
$(plaintext_listeners "$i")
inter.broker.listener.name=PLAINTEXT
EOF
  fi
  if ! zookeeper_mode; then
    cat >>"$(node_conf "$i")" <<EOF
controller.listener.names=CONTROLLER
# Dynamic quorum (KIP-853): the voters are written into the storage at format
# time (--initial-controllers); this list is only for finding them.
controller.quorum.bootstrap.servers=$(controller_bootstrap)
EOF
  fi
  cat >>"$(node_conf "$i")" <<EOF
log.dirs=$(node_dir "$i")/data
broker.rack=rack-$(( (i - 1) % RACKS + 1 ))

# Replication as in production: RF 3, acks=all needs 2 in-sync replicas.
num.partitions=3
default.replication.factor=$rf
min.insync.replicas=$min_isr
offsets.topic.replication.factor=$rf
transaction.state.log.replication.factor=$rf
transaction.state.log.min.isr=$min_isr
share.coordinator.state.topic.replication.factor=$rf
share.coordinator.state.topic.min.isr=$min_isr
# Fewer internal partitions than the default 50: faster first group/txn use
# and less noise in per-partition metrics.
offsets.topic.num.partitions=6
transaction.state.log.num.partitions=6
unclean.leader.election.enable=false
# Tests decide where leaders are; nothing may move them behind their back.
auto.leader.rebalance.enable=false
# Topics exist only when a test or the demo creates them.
auto.create.topics.enable=false
group.initial.rebalance.delay.ms=0
# Timed-out transactions aborted within a second of their timeout, not ten
# (TestKafkaReadCommittedStall waits for one).
transaction.abort.timed.out.transaction.cleanup.interval.ms=1000
$([[ -z $TXN_MAX_TIMEOUT_MS ]] || echo "transaction.max.timeout.ms=$TXN_MAX_TIMEOUT_MS")

# Failure detection in seconds, not the default tens of seconds: the
# controller fences a broker (and moves its leaders) after 3 s without a
# heartbeat; a follower that stops fetching leaves the ISR after 5 s.
broker.session.timeout.ms=3000
broker.heartbeat.interval.ms=500
replica.lag.time.max.ms=5000
# Raft: a follower starts an election after 2 s without hearing from the
# active controller; elections time out after 1 s (Kafka's defaults, stated
# here because the failover timings depend on them).
controller.quorum.fetch.timeout.ms=2000
controller.quorum.election.timeout.ms=1000
controller.quorum.election.backoff.max.ms=1000

# Small footprint: three JVMs on two cores. The log cleaner's dedupe buffer
# defaults to 128 MiB, a quarter of our heap.
num.network.threads=2
num.io.threads=4
num.recovery.threads.per.data.dir=1
log.cleaner.dedupe.buffer.size=16777216
EOF
  if [[ $TIERED == 1 ]]; then
    cat >>"$(node_conf "$i")" <<EOF

# Tiered storage (KAFKA_LAB_TIERED=1): segments of topics with
# remote.storage.enable=true are copied, once rolled, to LabRemoteStorage
# (a directory shared by the nodes, as an object store would be); the
# remote log manager looks for segments to copy every second.
remote.log.storage.system.enable=true
remote.log.storage.manager.class.name=LabRemoteStorage
rsm.config.dir=$LAB_DIR/remote
remote.log.metadata.manager.listener.name=PLAINTEXT
rlmm.config.remote.log.metadata.topic.replication.factor=$rf
rlmm.config.remote.log.metadata.topic.num.partitions=3
remote.log.manager.task.interval.ms=1000
EOF
  fi
}

# The ZooKeeper-mode part of server.properties (Kafka 3.9). A broker's death
# is seen when its ZooKeeper session expires: 4 s here (the server's
# tickTime of 500 ms allows 1 s to 10 s), close to broker.session.timeout.ms
# in KRaft mode. Kafka creates the chroot.
write_zookeeper_broker_config() {
  local i=$1
  cat >"$(node_conf "$i")" <<EOF
# Generated by scripts/kafka/cluster.sh (KAFKA_LAB_MODE=zookeeper); rewritten on every start.
broker.id=$i
zookeeper.connect=127.0.0.1:$(zk_port)/kafka-lab
zookeeper.session.timeout.ms=4000
zookeeper.connection.timeout.ms=10000
listeners=PLAINTEXT://127.0.0.1:$(broker_port "$i")
advertised.listeners=PLAINTEXT://127.0.0.1:$(broker_port "$i")
inter.broker.listener.name=PLAINTEXT
EOF
}

write_zookeeper_config() {
  mkdir -p "$(zk_dir)/data"
  cat >"$(zk_conf)" <<EOF
# Generated by scripts/kafka/cluster.sh; rewritten on every start.
tickTime=500
initLimit=10
syncLimit=5
dataDir=$(zk_dir)/data
clientPortAddress=127.0.0.1
clientPort=$(zk_port)
maxClientCnxns=0
# The admin server needs Jetty, which Kafka's dependencies do not bring.
admin.enableServer=false
EOF
}

# The listener part of server.properties for KAFKA_LAB_SECURITY=sasl_ssl.
# The file holds the PLAIN passwords, so only its owner may read it.
write_secure_listeners() {
  local i=$1 conf plain_users="" name password
  conf=$(node_conf "$i")
  while read -r name password; do
    plain_users+=" user_$name=\"$password\""
  done < <(lab_users)
  (umask 077 && : >"$conf")
  cat >"$conf" <<EOF
# Generated by scripts/kafka/cluster.sh (KAFKA_LAB_SECURITY=sasl_ssl); rewritten on every start.
process.roles=broker,controller
node.id=$i
listeners=CLIENT://127.0.0.1:$(broker_port "$i"),INTERNAL://127.0.0.1:$(internal_port "$i"),CONTROLLER://127.0.0.1:$(controller_port "$i")
advertised.listeners=CLIENT://127.0.0.1:$(broker_port "$i"),INTERNAL://127.0.0.1:$(internal_port "$i"),CONTROLLER://127.0.0.1:$(controller_port "$i")
listener.security.protocol.map=CLIENT:SASL_SSL,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=INTERNAL
# TLS on the client listener straight from PEM files (no JKS/PKCS12).
listener.name.client.ssl.keystore.type=PEM
listener.name.client.ssl.keystore.location=$TLS_DIR/server-keystore.pem
listener.name.client.ssl.truststore.type=PEM
listener.name.client.ssl.truststore.location=$TLS_DIR/ca.pem
listener.name.client.ssl.client.auth=$CLIENT_AUTH
listener.name.client.sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512
# SCRAM credentials live in the metadata log (added at format time); PLAIN
# users are listed here.
listener.name.client.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required$plain_users;
listener.name.client.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.client.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
EOF
  if ((AUTHORIZER == 1)); then
    cat >>"$conf" <<EOF
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
allow.everyone.if.no.acl.found=false
super.users=User:ANONYMOUS
EOF
  fi
}

# Print the "NAME PASSWORD" lines of KAFKA_LAB_USERS_FILE, checked to need
# no quoting in JAAS or --add-scram.
lab_users() {
  local name password extra
  [[ -n $USERS_FILE ]] || return 0
  while read -r name password extra; do
    [[ -z $name || $name == \#* ]] && continue
    [[ $name =~ ^[A-Za-z0-9._-]+$ && $password =~ ^[A-Za-z0-9._-]+$ && -z $extra ]] ||
      die "KAFKA_LAB_USERS_FILE: want lines 'NAME PASSWORD' of [A-Za-z0-9._-]"
    echo "$name $password"
  done <"$USERS_FILE"
}

check_security() {
  case $SECURITY in
  plaintext) return 0 ;;
  sasl_ssl) ;;
  *) die "KAFKA_LAB_SECURITY must be plaintext or sasl_ssl, got '$SECURITY'" ;;
  esac
  [[ -n $TLS_DIR && -f $TLS_DIR/server-keystore.pem && -f $TLS_DIR/ca.pem ]] ||
    die "KAFKA_LAB_SECURITY=sasl_ssl needs KAFKA_LAB_TLS_DIR with server-keystore.pem and ca.pem"
  TLS_DIR=$(realpath -- "$TLS_DIR")
  [[ -z $USERS_FILE || -f $USERS_FILE ]] || die "KAFKA_LAB_USERS_FILE $USERS_FILE not found"
  [[ $CLIENT_AUTH =~ ^(none|requested|required)$ ]] || die "KAFKA_LAB_CLIENT_AUTH must be none, requested or required"
  [[ $AUTHORIZER == 0 || $AUTHORIZER == 1 ]] || die "KAFKA_LAB_AUTHORIZER must be 0 or 1"
}

# A Kafka Uuid as Uuid.randomUuid().toString() makes it: 16 random bytes,
# URL-safe base64 without padding, never starting with '-' (it would read as
# a command line flag). Saves a JVM start per id over `StorageTool random-uuid`.
kafka_uuid() {
  local u
  while :; do
    u=$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n')
    [[ $u != -* ]] && { echo "$u"; return; }
  done
}

# Format every node's storage. Kafka 4.x has no ZooKeeper and no static
# controller.quorum.voters here, so the storage tool insists on one of
# --standalone (one voter), --initial-controllers or --no-initial-controllers.
# For a 3-voter quorum from the start every node gets the same
# --initial-controllers list "id@host:port:directoryId,...", where each
# directoryId is a fresh Uuid that the tool writes into that node's metadata
# log dir (meta.properties). The ELR feature level is pinned explicitly.
format_storage() {
  local cluster_id i voter_list=() voters pids=() rc=0 scram=() name password
  cluster_id=$(kafka_uuid)
  if secure; then
    while read -r name password; do
      scram+=(--add-scram "SCRAM-SHA-256=[name=$name,password=$password]"
        --add-scram "SCRAM-SHA-512=[name=$name,password=$password]")
    done < <(lab_users)
  fi
  for ((i = 1; i <= NODES; i++)); do
    voter_list+=("$i@127.0.0.1:$(controller_port "$i"):$(kafka_uuid)")
  done
  voters=$(IFS=,; echo "${voter_list[*]}")
  # Kafka 3.9 knows no ELR feature (nor the flag to set one).
  local features=()
  ((KAFKA_MAJOR >= 4)) && features=(--feature "eligible.leader.replicas.version=$ELR")
  log "formatting $NODES nodes (Kafka $KAFKA_VERSION, cluster id $cluster_id, ELR version $ELR)"
  # One JVM per node, in parallel: ~2 s instead of ~6 s.
  for ((i = 1; i <= NODES; i++)); do
    java_tool kafka.tools.StorageTool format \
      --config "$(node_conf "$i")" --cluster-id "$cluster_id" \
      --initial-controllers "$voters" \
      "${features[@]+"${features[@]}"}" \
      "${scram[@]+"${scram[@]}"}" \
      >"$(node_dir "$i")/format.log" 2>&1 &
    pids+=($!)
  done
  for i in "${!pids[@]}"; do
    if ! wait "${pids[$i]}"; then
      rc=1
      log "formatting node $((i + 1)) failed:"
      cat "$(node_dir $((i + 1)))/format.log" >&2
    fi
  done
  ((rc == 0)) || die "storage format failed"
  write_lab_env "$cluster_id"
}

write_lab_env() {
  printf 'BASE_PORT=%s\nNODES=%s\nCLUSTER_ID=%s\nELR=%s\nKAFKA_VERSION=%s\nMODE=%s\n' \
    "$BASE_PORT" "$NODES" "$1" "$ELR" "$KAFKA_VERSION" "$MODE" >"$LAB_DIR/lab.env"
  if secure; then echo "SECURITY=$SECURITY" >>"$LAB_DIR/lab.env"; fi
}

# In ZooKeeper mode a broker writes its meta.properties at first start;
# there is nothing to format.
formatted() {
  [[ -f $LAB_DIR/lab.env ]] || return 1
  zookeeper_mode || [[ -f $(node_dir "$1")/data/meta.properties ]]
}

# ------------------------------------------------------------ start/stop ---

# Start node i's JVM detached (own session, so it outlives this script and a
# Ctrl-C in the caller's terminal), appending to its log. Echoes the log size
# before the start, so the readiness check only reads this run's lines.
spawn_node() {
  local i=$1 logf off
  logf=$(node_log "$i")
  off=$(stat -c %s "$logf" 2>/dev/null || echo 0)
  echo "=== cluster.sh: starting node $i at $(date '+%F %T') ===" >>"$logf"
  # nohup and setsid exec in place, so $! is the JVM's PID.
  nohup setsid java "${SERVER_JVM_OPTS[@]}" -cp "$KAFKA_LIBS/*:$REMOTE_STORAGE_CLASSES" \
    kafka.Kafka "$(node_conf "$i")" >>"$logf" 2>&1 </dev/null &
  echo $! >"$(node_pidfile "$i")"
  echo "$off"
}

# A node serves once its broker port accepts connections and it logged
# "Kafka Server started": KafkaRaftServer logs that only after the broker has
# registered with the controller quorum and been unfenced, so it can lead and
# follow partitions. Returns 1 (after printing the log tail) if the JVM died.
node_ready() {
  local i=$1 off=$2 pid
  pid=$(<"$(node_pidfile "$i")")
  if ! pid_alive "$pid"; then
    log "node $i (pid $pid) exited during startup; last lines of $(node_log "$i"):"
    tail -n 30 "$(node_log "$i")" >&2
    return 2
  fi
  port_open "$(broker_port "$i")" || return 1
  # ZooKeeper mode: KafkaServer logs "[KafkaServer id=N] started" once it
  # is registered in ZooKeeper and serves.
  tail -c +$((off + 1)) "$(node_log "$i")" | grep -Eq 'Kafka Server started|\[KafkaServer id=[0-9]+\] started'
}

# Wait for nodes given as "id:offset" pairs.
wait_nodes() {
  local deadline=$((SECONDS + START_TIMEOUT)) pending=("$@") next p rc
  while ((${#pending[@]} > 0)); do
    next=()
    for p in "${pending[@]}"; do
      rc=0
      node_ready "${p%%:*}" "${p#*:}" || rc=$?
      ((rc == 2)) && return 1
      ((rc == 0)) || next+=("$p")
    done
    pending=("${next[@]+"${next[@]}"}")
    ((${#pending[@]} == 0)) && break
    if ((SECONDS >= deadline)); then
      for p in "${pending[@]}"; do
        log "node ${p%%:*} not ready after ${START_TIMEOUT}s; last lines of $(node_log "${p%%:*}"):"
        tail -n 30 "$(node_log "${p%%:*}")" >&2
      done
      return 1
    fi
    sleep 0.2
  done
}

# Ask the cluster itself: a Metadata request must list all N brokers (only
# registered, unfenced brokers are listed). One JVM start per try.
wait_metadata() {
  local deadline=$((SECONDS + START_TIMEOUT)) out n
  while :; do
    out=$(java_tool "$BROKER_API_VERSIONS_CMD" \
      --bootstrap-server "$(tool_bootstrap)" 2>&1) || true
    n=$(grep -c '(id: [0-9]* rack' <<<"$out" || true)
    ((n == NODES)) && return 0
    if ((SECONDS >= deadline)); then
      log "metadata lists $n of $NODES brokers after ${START_TIMEOUT}s:"
      printf '%s\n' "$out" | tail -n 20 >&2
      return 1
    fi
    sleep 0.5
  done
}

ports_free() {
  local i p busy=()
  for ((i = 1; i <= NODES; i++)); do
    for p in "$(broker_port "$i")" "$(controller_port "$i")"; do
      port_open "$p" && busy+=("$p")
    done
    if secure && port_open "$(internal_port "$i")"; then busy+=("$(internal_port "$i")"); fi
  done
  # In ZooKeeper mode node 1's controller port is ZooKeeper's, checked above.
  ((${#busy[@]} == 0)) || die "ports already in use on 127.0.0.1: ${busy[*]} (set KAFKA_LAB_BASE_PORT)"
}

# Start the ZooKeeper server detached, like a node, and wait until its port
# accepts connections (brokers retry their first connection anyway).
start_zookeeper() {
  local pid deadline=$((SECONDS + START_TIMEOUT))
  [[ -z $(zk_pids) ]] || die "ZooKeeper of $LAB_DIR already running"
  write_zookeeper_config
  echo "=== cluster.sh: starting ZooKeeper at $(date '+%F %T') ===" >>"$(zk_log)"
  nohup setsid java -Xms64m -Xmx128m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:-UsePerfData -Djava.awt.headless=true \
    "-Dlog4j2.configurationFile=$LOG4J_CONF" -Dkafka.lab.loglevel=WARN \
    -cp "$KAFKA_LIBS/*" org.apache.zookeeper.server.ZooKeeperServerMain "$(zk_conf)" \
    >>"$(zk_log)" 2>&1 </dev/null &
  pid=$!
  echo "$pid" >"$(zk_pidfile)"
  until port_open "$(zk_port)"; do
    if ! pid_alive "$pid" || ((SECONDS >= deadline)); then
      log "ZooKeeper (pid $pid) did not come up; last lines of $(zk_log):"
      tail -n 30 "$(zk_log)" >&2
      return 1
    fi
    sleep 0.2
  done
  log "ZooKeeper up on 127.0.0.1:$(zk_port) (pid $pid)"
}

check_mode() {
  case $MODE in
  kraft) ;;
  zookeeper)
    ((KAFKA_MAJOR < 4)) || die "Kafka $KAFKA_VERSION has no ZooKeeper mode (KAFKA_LAB_MODE=zookeeper needs KAFKA_LAB_VERSION=3.9)"
    secure && die "KAFKA_LAB_MODE=zookeeper runs PLAINTEXT only"
    ;;
  *) die "KAFKA_LAB_MODE must be kraft or zookeeper, got '$MODE'" ;;
  esac
  ((KAFKA_MAJOR >= 4 || ELR == 0)) || die "Kafka $KAFKA_VERSION has no ELR: KAFKA_LAB_ELR must be 0"
}

# LabRemoteStorage is tried on 4.3 and 4.4 only (the RemoteStorageManager
# interface of their kafka-storage-api jars is the same), both KRaft-only.
check_tiered() {
  case $TIERED in
  0) ;;
  1)
    [[ $KAFKA_VERSION == 4.3.* || $KAFKA_VERSION == 4.4.* ]] ||
      die "KAFKA_LAB_TIERED=1 runs on Kafka 4.3 or 4.4 (where LabRemoteStorage is tested), not $KAFKA_VERSION"
    if zookeeper_mode; then die "KAFKA_LAB_TIERED=1 needs KRaft mode, not KAFKA_LAB_MODE=zookeeper"; fi
    ;;
  *) die "KAFKA_LAB_TIERED must be 0 or 1, got '$TIERED'" ;;
  esac
}

cmd_start() {
  local t0=$SECONDS i waits=() running=()
  need_java
  if ! [[ $NODES =~ ^[0-9]+$ ]] || ((NODES < 1 || NODES > 99)); then
    die "KAFKA_LAB_NODES must be 1..99"
  fi
  [[ $ELR == 0 || $ELR == 1 ]] || die "KAFKA_LAB_ELR must be 0 or 1"
  if [[ -n $TXN_MAX_TIMEOUT_MS ]] && ! [[ $TXN_MAX_TIMEOUT_MS =~ ^[1-9][0-9]{0,9}$ ]]; then
    die "KAFKA_LAB_TRANSACTION_MAX_TIMEOUT_MS must be a number of milliseconds, got '$TXN_MAX_TIMEOUT_MS'"
  fi
  if ! [[ $RACKS =~ ^[0-9]+$ ]] || ((RACKS < 1)); then
    die "KAFKA_LAB_RACKS must be a number of racks, 1 or more"
  fi
  mkdir -p "$LAB_DIR"
  load_lab_env
  check_security
  check_mode
  check_tiered
  cmd_install
  if [[ $TIERED == 1 ]]; then install_remote_storage; fi
  for ((i = 1; i <= NODES; i++)); do
    node_pid "$i" >/dev/null && running+=("$i")
  done
  ((${#running[@]} == 0)) || die "nodes ${running[*]} already running in $LAB_DIR (use stop, or start-node for single nodes)"
  ports_free
  for ((i = 1; i <= NODES; i++)); do write_config "$i"; done
  if zookeeper_mode; then
    [[ -f $LAB_DIR/lab.env ]] || write_lab_env ""
  else
    formatted 1 || format_storage
  fi
  for ((i = 1; i <= NODES; i++)); do
    formatted "$i" || die "node $i storage in $LAB_DIR is not formatted; run clean, then start"
  done
  # With KAFKA_LAB_OWNER_PID set, `stop` runs once that process is gone.
  start_watchdog kafka-lab-watchdog "${KAFKA_LAB_OWNER_PID:-}" "$LAB_DIR" env KAFKA_LAB_DIR="$LAB_DIR" "$SCRIPT_DIR/cluster.sh" stop
  if zookeeper_mode && ! start_zookeeper; then
    cmd_stop
    die "ZooKeeper did not come up"
  fi
  for ((i = 1; i <= NODES; i++)); do
    waits+=("$i:$(spawn_node "$i")")
  done
  log "started $NODES nodes, waiting until they serve"
  if ! wait_nodes "${waits[@]}" || ! wait_metadata; then
    cmd_stop
    die "cluster did not come up (logs in $LAB_DIR/node-*/server.log)"
  fi
  log "Kafka $KAFKA_VERSION ($MODE) up in $((SECONDS - t0))s: $(bootstrap)"
  bootstrap
}

# SIGTERM (controlled shutdown) all PIDs at once, give them STOP_TIMEOUT
# seconds together, then SIGKILL whatever is left. A combined node that has
# lost the controller quorum (e.g. the last one left) can wait minutes for a
# controlled shutdown nobody can approve; the lab does not need that.
terminate() {
  local pid deadline=$((SECONDS + STOP_TIMEOUT)) left=("$@") next
  for pid in "$@"; do kill -TERM "$pid" 2>/dev/null || true; done
  while ((${#left[@]} > 0 && SECONDS < deadline)); do
    next=()
    for pid in "${left[@]}"; do pid_alive "$pid" && next+=("$pid"); done
    left=("${next[@]+"${next[@]}"}")
    ((${#left[@]} > 0)) && sleep 0.2
  done
  for pid in "${left[@]+"${left[@]}"}"; do
    log "pid $pid ignored SIGTERM for ${STOP_TIMEOUT}s; sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
  done
  for pid in "${left[@]+"${left[@]}"}"; do
    wait_exit "$pid" 10 || die "pid $pid survived SIGKILL"
  done
}

cmd_stop() {
  local pids
  [[ -d $LAB_DIR ]] || return 0
  mapfile -t pids < <(lab_pids)
  if ((${#pids[@]} > 0)); then
    terminate "${pids[@]}"
    log "stopped ${#pids[@]} node(s)"
  fi
  # ZooKeeper after the brokers: their controlled shutdown goes through it.
  mapfile -t pids < <(zk_pids)
  if ((${#pids[@]} > 0)); then
    terminate "${pids[@]}"
    log "stopped ZooKeeper"
  fi
  rm -f "$LAB_DIR"/node-*/pid "$(zk_pidfile)"
  stop_watchdog kafka-lab-watchdog "$LAB_DIR"
}

cmd_kill() {
  local pid
  check_id "${1:-}"
  pid=$(node_pid "$1") || die "node $1 is not running"
  kill -KILL "$pid"
  wait_exit "$pid" 10 || die "node $1 (pid $pid) survived SIGKILL"
  rm -f "$(node_pidfile "$1")"
  log "killed node $1 (pid $pid) with SIGKILL"
}

cmd_stop_node() {
  local pid
  check_id "${1:-}"
  pid=$(node_pid "$1") || { log "node $1 is not running"; return 0; }
  terminate "$pid"
  rm -f "$(node_pidfile "$1")"
  log "stopped node $1 (pid $pid)"
}

cmd_start_node() {
  local pid t0=$SECONDS off
  check_id "${1:-}"
  need_java
  if pid=$(node_pid "$1"); then
    log "node $1 already running (pid $pid)"
    return 0
  fi
  formatted "$1" || die "node $1 has no storage in $LAB_DIR; run start first"
  ! port_open "$(broker_port "$1")" || die "port $(broker_port "$1") is taken by another process"
  off=$(spawn_node "$1")
  wait_nodes "$1:$off" || die "node $1 did not come back (log: $(node_log "$1"))"
  log "node $1 serving again after $((SECONDS - t0))s (pid $(<"$(node_pidfile "$1")"))"
}

# A controller-only node outside the voter set (KIP-853), for tests of
# observers that are controllers. Its config is written once; it has no
# broker listener, so it is ready once its controller port accepts
# connections and it logged that it started.
cmd_start_controller() {
  local i=${1:-} pid cluster_id off deadline
  [[ $i =~ ^[0-9]+$ ]] && ((i > NODES && i < 100)) || die "a controller-only node needs an id above the $NODES nodes, got '$i'"
  zookeeper_mode && die "a ZooKeeper-mode cluster has no controller quorum"
  secure && die "start-controller runs on plaintext labs only"
  need_java
  if pid=$(node_pid "$i"); then
    log "controller $i already running (pid $pid)"
    return 0
  fi
  cluster_id=$(sed -n 's/^CLUSTER_ID=//p' "$LAB_DIR/lab.env")
  [[ -n $cluster_id ]] || die "no cluster id in $LAB_DIR/lab.env; run start first"
  ! port_open "$(controller_port "$i")" || die "port $(controller_port "$i") is taken by another process"
  if [[ ! -f $(node_dir "$i")/data/meta.properties ]]; then
    mkdir -p "$(node_dir "$i")/data"
    cat >"$(node_conf "$i")" <<EOF
# Generated by scripts/kafka/cluster.sh start-controller: a controller only,
# not among the initial voters.
process.roles=controller
node.id=$i
listeners=CONTROLLER://127.0.0.1:$(controller_port "$i")
advertised.listeners=CONTROLLER://127.0.0.1:$(controller_port "$i")
listener.security.protocol.map=CONTROLLER:PLAINTEXT
controller.listener.names=CONTROLLER
controller.quorum.bootstrap.servers=$(controller_bootstrap)
log.dirs=$(node_dir "$i")/data
controller.quorum.fetch.timeout.ms=2000
controller.quorum.election.timeout.ms=1000
controller.quorum.election.backoff.max.ms=1000
num.network.threads=2
num.io.threads=2
EOF
    java_tool kafka.tools.StorageTool format --config "$(node_conf "$i")" --cluster-id "$cluster_id" \
      --no-initial-controllers >"$(node_dir "$i")/format.log" 2>&1 ||
      { cat "$(node_dir "$i")/format.log" >&2; die "formatting controller $i failed"; }
  fi
  off=$(spawn_node "$i")
  deadline=$((SECONDS + START_TIMEOUT))
  until port_open "$(controller_port "$i")" &&
    tail -c +$((off + 1)) "$(node_log "$i")" | grep -q 'Kafka Server started'; do
    pid_alive "$(<"$(node_pidfile "$i")")" || { tail -n 30 "$(node_log "$i")" >&2; die "controller $i exited during startup"; }
    ((SECONDS < deadline)) || { tail -n 30 "$(node_log "$i")" >&2; die "controller $i not ready after ${START_TIMEOUT}s"; }
    sleep 0.2
  done
  log "controller $i up (pid $(<"$(node_pidfile "$i")")), observing the quorum"
}

cmd_status() {
  local i pid
  for ((i = 1; i <= NODES; i++)); do
    if pid=$(node_pid "$i"); then
      if zookeeper_mode; then
        echo "node $i running pid $pid broker 127.0.0.1:$(broker_port "$i")"
      else
        echo "node $i running pid $pid broker 127.0.0.1:$(broker_port "$i") controller 127.0.0.1:$(controller_port "$i")"
      fi
    else
      echo "node $i stopped"
    fi
  done
  if zookeeper_mode; then
    if [[ -n $(zk_pids) ]]; then
      echo "zookeeper running pid $(zk_pids) client 127.0.0.1:$(zk_port)"
    else
      echo "zookeeper stopped"
    fi
  fi
}

cmd_clean() {
  cmd_stop
  # Refuse to rm -rf anything that does not look like a lab dir.
  if [[ -d $LAB_DIR ]]; then
    [[ -f $LAB_DIR/lab.env || -d $LAB_DIR/node-1 ]] || die "$LAB_DIR does not look like a Kafka lab dir; not deleting"
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
  kill) load_lab_env; cmd_kill "$@" ;;
  stop-node) load_lab_env; cmd_stop_node "$@" ;;
  start-node) load_lab_env; cmd_start_node "$@" ;;
  start-controller) load_lab_env; cmd_start_controller "$@" ;;
  pid) load_lab_env; check_id "${1:-}"; node_pid "$1" ;;
  status) load_lab_env; cmd_status ;;
  bootstrap) load_lab_env; bootstrap ;;
  logs) load_lab_env; check_id "${1:-}"; node_log "$1" ;;
  topics)
    load_lab_env
    need_java
    cmd_install
    java_tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$(tool_bootstrap)" "$@"
    ;;
  configs)
    load_lab_env
    need_java
    cmd_install
    # Kafka's ConfigCommand moved from core (kafka.admin) to tools in 4.x;
    # a jar's file names are stored uncompressed, so grep finds the class.
    if grep -qs 'org/apache/kafka/tools/ConfigCommand.class' "$KAFKA_LIBS"/kafka-tools-*.jar; then
      java_tool org.apache.kafka.tools.ConfigCommand --bootstrap-server "$(tool_bootstrap)" "$@"
    else
      java_tool kafka.admin.ConfigCommand --bootstrap-server "$(tool_bootstrap)" "$@"
    fi
    ;;
  groups)
    load_lab_env
    need_java
    cmd_install
    # kafka-consumer-groups.sh: in tools since 3.7, as ConfigCommand.
    if grep -qs 'org/apache/kafka/tools/consumer/group/ConsumerGroupCommand.class' "$KAFKA_LIBS"/kafka-tools-*.jar; then
      java_tool org.apache.kafka.tools.consumer.group.ConsumerGroupCommand --bootstrap-server "$(tool_bootstrap)" "$@"
    else
      java_tool kafka.admin.ConsumerGroupCommand --bootstrap-server "$(tool_bootstrap)" "$@"
    fi
    ;;
  share-groups)
    load_lab_env
    need_java
    cmd_install
    grep -qs 'org/apache/kafka/tools/consumer/group/ShareGroupCommand.class' "$KAFKA_LIBS"/kafka-tools-*.jar ||
      die "kafka-share-groups.sh needs Kafka 4.1+, not $KAFKA_VERSION"
    java_tool org.apache.kafka.tools.consumer.group.ShareGroupCommand --bootstrap-server "$(tool_bootstrap)" "$@"
    ;;
  transactions)
    load_lab_env
    need_java
    cmd_install
    java_tool org.apache.kafka.tools.TransactionsCommand --bootstrap-server "$(tool_bootstrap)" "$@"
    ;;
  offsets)
    load_lab_env
    need_java
    cmd_install
    java_tool org.apache.kafka.tools.GetOffsetShell --bootstrap-server "$(tool_bootstrap)" "$@"
    ;;
  topics-batch)
    load_lab_env
    need_java
    cmd_install
    java_tool "$SCRIPT_DIR/TopicsBatch.java" "$(tool_bootstrap)" "$@"
    ;;
  quorum)
    load_lab_env
    need_java
    cmd_install
    (($# > 0)) || set -- describe --status
    zookeeper_mode && die "a ZooKeeper-mode cluster has no controller quorum"
    java_tool org.apache.kafka.tools.MetadataQuorumCommand --bootstrap-controller "$(controller_bootstrap)" "$@"
    ;;
  clean) cmd_clean ;;
  -h | --help | help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' ;;
  *) die "unknown command '${cmd}'; see $0 help" ;;
  esac
}

main "$@"
