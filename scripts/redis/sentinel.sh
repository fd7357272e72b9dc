#!/usr/bin/env bash
# A throwaway Redis Sentinel deployment on 127.0.0.1 for tests and demos: one master, its replicas and the
# sentinels that watch them.
#
#   sentinel.sh start [--replicas N] [--sentinels M] [--quorum Q]
#                                      start a master on the base port, N replicas of it on the next ports
#                                      (default 2) and M sentinels after them (default 3) that monitor it
#                                      with quorum Q (default a majority of the sentinels)
#   sentinel.sh stop                   stop every process of the lab (resumes paused ones first)
#   sentinel.sh kill PORT              kill -9 one data node or sentinel, as a crash would
#   sentinel.sh stop-node PORT         stop one process cleanly (SIGTERM)
#   sentinel.sh start-node PORT        start a stopped or killed process again with its own config file,
#                                      which Sentinel rewrites: a sentinel keeps its id and epochs, a data
#                                      node comes back as what it was last configured to be (the killed
#                                      master as a master, until the sentinels make it a replica)
#   sentinel.sh pause PORT | resume PORT   SIGSTOP / SIGCONT one process (a hung node or sentinel)
#   sentinel.sh pid PORT               print the PID of a running process
#   sentinel.sh ports                  print every port of the lab, one a line (data-ports, then sentinel-ports)
#   sentinel.sh data-ports             print the data nodes' ports: the first master, then its replicas
#   sentinel.sh sentinel-ports         print the sentinels' ports
#   sentinel.sh master-addr PORT       print "host port" of the master as the sentinel on PORT reports it
#   sentinel.sh binaries               print the server and CLI paths it would use, one a line
#
# Environment:
#   REDIS_LAB_SERVER      redis, valkey or valkey9, as for scripts/redis/cluster.sh, which picks the binaries
#                         (and REDIS_LAB_VALKEY_BIN, REDIS_LAB_VALKEY9_SERVER); sentinels are the same binary
#                         run with --sentinel
#   SENTINEL_LAB_DIR      where process directories go (default <repo>/.lab/sentinel)
#   SENTINEL_LAB_BASE_PORT  first port (default 18000); the lab uses BASE..BASE+N+M
#   SENTINEL_LAB_MASTER_NAME  the name the sentinels monitor the master by (default mymaster)
#   SENTINEL_LAB_DOWN_AFTER   down-after-milliseconds (default 1000)
#   SENTINEL_LAB_FAILOVER_TIMEOUT  failover-timeout in milliseconds (default 3000); Sentinel also waits this
#                         long before it makes a returning old master a replica, and twice this long before it
#                         tries a failover of the same master again
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
lab_dir="${SENTINEL_LAB_DIR:-$repo_root/.lab/sentinel}"
base_port="${SENTINEL_LAB_BASE_PORT:-18000}"
master_name="${SENTINEL_LAB_MASTER_NAME:-mymaster}"
down_after="${SENTINEL_LAB_DOWN_AFTER:-1000}"
failover_timeout="${SENTINEL_LAB_FAILOVER_TIMEOUT:-3000}"
# Nothing leaves the machine: loopback only.
host=127.0.0.1
# shellcheck source=lib.sh
source "$repo_root/scripts/redis/lib.sh"
prog=sentinel.sh
noun=process
what() { echo "process on port $1"; }
base_port_var=SENTINEL_LAB_BASE_PORT
bus_port_offset=""
# Sentinels first, so that stopping the data nodes starts no failover.
stop_order=tac
tls_cli_args=()
host_of() { echo "$host"; }
host_for_port() { echo "$host"; }

[[ "$master_name" =~ ^[A-Za-z0-9._-]+$ ]] || die "SENTINEL_LAB_MASTER_NAME: '$master_name' is not a plain name"
[[ "$down_after" =~ ^[0-9]+$ && "$failover_timeout" =~ ^[0-9]+$ ]] ||
	die "SENTINEL_LAB_DOWN_AFTER and SENTINEL_LAB_FAILOVER_TIMEOUT are milliseconds"

# The server choice lives in cluster.sh alone.
binaries="$(bash "$repo_root/scripts/redis/cluster.sh" binaries)" || die "cannot tell which server to run"
{
	read -r server_bin
	read -r cli_bin
} <<<"$binaries"

install_hint="scripts/install-deps.sh ${REDIS_LAB_SERVER:-redis}"

# common_conf is what data nodes and sentinels share: loopback, daemonized,
# a pid file the lab kills by, nothing on disk but the config.
common_conf() {
	local port="$1" dir="$2"
	cat <<EOF
port $port
bind $host
protected-mode no
daemonize yes
pidfile $dir/redis.pid
logfile $dir/redis.log
dir $dir
EOF
}

write_data_conf() {
	local port="$1" master_port="$2" dir
	dir="$(node_dir "$port")"
	mkdir -p "$dir"
	{
		common_conf "$port" "$dir"
		cat <<EOF
replica-announce-ip $host
EOF
		data_node_conf
		if [[ -n "$master_port" ]]; then
			echo "replicaof $host $master_port"
		fi
	} >"$dir/redis.conf"
}

