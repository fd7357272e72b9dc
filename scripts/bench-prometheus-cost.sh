#!/usr/bin/env bash
# What Prometheus pays (issue 19): a real Prometheus (the Debian package)
# scrapes one target every 5 s until it has scraped it 16 times (80 s), then
# its head series and memory are recorded; one Prometheus at a time, each
# with a fresh TSDB. Targets: a baseline (nothing to scrape), this exporter
# in each partition_metrics mode against a fake cluster (a sarama MockBroker
# in the test) of 10,000 partitions in 1,000 topics and of 100,000 in 1,000
# topics, and danielqsj/kafka_exporter against the 10,000-partition one.
# About 15 minutes. The test is TestPrometheusCost in e2e/series_cost_test.go;
# the figures are in BENCHMARKS.md, "What Prometheus pays (issue 19)".
#
# kafka_exporter: KAFKA_EXPORTER_BINARY names a built danielqsj/kafka_exporter
# binary (build it from its own checkout with `go build`; BENCHMARKS.md names
# the commit measured). Nothing of it is fetched or kept by this repository;
# without the variable it is left out, with a message.
#
# Variables passed to the test (see TestPrometheusCost):
#   FAILOVER_EXPORTER_PROMETHEUS_COST_CLUSTERS  default 10000/10,100000/100 (partitions/per topic)
#   FAILOVER_EXPORTER_PROMETHEUS_COST_MODES     default lean,unhealthy,full,none
#   FAILOVER_EXPORTER_PROMETHEUS_COST_SCRAPES   default 16
#   FAILOVER_EXPORTER_PROMETHEUS_COST_INTERVAL  default 5s
#   FAILOVER_EXPORTER_PROMETHEUS_COST_KAFKA_EXPORTER_MAX  largest cluster for kafka_exporter, default 10000
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -n "${KAFKA_EXPORTER_BINARY:-}" ]; then
	[ -x "$KAFKA_EXPORTER_BINARY" ] || { echo "KAFKA_EXPORTER_BINARY=$KAFKA_EXPORTER_BINARY is not an executable" >&2; exit 2; }
	echo "kafka_exporter: $KAFKA_EXPORTER_BINARY"
else
	echo "KAFKA_EXPORTER_BINARY not set: kafka_exporter is left out" >&2
fi
export KAFKA_EXPORTER_BINARY

log=$(mktemp -t prometheus-cost.XXXXXX)
echo "log: $log"
echo "start: $(date -u '+%Y-%m-%d %H:%M:%S UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs, prometheus $(prometheus --version 2>&1 | head -1 | cut -d' ' -f3)"
status=0
FAILOVER_EXPORTER_PROMETHEUS_COST=1 go test -count=1 -timeout 90m -v -run '^TestPrometheusCost$' ./e2e/ >"$log" 2>&1 || status=$?
grep -E 'FIGURE|kafka_exporter serves|not measured' "$log" | sed 's/^ *//' || true
echo "end: $(date -u '+%Y-%m-%d %H:%M:%S UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
if [ "$status" -ne 0 ]; then
	echo "the test failed (status $status); see $log" >&2
	tail -50 "$log" >&2
fi
exit "$status"
