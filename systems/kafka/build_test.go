package kafka

import (
	"slices"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

func all(string) bool { return true }

// threeBrokerMetadata is a 3-broker cluster with one RF-3 topic whose
// partition 0 lost broker 1 (dead, so not listed) and partition 1 is fine.
func threeBrokerMetadata(live ...int32) *sarama.MetadataResponse {
	md := &sarama.MetadataResponse{Version: 7}
	for _, id := range live {
		md.AddBroker("127.0.0.1:909"+string(rune('0'+id)), id)
	}
	return md
}

func TestBuildSnapshotDerivesPartitionAndBrokerState(t *testing.T) {
	md := threeBrokerMetadata(2, 3)
	// Broker 1 is dead: partition 0 had it as leader, now led by 2.
	md.AddTopicPartition("orders", 0, 2, []int32{1, 2, 3}, []int32{2, 3}, nil, sarama.ErrNoError)
	md.AddTopicPartition("orders", 1, 2, []int32{2, 3, 1}, []int32{2, 3}, nil, sarama.ErrNoError)
	md.AddTopicPartition("orders", 2, -1, []int32{1}, []int32{1}, nil, sarama.ErrLeaderNotAvailable)
	md.AddTopicPartition("payments", 0, 3, []int32{3, 2}, []int32{3}, nil, sarama.ErrNoError)
	configs := TopicConfigCache{MinISR: map[string]int{"orders": 2, "payments": 2}}

	s := buildSnapshot(md, all, configs, nil, time.Unix(0, 0))

	if got := len(s.Topics); got != 2 {
		t.Fatalf("topics = %d, want 2", got)
	}
	orders := s.Topics[0]
	if orders.Name != "orders" || orders.ReplicationFactor != 3 || len(orders.Partitions) != 3 {
		t.Fatalf("orders = %+v", orders)
	}
	p0 := orders.Partitions[0]
	if p0.Leader != 2 || !p0.UnderReplicated() || p0.UnderMinISR(2) || !p0.AtMinISR(2) || p0.LeaderIsPreferred() {
		t.Errorf("partition 0 = %+v: want leader 2, under-replicated, at min ISR, not preferred", p0)
	}
	if !slices.Equal(p0.OfflineReplicas(), []int32{1}) {
		t.Errorf("partition 0 offline replicas = %v, want [1]", p0.OfflineReplicas())
	}
	p1 := orders.Partitions[1]
	if !p1.LeaderIsPreferred() {
		t.Errorf("partition 1 leader %d should be preferred (replicas %v)", p1.Leader, p1.Replicas)
	}
	p2 := orders.Partitions[2]
	if !p2.Offline() || p2.Leader != NoLeader {
		t.Errorf("partition 2 should be offline: %+v", p2)
	}
	if orders.UnderReplicated != 2 || orders.AtMinISR != 2 || orders.UnderMinISR != 1 || orders.Offline != 1 {
		t.Errorf("orders counts: under-replicated %d at-min %d under-min %d offline %d; want 2 2 1 1",
			orders.UnderReplicated, orders.AtMinISR, orders.UnderMinISR, orders.Offline)
	}
	payments := s.Topics[1]
	if payments.UnderMinISR != 1 || payments.ReplicationFactor != 2 {
		t.Errorf("payments = %+v: want 1 partition under min ISR, RF 2", payments)
	}

	if len(s.Brokers) != 3 {
		t.Fatalf("brokers = %+v, want 1 (down), 2, 3", s.Brokers)
	}
	b1, b2, b3 := s.Brokers[0], s.Brokers[1], s.Brokers[2]
	if b1.ID != 1 || b1.Up || b1.ReplicaPartitions != 3 || b1.LeaderPartitions != 0 || b1.OutOfSyncReplicas != 2 {
		t.Errorf("broker 1 = %+v: want down, 3 replicas, 0 leaders, 2 out of sync", b1)
	}
	if !b2.Up || b2.LeaderPartitions != 2 || b2.ReplicaPartitions != 3 || b2.OutOfSyncReplicas != 1 {
		t.Errorf("broker 2 = %+v: want up, leads 2, 3 replicas, 1 out of sync", b2)
	}
	if !b3.Up || b3.LeaderPartitions != 1 || b3.ReplicaPartitions != 3 || b3.OutOfSyncReplicas != 0 {
		t.Errorf("broker 3 = %+v: want up, leads 1, 3 replicas, 0 out of sync", b3)
	}
	if s.LiveBrokers() != 2 {
		t.Errorf("live brokers = %d, want 2", s.LiveBrokers())
	}
}

func TestBuildSnapshotFilterKeepsBrokerCountsWhole(t *testing.T) {
	md := threeBrokerMetadata(1, 2, 3)
	md.AddTopicPartition("keep", 0, 1, []int32{1, 2, 3}, []int32{1, 2, 3}, nil, sarama.ErrNoError)
	md.AddTopicPartition("__consumer_offsets", 0, 1, []int32{1, 2, 3}, []int32{1, 2, 3}, nil, sarama.ErrNoError)
	s := buildSnapshot(md, func(t string) bool { return t == "keep" }, TopicConfigCache{}, nil, time.Now())
	if len(s.Topics) != 1 || s.Topics[0].Name != "keep" {
		t.Fatalf("topics = %+v, want only keep", s.Topics)
	}
	if s.Brokers[0].LeaderPartitions != 2 {
		t.Errorf("broker 1 leads %d, want 2: broker counts cover filtered-out topics too", s.Brokers[0].LeaderPartitions)
	}
}

func TestBuildSnapshotUnknownMinISRServesNoGuess(t *testing.T) {
	md := threeBrokerMetadata(1)
	md.AddTopicPartition("new", 0, 1, []int32{1}, []int32{1}, nil, sarama.ErrNoError)
	s := buildSnapshot(md, all, TopicConfigCache{}, nil, time.Now())
	if s.Topics[0].MinISR != 0 || s.Topics[0].UnderMinISR != 0 || s.Topics[0].AtMinISR != 0 {
		t.Errorf("topic with unknown min ISR = %+v, want zero min-ISR fields", s.Topics[0])
	}
}

func TestBuildSnapshotSkipsTopicsWithoutPartitionData(t *testing.T) {
	md := threeBrokerMetadata(1)
	md.AddTopic("being-deleted", sarama.ErrUnknownTopicOrPartition)
	s := buildSnapshot(md, all, TopicConfigCache{}, nil, time.Now())
	if len(s.Topics) != 0 {
		t.Errorf("topics = %+v, want none", s.Topics)
	}
}

// A reassignment adding broker 3 to partition 0 of an RF-2 topic: Kafka
// lists replicas [1 2 3] and ISR [1 2] until 3 catches up. Since KIP-352
// that is neither under-replicated nor RF 3. Partition 1's reassignment
// completed between the two requests (its replicas no longer include the
// adding or removing ones), so it counts as done, as kafka-topics.sh does.
func TestBuildSnapshotReassignmentsFollowKIP352(t *testing.T) {
	// buildSnapshot consumes the topics of the response it is given.
	metadata := func() *sarama.MetadataResponse {
		md := threeBrokerMetadata(1, 2, 3)
		md.AddTopicPartition("moving", 0, 1, []int32{1, 2, 3}, []int32{1, 2}, nil, sarama.ErrNoError)
		md.AddTopicPartition("moving", 1, 2, []int32{2, 3}, []int32{2, 3}, nil, sarama.ErrNoError)
		md.AddTopicPartition("moving", 2, 1, []int32{1, 2}, []int32{1}, nil, sarama.ErrNoError)
		return md
	}
	ras := &sarama.ListPartitionReassignmentsResponse{}
	ras.AddBlock("moving", 0, []int32{1, 2, 3}, []int32{3}, nil)
	ras.AddBlock("moving", 1, []int32{1, 2, 3}, nil, []int32{1})
	configs := TopicConfigCache{MinISR: map[string]int{"moving": 2}}

	s := buildSnapshot(metadata(), all, configs, ras.TopicStatus, time.Now())

	if !s.ReassignmentsKnown {
		t.Fatal("ReassignmentsKnown = false with an answer")
	}
	topic := s.Topics[0]
	p0, p1, p2 := topic.Partitions[0], topic.Partitions[1], topic.Partitions[2]
	if !p0.Reassigning() || p0.UnderReplicated() || p0.ReplicationFactor() != 2 || !p0.AtMinISR(2) {
		t.Errorf("partition 0 = %+v: want reassigning, not under-replicated, RF 2, at min ISR", p0)
	}
	if p1.Reassigning() || p1.ReplicationFactor() != 2 || len(p1.RemovingReplicas()) != 0 {
		t.Errorf("partition 1 = %+v: its reassignment completed, want not reassigning, RF 2", p1)
	}
	if !p2.UnderReplicated() {
		t.Errorf("partition 2 = %+v: ISR 1 of RF 2 is under-replicated", p2)
	}
	if topic.ReplicationFactor != 2 || topic.ReassigningPartitions != 1 || topic.UnderReplicated != 1 {
		t.Errorf("topic RF %d reassigning %d under-replicated %d; want 2 1 1",
			topic.ReplicationFactor, topic.ReassigningPartitions, topic.UnderReplicated)
	}
	for _, b := range s.Brokers {
		wantAdding := map[int32]int{3: 1}[b.ID]
		if b.AddingReplicas != wantAdding || b.RemovingReplicas != 0 {
			t.Errorf("broker %d adding %d removing %d; want %d and 0", b.ID, b.AddingReplicas, b.RemovingReplicas, wantAdding)
		}
	}

	// Without an answer the listed replicas are all the exporter knows.
	unknown := buildSnapshot(metadata(), all, configs, nil, time.Now())
	if unknown.ReassignmentsKnown || unknown.Topics[0].ReplicationFactor != 3 || !unknown.Topics[0].Partitions[0].UnderReplicated() {
		t.Errorf("without reassignments: known %v RF %d; want false, 3, partition 0 under-replicated",
			unknown.ReassignmentsKnown, unknown.Topics[0].ReplicationFactor)
	}
}

// Racks: brokers 1 and 3 in rack a, 2 in rack b (2 racks). RF 2 on 1 and 3
// is rack-unsafe (1 rack where 2 are possible); on 1 and 2 it is safe, and
// with 2 out of sync its ISR spans one rack. A replica being added does not
// make a partition safe before it is part of it.
func TestCountRacks(t *testing.T) {
	s := &Snapshot{
		Brokers: []Broker{{ID: 1, Rack: "a", Up: true}, {ID: 2, Rack: "b"}, {ID: 3, Rack: "a", Up: true}},
		Topics: []Topic{{Name: "t", Partitions: []Partition{
			{ID: 0, Leader: 1, Replicas: []int32{1, 3}, ISR: []int32{1, 3}},
			{ID: 1, Leader: 1, Replicas: []int32{1, 2}, ISR: []int32{1}},
			{ID: 2, Leader: 1, Replicas: []int32{1, 3, 2}, ISR: []int32{1, 3}, rare: &partitionRare{addingReplicas: []int32{2}}},
		}}},
	}
	s.countRacks()
	if s.Racks != 2 {
		t.Fatalf("racks = %d, want 2", s.Racks)
	}
	ps := s.Topics[0].Partitions
	for i, want := range []struct{ replicaRacks, isrRacks int }{{1, 1}, {2, 1}, {1, 1}} {
		if int(ps[i].ReplicaRacks) != want.replicaRacks || int(ps[i].ISRRacks) != want.isrRacks {
			t.Errorf("partition %d: replica racks %d ISR racks %d, want %d %d", i, ps[i].ReplicaRacks, ps[i].ISRRacks, want.replicaRacks, want.isrRacks)
		}
	}
	if got := s.Topics[0].RackUnsafe; got != 2 {
		t.Errorf("rack-unsafe partitions = %d, want 2 (0, and 2 until its adding replica joins)", got)
	}
	// No broker with a rack: nothing is counted, and no series are served.
	plain := buildSnapshot(threeBrokerMetadata(1, 2, 3), all, TopicConfigCache{}, nil, time.Now())
	plain.countRacks()
	if plain.Racks != 0 {
		t.Errorf("racks = %d without broker.rack, want 0", plain.Racks)
	}
}
