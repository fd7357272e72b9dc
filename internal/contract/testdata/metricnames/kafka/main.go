// Command kafka prints kafka.MetricNames(), one per line. contract_test.go runs it
// with "go run" once collector/kafka declares MetricNames, so that the contract
// package compiles even while the collector does not exist yet.
package main

import (
	"fmt"

	"github.com/failover-exporter/failover_exporter/collector/kafka"
)

func main() {
	for _, name := range kafka.MetricNames() {
		fmt.Println(name)
	}
}
