# shellcheck shell=bash
# What the Redis labs share (scripts/redis/cluster.sh, scripts/redis/sentinel.sh):
# their processes by port, each in its directory under lab_dir with its config
# and redis.pid, and the commands on them. Sourced, never run.
#
# The script that sources it sets, before it calls any of these:
#   prog              its name, for messages ("cluster.sh")
#   lab_dir base_port the lab's directory and first port
#   base_port_var     the variable that sets base_port, for messages
#   bus_port_offset   a node's second port from its client port (cluster bus), or empty
#   stop_order        cat or tac: the order stop sends SIGTERM in, by the ports file
#   noun              what a process is called ("node", "process")
#   server_bin cli_bin install_hint tls_cli_args
# and defines:
#   what PORT         the process on PORT, for messages ("node 17000")
#   host_of PORT      the address the process on PORT was written with
#   host_for_port PORT  the address a new process on PORT binds to
#   cmd_start ARGS    start the lab
#   lab_command CMD ARGS  the script's own commands; usage otherwise

die() {
	echo "$prog: $*" >&2
	exit 1
}

need() {
	command -v "$1" >/dev/null 2>&1 || die "$1 not found; run $install_hint"
}

# usage prints the comment at the top of the script and exits 2.
usage() {
	sed -n '2,/^set -euo/p' "${BASH_SOURCE[-1]}" | sed '$d' | sed 's/^# \{0,1\}//' >&2
	exit 2
}

cli() {
	local port="$1"
	shift
	"$cli_bin" "${tls_cli_args[@]+"${tls_cli_args[@]}"}" -h "$(host_of "$port")" -p "$port" "$@"
}

node_dir() { echo "$lab_dir/$1"; }

# conf_of is the process's config file: sentinel.conf for a sentinel,
# redis.conf for a data node.
conf_of() {
	local dir
	dir="$(node_dir "$1")"
	if [[ -f "$dir/sentinel.conf" ]]; then
		echo "$dir/sentinel.conf"
	else
		echo "$dir/redis.conf"
	fi
}

# data_node_conf is the end of a data node's redis.conf in both labs: nothing
# on disk, and replicas synced straight over the socket.
data_node_conf() {
	cat <<EOF
appendonly no
save ""
repl-diskless-sync yes
repl-diskless-sync-delay 0
EOF
}

check_port() {
	[[ "$1" =~ ^[0-9]+$ ]] || die "not a port: $1"
	[[ -f "$(conf_of "$1")" ]] || die "no lab $noun on port $1 (in $lab_dir)"
}

# running reports whether pid runs. A zombie does not: a daemon killed
# with -9 was reparented when it daemonized, and its new parent may be slow
# to reap it (a container's init), while kill -0 still finds it; a restart
# right after such a kill must not be refused. Without /proc, kill -0 says.
running() {
	local pid="$1" stat
	kill -0 "$pid" 2>/dev/null || return 1
	stat="$(cat "/proc/$pid/stat" 2>/dev/null)" || return 0
	stat="${stat##*) }"
	[[ "${stat:0:1}" != Z ]]
}

# pid_of prints the PID of a running process, or nothing when it is not running.
pid_of() {
	local pidfile pid
	pidfile="$(node_dir "$1")/redis.pid"
	[[ -f "$pidfile" ]] || return 0
	pid="$(cat "$pidfile" 2>/dev/null || true)"
	if [[ -n "$pid" ]] && running "$pid"; then
		echo "$pid"
	fi
}

wait_gone() {
	local pid="$1" i
	for ((i = 0; i < 100; i++)); do
		running "$pid" || return 0
		sleep 0.1
	done
	return 1
}

# children_of prints the PIDs of pid's children: a node's forks (a BGSAVE, an
# AOF rewrite, the RDB of a full sync). They must be found before the node is
# signalled: once it is gone they belong to init and nothing names them.
children_of() {
	# /proc rather than pgrep: procps is not on every machine the lab runs on.
	cat /proc/"$1"/task/*/children 2>/dev/null || true
}

# kill_children kills the forks children_of found and waits for them. Redis
# and Valkey ask the kernel to signal a fork when its parent dies, but it
# exits in its own time: until it has, it may still create or remove its temp
# RDB in the node's directory, and a test's TempDir cleanup racing it failed
# with "directory not empty". The lab returns only once the forks are gone.
kill_children() {
	local child
	for child in "$@"; do
		kill -KILL "$child" 2>/dev/null || true
	done
	for child in "$@"; do
		wait_gone "$child" || true
	done
}

# start_server starts the process on port with its config file (a sentinel
# with --sentinel) and waits until it answers PING.
start_server() {
	local port="$1" conf dir i
	conf="$(conf_of "$port")"
	dir="$(node_dir "$port")"
	[[ -z "$(pid_of "$port")" ]] || die "$(what "$port") is already running"
	if [[ "$conf" == */sentinel.conf ]]; then
		"$server_bin" "$conf" --sentinel || die "$server_bin --sentinel on port $port did not start; see $dir/redis.log"
	else
		"$server_bin" "$conf" || die "$server_bin on port $port did not start; see $dir/redis.log"
	fi
	for ((i = 0; i < 100; i++)); do
		if [[ "$(cli "$port" ping 2>/dev/null || true)" == "PONG" ]]; then
			return 0
		fi
		sleep 0.1
	done
	die "$(what "$port") does not answer PING; see $dir/redis.log"
}