write_sentinel_conf() {
	local port="$1" master_port="$2" quorum="$3" dir
	dir="$(node_dir "$port")"
	mkdir -p "$dir"
	{
		common_conf "$port" "$dir"
		cat <<EOF
sentinel announce-ip $host
sentinel resolve-hostnames no
sentinel announce-hostnames no
sentinel monitor $master_name $host $master_port $quorum
sentinel down-after-milliseconds $master_name $down_after
sentinel failover-timeout $master_name $failover_timeout
EOF
	} >"$dir/sentinel.conf"
}

# field prints one field of a flat "name value name value" reply.
field() {
	awk -v name="$1" 'NR % 2 == 1 && $0 == name { want = 1; next } want { print; exit }'
}

# wait_healthy waits until every replica's link to the master is up and
# every sentinel names the master, knows every replica and every other
# sentinel, and says the quorum is reachable: a sentinel that has not yet
# heard of the others could neither reach ODOWN nor win an election.
wait_healthy() {
	local replicas="$1" sentinels="$2" master_port="$3" deadline port view
	deadline=$((SECONDS + 60))
	while ((SECONDS < deadline)); do
		local healthy=1
		for port in $(cat "$lab_dir/data-ports"); do
			[[ "$port" == "$master_port" ]] && continue
			if ! cli "$port" info replication 2>/dev/null | tr -d '\r' | grep -q '^master_link_status:up$'; then
				healthy=0
				break
			fi
		done
		for port in $(cat "$lab_dir/sentinel-ports"); do
			((healthy)) || break
			view="$(cli "$port" sentinel master "$master_name" 2>/dev/null | tr -d '\r' || true)"
			if [[ "$(field port <<<"$view")" != "$master_port" ||
				"$(field num-slaves <<<"$view")" != "$replicas" ||
				"$(field num-other-sentinels <<<"$view")" != "$((sentinels - 1))" ]] ||
				! cli "$port" sentinel ckquorum "$master_name" 2>/dev/null | grep -q '^OK'; then
				healthy=0
			fi
		done
		((healthy)) && return 0
		sleep 0.2
	done
	die "sentinel lab did not become healthy within 60s; see $lab_dir/*/redis.log"
}

cmd_start() {
	local replicas=2 sentinels=3 quorum=""
	while (($#)); do
		case "$1" in
		--replicas) replicas="${2:?--replicas needs a number}"; shift 2 ;;
		--sentinels) sentinels="${2:?--sentinels needs a number}"; shift 2 ;;
		--quorum) quorum="${2:?--quorum needs a number}"; shift 2 ;;
		*) die "start: unknown argument $1" ;;
		esac
	done
	[[ "$replicas" =~ ^[0-9]+$ && "$sentinels" =~ ^[0-9]+$ ]] || die "start: --replicas and --sentinels take numbers"
	((sentinels >= 1)) || die "start: a sentinel lab needs at least one sentinel"
	quorum="${quorum:-$((sentinels / 2 + 1))}"
	[[ "$quorum" =~ ^[0-9]+$ ]] && ((quorum >= 1 && quorum <= sentinels)) || die "start: --quorum must be 1..$sentinels"
	need "$server_bin"
	need "$cli_bin"
	fresh_lab_dir
	local data=$((replicas + 1)) total=$((replicas + 1 + sentinels)) port
	check_ports_free "$total"
	for ((port = base_port; port < base_port + data; port++)); do
		echo "$port" | tee -a "$lab_dir/ports" >>"$lab_dir/data-ports"
		if ((port == base_port)); then
			write_data_conf "$port" ""
		else
			write_data_conf "$port" "$base_port"
		fi
		start_server "$port"
	done
	for ((port = base_port + data; port < base_port + total; port++)); do
		echo "$port" | tee -a "$lab_dir/ports" >>"$lab_dir/sentinel-ports"
		write_sentinel_conf "$port" "$base_port" "$quorum"
		start_server "$port"
	done
	wait_healthy "$replicas" "$sentinels" "$base_port"
	echo "sentinel lab up: master $base_port, $replicas replicas, $sentinels sentinels (quorum $quorum) watching '$master_name', ports $base_port-$((base_port + total - 1)), dir $lab_dir"
}

cmd_master_addr() {
	local port="${1:?master-addr needs a sentinel PORT}"
	check_port "$port"
	[[ -f "$(node_dir "$port")/sentinel.conf" ]] || die "port $port is not a sentinel of the lab"
	cli "$port" sentinel get-master-addr-by-name "$master_name" | tr -d '\r' | paste -sd ' '
}

lab_command() {
	local cmd="$1"
	shift
	case "$cmd" in
	ports | data-ports | sentinel-ports) cmd_list "$cmd" ;;
	master-addr) cmd_master_addr "$@" ;;
	*) usage ;;
	esac
}

lab_main "$@"
