package kafkacanary

import (
	"fmt"
	"os"
	"testing"

	"github.com/failover-exporter/failover_exporter/internal/lab"
	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a goroutine is still running
// after them: every goroutine has an owner that stops it. One is not
// ours and never ends: go-metrics starts a single meter ticker for the
// whole process with the first meter a sarama broker registers. It is one
// per process, not per client, so it cannot pile up.
//
// The integration tests share a Kafka cluster (lab.SharedKafka), stopped
// once they have all run.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/rcrowley/go-metrics.(*meterArbiter).tick"),
		goleak.Cleanup(func(code int) {
			if err := lab.StopSharedKafka(); err != nil {
				fmt.Fprintln(os.Stderr, "kafkacanary:", err)
				code = max(code, 1)
			}
			os.Exit(code)
		}))
}
