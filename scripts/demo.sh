#!/usr/bin/env bash
# The local lab without Docker: a 3-broker KRaft Kafka and a 6-node Redis
# Cluster on 127.0.0.1, a steady acks=all producer and Redis writer, the
# exporter, Prometheus (with the alert rules) and Alertmanager; a
# one-broker Kafka "dr" that MirrorMaker 2 replicates topic demo to (as
# demo.demo), which the exporter reads as the mirrors: flow demo-dr; and a
# Redis Sentinel deployment (a master, two replicas, three sentinels:
# scripts/redis/sentinel.sh), the exporter's sentinel entry demo, where the
# exporter's write canary is the only writer (the demo's producer speaks
# Redis Cluster).
#
# Usage: scripts/demo.sh COMMAND
#   up                  install what is missing, start everything, print where to look
#   kill kafka-leader   kill -9 the broker leading partition 0 of topic demo, then
#                       watch the exporter's /metrics until a new leader is elected
#   kill redis-master   kill -9 a Redis master, then watch until its replica took over
#   kill sentinel-master
#                       kill -9 the master the sentinels name, then watch the exporter's /metrics
#                       until it counts the failover; prints the new master, the failover time
#                       the exporter measured, the writes the canary counted lost and what the
#                       sentinels say
#   kill acked-writes   the seed lesson, with the write canary counting: kill -9 the leader of a
#                       canary partition (Kafka, acks=all, min ISR 2), then cut a Redis master off
#                       its replica, let it acknowledge writes, kill -9 it and let the replica take
#                       over; prints the acknowledged writes each system lost (Kafka 0, Redis some)
#   mirror-stall [SECONDS]
#                       SIGSTOP MirrorMaker for SECONDS (default 30), then SIGCONT: prints
#                       when the exporter calls the flow stalled (heartbeat older than its
#                       stall_after, 10s), what the DR cluster would lack at the end of the
#                       stall (records not replicated, RPO), and how long it takes to catch up
#   mirror-pause        SIGSTOP MirrorMaker and leave it so (the flow stalls)
#   mirror-resume       SIGCONT it (heal does too)
#   heal                start the killed nodes and sentinel processes again, resume a paused MirrorMaker
#   roll                a rolling restart gated by the failure budget: each broker, then each Redis
#                       master (failed over first to the replica the exporter names), one at a time,
#                       asking `failover_exporter safe-to-stop` before each stop and --after-restart
#                       after it; prints the acks=all writes refused and acknowledged writes lost (0)
#   status              what runs
#   ports               every port the demo listens on, what for, and whether it is free
#   down                stop everything `up` started, by PID
#
# `make demo` = up, `make chaos` = kill kafka-leader, `make chaos-sentinel` = kill sentinel-master (its own
# target, so that `make chaos` stays one short failover), `make chaos-writes` = kill acked-writes,
# `make roll` = roll, `make demo-down` = down.
#
# Environment (default ports chosen not to collide with the test suite's, and
# all below the kernel's ephemeral range, 32768-60999 by default: a port in
# that range can be taken by any outgoing connection just before a server binds
# it, as Redis's cluster bus ports at 37000 once were):
#   DEMO_DIR                state, logs and PID files (default <repo>/.lab/demo)
#   DEMO_KAFKA_BASE_PORT    first Kafka broker port (29092-29094; controllers +100: 29192-29194)
#   DEMO_KAFKA_DR_PORT      the DR Kafka's one broker (default DEMO_KAFKA_BASE_PORT+3, 29095;
#                           controller +100: 29195). MirrorMaker itself listens on no port
#   DEMO_REDIS_BASE_PORT    first Redis port (21000-21005; cluster bus +10000: 31000-31005)
#   DEMO_SENTINEL_BASE_PORT first port of the Sentinel deployment (22000-22005): its master,
#                           two replicas, then three sentinels
#   DEMO_EXPORTER_PORT      9877
#   DEMO_PROMETHEUS_PORT    9090
#   DEMO_ALERTMANAGER_PORT  9093
#   DEMO_TIMEOUT            seconds to wait for a failover to show (60)
#   DEMO_EXPORTER_BIN       use this exporter binary instead of building one
#   DEMO_OWNER_PID          if set, a watchdog runs `down` once that process is
#                           gone (the Go test sets it; nothing outlives a failed run)
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib/process.sh
source "$SCRIPT_DIR/lib/process.sh"
REPO_ROOT=$(cd "$SCRIPT_DIR/.." && pwd)
DEMO_DIR=$(realpath -m -- "${DEMO_DIR:-$REPO_ROOT/.lab/demo}")
KAFKA_BASE_PORT=${DEMO_KAFKA_BASE_PORT:-29092}
KAFKA_DR_PORT=${DEMO_KAFKA_DR_PORT:-$((KAFKA_BASE_PORT + 3))}
REDIS_BASE_PORT=${DEMO_REDIS_BASE_PORT:-21000}
SENTINEL_BASE_PORT=${DEMO_SENTINEL_BASE_PORT:-22000}
EXPORTER_PORT=${DEMO_EXPORTER_PORT:-9877}
PROMETHEUS_PORT=${DEMO_PROMETHEUS_PORT:-9090}
ALERTMANAGER_PORT=${DEMO_ALERTMANAGER_PORT:-9093}
TIMEOUT=${DEMO_TIMEOUT:-60}
GO=${GO:-go}

KAFKA=$SCRIPT_DIR/kafka/cluster.sh
MIRROR=$SCRIPT_DIR/kafka/mirror.sh
REDIS=$SCRIPT_DIR/redis/cluster.sh
SENTINEL=$SCRIPT_DIR/redis/sentinel.sh
# The Sentinel deployment's shape (the exporter's entry for it is named demo).
SENTINEL_REPLICAS=2 SENTINEL_COUNT=3
# The mirrors: flow of the exporter's config; its aliases are MirrorMaker's,
# and the clusters' names in that config.
MIRROR_NAME=demo-dr
# The processes this script starts itself, each with $DEMO_DIR/NAME.pid.
SERVICES=(exporter producer prometheus alertmanager)

export KAFKA_LAB_DIR=$DEMO_DIR/kafka KAFKA_LAB_BASE_PORT=$KAFKA_BASE_PORT
export REDIS_LAB_DIR=$DEMO_DIR/redis REDIS_LAB_BASE_PORT=$REDIS_BASE_PORT
export SENTINEL_LAB_DIR=$DEMO_DIR/sentinel SENTINEL_LAB_BASE_PORT=$SENTINEL_BASE_PORT
# The name the sentinels monitor the master by: the lab's default, not
# inherited, as the printed hints and the demo test name it.
SENTINEL_MASTER=mymaster
export SENTINEL_LAB_MASTER_NAME=$SENTINEL_MASTER
# MirrorMaker demo -> dr, topic demo only. The demo cluster has min ISR 2:
# what MirrorMaker creates there (offset syncs, heartbeats) needs RF 3.
export MIRROR_LAB_DIR=$DEMO_DIR/mirror MIRROR_LAB_SOURCE_ALIAS=demo MIRROR_LAB_TARGET_ALIAS=dr
export MIRROR_LAB_TOPICS=demo MIRROR_LAB_POLICY=default MIRROR_LAB_SOURCE_REPLICATION_FACTOR=3
# Its state is thrown away with the demo's: no need to wait 15 s for a
# graceful stop (a loaded machine's MirrorMaker often takes longer).
export MIRROR_LAB_STOP_TIMEOUT=${MIRROR_LAB_STOP_TIMEOUT:-5}
# Demo clusters are not owned by a test binary: never inherit a watchdog owner.
unset KAFKA_LAB_OWNER_PID MIRROR_LAB_OWNER_PID

# The DR cluster: cluster.sh on its own state dir and port.
kafka_dr() { KAFKA_LAB_DIR=$DEMO_DIR/kafka-dr KAFKA_LAB_BASE_PORT=$KAFKA_DR_PORT KAFKA_LAB_NODES=1 "$KAFKA" "$@"; }

