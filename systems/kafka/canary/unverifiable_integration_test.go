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

	"github.com/failover-exporter/failover_exporter/config"
	"github.com/failover-exporter/failover_exporter/internal/lab"
	"github.com/failover-exporter/failover_exporter/systems/kafka/settings"
)

// rounds drives a canary source round by round, as its watcher would but
// without waiting for the interval, so that a test can write a hundred
// records per partition (a read-back without a leader change) in seconds.
type rounds struct {
	s     *source
	snap  *Snapshot
	topic string
}

func newRounds(t *testing.T, c *lab.KafkaCluster, topic string) *rounds {
	t.Helper()
	lease := false // one exporter: no group to wait for
	cfg := config.Config{}
	settings.SetClusters(&cfg, []settings.Cluster{{
		Name:             "lab",
		BootstrapServers: c.Bootstrap(),
		DialTimeout:      time.Second,
		RequestTimeout:   2 * time.Second,
		Canary:           settings.Canary{Enabled: true, Interval: testInterval, Topic: topic, Lease: &lease},
	}})
	if err := cfg.Complete(); err != nil {
		t.Fatal(err)
	}
	s, err := newSource(settings.Clusters(&cfg)[0], log.With(log.NewLogfmtLogger(log.NewSyncWriter(os.Stderr)), "test", t.Name()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.close)
	return &rounds{s: s, topic: topic}
}

// until runs rounds until done says so, at most limit of them; a round
// that fails is logged and retried (the topic may be being deleted).
func (r *rounds) until(t *testing.T, limit int, what string, done func(s *Snapshot) bool) {
	t.Helper()
	for i := 0; i < limit; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		next, err := r.s.round(ctx, r.snap)
		cancel()
		if err != nil {
			t.Logf("round %d: %v", i, err)
			time.Sleep(testInterval)
			continue
		}
		r.snap = next
		if done(next) {
			return
		}
	}
	t.Fatalf("after %d rounds: %s", limit, what)
}

// total adds one counter over a partition's leaders (every partition when
// p < 0).
func total(s *Snapshot, p int32, value func(*PartitionStats) uint64) uint64 {
	var n uint64
	for pp, byLeader := range s.Partitions {
		if p >= 0 && pp != p {
			continue
		}
		for _, st := range byLeader {
			n += value(st)
		}
	}
	return n
}

func unverifiable(st *PartitionStats) uint64 { return st.Unverifiable }

// pendingCounts is how many acknowledged records wait to be read back, by
// partition.
func (r *rounds) pendingCounts() map[int32]int {
	out := map[int32]int{}
	for p, acks := range r.s.pending {
		out[p] = len(acks)
	}
	return out
}

// TestKafkaCanaryDeletedRecordsAreUnverifiable deletes the canary's
// acknowledged records with DeleteRecords (as retention does, or a
// standby leading again hours later finds): reading them back is
// OFFSET_OUT_OF_RANGE. They count as unverifiable, none as lost, and the
// read-back carries on from the log's start: the records written after
// the deletion are read back and verified, and nothing stays pending.
func TestKafkaCanaryDeletedRecordsAreUnverifiable(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real Kafka cluster; run without -short")
	}
	c := lab.SharedKafka(t, lab.KafkaOptions{})
	topic := "canary-delete-records"
	r := newRounds(t, c, topic)
	const written = 20 // below readBackAfter: no read-back yet
	r.until(t, 200, "20 records acknowledged on every partition", func(s *Snapshot) bool {
		for p := range r.s.pending {
			if len(r.s.pending[p]) < written {
				return false
			}
		}
		return len(r.s.pending) >= 3
	})
	deleted := r.pendingCounts()
	ends, err := c.EndOffsets(topic)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := sarama.NewClusterAdmin(c.Bootstrap(), lab.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if err := admin.DeleteRecords(topic, ends); err != nil {
		t.Fatalf("DeleteRecords up to %v: %v", ends, err)
	}
	t.Logf("deleted every record of %s before %v; pending acknowledged records %v", topic, ends, deleted)

	// Rounds until every partition was read back (readBackAfter records
	// waiting) and its pending records drained.
	ackedAtDelete := total(r.snap, -1, acknowledged)
	readBack := func(s *Snapshot) bool {
		if total(s, -1, acknowledged) < ackedAtDelete+uint64(len(deleted)*readBackAfter) {
			return false
		}
		for p := range deleted {
			if total(s, p, unverifiable) < uint64(deleted[p]) || len(r.s.pending[p]) >= readBackAfter/2 {
				return false
			}
		}
		return true
	}
	r.until(t, 3*readBackAfter, "every partition read back past the deleted records", readBack)
	for p, n := range deleted {
		if got := total(r.snap, p, unverifiable); got != uint64(n) {
			t.Errorf("partition %d: %d unverifiable, want the %d records deleted", p, got, n)
		}
	}
	if n := total(r.snap, -1, lost); n != 0 {
		t.Errorf("%d acknowledged records counted lost after DeleteRecords, want 0", n)
	}

	// Later writes are verified again: another readBackAfter records per
	// partition are read back, and still nothing is lost or unverifiable.
	before := total(r.snap, -1, unverifiable)
	acked := total(r.snap, -1, acknowledged)
	r.until(t, 3*readBackAfter, "a second read-back of every partition", func(s *Snapshot) bool {
		if total(s, -1, acknowledged) < acked+uint64(len(deleted)*readBackAfter) {
			return false
		}
		for p := range deleted {
			if len(r.s.pending[p]) >= readBackAfter/2 {
				return false
			}
		}
		return true
	})
	if n := total(r.snap, -1, lost); n != 0 {
		t.Errorf("%d acknowledged records counted lost, want 0", n)
	}
	if n := total(r.snap, -1, unverifiable); n != before {
		t.Errorf("%d more records unverifiable after the read-back carried on, want 0", n-before)
	}
}

