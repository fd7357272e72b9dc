#!/usr/bin/env bash
# A throwaway Redis Sentinel deployment on 127.0.0.1 for tests and demos: one master (or K master sets),
# their replicas and the sentinels that watch them.
#
#   sentinel.sh start [--masters K] [--replicas N] [--sentinels M] [--quorum Q]
#                                      start K master sets (default 1), each a master and N replicas of it
#                                      (default 2), and M sentinels (default 3) that monitor every master
#                                      with quorum Q (default a majority of the sentinels). The first master
#                                      is named SENTINEL_LAB_MASTER_NAME, the others NAME-2 .. NAME-K.
#                                      Ports, from the base: set 1's master, its N replicas, set 2's master,
#                                      its replicas, ... (K*(N+1) data nodes), then the M sentinels; with
#                                      K=1 that is the master, its replicas, the sentinels
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
#   sentinel.sh data-ports             print the data nodes' ports: each set's master then its replicas,
#                                      set after set
#   sentinel.sh sentinel-ports         print the sentinels' ports
#   sentinel.sh masters                print each master set as started, one a line: "NAME MASTER-PORT"
#   sentinel.sh master-addr PORT [NAME]  print "host port" of master NAME (default the first) as the
#                                      sentinel on PORT reports it
#   sentinel.sh binaries               print the server and CLI paths it would use, one a line
#
# Environment:
#   REDIS_LAB_SERVER      redis, valkey or valkey9, as for scripts/redis/cluster.sh, which picks the binaries
#                         (and REDIS_LAB_VALKEY_BIN, REDIS_LAB_VALKEY9_SERVER); sentinels are the same binary
#                         run with --sentinel
#   SENTINEL_LAB_DIR      where process directories go (default <repo>/.lab/sentinel)
#   SENTINEL_LAB_BASE_PORT  first port (default 18000); the lab uses BASE..BASE+K*(N+1)+M-1
#   SENTINEL_LAB_MASTER_NAME  the name the sentinels monitor the first master by (default mymaster)
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

# set_name is the name of master set i (1-based): the first keeps
# SENTINEL_LAB_MASTER_NAME, so a one-set lab reads as it always did.
set_name() {
	if (($1 == 1)); then
		echo "$master_name"
	else
		echo "$master_name-$1"
	fi
}

# write_sentinel_conf writes a sentinel that monitors every master in
# $lab_dir/masters ("name port" lines).
write_sentinel_conf() {
	local port="$1" quorum="$2" dir name master_port
	dir="$(node_dir "$port")"
	mkdir -p "$dir"
	{
		common_conf "$port" "$dir"
		cat <<EOF
sentinel announce-ip $host
sentinel resolve-hostnames no
sentinel announce-hostnames no
EOF
		while read -r name master_port; do
			cat <<EOF
sentinel monitor $name $host $master_port $quorum
sentinel down-after-milliseconds $name $down_after
sentinel failover-timeout $name $failover_timeout
EOF
		done <"$lab_dir/masters"
	} >"$dir/sentinel.conf"
}

# field prints one field of a flat "name value name value" reply.
field() {
	awk -v name="$1" 'NR % 2 == 1 && $0 == name { want = 1; next } want { print; exit }'
}

# wait_healthy waits until every replica's link to its master is up and
# every sentinel, for every master, names it, knows every replica and every
# other sentinel, and says the quorum is reachable: a sentinel that has not
# yet heard of the others could neither reach ODOWN nor win an election.
wait_healthy() {
	local replicas="$1" sentinels="$2" masters limit deadline port view name master_port
	masters="$(wc -l <"$lab_dir/masters")"
	# Sentinels learn replicas from INFO every 10 s and one another from
	# hellos on each master; more masters, more to check each round.
	limit=$((60 + 3 * masters))
	deadline=$((SECONDS + limit))
	while ((SECONDS < deadline)); do
		local healthy=1
		for port in $(cat "$lab_dir/data-ports"); do
			is_master_port "$port" && continue
			if ! cli "$port" info replication 2>/dev/null | tr -d '\r' | grep -q '^master_link_status:up$'; then
				healthy=0
				break
			fi
		done
		for port in $(cat "$lab_dir/sentinel-ports"); do
			((healthy)) || break
			while read -r name master_port; do
				view="$(cli "$port" sentinel master "$name" 2>/dev/null | tr -d '\r' || true)"
				if [[ "$(field port <<<"$view")" != "$master_port" ||
					"$(field num-slaves <<<"$view")" != "$replicas" ||
					"$(field num-other-sentinels <<<"$view")" != "$((sentinels - 1))" ]] ||
					! cli "$port" sentinel ckquorum "$name" 2>/dev/null | grep -q '^OK'; then
					healthy=0
					break
				fi
			done <"$lab_dir/masters"
		done
		((healthy)) && return 0
		sleep 0.2
	done
	die "sentinel lab did not become healthy within ${limit}s; see $lab_dir/*/redis.log"
}