log() { printf 'demo: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

metrics_url() { echo "http://127.0.0.1:$EXPORTER_PORT/metrics"; }
kafka_bootstrap() { echo "127.0.0.1:$KAFKA_BASE_PORT,127.0.0.1:$((KAFKA_BASE_PORT + 1)),127.0.0.1:$((KAFKA_BASE_PORT + 2))"; }
kafka_dr_bootstrap() { echo "127.0.0.1:$KAFKA_DR_PORT"; }
MIRROR_LAB_SOURCE_BOOTSTRAP=$(kafka_bootstrap)
MIRROR_LAB_TARGET_BOOTSTRAP=$(kafka_dr_bootstrap)
export MIRROR_LAB_SOURCE_BOOTSTRAP MIRROR_LAB_TARGET_BOOTSTRAP
redis_addrs() {
	local p out=()
	for ((p = REDIS_BASE_PORT; p < REDIS_BASE_PORT + 6; p++)); do out+=("127.0.0.1:$p"); done
	(IFS=,; echo "${out[*]}")
}
# The Sentinel deployment's sentinels, "127.0.0.1:PORT,...", after its data nodes.
sentinel_addrs() {
	local p out=()
	for ((p = SENTINEL_BASE_PORT + SENTINEL_REPLICAS + 1; p <= SENTINEL_BASE_PORT + SENTINEL_REPLICAS + SENTINEL_COUNT; p++)); do
		out+=("127.0.0.1:$p")
	done
	(IFS=,; echo "${out[*]}")
}

# ------------------------------------------------------------ processes ---

# PID of service NAME if its pid file names a live process started from
# $DEMO_DIR (guards against PID reuse).
service_pid() {
	local pidfile=$DEMO_DIR/$1.pid pid
	[[ -f $pidfile ]] || return 1
	pid=$(<"$pidfile")
	[[ $pid =~ ^[0-9]+$ ]] && pid_alive "$pid" || return 1
	tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$DEMO_DIR" || return 1
	echo "$pid"
}

# spawn NAME CMD...: run detached (own session, survives this script), log to
# $DEMO_DIR/NAME.log, PID to $DEMO_DIR/NAME.pid.
spawn() {
	local name=$1
	shift
	nohup setsid "$@" >>"$DEMO_DIR/$name.log" 2>&1 </dev/null &
	echo $! >"$DEMO_DIR/$name.pid"
}

# stop_pid PID: SIGTERM, SIGKILL after 10 s; fails if the process is still
# there after that.
stop_pid() {
	local pid=$1 i
	kill -TERM "$pid" 2>/dev/null || return 0
	for ((i = 0; i < 100; i++)); do
		pid_alive "$pid" || return 0
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
	for ((i = 0; i < 50; i++)); do
		pid_alive "$pid" || return 0
		sleep 0.1
	done
	return 1
}

wait_http() {
	local url=$1 what=$2 deadline=$((SECONDS + ${3:-60}))
	until curl -fsS -o /dev/null --max-time 2 "$url" 2>/dev/null; do
		((SECONDS < deadline)) || die "$what did not answer at $url (log: $DEMO_DIR/${4:-$what}.log)"
		sleep 0.2
	done
}

port_open() { (: </dev/tcp/127.0.0.1/"$1") 2>/dev/null; }

# ---------------------------------------------------------------- ports ---

# demo_ports: one line per port the demo listens on: "PORT VARIABLE WHAT",
# VARIABLE being the setting that moves it.
demo_ports() {
	local i p
	for ((i = 1; i <= 3; i++)); do
		echo "$((KAFKA_BASE_PORT + i - 1)) DEMO_KAFKA_BASE_PORT Kafka broker $i"
		echo "$((KAFKA_BASE_PORT + 100 + i - 1)) DEMO_KAFKA_BASE_PORT Kafka controller $i"
	done
	echo "$KAFKA_DR_PORT DEMO_KAFKA_DR_PORT Kafka DR broker"
	echo "$((KAFKA_DR_PORT + 100)) DEMO_KAFKA_DR_PORT Kafka DR controller"
	for ((p = REDIS_BASE_PORT; p < REDIS_BASE_PORT + 6; p++)); do
		echo "$p DEMO_REDIS_BASE_PORT Redis node $p"
		echo "$((p + 10000)) DEMO_REDIS_BASE_PORT Redis node $p cluster bus"
	done
	for ((p = SENTINEL_BASE_PORT; p <= SENTINEL_BASE_PORT + SENTINEL_REPLICAS + SENTINEL_COUNT; p++)); do
		# The first data node starts as the master; failovers move it.
		if ((p <= SENTINEL_BASE_PORT + SENTINEL_REPLICAS)); then
			echo "$p DEMO_SENTINEL_BASE_PORT Sentinel data node $p"
		else
			echo "$p DEMO_SENTINEL_BASE_PORT sentinel $p"
		fi
	done
	echo "$EXPORTER_PORT DEMO_EXPORTER_PORT exporter"
	echo "$PROMETHEUS_PORT DEMO_PROMETHEUS_PORT Prometheus"
	echo "$ALERTMANAGER_PORT DEMO_ALERTMANAGER_PORT Alertmanager"
}

# The kernel's ephemeral port range, "LOW HIGH".
ephemeral_range() {
	local low high
	if read -r low high </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null && [[ $low =~ ^[0-9]+$ && $high =~ ^[0-9]+$ ]]; then
		echo "$low $high"
	else
		echo "32768 60999"
	fi
}

# processes_of SS_LINE: "redis-server (pid 12)" for each process ss -p names.
processes_of() {
	grep -o '"[^"]*",pid=[0-9]*' <<<"$1" | sed 's/^"\(.*\)",pid=\(.*\)$/\1 (pid \2)/' | sort -u | paste -sd, - | sed 's/,/, /g'
}

# port_holder PORT EPHEMERAL: what holds TCP port PORT on this machine, empty
# if nothing does. A listener on any address takes it; so does, for a port
# in the ephemeral range (EPHEMERAL=1), an outgoing connection that got it
# as its local port. ss -p names the process when it may.
port_holder() {
	local port=$1 ephemeral=$2 line procs
	if ! command -v ss >/dev/null 2>&1; then
		port_open "$port" && echo "something listens on 127.0.0.1:$port (install iproute2 for ss to see what)"
		return 0
	fi
	line=$(ss -Hltnp "( sport = :$port )" 2>/dev/null | head -1)
	if [[ -n $line ]]; then
		procs=$(processes_of "$line")
		echo "listening on $(awk '{print $4}' <<<"$line")${procs:+ by $procs}"
		return 0
	fi
	((ephemeral)) || return 0
	line=$(ss -Htnp state established state syn-sent "( sport = :$port )" 2>/dev/null | head -1)
	if [[ -n $line ]]; then
		procs=$(processes_of "$line")
		echo "local port of the connection $(awk '{print $(NF-2) " -> " $(NF-1)}' <<<"$line")${procs:+ of $procs}"
	fi
	return 0
}

# check_ports [--list]: fails, naming each taken port, what the demo wants
# it for and what holds it, if any port the demo listens on is in use; warns
# about ports in the kernel's ephemeral range. --list prints every port.
check_ports() {
	local list=${1:-} low high port var what holder ephemeral busy=0 line
	read -r low high < <(ephemeral_range)
	while read -r port var what; do
		ephemeral=0
		if ((port >= low && port <= high)); then
			ephemeral=1
			log "warning: port $port ($what) is in the kernel's ephemeral range $low-$high: an outgoing connection can take it just before it is bound; set $var to move it below $low"
		fi
		holder=$(port_holder "$port" "$ephemeral")
		if [[ -n $holder ]]; then
			busy=1
			line="port $port for $what is in use: $holder (stop it, or set $var)"
			[[ -n $list ]] || log "error: $line"
		fi
		if [[ -n $list ]]; then
			# (${holder:-free} alone would print the holder twice.)
			printf '%-6s %-30s %s\n' "$port" "$what" "${holder:+in use: $holder}$([[ -n $holder ]] || echo free)"
		fi
	done < <(demo_ports)
	((busy == 0))
}

# -------------------------------------------------------------- metrics ---

scrape() { curl -fsS --max-time 3 "$(metrics_url)" 2>/dev/null || true; }

# values TEXT NAME [LABEL=VALUE...]: the value of each series of NAME whose
# labels include every LABEL="VALUE", one a line.
values() {
	local text=$1 name=$2
	shift 2
	awk -v name="$name" -v want="$*" '
		BEGIN { n = split(want, w, " ") }
		{
			split($0, nv, /[{ ]/)
			if (nv[1] != name) next
			for (i = 1; i <= n; i++) {
				split(w[i], kv, "=")
				if (index($0, kv[1] "=\"" kv[2] "\"") == 0) next
			}
			print $NF
		}' <<<"$text"
}

# metric TEXT NAME [LABEL=VALUE...]: value of the first matching series
# (values); empty if none. awk reads every line: no early exit to break
# the pipe under pipefail.
metric() { values "$@" | awk 'NR == 1'; }

# total TEXT NAME [LABEL=VALUE...]: sum of the matching series (values);
# 0 if none.
total() { values "$@" | awk '{ sum += $1 } END { printf "%d\n", sum }'; }

# series TEXT NAME: "labels value" lines of every series of NAME.
series() { grep -E "^$2(\{| )" <<<"$1" || true; }

label() { sed -n "s/.*[{,]$2=\"\([^\"]*\)\".*/\1/p" <<<"$1"; }

# ------------------------------------------------------------------- up ---

ensure_deps() {
	local missing=()
	command -v java >/dev/null 2>&1 && command -v mvn >/dev/null 2>&1 || missing+=(kafka)
	command -v redis-server >/dev/null 2>&1 && command -v redis-cli >/dev/null 2>&1 || missing+=(redis)
	command -v prometheus >/dev/null 2>&1 && command -v prometheus-alertmanager >/dev/null 2>&1 || missing+=(prometheus)
	command -v curl >/dev/null 2>&1 || die "curl not found: apt-get install -y curl"
	command -v "$GO" >/dev/null 2>&1 || die "go not found: the demo builds the exporter from this tree"
	if ((${#missing[@]} > 0)); then
		[[ -x $SCRIPT_DIR/install-deps.sh ]] || die "missing ${missing[*]} and no scripts/install-deps.sh to install them"
		log "installing ${missing[*]} (scripts/install-deps.sh)"
		"$SCRIPT_DIR/install-deps.sh" "${missing[@]}"
	fi
	"$KAFKA" install
	"$MIRROR" install
}

write_configs() {
	cat >"$DEMO_DIR/exporter.yml" <<EOF
# Written by scripts/demo.sh.
kafka:
  - name: demo
    bootstrap_servers: [$(kafka_bootstrap)]
    refresh_interval: 1s
    # The write canary (docs/canary.md): its own topic, a partition led by each broker.
    canary: {enabled: true, interval: 1s}
  - name: dr
    bootstrap_servers: [$(kafka_dr_bootstrap)]
    refresh_interval: 1s
mirrors:
  # MirrorMaker 2 (scripts/kafka/mirror.sh) replicates topic demo to dr as
  # demo.demo. The aliases are MirrorMaker's names of the two clusters.
  - name: $MIRROR_NAME
    source: demo
    target: dr
    source_alias: $MIRROR_LAB_SOURCE_ALIAS
    target_alias: $MIRROR_LAB_TARGET_ALIAS
    topics: $MIRROR_LAB_TOPICS
    refresh_interval: 1s
    # MirrorMaker emits a heartbeat a second: ten missed ones are a stall.
    stall_after: 10s
redis:
  - name: demo
    addrs: [$(redis_addrs)]
    refresh_interval: 1s
    # One key per master; wait: 0s shows what asynchronous replication loses
    # (try wait: 100ms to see failures instead of losses).
    canary: {enabled: true, interval: 500ms, wait: 0s}
sentinel:
  # scripts/redis/sentinel.sh: a master, $SENTINEL_REPLICAS replicas, $SENTINEL_COUNT sentinels; any sentinel
  # is a seed, the exporter finds the others (SENTINEL SENTINELS).
  - name: demo
    sentinels: [$(sentinel_addrs)]
    masters: [$SENTINEL_MASTER]
    refresh_interval: 1s
    # One key, written to the master the sentinels name; read from the next
    # master after a failover (docs/canary.md#redis-sentinel).
    canary: {enabled: true, interval: 500ms, wait: 0s}
EOF
	cat >"$DEMO_DIR/prometheus.yml" <<EOF
# Written by scripts/demo.sh.
global:
  scrape_interval: 2s
  evaluation_interval: 2s
rule_files:
  - $REPO_ROOT/prometheus/alerts.yml
alerting:
  alertmanagers:
    - static_configs:
        - targets: ["127.0.0.1:$ALERTMANAGER_PORT"]
scrape_configs:
  - job_name: failover_exporter
    static_configs:
      - targets: ["127.0.0.1:$EXPORTER_PORT"]
EOF
}

build() {
	local ldflags
	ldflags="-X github.com/prometheus/common/version.Version=demo"
	ldflags+=" -X github.com/prometheus/common/version.Revision=$(git -C "$REPO_ROOT" rev-parse HEAD 2>/dev/null || echo unknown)"
	ldflags+=" -X github.com/prometheus/common/version.Branch=$(git -C "$REPO_ROOT" rev-parse --abbrev-ref HEAD 2>/dev/null || echo unknown)"
	ldflags+=" -X github.com/prometheus/common/version.BuildDate=$(date -u +%Y%m%d-%H:%M:%S)"
	if [[ -n ${DEMO_EXPORTER_BIN:-} ]]; then
		cp "$DEMO_EXPORTER_BIN" "$DEMO_DIR/bin/failover_exporter"
	else
		(cd "$REPO_ROOT" && CGO_ENABLED=0 "$GO" build -ldflags "$ldflags" -o "$DEMO_DIR/bin/failover_exporter" .)
	fi
	(cd "$REPO_ROOT" && CGO_ENABLED=0 "$GO" build -o "$DEMO_DIR/bin/demo-producer" ./examples/demo/producer)
}

cmd_up() {
	local t0=$SECONDS name kafka_job kafka_dr_job redis_job sentinel_job build_job mirror_job
	for name in "${SERVICES[@]}"; do
		! service_pid "$name" >/dev/null || die "the demo is already running (scripts/demo.sh status; scripts/demo.sh down)"
	done
	! "$MIRROR" pid >/dev/null 2>&1 || die "the demo's MirrorMaker is already running (scripts/demo.sh status; scripts/demo.sh down)"
	! sentinel_running || die "the demo's Sentinel deployment is already running (scripts/demo.sh status; scripts/demo.sh down)"
	# A fresh Kafka every time: leaders where Kafka puts them, not where the
	# last demo's kills left them. Cleaned first, so that its ports are free.
	"$MIRROR" clean
	"$KAFKA" clean
	kafka_dr clean
	check_ports || die "ports in use (scripts/demo.sh ports lists them all)"
	ensure_deps
	# Installing can take minutes: look again.
	((SECONDS - t0 < 10)) || check_ports || die "ports in use (scripts/demo.sh ports lists them all)"
	mkdir -p "$DEMO_DIR/bin" "$DEMO_DIR/prometheus" "$DEMO_DIR/alertmanager"
	rm -f "$DEMO_DIR"/*.log
	# With DEMO_OWNER_PID set, `down` runs once that process is gone.
	# DEMO_DIR on its command line makes it findable by service_pid.
	start_watchdog demo-watchdog "${DEMO_OWNER_PID:-}" "$DEMO_DIR" env DEMO_DIR="$DEMO_DIR" "$SCRIPT_DIR/demo.sh" down
	# Clusters and the build run side by side.
	log "starting Kafka (3 brokers from $KAFKA_BASE_PORT), the DR Kafka (1 broker on $KAFKA_DR_PORT), Redis (6 nodes from $REDIS_BASE_PORT) and Redis Sentinel ($((SENTINEL_REPLICAS + 1)) nodes and $SENTINEL_COUNT sentinels from $SENTINEL_BASE_PORT), building the exporter"
	"$KAFKA" start >"$DEMO_DIR/kafka-start.log" 2>&1 &
	kafka_job=$!
	kafka_dr start >"$DEMO_DIR/kafka-dr-start.log" 2>&1 &
	kafka_dr_job=$!
	"$REDIS" start --masters 3 --replicas 1 >"$DEMO_DIR/redis-start.log" 2>&1 &
	redis_job=$!
	"$SENTINEL" start --replicas "$SENTINEL_REPLICAS" --sentinels "$SENTINEL_COUNT" >"$DEMO_DIR/sentinel-start.log" 2>&1 &
	sentinel_job=$!
	build >"$DEMO_DIR/build.log" 2>&1 &
	build_job=$!
	local failed=()
	wait "$kafka_job" || failed+=("kafka (log: $DEMO_DIR/kafka-start.log)")
	wait "$kafka_dr_job" || failed+=("DR kafka (log: $DEMO_DIR/kafka-dr-start.log)")
	# MirrorMaker takes 10-40 s to replicate its first heartbeat: it starts
	# as soon as both Kafkas serve, and finds topic demo once created (it
	# looks for new topics every 2 s).
	if ((${#failed[@]} == 0)); then
		"$MIRROR" start >"$DEMO_DIR/mirror-start.log" 2>&1 &
		mirror_job=$!
	fi
	wait "$build_job" || failed+=("build (log: $DEMO_DIR/build.log)")
	wait "$redis_job" || failed+=("redis (log: $DEMO_DIR/redis-start.log)")
	wait "$sentinel_job" || failed+=("redis sentinel (log: $DEMO_DIR/sentinel-start.log)")
	if ((${#failed[@]} > 0)); then
		cat "$DEMO_DIR/build.log" "$DEMO_DIR/redis-start.log" "$DEMO_DIR/sentinel-start.log" "$DEMO_DIR/kafka-start.log" "$DEMO_DIR/kafka-dr-start.log" >&2 || true
		cmd_down
		die "could not start: ${failed[*]}"
	fi
	log "clusters up after $((SECONDS - t0))s, MirrorMaker demo->dr starting; creating topic demo (3 partitions, RF 3)"
	"$KAFKA" topics --create --if-not-exists --topic demo --partitions 3 --replication-factor 3 >/dev/null

	write_configs
	spawn producer "$DEMO_DIR/bin/demo-producer" --kafka.brokers="$(kafka_bootstrap)" --kafka.topic=demo \
		--redis.addrs="$(redis_addrs)" --interval=250ms
	# The token that opens maintenance windows (make roll announces each
	# stop): random, readable only by its owner, never on a command line.
	(umask 077 && head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$DEMO_DIR/maintenance-token")
	spawn exporter "$DEMO_DIR/bin/failover_exporter" --config.file="$DEMO_DIR/exporter.yml" \
		--web.listen-address="127.0.0.1:$EXPORTER_PORT" --web.maintenance-token-file="$DEMO_DIR/maintenance-token"
	spawn alertmanager prometheus-alertmanager --config.file="$REPO_ROOT/examples/alertmanager/alertmanager.yml" \
		--storage.path="$DEMO_DIR/alertmanager" --web.listen-address="127.0.0.1:$ALERTMANAGER_PORT" \
		--cluster.listen-address=
	spawn prometheus prometheus --config.file="$DEMO_DIR/prometheus.yml" --storage.tsdb.path="$DEMO_DIR/prometheus" \
		--web.listen-address="127.0.0.1:$PROMETHEUS_PORT" --storage.tsdb.retention.time=1d

	wait_http "$(metrics_url)" exporter 30
	wait_http "http://127.0.0.1:$PROMETHEUS_PORT/-/ready" prometheus 60
	wait_http "http://127.0.0.1:$ALERTMANAGER_PORT/-/ready" alertmanager 30
	wait_exporter_sees_clusters
	if ! wait "$mirror_job"; then
		cat "$DEMO_DIR/mirror-start.log" >&2 || true
		die "MirrorMaker did not start (log: $("$MIRROR" logs)); scripts/demo.sh down stops the rest"
	fi
	wait_exporter_sees_mirror
	log "demo up in $((SECONDS - t0))s"
	cat <<EOF

  exporter      $(metrics_url)
  Prometheus    http://127.0.0.1:$PROMETHEUS_PORT/alerts   (rules: prometheus/alerts.yml, 2s scrape)
  Alertmanager  http://127.0.0.1:$ALERTMANAGER_PORT
  Kafka         $(kafka_bootstrap)   topic demo: 3 partitions, RF 3, min ISR 2
  Kafka DR      $(kafka_dr_bootstrap)   topic demo.demo: MirrorMaker 2 demo->dr (log: $("$MIRROR" logs))
  Redis         $(redis_addrs)
  Sentinel      sentinels $(sentinel_addrs) watching master '$SENTINEL_MASTER' (now $(sentinel_master_addr || echo '?')) and its $SENTINEL_REPLICAS replicas; the write canary writes to it
  load          $DEMO_DIR/producer.log (acks=all records and Redis SETs, 4/s each)

  Mirror flow $MIRROR_NAME, "how much would we lose if we failed over to dr now":
    status page   http://127.0.0.1:$EXPORTER_PORT/   section "Cross-cluster replication $MIRROR_NAME: demo → dr"
    Prometheus    $(prometheus_graph_url "$QUERY_RECORDS" "$QUERY_RPO")
                  $QUERY_RECORDS
                  $QUERY_RPO

  Redis Sentinel deployment demo, "is the master writable, who would be promoted, how long did the failover take":
    status page   http://127.0.0.1:$EXPORTER_PORT/   section "Redis Sentinel demo"
    dashboard     grafana/dashboards/redis-sentinel.json (Redis Sentinel; import it into a Grafana on Prometheus $PROMETHEUS_PORT)
    Prometheus    $(prometheus_graph_url "$QUERY_SENTINEL_FAILOVERS" "$QUERY_SENTINEL_UP")

  Try:   scripts/demo.sh kill kafka-leader   (make chaos)
         scripts/demo.sh kill redis-master
         scripts/demo.sh kill sentinel-master   (make chaos-sentinel: the sentinels promote a replica, the exporter times it)
         scripts/demo.sh kill acked-writes   (make chaos-writes: Kafka loses no acknowledged write, Redis can)
         scripts/demo.sh mirror-stall [SECONDS]   (SIGSTOP MirrorMaker for SECONDS, 30: the flow stalls, the DR cluster falls behind)
         scripts/demo.sh heal                (start killed nodes and sentinel processes again)
         scripts/demo.sh down                (make demo-down)
EOF
}

# The two queries of the README: what the DR cluster would lack if the demo
# cluster died now, in records and in seconds of data.
QUERY_RECORDS='sum by (mirror, topic) (kafka_mirror_topic_records_not_replicated)'
QUERY_RPO='max by (mirror) (kafka_mirror_topic_rpo_seconds)'
# The Sentinel deployment's failovers, and whether its master is writable.
QUERY_SENTINEL_FAILOVERS='redis_sentinel_master_failovers_total{sentinel_cluster="demo"}'
QUERY_SENTINEL_UP='redis_sentinel_master_up{sentinel_cluster="demo"}'

urlencode() {
	local s=$1 out="" c i
	for ((i = 0; i < ${#s}; i++)); do
		c=${s:i:1}
		case $c in
		[A-Za-z0-9._~-]) out+=$c ;;
		*) printf -v c '%%%02X' "'$c" && out+=$c ;;
		esac
	done
	echo "$out"
}

# prometheus_graph_url EXPR...: Prometheus's graph page with one panel per EXPR.
prometheus_graph_url() {
	local url="http://127.0.0.1:$PROMETHEUS_PORT/graph?" i=0 expr
	for expr in "$@"; do
		((i == 0)) || url+="&"
		url+="g$i.expr=$(urlencode "$expr")&g$i.tab=0&g$i.range_input=15m"
		((i += 1))
	done
	echo "$url"
}

# The exporter must read the mirror flow, MirrorMaker's heartbeats arriving
# on the DR cluster within a few seconds.
wait_exporter_sees_mirror() {
	local deadline=$((SECONDS + 90)) text up age stalled
	while :; do
		text=$(scrape)
		up=$(metric "$text" kafka_mirror_up mirror="$MIRROR_NAME")
		age=$(metric "$text" kafka_mirror_heartbeat_age_seconds mirror="$MIRROR_NAME")
		stalled=$(metric "$text" kafka_mirror_stalled mirror="$MIRROR_NAME")
		if [[ $up == 1 && $stalled == 0 && -n $age ]] && below "$age" 5; then
			log "exporter reports kafka_mirror_up 1, heartbeat age $(seconds "$age")s"
			return 0
		fi
		((SECONDS < deadline)) || die "exporter reports kafka_mirror_up '${up}', kafka_mirror_stalled '${stalled}', heartbeat age '${age}' for $MIRROR_NAME; logs: $DEMO_DIR/exporter.log, $("$MIRROR" logs)"
		sleep 0.5
	done
}

# below A B: A < B, as decimals.
below() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 < b + 0) }'; }

# The exporter must report both clusters healthy; Kafka's leader election of
# the new topic and the first refresh take a moment.
wait_exporter_sees_clusters() {
	local deadline=$((SECONDS + 60)) text kafka_up redis_up sentinel_up master_up leader
	while :; do
		text=$(scrape)
		kafka_up=$(metric "$text" kafka_up kafka_cluster=demo)
		redis_up=$(metric "$text" redis_cluster_up redis_cluster=demo)
		sentinel_up=$(metric "$text" redis_sentinel_up sentinel_cluster=demo)
		master_up=$(metric "$text" redis_sentinel_master_up sentinel_cluster=demo master="$SENTINEL_MASTER")
		leader=$(metric "$text" kafka_partition_leader topic=demo partition=0)
		if [[ $kafka_up == 1 && $redis_up == 1 && $sentinel_up == 1 && $master_up == 1 && -n $leader && $leader != -1 ]]; then
			log "exporter reports kafka_up 1, redis_cluster_up 1, redis_sentinel_up 1 (master $SENTINEL_MASTER up)"
			return 0
		fi
		if ((SECONDS >= deadline)); then
			[[ $sentinel_up == 1 && $master_up == 1 ]] ||
				die "exporter reports redis_sentinel_up '${sentinel_up}', redis_sentinel_master_up '${master_up}' for sentinel_cluster demo; log: $DEMO_DIR/exporter.log"
			[[ $kafka_up == 1 && -n $leader ]] || die "exporter does not report Kafka (kafka_up '${kafka_up}'); log: $DEMO_DIR/exporter.log"
			if [[ -z $redis_up ]]; then
				log "warning: the exporter serves no redis_cluster_up series: this build does not watch Redis yet"
				return 0
			fi
			die "exporter reports redis_cluster_up '${redis_up}'; log: $DEMO_DIR/exporter.log"
		fi
		sleep 0.5
	done
}

# ----------------------------------------------------------------- kill ---

elapsed_since() { awk -v t0="$1" -v t1="$(date +%s.%N)" 'BEGIN { printf "%.1fs", t1 - t0 }'; }

kill_kafka_leader() {
	local text old_leader old_isr new_leader new_isr broker_up t0 deadline min_isr
	text=$(scrape)
	[[ -n $text ]] || die "exporter not answering at $(metrics_url); is the demo up?"
	old_leader=$(metric "$text" kafka_partition_leader topic=demo partition=0)
	old_isr=$(metric "$text" kafka_partition_in_sync_replicas topic=demo partition=0)
	[[ -n $old_leader && $old_leader != -1 ]] || die "partition demo/0 has no leader right now (leader '${old_leader}')"
	t0=$(date +%s.%N)
	"$KAFKA" kill "$old_leader"
	echo "kafka: killed broker $old_leader (kill -9), leader of demo/0 with $old_isr in-sync replicas"
	deadline=$((SECONDS + TIMEOUT))
	while :; do
		text=$(scrape)
		new_leader=$(metric "$text" kafka_partition_leader topic=demo partition=0)
		new_isr=$(metric "$text" kafka_partition_in_sync_replicas topic=demo partition=0)
		broker_up=$(metric "$text" kafka_broker_up kafka_cluster=demo broker="$old_leader")
		if [[ -n $new_leader && $new_leader != -1 && $new_leader != "$old_leader" && $broker_up == 0 && -n $new_isr && $new_isr -lt $old_isr ]]; then
			break
		fi
		((SECONDS < deadline)) || die "no new leader for demo/0 after ${TIMEOUT}s (leader '${new_leader}', ISR '${new_isr}', broker_up '${broker_up}')"
		sleep 0.2
	done
	echo "kafka: demo/0 leader $old_leader -> $new_leader after $(elapsed_since "$t0")"
	min_isr=$(metric "$text" kafka_topic_min_insync_replicas topic=demo)
	if [[ -z $min_isr ]]; then
		echo "kafka: demo/0 in-sync replicas $old_isr -> $new_isr"
	elif ((new_isr >= min_isr)); then
		echo "kafka: demo/0 in-sync replicas $old_isr -> $new_isr (min.insync.replicas $min_isr: acks=all still succeeds)"
	else
		echo "kafka: demo/0 in-sync replicas $old_isr -> $new_isr (under min.insync.replicas $min_isr: acks=all writes fail)"
	fi
	echo "kafka: kafka_broker_up{kafka_cluster=\"demo\",broker=\"$old_leader\"} 1 -> 0"
	echo "kafka: leader changes of topic demo seen by the exporter: $(metric "$text" kafka_topic_leader_changes_total topic=demo)"
	echo "kafka: bring the broker back with: scripts/demo.sh heal"
}

kill_redis_master() {
	local text line addr id slots port replicas t0 deadline failovers0 failovers new_addr="" new_slots role
	text=$(scrape)
	[[ -n $text ]] || die "exporter not answering at $(metrics_url); is the demo up?"
	[[ -n $(metric "$text" redis_cluster_up redis_cluster=demo) ]] || die "the exporter serves no Redis series (does this build watch Redis?)"
	# The master with slots on the lowest port.
	while read -r line; do
		[[ ${line##* } == 1 ]] || continue
		local a i s
		a=$(label "$line" address)
		i=$(label "$line" node_id)
		s=$(metric "$text" redis_cluster_node_slots node_id="$i")
		[[ -n $s && $s != 0 ]] || continue
		if [[ -z ${addr:-} || ${a##*:} -lt ${addr##*:} ]]; then addr=$a id=$i slots=$s; fi
	done < <(series "$text" redis_cluster_node_master)
	[[ -n ${addr:-} ]] || die "no Redis master with slots in the exporter's view"
	replicas=$(series "$text" redis_cluster_node_info | grep -F "master_id=\"$id\"" | while read -r line; do label "$line" address; done | paste -sd, -)
	[[ -n $replicas ]] || die "master $addr has no replica: nothing would take over"
	failovers0=$(metric "$text" redis_cluster_failovers_total redis_cluster=demo)
	port=${addr##*:}
	t0=$(date +%s.%N)
	"$REDIS" kill "$port"
	echo "redis: killed master $addr (kill -9), $slots slots, replicas $replicas"
	deadline=$((SECONDS + TIMEOUT))
	while :; do
		text=$(scrape)
		new_addr=""
		while read -r line; do
			[[ ${line##* } == 1 ]] || continue
			a=$(label "$line" address)
			[[ ,$replicas, == *,$a,* ]] || continue
			new_addr=$a
			new_slots=$(metric "$text" redis_cluster_node_slots address="$a")
		done < <(series "$text" redis_cluster_node_master)
		[[ -n $new_addr && ${new_slots:-0} == "$slots" ]] && break
		((SECONDS < deadline)) || die "no replica of $addr promoted after ${TIMEOUT}s"
		sleep 0.2
	done
	failovers=$(metric "$text" redis_cluster_failovers_total redis_cluster=demo)
	role=$(series "$text" redis_cluster_node_state | grep -F "address=\"$addr\"" | awk '$NF == 1' | head -1)
	echo "redis: master $addr -> promoted replica $new_addr after $(elapsed_since "$t0")"
	echo "redis: slots of $new_addr: $new_slots (all $slots slots of the old master)"
	echo "redis: redis_cluster_failovers_total ${failovers0:-?} -> ${failovers:-?}"
	[[ -z $role ]] || echo "redis: old master state: $(label "$role" state)"
	echo "redis: slots by state: $(series "$text" redis_cluster_slots | grep -F 'redis_cluster="demo"' | while read -r line; do printf '%s=%s ' "$(label "$line" state)" "${line##* }"; done)"
	echo "redis: bring the node back (it rejoins as a replica) with: scripts/demo.sh heal"
}

# The broker that coordinates the Kafka canary lease's group: the leader of
# the __consumer_offsets partition Kafka maps the group to (the absolute
# value of the group ID's Java hashCode modulo the topic's partition count),
# as kafka-topics.sh describes it. kafka-consumer-groups.sh cannot say: the
# lease's group is not a consumer group. Empty when it cannot be read.
lease_coordinator() {
	local group=__failover_exporter_canary.lease h=0 i c n desc
	for ((i = 0; i < ${#group}; i++)); do
		printf -v c '%d' "'${group:i:1}"
		h=$(((h * 31 + c) & 0xFFFFFFFF))
	done
	# Kafka's Utils.abs of the signed 32-bit hash (0 for the minimum).
	if ((h == 0x80000000)); then h=0; elif ((h > 0x7FFFFFFF)); then h=$((0x100000000 - h)); fi
	desc=$("$KAFKA" topics --describe --topic __consumer_offsets 2>/dev/null) || return 0
	n=$(awk '{ for (i = 1; i < NF; i++) if ($i == "PartitionCount:") { print $(i + 1); exit } }' <<<"$desc")
	[[ $n =~ ^[1-9][0-9]*$ ]] || return 0
	awk -v p=$((h % n)) '{ for (i = 1; i < NF; i++) if ($i == "Partition:" && $(i + 1) == p) for (j = i; j < NF; j++) if ($j == "Leader:") { print $(j + 1); exit } }' <<<"$desc"
}

# The lowest canary partition whose leader (in the scrape $1) is not broker
# $2; 0 when every one is, or $2 is empty.
canary_partition_not_led_by() {
	series "$1" kafka_partition_leader | grep -F 'topic="__failover_exporter_canary"' |
		while read -r line; do printf '%s %s\n' "$(label "$line" partition)" "${line##* }"; done |
		sort -n | awk -v b="$2" 'b == "" || $2 != b { print $1; found = 1; exit } END { if (!found) print 0 }'
}

# The seed lesson, measured by the write canary: the same failure on both
# systems, and how many writes each had acknowledged that did not survive it.
kill_acked_writes() {
	local text leader checks0 lost0 t0 deadline checks acked0 led read_after new_leader part coordinator
	local line a i s master="" id="" mslots="" replica="" port rport rchecks0 racked0 racked_cut rlost
	text=$(scrape)
	[[ -n $text ]] || die "exporter not answering at $(metrics_url); is the demo up?"
	[[ -n $(metric "$text" kafka_canary_up kafka_cluster=demo) && -n $(metric "$text" redis_canary_up redis_cluster=demo) ]] ||
		die "the exporter runs no write canary (demo config: $DEMO_DIR/exporter.yml)"

	# The broker that coordinates the canary lease's group, as Kafka's own
	# tool names it: killing it ends the lease, and the records of that hold
	# are then counted unverifiable, not read back (docs/canary.md), which
	# is not this lesson. The victim is the leader of a canary partition
	# that broker does not lead.
	coordinator=$(lease_coordinator)
	# Both canaries must have acknowledged writes before anything dies: right
	# after `up` the canary topic may only just exist.
	deadline=$((SECONDS + TIMEOUT))
	while :; do
		part=$(canary_partition_not_led_by "$text" "$coordinator")
		leader=$(metric "$text" kafka_partition_leader topic=__failover_exporter_canary partition="$part")
		if [[ -n $leader && $leader != -1 ]] &&
			(($(total "$text" kafka_canary_produce_acknowledged_total kafka_cluster=demo partition="$part" broker="$leader") >= 3 &&
				$(total "$text" redis_canary_writes_acknowledged_total redis_cluster=demo) >= 9)); then
			break
		fi
		((SECONDS < deadline)) || die "the canaries are not writing after ${TIMEOUT}s (canary partition $part leader '${leader}'); log: $DEMO_DIR/exporter.log"
		sleep 0.5
		text=$(scrape)
	done

	# Kafka: kill -9 the leader of canary partition $part.
	checks0=$(total "$text" kafka_canary_read_back_checks_total kafka_cluster=demo)
	lost0=$(total "$text" kafka_canary_acknowledged_lost_total kafka_cluster=demo)
	acked0=$(total "$text" kafka_canary_produce_acknowledged_total kafka_cluster=demo partition="$part" broker="$leader")
	# The canary reads back each partition whose leader changed: every canary
	# partition the broker led, at least one check each.
	led=$(series "$text" kafka_partition_leader | grep -F 'topic="__failover_exporter_canary"' | awk -v b="$leader" '$NF == b' | wc -l)
	((led > 0)) || led=1
	t0=$(date +%s.%N)
	"$KAFKA" kill "$leader"
	echo "kafka: killed broker $leader (kill -9), leader of canary partition $part, where it had acknowledged $acked0 acks=all records, and of $((led - 1)) other canary partition(s); broker ${coordinator:-?} coordinates the canary lease and stays up"
	deadline=$((SECONDS + TIMEOUT))
	while :; do
		text=$(scrape)
		checks=$(total "$text" kafka_canary_read_back_checks_total kafka_cluster=demo)
		((checks - checks0 >= led)) && break
		((SECONDS < deadline)) || die "the canary read back $((checks - checks0)) of the $led partition(s) broker $leader led after ${TIMEOUT}s"
		sleep 0.2
	done
	read_after=$(elapsed_since "$t0")
	echo "kafka: the canary read its acknowledged records back from new leaders after $read_after (read-back checks: $((checks - checks0)); canary partitions that changed leader: $led)"
	# The canary learns of the new leader from its own client, the exporter's
	# view one refresh later: wait for the view before printing it.
	while :; do
		new_leader=$(metric "$text" kafka_partition_leader topic=__failover_exporter_canary partition="$part")
		if [[ -n $new_leader && $new_leader != -1 && $new_leader != "$leader" ]]; then
			echo "kafka: new leader of canary partition $part: $new_leader (the exporter's view after $(elapsed_since "$t0"))"
			break
		fi
		if ((SECONDS >= deadline)); then
			echo "kafka: the exporter still shows leader '${new_leader}' for canary partition $part after ${TIMEOUT}s; see kafka_up and $DEMO_DIR/exporter.log"
			break
		fi
		sleep 0.2
		text=$(scrape)
	done
	local kafka_lost=$(($(total "$text" kafka_canary_acknowledged_lost_total kafka_cluster=demo) - lost0))
	echo "kafka: failed canary writes on broker $leader: $(total "$text" kafka_canary_produce_failures_total kafka_cluster=demo broker="$leader")"
	echo "kafka: acknowledged records lost: $kafka_lost"

	# Redis: the master with slots on the highest port that has a replica
	# (kill redis-master takes the lowest).
	while read -r line; do
		[[ ${line##* } == 1 ]] || continue
		a=$(label "$line" address)
		i=$(label "$line" node_id)
		s=$(metric "$text" redis_cluster_node_slots node_id="$i")
		[[ -n $s && $s != 0 ]] || continue
		local r
		r=$(series "$text" redis_cluster_node_info | grep -F "master_id=\"$i\"" | head -1)
		[[ -n $r ]] || continue
		if [[ -z $master || ${a##*:} -gt ${master##*:} ]]; then master=$a id=$i mslots=$s replica=$(label "$r" address); fi
	done < <(series "$text" redis_cluster_node_master)
	[[ -n $master ]] || die "no Redis master with a replica in the exporter's view"
	port=${master##*:} rport=${replica##*:}
	rchecks0=$(total "$text" redis_canary_lost_write_checks_total redis_cluster=demo)
	racked0=$(total "$text" redis_canary_writes_acknowledged_total redis_cluster=demo node_id="$id")
	"$REDIS" pause "$rport"
	# Resume the replica whatever happens next.
	trap '"$REDIS" resume "$rport" >/dev/null 2>&1 || true' EXIT
	# A paused replica still receives the stream into its socket buffer and
	# would apply it on resume: cut the link on the master.
	redis-cli -h 127.0.0.1 -p "$port" client kill type replica >/dev/null
	echo "redis: paused replica $replica (SIGSTOP) and cut its replication link; master $master stays up alone for 3s"
	sleep 3
	text=$(scrape)
	racked_cut=$(total "$text" redis_canary_writes_acknowledged_total redis_cluster=demo node_id="$id")
	t0=$(date +%s.%N)
	"$REDIS" kill "$port"
	"$REDIS" resume "$rport"
	trap - EXIT
	echo "redis: master $master acknowledged about $((racked_cut - racked0)) canary writes while cut off from its replica; killed it (kill -9), resumed the replica"
	deadline=$((SECONDS + TIMEOUT))
	while :; do
		text=$(scrape)
		checks=$(total "$text" redis_canary_lost_write_checks_total redis_cluster=demo)
		((checks > rchecks0)) && break
		((SECONDS < deadline)) || die "the canary did not read its key from a promoted replica after ${TIMEOUT}s"
		sleep 0.2
	done
	echo "redis: the canary read its key from the new master after $(elapsed_since "$t0")"
	# The exporter's view of the promotion, one refresh later.
	while :; do
		if [[ $(metric "$text" redis_cluster_node_master address="$replica") == 1 &&
			$(metric "$text" redis_cluster_node_slots address="$replica") == "$mslots" ]]; then
			echo "redis: replica $replica promoted: a master with the old master's $mslots slots in the exporter's view after $(elapsed_since "$t0")"
			break
		fi
		if ((SECONDS >= deadline)); then
			echo "redis: after ${TIMEOUT}s the exporter does not show replica $replica as the master of the old master's $mslots slots"
			break
		fi
		sleep 0.2
		text=$(scrape)
	done
	rlost=$(total "$text" redis_canary_acknowledged_lost_writes_total redis_cluster=demo node_id="$id")
	echo "redis: acknowledged writes lost: $rlost"
	echo
	echo "acknowledged writes lost in the failover:  Kafka (acks=all, min ISR 2): $kafka_lost   Redis Cluster (asynchronous replication): $rlost"
	echo "see the Writes (canary) rows of the dashboards; bring the nodes back with: scripts/demo.sh heal"
}

# ------------------------------------------------------------ sentinel ---

# sentinel_running: a process of the demo's Sentinel deployment runs.
sentinel_running() {
	local port
	for port in $("$SENTINEL" ports 2>/dev/null || true); do
		"$SENTINEL" pid "$port" >/dev/null 2>&1 && return 0
	done
	return 1
}

# sentinel_master_addr [PORT]: "HOST:PORT" of the master as the sentinel on
# PORT names it (SENTINEL GET-MASTER-ADDR-BY-NAME); without PORT, the first
# sentinel that answers. Fails when none does.
sentinel_master_addr() {
	local port answer
	for port in ${1:-$("$SENTINEL" sentinel-ports 2>/dev/null || true)}; do
		answer=$("$SENTINEL" master-addr "$port" 2>/dev/null) || continue
		[[ $answer =~ ^[^\ ]+\ [0-9]+$ ]] || continue
		echo "${answer% *}:${answer#* }"
		return 0
	done
	return 1
}

# fsum TEXT NAME [LABEL=VALUE...]: sum of the matching series (values) as a
# decimal; 0 if none.
fsum() { values "$@" | awk '{ sum += $1 } END { printf "%.3f\n", sum }'; }

# kill -9 the master the sentinels name and watch the exporter count the
# failover and time it, as a client of the master would have lived it.
kill_sentinel_master() {
	local text m=(sentinel_cluster=demo master="$SENTINEL_MASTER") addr failovers0 count0 sum0 t0 deadline
	local failovers count sum counted_after new_addr port answers=() promotable checks0 checks lost unverifiable
	text=$(scrape)
	[[ -n $text ]] || die "exporter not answering at $(metrics_url); is the demo up?"
	[[ $(metric "$text" redis_sentinel_up sentinel_cluster=demo) == 1 ]] ||
		die "the exporter reads no sentinel of deployment demo (redis_sentinel_up '$(metric "$text" redis_sentinel_up sentinel_cluster=demo)'; scripts/demo.sh status)"
	addr=$(sentinel_master_addr) || die "no sentinel of the demo answers SENTINEL GET-MASTER-ADDR-BY-NAME $SENTINEL_MASTER (scripts/demo.sh status; scripts/demo.sh heal)"
	# Right after a kill and heal, the sentinels may still be failing over
	# or have no replica to promote: say so rather than kill a lone master.
	[[ $(metric "$text" redis_sentinel_master_up "${m[@]}") == 1 && $(metric "$text" redis_sentinel_master_sentinels_disagree "${m[@]}") == 0 ]] ||
		die "master $SENTINEL_MASTER is not writable, or the sentinels disagree, in the exporter's view: a failover under way? (scripts/demo.sh heal, then try again)"
	promotable=$(metric "$text" redis_sentinel_master_promotable_replicas "${m[@]}")
	((${promotable:-0} > 0)) || die "no replica of $addr the sentinels could promote (redis_sentinel_master_promotable_replicas '${promotable}'): scripts/demo.sh heal, then try again"
	failovers0=$(total "$text" redis_sentinel_master_failovers_total "${m[@]}")
	count0=$(total "$text" redis_sentinel_failover_seconds_count "${m[@]}")
	sum0=$(fsum "$text" redis_sentinel_failover_seconds_sum "${m[@]}")
	checks0=$(total "$text" redis_sentinel_canary_lost_write_checks_total sentinel_cluster=demo)
	t0=$(date +%s.%N)
	"$SENTINEL" kill "${addr##*:}"
	echo "sentinel: killed master $addr of $SENTINEL_MASTER (kill -9), $promotable promotable replica(s); the sentinels wait down-after-milliseconds (1s), agree and promote one"
	deadline=$((SECONDS + TIMEOUT))
	while :; do
		text=$(scrape)
		failovers=$(total "$text" redis_sentinel_master_failovers_total "${m[@]}")
		((failovers > failovers0)) && break
		((SECONDS < deadline)) || die "the exporter counted no failover of $SENTINEL_MASTER after ${TIMEOUT}s (redis_sentinel_master_failovers_total $failovers0); sentinels: $(sentinel_master_addr || echo 'none answers'); log: $DEMO_DIR/exporter.log"
		sleep 0.2
	done
	counted_after=$(elapsed_since "$t0")
	# The failover is counted when the address the sentinels agree on
	# changes; its length is observed once the new master answers as one
	# with no sentinel flagging it, a refresh or two later.
	while :; do
		count=$(total "$text" redis_sentinel_failover_seconds_count "${m[@]}")
		((count > count0 || SECONDS >= deadline)) && break
		sleep 0.2
		text=$(scrape)
	done
	sum=$(fsum "$text" redis_sentinel_failover_seconds_sum "${m[@]}")
	new_addr=$(series "$text" redis_sentinel_master_reported_address | grep -F 'sentinel_cluster="demo"' |
		while read -r line; do label "$line" address; done | sort | uniq -c | sort -rn | awk 'NR == 1 { print $2 }')
	echo "sentinel: master $SENTINEL_MASTER $addr -> $new_addr: redis_sentinel_master_failovers_total{sentinel_cluster=\"demo\"} $failovers0 -> $failovers after $counted_after"
	if ((count > count0)); then
		echo "sentinel: failover time the exporter measured: $(awk -v a="$sum" -v b="$sum0" 'BEGIN { printf "%.1f", a - b }')s (redis_sentinel_failover_seconds_sum delta, from its first failed read of $addr to the new master writable)"
	else
		echo "sentinel: the exporter has not timed the failover yet after ${TIMEOUT}s (redis_sentinel_failover_seconds_count $count0); see redis_sentinel_failover_open_episode_seconds"
	fi
	# The write canary reads its key from the new master before it writes
	# there: what the old one acknowledged and the new one lacks is lost.
	while :; do
		checks=$(total "$text" redis_sentinel_canary_lost_write_checks_total sentinel_cluster=demo)
		((checks > checks0 || SECONDS >= deadline)) && break
		sleep 0.2
		text=$(scrape)
	done
	if ((checks > checks0)); then
		lost=$(total "$text" redis_sentinel_canary_acknowledged_lost_writes_total sentinel_cluster=demo address="$addr")
		unverifiable=$(total "$text" redis_sentinel_canary_acknowledged_unverifiable_writes_total sentinel_cluster=demo address="$addr")
		echo "sentinel: the write canary read its key from the new master: $lost acknowledged write(s) of $addr lost, $unverifiable unverifiable (redis_sentinel_canary_acknowledged_lost_writes_total; replicas in sync lose a write or none; make chaos-writes shows a replica cut off)"
	else
		echo "sentinel: the write canary has not read its key from a new master after ${TIMEOUT}s (redis_sentinel_canary_lost_write_checks_total $checks0)"
	fi
	for port in $("$SENTINEL" sentinel-ports); do
		answers+=("127.0.0.1:$port says $(sentinel_master_addr "$port" || echo '(no answer)')")
	done
	echo "sentinel: the sentinels' own answer (SENTINEL GET-MASTER-ADDR-BY-NAME $SENTINEL_MASTER): $(IFS=,; echo "${answers[*]}" | sed 's/,/, /g')"
	echo "sentinel: see the status page's section \"Redis Sentinel demo\" on http://127.0.0.1:$EXPORTER_PORT/; bring $addr back (the sentinels make it a replica) with: scripts/demo.sh heal"
}

cmd_kill() {
	case ${1:-} in
	kafka-leader) kill_kafka_leader ;;
	redis-master) kill_redis_master ;;
	sentinel-master) kill_sentinel_master ;;
	acked-writes) kill_acked_writes ;;
	*) die "kill what? kafka-leader, redis-master, sentinel-master or acked-writes" ;;
	esac
}

# ------------------------------------------------------------- mirror ---

# max_of TEXT NAME [LABEL=VALUE...]: largest value of the matching series
# (values), empty if none.
max_of() { values "$@" | awk '!seen || $1 + 0 > max { max = $1 + 0; seen = 1 } END { if (seen) print max }'; }

# mirror_reading TEXT: the flow's heartbeat age and what dr would lack now.
mirror_reading() {
	local text=$1
	printf 'heartbeat age %ss, records not replicated %s, RPO %ss' \
		"$(seconds "$(metric "$text" kafka_mirror_heartbeat_age_seconds mirror="$MIRROR_NAME")")" \
		"$(total "$text" kafka_mirror_topic_records_not_replicated mirror="$MIRROR_NAME")" \
		"$(seconds "$(max_of "$text" kafka_mirror_topic_rpo_seconds mirror="$MIRROR_NAME")")"
}

# seconds VALUE: to a tenth of a second; "?" when empty.
seconds() {
	if [[ -z $1 ]]; then echo "?"; else awk -v v="$1" 'BEGIN { printf "%.1f\n", v }'; fi
}

mirror_check() {
	local text
	text=$(scrape)
	[[ -n $text ]] || die "exporter not answering at $(metrics_url); is the demo up?"
	[[ -n $(metric "$text" kafka_mirror_up mirror="$MIRROR_NAME") ]] ||
		die "the exporter reads no mirror flow $MIRROR_NAME (demo config: $DEMO_DIR/exporter.yml)"
	"$MIRROR" pid >/dev/null 2>&1 || die "MirrorMaker is not running (scripts/demo.sh status)"
}

cmd_mirror_pause() {
	mirror_check
	"$MIRROR" pause
	echo "mirror: paused MirrorMaker (SIGSTOP, pid $("$MIRROR" pid)); the flow counts as stalled once its newest heartbeat on dr is 10s old"
	echo "mirror: resume it with: scripts/demo.sh mirror-resume"
}

cmd_mirror_resume() {
	"$MIRROR" pid >/dev/null 2>&1 || die "MirrorMaker is not running (scripts/demo.sh status)"
	"$MIRROR" resume
	echo "mirror: resumed MirrorMaker (SIGCONT, pid $("$MIRROR" pid))"
}

# SIGSTOP MirrorMaker for SECONDS, then SIGCONT, watching the exporter: when
# it calls the flow stalled, what dr would lack at the end, how long the
# catching up takes.
cmd_mirror_stall() {
	local secs=${1:-30} text t0 end stalled_after="" deadline
	[[ $secs =~ ^[0-9]+$ ]] && ((secs > 0)) || die "mirror-stall SECONDS: a positive number of seconds, got '$secs'"
	mirror_check
	text=$(scrape)
	echo "mirror: before: $(mirror_reading "$text"), kafka_mirror_stalled $(metric "$text" kafka_mirror_stalled mirror="$MIRROR_NAME")"
	t0=$(date +%s.%N)
	"$MIRROR" pause
	# Resume MirrorMaker whatever happens next.
	trap '"$MIRROR" resume >/dev/null 2>&1 || true' EXIT
	echo "mirror: paused MirrorMaker (SIGSTOP, pid $("$MIRROR" pid)) for ${secs}s"
	end=$((SECONDS + secs))
	while ((SECONDS < end)); do
		sleep 0.5
		[[ -z $stalled_after ]] || continue
		text=$(scrape)
		if [[ $(metric "$text" kafka_mirror_stalled mirror="$MIRROR_NAME") == 1 ]]; then
			stalled_after=$(elapsed_since "$t0")
			echo "mirror: kafka_mirror_stalled 0 -> 1 after $stalled_after ($(mirror_reading "$text"))"
		fi
	done
	text=$(scrape)
	echo "mirror: after ${secs}s: $(mirror_reading "$text"), kafka_mirror_stalled $(metric "$text" kafka_mirror_stalled mirror="$MIRROR_NAME")"
	echo "mirror: if demo died now, dr would lack $(total "$text" kafka_mirror_topic_records_not_replicated mirror="$MIRROR_NAME") records, $(seconds "$(max_of "$text" kafka_mirror_topic_rpo_seconds mirror="$MIRROR_NAME")")s of data"
	t0=$(date +%s.%N)
	"$MIRROR" resume
	trap - EXIT
	echo "mirror: resumed MirrorMaker (SIGCONT)"
	deadline=$((SECONDS + TIMEOUT))
	while :; do
		text=$(scrape)
		if [[ $(metric "$text" kafka_mirror_stalled mirror="$MIRROR_NAME") == 0 ]] &&
			below "$(metric "$text" kafka_mirror_heartbeat_age_seconds mirror="$MIRROR_NAME")" 5; then
			echo "mirror: caught up: kafka_mirror_stalled 0 after $(elapsed_since "$t0") ($(mirror_reading "$text"))"
			break
		fi
		((SECONDS < deadline)) || die "the flow did not recover ${TIMEOUT}s after SIGCONT ($(mirror_reading "$text")); log: $("$MIRROR" logs)"
		sleep 0.2
	done
	echo "mirror: see the status page's section $MIRROR_NAME on http://127.0.0.1:$EXPORTER_PORT/ and the events mirror_stalled/mirror_resumed"
}

cmd_heal() {
	local line id port
	while read -r line; do
		[[ $line == *stopped* ]] || continue
		id=$(awk '{print $2}' <<<"$line")
		"$KAFKA" start-node "$id"
	done < <("$KAFKA" status 2>/dev/null || true)
	for port in $("$REDIS" ports 2>/dev/null || true); do
		"$REDIS" pid "$port" >/dev/null 2>&1 && continue
		"$REDIS" start-node "$port"
		log "redis node $port started again"
	done
	for port in $("$SENTINEL" ports 2>/dev/null || true); do
		"$SENTINEL" pid "$port" >/dev/null 2>&1 && continue
		"$SENTINEL" start-node "$port"
		log "sentinel deployment: process on port $port started again"
	done
	if [[ $("$MIRROR" status 2>/dev/null) == paused* ]]; then
		"$MIRROR" resume
		log "MirrorMaker resumed"
	fi
}

# ---------------------------------------------------------------- roll ---

# ask ARGS...: the exporter's safe-to-stop command against the demo's exporter.
ask() { "$DEMO_DIR/bin/failover_exporter" safe-to-stop --url "http://127.0.0.1:$EXPORTER_PORT" --poll 2s "$@"; }

# acks_refused TEXT: acks=all canary writes the cluster refused for want of
# in-sync replicas (NOT_ENOUGH_REPLICAS, ..._AFTER_APPEND).
acks_refused() {
	series "$1" kafka_canary_produce_failures_total | { grep -F 'kafka_cluster="demo"' || true; } |
		{ grep -E 'error="NOT_ENOUGH_REPLICAS' || true; } | awk '{ s += $NF } END { print s + 0 }'
}

# prom_alertnames QUERY: the alertname labels of the demo Prometheus's
# answer to QUERY, space-separated.
prom_alertnames() {
	curl -sS --max-time 10 -G "http://127.0.0.1:$PROMETHEUS_PORT/api/v1/query" --data-urlencode "query=$1" |
		grep -o '"alertname":"[^"]*"' | cut -d'"' -f4 | sort -u | tr '\n' ' '
}

# pages_firing: the critical and warning alerts firing now.
pages_firing() { prom_alertnames 'group by (alertname) (ALERTS{alertstate="firing",severity=~"critical|warning"})'; }

# pages_fired_since SECONDS: the critical and warning alerts that fired in
# the last SECONDS.
pages_fired_since() {
	prom_alertnames "group by (alertname) (max_over_time(ALERTS{alertstate=\"firing\",severity=~\"critical|warning\"}[$1s]))"
}

# A rolling restart as an SRE would run it, every step gated by the
# exporter's failure budget: the three brokers one at a time (SIGTERM, a
# controlled shutdown), then each Redis master, failed over to the replica
# the exporter names first. The write canaries run throughout; the roll
# ends by printing what they saw.
cmd_roll() {
	local text id refused0 klost0 rlost0 t0 line addr port replica answer old_role
	local wait=${DEMO_ROLL_WAIT:-5m}
	text=$(scrape)
	[[ -n $text ]] || die "exporter not answering at $(metrics_url); is the demo up?"
	[[ -n $(metric "$text" kafka_canary_up kafka_cluster=demo) && -n $(metric "$text" redis_canary_up redis_cluster=demo) ]] ||
		die "the exporter runs no write canary (demo config: $DEMO_DIR/exporter.yml)"
	refused0=$(acks_refused "$text")
	klost0=$(total "$text" kafka_canary_acknowledged_lost_total kafka_cluster=demo)
	rlost0=$(total "$text" redis_canary_acknowledged_lost_writes_total redis_cluster=demo)
	t0=$SECONDS
	# Each stop is announced once the answer is yes: a maintenance window
	# (docs/maintenance.md) that makes a ticket, not a page, of what the stop
	# explains; the --after-restart that says it is back and caught up ends
	# it (the exporter may never see a quick restart's member down).
	local token=(--maintenance-token-file "$DEMO_DIR/maintenance-token")
	local announce=(--announce "${token[@]}" --ttl 15m)
	local firing0
	firing0=$(pages_firing)

	for id in 1 2 3; do
		echo "kafka: may broker $id stop? (waiting up to $wait)"
		ask --system kafka --cluster demo --broker "$id" --wait "$wait" "${announce[@]}" || die "broker $id never became safe to stop: roll stopped"
		"$KAFKA" stop-node "$id"
		echo "kafka: broker $id stopped (SIGTERM); starting it again"
		"$KAFKA" start-node "$id"
		echo "kafka: is broker $id back in every ISR? (waiting up to $wait)"
		ask --system kafka --cluster demo --broker "$id" --after-restart --wait "$wait" "${token[@]}" || die "broker $id did not catch up: roll stopped"
	done

	# The masters with slots, in the exporter's view.
	local masters=()
	while read -r line; do
		[[ ${line##* } == 1 ]] || continue
		addr=$(label "$line" address)
		[[ $(metric "$text" redis_cluster_node_slots address="$addr") != 0 ]] && masters+=("$addr")
	done < <(series "$(scrape)" redis_cluster_node_master)
	((${#masters[@]} > 0)) || die "no Redis master with slots in the exporter's view"
	for addr in "${masters[@]}"; do
		port=${addr##*:}
		answer=$(curl -sS --max-time 5 "http://127.0.0.1:$EXPORTER_PORT/api/v1/safe-to-stop?system=redis&cluster=demo&node=$addr" || true)
		replica=$(sed -n 's/.*"failover_to": "\([^"]*\)".*/\1/p' <<<"$answer")
		if [[ -n $replica ]]; then
			echo "redis: master $addr serves slots; the exporter names replica $replica to fail over to: CLUSTER FAILOVER on it"
			redis-cli -h "${replica%:*}" -p "${replica##*:}" cluster failover >/dev/null
		else
			echo "redis: the exporter names no replica of $addr to fail over to: $(sed -n 's/.*"advice": "\([^"]*\)".*/\1/p' <<<"$answer")"
		fi
		echo "redis: may $addr stop? (waiting up to $wait)"
		ask --system redis --cluster demo --node "$addr" --wait "$wait" "${announce[@]}" || die "$addr never became safe to stop: roll stopped"
		"$REDIS" stop-node "$port"
		echo "redis: $addr stopped (SIGTERM); starting it again"
		"$REDIS" start-node "$port"
		echo "redis: is $addr back, linked and synced? (waiting up to $wait)"
		ask --system redis --cluster demo --node "$addr" --after-restart --wait "$wait" "${token[@]}" || die "$addr did not catch up: roll stopped"
	done

	text=$(scrape)
	local refused klost rlost
	refused=$(($(acks_refused "$text") - refused0))
	klost=$(($(total "$text" kafka_canary_acknowledged_lost_total kafka_cluster=demo) - klost0))
	rlost=$(($(total "$text" redis_canary_acknowledged_lost_writes_total redis_cluster=demo) - rlost0))
	echo
	echo "roll done in $((SECONDS - t0))s: 3 brokers and ${#masters[@]} Redis masters restarted one at a time"
	echo "acks=all canary writes refused for want of in-sync replicas: $refused"
	echo "acknowledged writes lost: Kafka $klost, Redis $rlost"
	local paged
	paged=$(comm -13 <(tr ' ' '\n' <<<"$firing0" | sort -u) <(pages_fired_since $((SECONDS - t0 + 5)) | tr ' ' '\n' | sort -u) | grep -v '^$' | tr '\n' ' ' || true)
	echo "pages during the roll (critical or warning alerts not firing before it): $(wc -w <<<"$paged")${paged:+ ($paged)}"
	((refused == 0 && klost == 0 && rlost == 0))
}

# --------------------------------------------------------- status, down ---

cmd_status() {
	local name pid port
	for name in "${SERVICES[@]}"; do
		if pid=$(service_pid "$name"); then
			printf '%-13s running pid %s\n' "$name" "$pid"
		else
			printf '%-13s stopped\n' "$name"
		fi
	done
	if [[ -f $KAFKA_LAB_DIR/lab.env ]]; then
		"$KAFKA" status | sed 's/^/kafka        /'
	fi
	if [[ -f $DEMO_DIR/kafka-dr/lab.env ]]; then
		kafka_dr status | sed 's/^/kafka-dr     /'
	fi
	if [[ -d $MIRROR_LAB_DIR ]]; then
		printf 'mirror       %s\n' "$("$MIRROR" status)"
	fi
	if [[ -f $REDIS_LAB_DIR/ports ]]; then
		for port in $("$REDIS" ports); do
			if pid=$("$REDIS" pid "$port" 2>/dev/null); then
				printf 'redis        node %s running pid %s\n' "$port" "$pid"
			else
				printf 'redis        node %s stopped\n' "$port"
			fi
		done
	fi
	if [[ -f $SENTINEL_LAB_DIR/ports ]]; then
		local kind role
		for port in $("$SENTINEL" ports); do
			kind=sentinel role=""
			if grep -qx "$port" "$SENTINEL_LAB_DIR/data-ports"; then
				kind=node
			fi
			if pid=$("$SENTINEL" pid "$port" 2>/dev/null); then
				[[ $kind == sentinel ]] || role=$(redis-cli -h 127.0.0.1 -p "$port" role 2>/dev/null | head -1 || true)
				printf 'sentinel     %s %s running pid %s%s\n' "$kind" "$port" "$pid" "${role:+ ($role)}"
			else
				printf 'sentinel     %s %s stopped\n' "$kind" "$port"
			fi
		done
	fi
}

cmd_down() {
	local name pid
	for name in "${SERVICES[@]}"; do
		if pid=$(service_pid "$name"); then
			if stop_pid "$pid"; then
				log "stopped $name (pid $pid)"
			else
				log "warning: $name (pid $pid) is still running after SIGKILL"
			fi
		fi
		rm -f "$DEMO_DIR/$name.pid"
	done
	# MirrorMaker before the Kafkas it connects, Redis and Sentinel meanwhile; the two
	# Kafkas side by side.
	"$MIRROR" stop &
	"$REDIS" stop || true
	"$SENTINEL" stop || true
	wait $! || true
	kafka_dr stop &
	"$KAFKA" stop || true
	wait $! || true
	# Last: when the watchdog itself runs `down`, this is our own process.
	stop_watchdog demo-watchdog "$DEMO_DIR"
	log "demo stopped"
}

main() {
	local cmd=${1:-}
	(($# > 0)) && shift
	case $cmd in
	up) cmd_up ;;
	kill) cmd_kill "$@" ;;
	mirror-stall) cmd_mirror_stall "$@" ;;
	mirror-pause) cmd_mirror_pause ;;
	mirror-resume) cmd_mirror_resume ;;
	heal) cmd_heal ;;
	roll) cmd_roll ;;
	status) cmd_status ;;
	ports) check_ports --list ;;
	down) cmd_down ;;
	*)
		sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
		exit 2
		;;
	esac
}

main "$@"