// TestKafkaCanaryRecreatedTopicIsNotALoss deletes the canary topic while
// acknowledged records wait to be read back; the canary creates it again
// (a new topic ID), and its offsets fill with new records. The old topic's
// records count as unverifiable, none as lost: comparing them with the
// new topic's records at the same offsets counted every one lost.
func TestKafkaCanaryRecreatedTopicIsNotALoss(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real Kafka cluster; run without -short")
	}
	c := lab.SharedKafka(t, lab.KafkaOptions{})
	topic := "canary-recreated"
	r := newRounds(t, c, topic)
	const written = 20
	r.until(t, 200, "20 records acknowledged on every partition", func(s *Snapshot) bool {
		for p := range r.s.pending {
			if len(r.s.pending[p]) < written {
				return false
			}
		}
		return len(r.s.pending) >= 3
	})
	pendingBefore := 0
	for _, n := range r.pendingCounts() {
		pendingBefore += n
	}
	admin, err := sarama.NewClusterAdmin(c.Bootstrap(), lab.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if err := admin.DeleteTopic(topic); err != nil {
		t.Fatalf("delete %s: %v", topic, err)
	}
	lab.WaitFor(t, 30*time.Second, 100*time.Millisecond, func() (bool, string) {
		topics, err := c.Topics()
		return err == nil && !slices.Contains(topics, topic), fmt.Sprintf("topics %v, %v", topics, err)
	})
	t.Logf("deleted %s with %d acknowledged records pending", topic, pendingBefore)

	// The canary re-creates the topic; rounds until each new partition has
	// had its records read back (readBackAfter of them waiting).
	acked := total(r.snap, -1, acknowledged)
	r.until(t, 4*readBackAfter, "every partition of the new topic read back", func(s *Snapshot) bool {
		if total(s, -1, acknowledged) < acked+uint64(3*readBackAfter) {
			return false
		}
		for _, acks := range r.s.pending {
			if len(acks) >= readBackAfter/2 {
				return false
			}
		}
		return true
	})
	if n := total(r.snap, -1, lost); n != 0 {
		t.Errorf("%d acknowledged records counted lost after the canary topic was re-created, want 0", n)
	}
	if n := total(r.snap, -1, unverifiable); n != uint64(pendingBefore) {
		t.Errorf("%d records unverifiable, want the %d pending when the topic was deleted", n, pendingBefore)
	}

	// Re-created behind the canary's back, between two rounds: the topic
	// exists when the canary looks, only its ID tells.
	r.until(t, 200, "20 records pending on every partition of the new topic", func(s *Snapshot) bool {
		for p := range int32(3) {
			if len(r.s.pending[p]) < written {
				return false
			}
		}
		return true
	})
	pendingBefore = 0
	for _, n := range r.pendingCounts() {
		pendingBefore += n
	}
	unverifiableBefore := total(r.snap, -1, unverifiable)
	if err := admin.DeleteTopic(topic); err != nil {
		t.Fatalf("delete %s again: %v", topic, err)
	}
	lab.WaitFor(t, 60*time.Second, 200*time.Millisecond, func() (bool, string) {
		err := admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 3, ReplicationFactor: 3}, false)
		return err == nil, fmt.Sprintf("create %s again: %v", topic, err)
	})
	lab.WaitFor(t, 30*time.Second, 100*time.Millisecond, func() (bool, string) {
		ends, err := c.EndOffsets(topic)
		return err == nil && len(ends) == 3, fmt.Sprintf("end offsets %v, %v", ends, err)
	})
	t.Logf("deleted and created %s again with %d acknowledged records pending", topic, pendingBefore)
	acked = total(r.snap, -1, acknowledged)
	r.until(t, 4*readBackAfter, "every partition of the third topic read back", func(s *Snapshot) bool {
		if total(s, -1, acknowledged) < acked+uint64(3*readBackAfter) {
			return false
		}
		for _, acks := range r.s.pending {
			if len(acks) >= readBackAfter/2 {
				return false
			}
		}
		return true
	})
	if n := total(r.snap, -1, lost); n != 0 {
		t.Errorf("%d acknowledged records counted lost after the canary topic was re-created behind its back, want 0", n)
	}
	// The records written before the canary first reads the new ID (the
	// brokers' metadata may lag the creation by a round or two) are
	// dropped too: they cannot be told from the old topic's.
	n := total(r.snap, -1, unverifiable) - unverifiableBefore
	if n < uint64(pendingBefore) || n > uint64(pendingBefore+5*3) {
		t.Errorf("%d more records unverifiable, want the %d pending when the topic was re-created (and at most five rounds' records more)", n, pendingBefore)
	}
	t.Logf("re-created behind the canary's back: %d records pending, %d unverifiable, 0 lost", pendingBefore, n)
}