# is_master_port says whether port is one of the masters the lab started.
is_master_port() {
	local name master_port
	while read -r name master_port; do
		[[ "$master_port" == "$1" ]] && return 0
	done <"$lab_dir/masters"
	return 1
}

cmd_start() {
	local masters=1 replicas=2 sentinels=3 quorum=""
	while (($#)); do
		case "$1" in
		--masters) masters="${2:?--masters needs a number}"; shift 2 ;;
		--replicas) replicas="${2:?--replicas needs a number}"; shift 2 ;;
		--sentinels) sentinels="${2:?--sentinels needs a number}"; shift 2 ;;
		--quorum) quorum="${2:?--quorum needs a number}"; shift 2 ;;
		*) die "start: unknown argument $1" ;;
		esac
	done
	[[ "$masters" =~ ^[0-9]+$ && "$replicas" =~ ^[0-9]+$ && "$sentinels" =~ ^[0-9]+$ ]] ||
		die "start: --masters, --replicas and --sentinels take numbers"
	((masters >= 1)) || die "start: a sentinel lab needs at least one master"
	((sentinels >= 1)) || die "start: a sentinel lab needs at least one sentinel"
	quorum="${quorum:-$((sentinels / 2 + 1))}"
	[[ "$quorum" =~ ^[0-9]+$ ]] && ((quorum >= 1 && quorum <= sentinels)) || die "start: --quorum must be 1..$sentinels"
	need "$server_bin"
	need "$cli_bin"
	fresh_lab_dir
	local set_size=$((replicas + 1)) data total port set master_port
	data=$((masters * set_size))
	total=$((data + sentinels))
	check_ports_free "$total"
	for ((set = 1; set <= masters; set++)); do
		master_port=$((base_port + (set - 1) * set_size))
		echo "$(set_name "$set") $master_port" >>"$lab_dir/masters"
		for ((port = master_port; port < master_port + set_size; port++)); do
			echo "$port" | tee -a "$lab_dir/ports" >>"$lab_dir/data-ports"
			if ((port == master_port)); then
				write_data_conf "$port" ""
			else
				write_data_conf "$port" "$master_port"
			fi
			start_server "$port"
		done
	done
	for ((port = base_port + data; port < base_port + total; port++)); do
		echo "$port" | tee -a "$lab_dir/ports" >>"$lab_dir/sentinel-ports"
		write_sentinel_conf "$port" "$quorum"
		start_server "$port"
	done
	wait_healthy "$replicas" "$sentinels"
	if ((masters == 1)); then
		echo "sentinel lab up: master $base_port, $replicas replicas, $sentinels sentinels (quorum $quorum) watching '$master_name', ports $base_port-$((base_port + total - 1)), dir $lab_dir"
	else
		echo "sentinel lab up: $masters masters ('$master_name', '$(set_name 2)' .. '$(set_name "$masters")') every $set_size ports from $base_port, $replicas replicas each, $sentinels sentinels (quorum $quorum) from $((base_port + data)), ports $base_port-$((base_port + total - 1)), dir $lab_dir"
	fi
}

cmd_master_addr() {
	local port="${1:?master-addr needs a sentinel PORT}" name="${2:-$master_name}"
	check_port "$port"
	[[ -f "$(node_dir "$port")/sentinel.conf" ]] || die "port $port is not a sentinel of the lab"
	cli "$port" sentinel get-master-addr-by-name "$name" | tr -d '\r' | paste -sd ' '
}

lab_command() {
	local cmd="$1"
	shift
	case "$cmd" in
	ports | data-ports | sentinel-ports | masters) cmd_list "$cmd" ;;
	master-addr) cmd_master_addr "$@" ;;
	*) usage ;;
	esac
}

lab_main "$@"
