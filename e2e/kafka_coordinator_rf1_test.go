package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/failover-exporter/failover_exporter/internal/exportertest"
	"github.com/failover-exporter/failover_exporter/internal/lab"
	"github.com/failover-exporter/failover_exporter/systems/kafka"
)

// reassignPartition moves one partition to replicas and waits until
// kafka-topics.sh shows exactly them, in sync, with no reassignment left.
func reassignPartition(t *testing.T, c *lab.KafkaCluster, topic string, partition int32, replicas []int32) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...))
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	defer cl.Close()
	req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	req.TimeoutMillis = 30_000
	rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
	rp.Partition, rp.Replicas = partition, replicas
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				if perr := kerr.ErrorForCode(rp.ErrorCode); perr != nil {
					err = perr
				}
			}
		}
	}
	if err != nil {
		t.Fatalf("reassign %s/%d to %v: %v", topic, partition, replicas, err)
	}
	lab.WaitFor(t, 60*time.Second, 500*time.Millisecond, func() (bool, string) {
		for _, p := range c.DescribeTopics(t, "--topic", topic) {
			if p.Partition == partition {
				return slices.Equal(p.Replicas, replicas) && len(p.ISR) == len(replicas) && !p.Reassigning, fmt.Sprintf("%+v", p)
			}
		}
		return false, "partition not described"
	})
}

// TestKafkaCoordinatorOnlyReplica stops the only replica of the
// __consumer_offsets partition a group commits to (reassigned to RF 1 on
// its leader for the test): the group's coordinator is gone until the
// broker is back, and nothing else can take it over. The exporter's
// episode of that partition is checked against the test client's own
// commits: they fail from the stop until after the restart, and the
// exporter says unavailable all along and answering only after the
// restart, within a refresh of the client's first success.
//
// The broker is stopped cleanly (SIGTERM): after a kill -9, Kafka 4.1
// with eligible leader replicas (KIP-966) does not elect the restarted
// replica, which may have lost unflushed writes, and the partition stays
// offline until an unclean election (a run of this test saw no
// coordinator answer 90 s after the restart; docs/coordinators.md).
func TestKafkaCoordinatorOnlyReplica(t *testing.T) {
	c := lab.SharedKafka(t, lab.KafkaOptions{Nodes: 5, InternalTopics: true})
	ensureOffsetsTopic(t, c)
	const topic, group = "coordinator-only-replica", "coordinator-only-replica-group"
	c.CreateTopic(t, topic, 1)
	offsets := c.DescribeTopics(t, "--topic", "__consumer_offsets")
	partition := kafka.CoordinatorPartitionOf(group, len(offsets))
	var before lab.PartitionDescription
	for _, p := range offsets {
		if p.Partition == partition {
			before = p
		}
	}
	victim := before.Leader
	reassignPartition(t, c, "__consumer_offsets", partition, []int32{victim})
	// Given back as it was, so that the lab lends the cluster whole.
	t.Cleanup(func() { reassignPartition(t, c, "__consumer_offsets", partition, before.Replicas) })

	const refresh = time.Second
	e := startLabExporter(t, c, refresh)
	m := startCommitter(t, c, group, topic)
	lab.WaitFor(t, 30*time.Second, 100*time.Millisecond, m.succeeded)
	unavailable := map[string]string{"kind": "group", "partition": fmt.Sprint(partition), "state": "unavailable"}
	waitMetrics(t, e, 30*time.Second, "the group's coordinator answering", func(mm exportertest.Metrics) (bool, string) {
		v, ok := mm.Value("kafka_coordinator_partitions", map[string]string{"kind": "group", "state": "answering"})
		return ok && int(v) == len(offsets), mm.Describe("kafka_coordinator_partitions", nil)
	})

	killedAt := time.Now()
	c.Stop(t, victim)
	t.Logf("stopped broker %d, the only replica of __consumer_offsets/%d, at %s", victim, partition, clock(killedAt))
	// Down for long enough that any takeover would have happened: the
	// exporter says unavailable throughout, and the client never commits.
	const down = 10 * time.Second
	waitMetrics(t, e, 30*time.Second, "the partition's coordinator unavailable", func(mm exportertest.Metrics) (bool, string) {
		v, _ := mm.Value("kafka_coordinator_partition_state", unavailable)
		return v == 1, mm.Describe("kafka_coordinator_partition_state", nil)
	})
	for deadline := killedAt.Add(down); time.Now().Before(deadline); time.Sleep(time.Second) {
		mm := e.Scrape(t)
		if v, _ := mm.Value("kafka_coordinator_partition_state", unavailable); v != 1 {
			t.Fatalf("%s after the stop of its only replica: %s", time.Since(killedAt).Round(time.Millisecond), mm.Describe("kafka_coordinator_partition_state", nil))
		}
	}
	if _, recovered, ok := m.outage(killedAt.Add(-time.Second)); ok {
		t.Fatalf("the client committed at %s, after the stop of the coordinator's only replica and before its restart", clock(recovered))
	}

	restartedAt := time.Now()
	c.Restart(t, victim)
	o := waitCoordinatorOutage(t, e, m, "__consumer_offsets", partition, killedAt)
	t.Logf("FIGURE kafka coordinator, only replica stopped: the client's commits failed for %s (until %s after the restart); the exporter's episode lasted %s (answering %s after the restart), refresh %s",
		o.client.Round(10*time.Millisecond), o.recovered.Sub(restartedAt).Round(10*time.Millisecond),
		o.exporter.Round(10*time.Millisecond), o.up.Time.Sub(restartedAt).Round(10*time.Millisecond), refresh)
	if o.up.Time.Before(restartedAt) || o.recovered.Before(restartedAt) {
		t.Errorf("answering again at %s (exporter) and %s (client), before the restart at %s", clock(o.up.Time), clock(o.recovered), clock(restartedAt))
	}
	if diff := (o.exporter - o.client).Abs(); diff > refresh+time.Second {
		t.Errorf("the exporter's episode (%s) and the client's outage (%s) differ by %s, more than a refresh and a second", o.exporter, o.client, diff)
	}
	if !strings.HasPrefix(o.up.After, fmt.Sprintf("answering at broker %d", victim)) {
		t.Errorf("coordinator_available says %q, want it answering at the restarted broker %d", o.up.After, victim)
	}
}
