package e2e

import (
	"fmt"
	"os"
	"testing"

	"github.com/failover-exporter/failover_exporter/internal/lab"
)

// TestMain stops the Kafka clusters the tests shared (lab.SharedKafka) once
// they have all run. A binary killed before that (go test -timeout) leaves
// none behind either: each cluster's watchdog stops it when this process is
// gone.
func TestMain(m *testing.M) {
	code := m.Run()
	if err := lab.StopSharedKafka(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}
