package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/failover-exporter/failover_exporter/internal/exportertest"
	"github.com/failover-exporter/failover_exporter/internal/lab"
)

// kafkaLeaseSessionTimeout is the lease's session timeout at
// kafkaLeaseCanaryInterval: the interval, and at least the broker's least
// (6 s).
const kafkaLeaseSessionTimeout = 6 * time.Second

// coordinatorHang is how long the lease group's coordinator is SIGSTOPped:
// long enough for the cluster to fence it (broker.session.timeout.ms, 9 s)
// and move the group, and for the exporters to find it several times over.
const coordinatorHang = 60 * time.Second

// groupCoordinatorAt asks the broker at addr alone which broker coordinates
// group: a client of the test's own, pinned to that broker, so that the
// answer is the cluster's and not a client's cache.
func groupCoordinatorAt(ctx context.Context, addr, group string) (int32, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DialTimeout(time.Second))
	if err != nil {
		return -1, err
	}
	defer cl.Close()
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorType = 0 // group
	req.CoordinatorKey, req.CoordinatorKeys = group, []string{group}
	kresp, err := cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		return -1, err
	}
	resp := kresp.(*kmsg.FindCoordinatorResponse)
	node, code := resp.NodeID, resp.ErrorCode
	if len(resp.Coordinators) > 0 {
		node, code = resp.Coordinators[0].NodeID, resp.Coordinators[0].ErrorCode
	}
	if err := kerr.ErrorForCode(code); err != nil {
		return -1, err
	}
	return node, nil
}

// leaseCoordinator is the broker every broker but skip names as the
// group's coordinator, -1 when they do not agree or none answers within
// a second.
func leaseCoordinator(c *lab.KafkaCluster, group string, skip int32) (int32, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	node := int32(-1)
	var errs []error
	for id := int32(1); id <= int32(c.Nodes()); id++ {
		if id == skip {
			continue
		}
		n, err := groupCoordinatorAt(ctx, c.BrokerAddr(id), group)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("broker %d: %w", id, err))
		case node == -1:
			node = n
		case n != node:
			errs = append(errs, fmt.Errorf("broker %d names %d, another %d", id, n, node))
		}
	}
	if len(errs) > 0 {
		return -1, errors.Join(errs...)
	}
	return node, nil
}

// ackWatch follows the acknowledged canary writes two exporters serve: the
// times at which either served a count it had not served before.
type ackWatch struct {
	es   []*exportertest.Exporter
	last []float64
	acks []time.Time
}

func (w *ackWatch) poll() {
	if w.last == nil {
		w.last = make([]float64, len(w.es))
	}
	for i, e := range w.es {
		m, err := e.TryScrape()
		if err != nil {
			continue
		}
		// A standby serves no counters; a holder's only grow.
		if v, served := kafkaCanarySeries.acknowledged(m); served && v != w.last[i] && v > 0 {
			w.last[i] = v
			w.acks = append(w.acks, time.Now())
		}
	}
}

// longestGap is the longest time in [from, to] without an acknowledged
// write, and when it ended.
func (w *ackWatch) longestGap(from, to time.Time) (gap time.Duration, end time.Time) {
	prev := from
	for _, at := range append(w.acks, to) {
		if !at.After(from) || at.After(to) {
			continue
		}
		if d := at.Sub(prev); d > gap {
			gap, end = d, at
		}
		prev = at
	}
	return gap, end
}

