package kafka

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a goroutine is still running
// after them: every goroutine has an owner that stops it. One is not
// ours and never ends: go-metrics starts a single meter ticker for the
// whole process with the first meter a sarama broker registers. It is one
// per process, not per client, so it cannot pile up.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/rcrowley/go-metrics.(*meterArbiter).tick"))
}
