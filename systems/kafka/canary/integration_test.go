package kafkacanary

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/go-kit/log"

	"github.com/failover-exporter/failover_exporter/collector/canary"
	"github.com/failover-exporter/failover_exporter/collector/events"
	"github.com/failover-exporter/failover_exporter/collector/system"
	"github.com/failover-exporter/failover_exporter/collector/watch"
	"github.com/failover-exporter/failover_exporter/config"
	"github.com/failover-exporter/failover_exporter/internal/lab"
	kafkasettings "github.com/failover-exporter/failover_exporter/systems/kafka/settings"
)

const testInterval = 300 * time.Millisecond

// startCanary runs a canary against the lab for the rest of the test. Its
// events go to the returned log, as the collector manager records them.
func startCanary(t *testing.T, c *lab.KafkaCluster) (*watch.Watcher[Snapshot], *events.Log) {
	t.Helper()
	w, elog, _ := runCanary(t, c, kafkasettings.Canary{Enabled: true, Interval: testInterval})
	return w, elog
}

// runCanary runs a canary with the given settings, served by the returned
// collector as the exporter serves it.
func runCanary(t *testing.T, c *lab.KafkaCluster, canaryCfg kafkasettings.Canary) (*watch.Watcher[Snapshot], *events.Log, *Collector) {
	t.Helper()
	cfg := config.Config{}
	kafkasettings.SetClusters(&cfg, []kafkasettings.Cluster{{
		Name:             "lab",
		BootstrapServers: c.Bootstrap(),
		DialTimeout:      time.Second,
		RequestTimeout:   2 * time.Second,
		Canary:           canaryCfg,
	}})
	if err := cfg.Complete(); err != nil {
		t.Fatal(err)
	}
	w, err := system.NewWatcher(Spec, kafkasettings.Clusters(&cfg)[0], log.NewLogfmtLogger(log.NewSyncWriter(os.Stderr)))
	if err != nil {
		t.Fatal(err)
	}
	elog := events.NewLog(0, log.NewNopLogger())
	events.Follow(elog, "kafka", "lab", w, func(s *Snapshot) []events.Event { return s.Events.All() })
	collector := NewCollector()
	collector.Set("lab", w)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return w, elog, collector
}

// canaryEvents are the logged events of one kind about a canary partition
// (any partition when p < 0), newest first.
func canaryEvents(elog *events.Log, kind events.Kind, p int32) []events.Event {
	var out []events.Event
	for _, e := range elog.Query("kafka", "lab", time.Time{}, 0) {
		if e.Kind == kind && e.System == "kafka" && e.Subject.Topic == kafkasettings.DefaultCanaryTopic &&
			e.Subject.Partition != nil && (p < 0 || *e.Subject.Partition == p) {
			out = append(out, e)
		}
	}
	return out
}

// sum adds up one counter over the snapshot's partitions and leaders that
// match.
func sum(w *watch.Watcher[Snapshot], match func(p, leader int32) bool, value func(*PartitionStats) uint64) uint64 {
	s := w.Current().Snapshot
	if s == nil {
		return 0
	}
	var n uint64
	for p, byLeader := range s.Partitions {
		for leader, st := range byLeader {
			if match(p, leader) {
				n += value(st)
			}
		}
	}
	return n
}

func any2(int32, int32) bool                 { return true }
func acknowledged(st *PartitionStats) uint64 { return st.Acknowledged }
func lost(st *PartitionStats) uint64         { return st.Lost }
func duplicates(st *PartitionStats) uint64   { return st.Duplicates }
func failuresOf(kind string) func(*PartitionStats) uint64 {
	return func(st *PartitionStats) uint64 { return st.Failures[kind] }
}
func allFailures(st *PartitionStats) uint64 {
	var n uint64
	for _, v := range st.Failures {
		n += v
	}
	return n
}

