// Command redis prints redis.MetricNames(), one per line. contract_test.go runs it
// with "go run" once collector/redis declares MetricNames, so that the contract
// package compiles even while the collector does not exist yet.
package main

import (
	"fmt"

	"github.com/failover-exporter/failover_exporter/collector/redis"
)

func main() {
	for _, name := range redis.MetricNames() {
		fmt.Println(name)
	}
}
