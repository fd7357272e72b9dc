# shellcheck shell=bash
# Process helpers shared by the lab and demo scripts (scripts/kafka/cluster.sh,
# scripts/kafka/mirror.sh, scripts/demo.sh). Sourced, never run.

# pid_alive PID: the process exists and is not a zombie.
pid_alive() {
  local state
  state=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
  [[ -n $state && $state != Z ]]
}

# wait_exit PID SECONDS: wait for PID to exit; 1 if it is still alive then.
wait_exit() {
  local deadline=$((SECONDS + $2))
  while pid_alive "$1"; do
    ((SECONDS < deadline)) || return 1
    sleep 0.1
  done
}

# pids_matching TEXT: the live processes whose command line (arguments
# joined by spaces) contains TEXT, one PID a line.
pids_matching() {
  local f pid
  for f in /proc/[0-9]*/cmdline; do
    pid=${f#/proc/}
    pid=${pid%/cmdline}
    tr '\0' ' ' 2>/dev/null <"$f" | grep -qF -- "$1" || continue
    pid_alive "$pid" && echo "$pid"
  done
  return 0
}

# start_watchdog NAME OWNER_PID DIR COMMAND...: once process OWNER_PID is
# gone, a detached process named NAME runs COMMAND (in its own place, by
# exec). Its PID goes to DIR/watchdog.pid, its output to DIR/watchdog.log.
# Nothing happens unless OWNER_PID is a number.
#
# The Go test helpers set the owner to the test binary's PID: t.Cleanup does
# not run when `go test -timeout` panics or the binary is killed, and without
# this the JVMs and servers a failed CI run started would keep running.
start_watchdog() {
  local name=$1 owner=$2 dir=$3
  shift 3
  [[ $owner =~ ^[0-9]+$ ]] || return 0
  # shellcheck disable=SC2016 # $1 and $@ are the inner bash's arguments
  nohup setsid bash -c 'owner=$1; shift; while kill -0 "$owner" 2>/dev/null; do sleep 1; done; exec "$@"' \
    "$name" "$owner" "$@" >>"$dir/watchdog.log" 2>&1 </dev/null &
  echo $! >"$dir/watchdog.pid"
}

# stop_watchdog NAME DIR: kill the watchdog start_watchdog NAME ... DIR
# started, unless this process is that watchdog running its command.
stop_watchdog() {
  local name=$1 file=$2/watchdog.pid pid
  [[ -f $file ]] || return 0
  pid=$(<"$file")
  rm -f "$file"
  [[ $pid =~ ^[0-9]+$ && $pid != "$$" ]] || return 0
  tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | grep -qF -- "$name" || return 0
  kill "$pid" 2>/dev/null || true
}