// describe reads the canary topic's partitions with a client of the
// test's own: leader and ISR by partition.
// leaseCoordinator is the broker that coordinates the canary lease's
// group, as the cluster answers FindCoordinator.
func leaseCoordinator(t *testing.T, c *lab.KafkaCluster) int32 {
	t.Helper()
	client, err := sarama.NewClient(c.Bootstrap(), lab.ClientConfig())
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	defer client.Close()
	b, err := client.Coordinator(kafkasettings.Canary{Topic: kafkasettings.DefaultCanaryTopic}.LeaseGroup())
	if err != nil {
		t.Fatalf("the lease group's coordinator: %v", err)
	}
	return b.ID()
}

// partitionNotLedBy is the lowest canary partition whose leader is not
// broker.
func partitionNotLedBy(parts map[int32]*sarama.PartitionMetadata, broker int32) int32 {
	for id := range int32(len(parts)) {
		if p, ok := parts[id]; ok && p.Leader != broker {
			return id
		}
	}
	return 0
}

func describe(t *testing.T, c *lab.KafkaCluster) map[int32]*sarama.PartitionMetadata {
	t.Helper()
	conf := lab.ClientConfig()
	admin, err := sarama.NewClusterAdmin(c.Bootstrap(), conf)
	if err != nil {
		t.Fatalf("admin client: %v", err)
	}
	defer admin.Close()
	topics, err := admin.DescribeTopics([]string{kafkasettings.DefaultCanaryTopic})
	if err != nil || len(topics) != 1 || topics[0].Err != sarama.ErrNoError {
		t.Fatalf("describe canary topic: %v %+v", err, topics)
	}
	out := map[int32]*sarama.PartitionMetadata{}
	for _, p := range topics[0].Partitions {
		out[p.ID] = p
	}
	return out
}

