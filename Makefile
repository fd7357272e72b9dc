# The two commands a newcomer needs: `make demo` and `make test`.
GO ?= go
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
BRANCH   ?= $(shell git rev-parse --abbrev-ref HEAD 2>/dev/null || echo unknown)
LDFLAGS  := -X github.com/prometheus/common/version.Version=$(VERSION) \
            -X github.com/prometheus/common/version.Revision=$(REVISION) \
            -X github.com/prometheus/common/version.Branch=$(BRANCH) \
            -X github.com/prometheus/common/version.BuildDate=$(shell date -u +%Y%m%d-%H:%M:%S)

.PHONY: build test demo demo-down bench chart-files
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o failover_exporter .

# The Helm chart's files/ (the alert rules and dashboards, copied from
# prometheus/ and grafana/), for `helm install ./charts/failover-exporter`.
chart-files:
	$(GO) run ./internal/chart/cmd/chartfiles

# Everything: installs what is missing, lint, fuzz, unit and integration tests.
test:
	scripts/test.sh

demo:
	scripts/demo.sh up

demo-down:
	scripts/demo.sh down

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./collector/...

# Kill the broker leading partition 0 of the demo topic and watch the failover.
.PHONY: chaos
chaos:
	scripts/demo.sh kill kafka-leader

# Kill -9 the master of the demo's Redis Sentinel deployment and watch the
# exporter count and time the failover. Its own target so that `make chaos`
# stays one short Kafka failover; `make demo` prints both.
.PHONY: chaos-sentinel
chaos-sentinel:
	scripts/demo.sh kill sentinel-master

# The seed lesson: a leader of the canary topic and a Redis master (cut off
# its replica) die; prints the acknowledged writes each lost (Kafka 0, Redis some).
.PHONY: chaos-writes
chaos-writes:
	scripts/demo.sh kill acked-writes

# A rolling restart of the demo's brokers and Redis masters, each stop gated
# by the exporter's failure budget (failover_exporter safe-to-stop).
.PHONY: roll
roll:
	scripts/demo.sh roll