// leaderAndISR reads one partition's leader and ISR with a client of the
// test's own.
func leaderAndISR(t *testing.T, c *lab.KafkaCluster, topic string, p int32) (leader int32, isr []int32) {
	t.Helper()
	admin, err := sarama.NewClusterAdmin(c.Bootstrap(), lab.ClientConfig())
	if err != nil {
		return -1, nil
	}
	defer admin.Close()
	topics, err := admin.DescribeTopics([]string{topic})
	if err != nil || len(topics) != 1 {
		return -1, nil
	}
	for _, pm := range topics[0].Partitions {
		if pm.ID == p {
			return pm.Leader, pm.Isr
		}
	}
	return -1, nil
}

// TestKafkaCanaryStillCountsARealLoss is the loss the unverifiable rules
// must not hide: a canary partition on brokers 1 and 2 with
// min.insync.replicas 1 and unclean.leader.election.enable, follower 2
// stopped, records acknowledged by 1 alone, 1 killed and 2 started: 2
// leads without them, and the records written to it next take their
// offsets. The canary counts exactly the records acknowledged while 2 was
// out lost, under broker 1, and none unverifiable (the topic is the same
// one, and its log still starts at 0). Five nodes, so that the controller
// quorum survives two dead ones.
func TestKafkaCanaryStillCountsARealLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real Kafka cluster; run without -short")
	}
	c := lab.SharedKafka(t, lab.KafkaOptions{Nodes: 5})
	topic := "canary-unclean"
	admin, err := sarama.NewClusterAdmin(c.Bootstrap(), lab.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	one, yes := "1", "true"
	err = admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: -1, ReplicationFactor: -1,
		ReplicaAssignment: map[int32][]int32{0: {1, 2}},
		ConfigEntries:     map[string]*string{"min.insync.replicas": &one, "unclean.leader.election.enable": &yes}}, false)
	admin.Close()
	if err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	lab.WaitFor(t, 30*time.Second, 100*time.Millisecond, func() (bool, string) {
		leader, isr := leaderAndISR(t, c, topic, 0)
		return leader == 1 && len(isr) == 2, fmt.Sprintf("leader %d, ISR %v", leader, isr)
	})
	r := newRounds(t, c, topic)
	// The topic is the test's: the canary neither heals nor spreads it.
	notCreate := false
	r.s.cfg.Canary.CreateTopic = &notCreate
	r.s.cfg.Canary.ReplicationFactor, r.s.cfg.Canary.MinInsyncReplicas = 2, 1
	r.until(t, 100, "5 records acknowledged by broker 1", func(s *Snapshot) bool { return len(r.s.pending[0]) >= 5 })

	c.Stop(t, 2)
	lab.WaitFor(t, 60*time.Second, 200*time.Millisecond, func() (bool, string) {
		leader, isr := leaderAndISR(t, c, topic, 0)
		return leader == 1 && len(isr) == 1, fmt.Sprintf("leader %d, ISR %v", leader, isr)
	})
	const alone = 10
	ackedBy1 := total(r.snap, 0, acknowledged)
	r.until(t, 100, "records acknowledged by broker 1 alone", func(s *Snapshot) bool {
		return total(s, 0, acknowledged) >= ackedBy1+alone
	})
	written := total(r.snap, 0, acknowledged) - ackedBy1
	c.Kill(t, 1)
	c.Restart(t, 2)
	lab.WaitFor(t, 60*time.Second, 200*time.Millisecond, func() (bool, string) {
		leader, _ := leaderAndISR(t, c, topic, 0)
		return leader == 2, fmt.Sprintf("leader %d", leader)
	})
	t.Logf("broker 2 leads %s/0 after an unclean election; %d records were acknowledged by broker 1 alone", topic, written)

	// Broker 2 takes writes; once they fill the lost records' offsets, the
	// read-back finds other values there.
	r.until(t, 200, "the records acknowledged by broker 1 alone counted lost", func(s *Snapshot) bool {
		return total(s, 0, lost) >= written && len(r.s.pending[0]) < readBackAfter/2
	})
	byLeader := r.snap.Partitions[0]
	if byLeader[1] == nil || byLeader[1].Lost != written {
		t.Errorf("broker 1: lost %+v, want the %d records it acknowledged alone", byLeader[1], written)
	}
	if n := total(r.snap, -1, lost); n != written {
		t.Errorf("%d records lost in all, want %d", n, written)
	}
	if n := total(r.snap, -1, unverifiable); n != 0 {
		t.Errorf("%d records unverifiable, want 0: every record could be read back", n)
	}
	t.Logf("FIGURE kafka canary, unclean election: %d acknowledged records counted lost, 0 unverifiable", written)
}