// TestKafkaCanaryFailover runs the canary on a real 3-broker KRaft cluster
// with its topic at RF 3 / min.insync.replicas 2: killing the leader of a
// canary partition fails writes to it for a bounded time, the new leader
// takes them, and every acknowledged record is still there when read back;
// stopping a second broker puts the partitions under min ISR, where writes
// fail with NOT_ENOUGH_REPLICAS and none is acknowledged.
func TestKafkaCanaryFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real Kafka cluster; run without -short")
	}
	c := lab.StartKafka(t, lab.KafkaOptions{})
	w, elog := startCanary(t, c)

	lab.WaitFor(t, 60*time.Second, 200*time.Millisecond, func() (bool, string) {
		for p := range int32(3) {
			if n := sum(w, func(pp, _ int32) bool { return pp == p }, acknowledged); n < 3 {
				return false, fmt.Sprintf("partition %d: %d acknowledged; last error %v", p, n, w.Current().LastError)
			}
		}
		return true, ""
	})
	parts := describe(t, c)
	var leaders []int32
	for _, p := range parts {
		leaders = append(leaders, p.Leader)
		if len(p.Replicas) != 3 || len(p.Isr) != 3 {
			t.Errorf("partition %d: replicas %v ISR %v, want 3 and 3", p.ID, p.Replicas, p.Isr)
		}
	}
	slices.Sort(leaders)
	if !slices.Equal(leaders, []int32{1, 2, 3}) {
		t.Errorf("canary partition leaders %v, want every broker to lead one", leaders)
	}

	// Kill the leader of a canary partition that does not also coordinate
	// the lease's group: that kill would end the lease, after which the
	// hold's records are counted unverifiable, not read back, and nothing
	// here could be verified (TestKafkaCanaryLeaseHungCoordinator, in e2e,
	// covers it). Two CI runs of this stop killed the coordinator and
	// waited in vain for a read-back.
	part := partitionNotLedBy(parts, leaseCoordinator(t, c))
	victim := parts[part].Leader
	isVictimP0 := func(p, leader int32) bool { return p == part && leader == victim }
	isNewP0 := func(p, leader int32) bool { return p == part && leader != victim && leader >= 0 }
	// The kill lands somewhere between these two: cluster.sh takes tens
	// of milliseconds on a busy machine, and the victim acknowledges
	// writes until the signal arrives (a busy run saw one 42 ms after
	// the first clock).
	killed := time.Now()
	c.Kill(t, victim)
	killedBy := time.Now()
	took := lab.WaitFor(t, 60*time.Second, 100*time.Millisecond, func() (bool, string) {
		n := sum(w, isNewP0, acknowledged)
		return n >= 3, fmt.Sprintf("%d acknowledged on a new leader of partition %d", n, part)
	})
	lab.WaitFor(t, 30*time.Second, 100*time.Millisecond, func() (bool, string) {
		s := w.Current().Snapshot
		return s.Checks >= 1, fmt.Sprintf("%d read-back checks", s.Checks)
	})
	failed := sum(w, isVictimP0, allFailures)
	t.Logf("FIGURE kafka canary: kill -9 of the leader of canary partition %d (broker %d): writes on a new leader after %s, %d failed writes on the old one",
		part, victim, took.Round(10*time.Millisecond), failed)
	// The stall clock against the kill's: the stall began at the last
	// acknowledgement before the kill (within a round or so of it, by the
	// victim) and ended at the first after it, on the new leader, before
	// the test saw three of them.
	stall := w.Current().Snapshot.LastStall[part]
	stalls := w.Current().Snapshot.Stalls[victim]
	t.Logf("FIGURE kafka canary stall clock: partition %d stalled %s (last acknowledgement %s before the kill, first after it %s after), broker %d to %d",
		part, stall.To.Sub(stall.From).Round(10*time.Millisecond), killed.Sub(stall.From).Round(10*time.Millisecond), stall.To.Sub(killed).Round(10*time.Millisecond), stall.Leader, stall.After)
	switch {
	case failed == 0 && stalls == nil:
		// The write in flight at the kill was retried onto the new
		// leader and acknowledged, and no round failed: no stall by the
		// clock's rule (a CI run saw it; TestStallClock has the rule).
		t.Logf("no write failed across the kill: no stall observed, as the clock's rule says")
	case stalls == nil || stalls.Count != 1:
		t.Errorf("kafka_canary_write_stall_seconds{broker=%d}: %+v, want one stall", victim, stalls)
	case stall.Leader != victim || stall.After == victim || stall.After < 0:
		t.Errorf("stall %+v: want it begun by broker %d and ended by another", stall, victim)
	case stall.From.After(killedBy) || killed.Sub(stall.From) > 10*testInterval:
		t.Errorf("stall began %s before the kill (which took %s); want the last acknowledgement before it, within ten rounds", killed.Sub(stall.From), killedBy.Sub(killed))
	case stall.To.Before(killed) || stall.To.After(killed.Add(took)):
		t.Errorf("stall ended %s after the kill; want after it and before the test saw the new leader's writes (%s)", stall.To.Sub(killed), took)
	}
	// Bounded: at most one attempt per interval from the kill until the
	// new leader took writes, plus the one in flight.
	if bound := uint64(time.Since(killed)/testInterval) + 2; failed > bound {
		t.Errorf("%d failures on the dead leader, more than the %d rounds since the kill", failed, bound)
	}
	if n := sum(w, any2, lost); n != 0 {
		t.Errorf("%d acknowledged records lost with acks=all and min ISR 2, want 0", n)
	}

	// Stop a second broker (cleanly, so that the controller removes it
	// from the ISRs before the quorum goes): ISR 1 < min ISR 2.
	second := int32(1)
	for second == victim {
		second++
	}
	ackedBefore := sum(w, any2, acknowledged)
	c.Stop(t, second)
	lab.WaitFor(t, 60*time.Second, 200*time.Millisecond, func() (bool, string) {
		n := sum(w, any2, failuresOf("NOT_ENOUGH_REPLICAS"))
		return n >= 3, fmt.Sprintf("%d NOT_ENOUGH_REPLICAS failures; acknowledged %d -> %d", n, ackedBefore, sum(w, any2, acknowledged))
	})
	settled := sum(w, any2, acknowledged)
	time.Sleep(10 * testInterval)
	if after := sum(w, any2, acknowledged); after != settled {
		t.Errorf("%d records acknowledged with one broker of three left (min ISR 2)", after-settled)
	}
	if n := sum(w, any2, lost); n != 0 {
		t.Errorf("%d acknowledged records lost, want 0", n)
	}
	// The event log says so, with the error kind.
	if !slices.ContainsFunc(canaryEvents(elog, canary.EventWriteFailing, -1), func(e events.Event) bool { return e.After == "NOT_ENOUGH_REPLICAS" }) {
		t.Errorf("no write_failing event with NOT_ENOUGH_REPLICAS: %+v", canaryEvents(elog, canary.EventWriteFailing, -1))
	}
	t.Logf("FIGURE kafka canary under min ISR: %d NOT_ENOUGH_REPLICAS failures, %d acknowledged since the stop settled",
		sum(w, any2, failuresOf("NOT_ENOUGH_REPLICAS")), sum(w, any2, acknowledged)-settled)

	// Both brokers back: once they are in sync, the canary moves
	// leadership back so that every broker leads a canary partition again.
	victimP0 := func(p, leader int32) bool { return p == part && leader == victim }
	ackedByVictim := sum(w, victimP0, acknowledged)
	c.Restart(t, victim)
	c.Restart(t, second)
	took = lab.WaitFor(t, 3*time.Minute, time.Second, func() (bool, string) {
		var leaders []int32
		for _, p := range describe(t, c) {
			leaders = append(leaders, p.Leader)
		}
		slices.Sort(leaders)
		return slices.Equal(leaders, []int32{1, 2, 3}), fmt.Sprintf("canary partition leaders %v", leaders)
	})
	t.Logf("FIGURE kafka canary: leadership spread over the three brokers again %s after both restarts", took.Round(100*time.Millisecond))
	lab.WaitFor(t, time.Minute, 200*time.Millisecond, func() (bool, string) {
		n := sum(w, victimP0, acknowledged) - ackedByVictim
		return n > 0, fmt.Sprintf("%d acknowledged by broker %d on partition %d since it leads it again", n, victim, part)
	})
	if n := sum(w, any2, lost); n != 0 {
		t.Errorf("%d acknowledged records lost, want 0", n)
	}
	// The partition refused writes under min ISR and takes them again: its
	// newest write event is the recovery; nothing was logged lost.
	failing, recovered := canaryEvents(elog, canary.EventWriteFailing, part), canaryEvents(elog, canary.EventWriteRecovered, part)
	if len(failing) == 0 || len(recovered) == 0 || recovered[0].Time.Before(failing[0].Time) {
		t.Errorf("partition %d: write_failing %+v, write_recovered %+v, want the newest to be a recovery", part, failing, recovered)
	}
	if evs := canaryEvents(elog, canary.EventAcknowledgedWritesLost, -1); len(evs) != 0 {
		t.Errorf("acknowledged_writes_lost events with acks=all and min ISR 2: %+v", evs)
	}
	// Duplicates: the canary counts the extra copies among the records it
	// read back, the test every record of the topic, read with a client
	// of its own: the canary never counts a copy the log does not hold.
	counted, held := sum(w, any2, duplicates), copiesInTopic(t, c)
	t.Logf("FIGURE kafka canary duplicates across the kill and both restarts: %d counted by the canary, %d extra copies in the topic", counted, held)
	if counted > held {
		t.Errorf("the canary counted %d duplicates; the topic holds %d extra copies", counted, held)
	}
}

// copiesInTopic reads every record of the canary topic and counts the
// values it holds at more than one offset, beyond the first.
func copiesInTopic(t *testing.T, c *lab.KafkaCluster) uint64 {
	t.Helper()
	topic := kafkasettings.DefaultCanaryTopic
	// Right after leadership moves back, a new leader answers
	// OFFSET_NOT_AVAILABLE until its high watermark caught up.
	var ends map[int32]int64
	lab.WaitFor(t, 30*time.Second, 500*time.Millisecond, func() (bool, string) {
		var err error
		ends, err = c.EndOffsets(topic)
		return err == nil, fmt.Sprintf("end offsets of %s: %v", topic, err)
	})
	seen, copies := map[string]bool{}, uint64(0)
	for p, end := range ends {
		for _, r := range c.ReadRecords(t, topic, p, sarama.OffsetOldest, int(end), time.Minute) {
			if seen[string(r.Value)] {
				copies++
			}
			seen[string(r.Value)] = true
		}
	}
	return copies
}