// TestKafkaCanaryLeaseHungCoordinator SIGSTOPs the broker that coordinates
// the canary lease's group, with two exporters running: the cluster fences
// it (broker.session.timeout.ms) and moves the group to another broker, and
// the exporters must find it there, a hung coordinator costing at most one
// lease period (the session timeout) once the cluster moved the group. The
// test's own FindCoordinator polling of the live brokers is the clock of
// the move; the exporters' acknowledged writes counters say when the
// canary wrote.
func TestKafkaCanaryLeaseHungCoordinator(t *testing.T) {
	c := lab.SharedKafka(t, lab.KafkaOptions{})
	const topic = "canary-lease-coord"
	group := topic + ".lease" // kafkasettings.Canary.LeaseGroup
	cfg := faultConfig(t, fmt.Sprintf(`kafka:
  - name: lab
    bootstrap_servers: [%s]
    canary: {enabled: true, interval: %s, topic: %s}
`, strings.Join(c.Bootstrap(), ", "), kafkaLeaseCanaryInterval, topic))
	a := exportertest.Start(t, "--config.file="+cfg)
	b := exportertest.Start(t, "--config.file="+cfg)
	kafkaCanarySeries.waitOneLeader(t, 120*time.Second, float64(2*c.Nodes()), a, b)

	hung, err := leaseCoordinator(c, group, -1)
	if err != nil {
		t.Fatalf("the lease group's coordinator: %v", err)
	}
	watch := &ackWatch{es: []*exportertest.Exporter{a, b}}
	watch.poll()
	stoppedAt := time.Now()
	resume := faultHang(t, "kafka", c.PID(hung))
	moved := watchCoordinatorMove(c, group, hung, stoppedAt.Add(coordinatorHang))
	for time.Since(stoppedAt) < coordinatorHang {
		watch.poll()
		time.Sleep(50 * time.Millisecond)
	}
	end := time.Now()
	movedAt, newCoordinator := moved()
	resume()

	gap, gapEnd := watch.longestGap(stoppedAt, end)
	var afterMove time.Duration
	if !movedAt.IsZero() {
		afterMove, _ = watch.longestGap(movedAt, end)
	}
	t.Logf("FIGURE kafka canary lease: the lease group's coordinator (broker %d) SIGSTOPped for %s -> the cluster moved the group (to broker %d) after %s; longest gap in acknowledged writes %s (ending %s after the stop), %s of it after the move (canary interval %s, session timeout %s)",
		hung, coordinatorHang, newCoordinator, sinceOrNever(movedAt, stoppedAt), gap.Round(10*time.Millisecond),
		sinceOrNever(gapEnd, stoppedAt), afterMove.Round(10*time.Millisecond), kafkaLeaseCanaryInterval, kafkaLeaseSessionTimeout)
	for i, e := range []*exportertest.Exporter{a, b} {
		for _, line := range strings.Split(e.Logs(), "\n") {
			if strings.Contains(line, "canary lease") {
				t.Logf("exporter %d: %s", i, line)
			}
		}
	}
	if movedAt.IsZero() {
		t.Fatalf("the cluster did not move the group off the hung broker %d within %s", hung, coordinatorHang)
	}
	// Once the cluster moved the group, an attempt finds it within one
	// lease period, and a round writes within one canary interval (the
	// rounds' own spacing): no longer gap in writes after the move.
	if bound := kafkaLeaseSessionTimeout + kafkaLeaseCanaryInterval; afterMove > bound {
		t.Errorf("after the cluster moved the group (%s after the stop), the canary wrote nothing for %s, want at most %s (one lease period and one canary interval)",
			sinceOrNever(movedAt, stoppedAt), afterMove.Round(10*time.Millisecond), bound)
	}
	// With a wide margin: the hang did not silence the canary for most of
	// the pause.
	if gap > coordinatorHang/2 {
		t.Errorf("the hung coordinator silenced the canary for %s of a %s pause", gap.Round(10*time.Millisecond), coordinatorHang)
	}
	// Healthy again: one writer, nothing counted lost.
	kafkaCanarySeries.waitOneLeader(t, 120*time.Second, 1, a, b)
	for _, e := range []*exportertest.Exporter{a, b} {
		if lost := kafkaCanarySeries.lostSeries(e.Scrape(t)); len(lost) > 0 {
			t.Errorf("acknowledged records counted lost: %v", lost)
		}
	}
}

// watchCoordinatorMove polls the brokers but hung until one names another
// coordinator for group, or until deadline; the function it returns waits
// for that and says when and which (zero when it did not move).
func watchCoordinatorMove(c *lab.KafkaCluster, group string, hung int32, deadline time.Time) func() (time.Time, int32) {
	var (
		wg    sync.WaitGroup
		at    time.Time
		where int32 = -1
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for time.Now().Before(deadline) {
			if n, err := leaseCoordinator(c, group, hung); err == nil && n != hung {
				at, where = time.Now(), n
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	return func() (time.Time, int32) {
		wg.Wait()
		return at, where
	}
}

// sinceOrNever is t - since, rounded, or "never" for a zero t.
func sinceOrNever(t, since time.Time) string {
	if t.IsZero() || since.IsZero() {
		return "never"
	}
	return t.Sub(since).Round(10 * time.Millisecond).String()
}
