package kafkacanary

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/failover-exporter/failover_exporter/config"
	"github.com/failover-exporter/failover_exporter/internal/lab"
	"github.com/failover-exporter/failover_exporter/systems/kafka/settings"
)

// cancelLatencyLimit is how soon after its context ends a round must
// return, whatever the cluster does.
const cancelLatencyLimit = 100 * time.Millisecond

// TestKafkaCanaryRoundHonoursItsContext SIGSTOPs the broker leading canary
// partition 0, so that the round's calls to it hang until the request
// timeout (2 s here), and cancels rounds at several points of their way:
// each returns within cancelLatencyLimit of the cancel with the context's
// error. A round whose deadline passes while the write to the stopped
// broker waits returns its snapshot, that write counted as a timeout under
// the stopped leader. Once the broker resumes, close returns promptly and
// leaves no call running (goleak checks the package).
func TestKafkaCanaryRoundHonoursItsContext(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Kafka cluster")
	}
	c := lab.SharedKafka(t, lab.KafkaOptions{})
	cfg := config.Config{}
	settings.SetClusters(&cfg, []settings.Cluster{{
		Name:             "lab",
		BootstrapServers: c.Bootstrap(),
		DialTimeout:      time.Second,
		RequestTimeout:   2 * time.Second,
		Canary:           settings.Canary{Enabled: true, Interval: testInterval},
	}})
	if err := cfg.Complete(); err != nil {
		t.Fatal(err)
	}
	src, err := newSource(settings.Clusters(&cfg)[0], log.NewLogfmtLogger(log.NewSyncWriter(os.Stderr)))
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			src.close()
		}
	})

	// Rounds until every partition of the new topic takes writes.
	var prev *Snapshot
	lab.WaitFor(t, 90*time.Second, 200*time.Millisecond, func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		next, err := src.round(ctx, prev)
		if err != nil {
			return false, err.Error()
		}
		prev = next
		if next.Topic == nil || next.Topic.Partitions != c.Nodes() {
			return false, "canary topic not created yet"
		}
		for p, byLeader := range next.Partitions {
			for leader, st := range byLeader {
				if st.Acknowledged == 0 || leader < 0 {
					return false, fmt.Sprintf("partition %d not acknowledged yet", p)
				}
			}
		}
		return len(next.Partitions) == c.Nodes(), "not every partition written yet"
	})

	stopped := describe(t, c)[0].Leader
	pid := c.PID(stopped)
	if pid == 0 {
		t.Fatalf("broker %d is not running", stopped)
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	}
	t.Cleanup(resume)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("SIGSTOP broker %d: %v", stopped, err)
	}
	stoppedAt := time.Now()

	// A deadline while the write to the stopped leader waits: the round
	// still reports the other partitions, and that write as a timeout.
	timeouts := func(s *Snapshot) uint64 {
		if st := s.Partitions[0][stopped]; st != nil {
			return st.Failures["timeout"]
		}
		return 0
	}
	before := timeouts(prev)
	ctx, cancel := context.WithTimeout(context.Background(), 2500*time.Millisecond)
	start := time.Now()
	next, err := src.round(ctx, prev)
	deadline, _ := ctx.Deadline()
	late := time.Since(deadline)
	cancel()
	t.Logf("FIGURE kafka canary round with a 2.5s deadline, broker %d SIGSTOPped: returned after %s, %s past the deadline (err: %v)",
		stopped, time.Since(start).Round(time.Millisecond), late.Round(100*time.Microsecond), err)
	switch {
	case err != nil && errors.Is(err, context.DeadlineExceeded):
		// The stopped broker held the metadata or topic reads past the
		// deadline: the round fails, as any refresh that runs out of time.
	case err != nil:
		t.Errorf("round with a deadline: %v", err)
	default:
		if got := timeouts(next); got != before+1 {
			t.Errorf("partition 0 led by stopped broker %d: %d timeouts after the round, want %d", stopped, got, before+1)
		}
	}
	if late > cancelLatencyLimit {
		t.Errorf("round returned %s after its deadline, want within %s", late.Round(time.Millisecond), cancelLatencyLimit)
	}

	// Each cancel falls at a different point: the metadata refresh, the
	// writes, or the read-backs, wherever the stopped broker holds the
	// round. (The controller fences the broker only after its session
	// timeout, so for these seconds its partitions keep it as leader.)
	var slowest time.Duration
	measured := 0
	for _, after := range []time.Duration{50 * time.Millisecond, 300 * time.Millisecond, 800 * time.Millisecond, 1500 * time.Millisecond} {
		ctx, cancel := context.WithCancel(context.Background())
		returned := make(chan error, 1)
		start := time.Now()
		go func() {
			_, err := src.round(ctx, prev)
			returned <- err
		}()
		select {
		case err := <-returned:
			// Fenced after the lab's 3 s session timeout, the broker no
			// longer holds rounds up.
			cancel()
			t.Logf("a round with broker %d stopped finished in %s, before the cancel at %s (err %v): nothing to measure",
				stopped, time.Since(start).Round(time.Millisecond), after, err)
			continue
		case <-time.After(after):
		}
		measured++
		cancel()
		cancelled := time.Now()
		var err error
		select {
		case err = <-returned:
		case <-time.After(10 * time.Second):
			t.Fatalf("round cancelled after %s did not return within 10s", after)
		}
		latency := time.Since(cancelled)
		slowest = max(slowest, latency)
		t.Logf("FIGURE kafka canary round cancelled %s in, broker %d SIGSTOPped: returned %s after the cancel (err: %v)",
			after, stopped, latency.Round(100*time.Microsecond), err)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("round cancelled after %s returned %v, want the context's error", after, err)
		}
		if latency > cancelLatencyLimit {
			t.Errorf("round cancelled after %s returned %s after the cancel, want within %s", after, latency.Round(time.Millisecond), cancelLatencyLimit)
		}
	}

	if measured < 2 {
		t.Errorf("only %d rounds were still running at their cancel", measured)
	}

	resume()
	closeStart := time.Now()
	src.close()
	closed = true
	t.Logf("FIGURE kafka canary: slowest return after a cancel %s; close after the broker resumed (%s after the SIGSTOP) took %s",
		slowest.Round(100*time.Microsecond), closeStart.Sub(stoppedAt).Round(time.Millisecond), time.Since(closeStart).Round(time.Millisecond))
}