# check_ports_free fails, naming the port, if something already listens on
# one of the ports (and bus ports) the lab is about to use: a process that
# cannot bind would otherwise fail later with a less direct message, or a
# stray server would be taken for a lab process.
check_ports_free() {
	local total="$1" port p
	for ((port = base_port; port < base_port + total; port++)); do
		for p in "$port" ${bus_port_offset:+$((port + bus_port_offset))}; do
			if (exec 3<>"/dev/tcp/$(host_for_port "$port")/$p") 2>/dev/null; then
				die "port $p is taken (something listens on $(host_for_port "$port"):$p); choose another $base_port_var or stop it"
			fi
		done
	done
}

# fresh_lab_dir empties lab_dir for a new lab, unless a lab runs there.
fresh_lab_dir() {
	local port
	if [[ -f "$lab_dir/ports" ]]; then
		for port in $(cat "$lab_dir/ports"); do
			[[ -z "$(pid_of "$port")" ]] || die "a lab is already running in $lab_dir; run $prog stop first"
		done
	fi
	rm -rf "$lab_dir"
	mkdir -p "$lab_dir"
}

cmd_stop() {
	[[ -f "$lab_dir/ports" ]] || return 0
	local port pid children=()
	for port in $("$stop_order" "$lab_dir/ports"); do
		pid="$(pid_of "$port")"
		[[ -n "$pid" ]] || continue
		children+=($(children_of "$pid"))
		# A paused process would never act on SIGTERM.
		kill -CONT "$pid" 2>/dev/null || true
		kill -TERM "$pid" 2>/dev/null || true
	done
	for port in $(cat "$lab_dir/ports"); do
		pid="$(pid_of "$port")"
		[[ -n "$pid" ]] || continue
		if ! wait_gone "$pid"; then
			kill -KILL "$pid" 2>/dev/null || true
			wait_gone "$pid" || true
		fi
	done
	kill_children "${children[@]}"
}

# running_pid prints the PID of the lab process on port, or fails saying it
# is not running.
running_pid() {
	local pid
	check_port "$1"
	pid="$(pid_of "$1")"
	[[ -n "$pid" ]] || die "$(what "$1") is not running"
	echo "$pid"
}

cmd_kill() {
	local port="${1:?kill needs a PORT}" pid children
	pid="$(running_pid "$port")"
	children=($(children_of "$pid"))
	kill -KILL "$pid"
	wait_gone "$pid" || die "$(what "$port") (pid $pid) survived kill -9"
	# A dead machine takes its node's forks with it.
	kill_children "${children[@]}"
}

cmd_stop_node() {
	local port="${1:?stop-node needs a PORT}" pid
	pid="$(running_pid "$port")"
	kill -CONT "$pid" 2>/dev/null || true
	kill -TERM "$pid"
	wait_gone "$pid" || die "$(what "$port") (pid $pid) did not stop within 10s"
}

cmd_start_node() {
	local port="${1:?start-node needs a PORT}"
	check_port "$port"
	start_server "$port"
}

cmd_signal() {
	local signal="$1" port="${2:?needs a PORT}" pid
	pid="$(running_pid "$port")"
	kill "-$signal" "$pid"
}

cmd_pid() {
	running_pid "${1:?pid needs a PORT}"
}

# cmd_list prints one of the lab's port lists (ports, data-ports, ...).
cmd_list() {
	[[ -f "$lab_dir/$1" ]] || die "no lab in $lab_dir"
	cat "$lab_dir/$1"
}

# lab_main runs the commands both labs take, and the script's own ones by
# lab_command.
lab_main() {
	local cmd="${1:-}"
	shift || true
	case "$cmd" in
	start) cmd_start "$@" ;;
	stop) cmd_stop ;;
	kill) cmd_kill "$@" ;;
	stop-node) cmd_stop_node "$@" ;;
	start-node) cmd_start_node "$@" ;;
	pause) cmd_signal STOP "$@" ;;
	resume) cmd_signal CONT "$@" ;;
	pid) cmd_pid "$@" ;;
	binaries) printf '%s\n%s\n' "$server_bin" "$cli_bin" ;;
	*) lab_command "$cmd" "$@" ;;
	esac
}
