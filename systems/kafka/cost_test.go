package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFigureRequestCostAt10kPartitions prints what the requests added for
// issue 10 put on the wire per refresh at 10,000 partitions (100 topics of
// 100, RF 3), encoded with franz-go's kmsg, which writes the protocol's
// bytes as sarama does. Responses are estimated the same way from what a
// healthy cluster answers.
func TestFigureRequestCostAt10kPartitions(t *testing.T) {
	md := syntheticMetadata(10_000)
	size := func(r interface{ AppendTo([]byte) []byte }) int { return len(r.AppendTo(nil)) }

	// ListPartitionReassignments names every partition (sarama cannot send
	// the null "all partitions" list); version 0 is what sarama sends.
	ra := kmsg.NewPtrListPartitionReassignmentsRequest()
	for _, tm := range md.Topics {
		rt := kmsg.NewListPartitionReassignmentsRequestTopic()
		rt.Topic = tm.Name
		for _, p := range tm.Partitions {
			rt.Partitions = append(rt.Partitions, p.ID)
		}
		ra.Topics = append(ra.Topics, rt)
	}
	raResp := kmsg.NewPtrListPartitionReassignmentsResponse() // healthy: nothing in progress
	t.Logf("FIGURE request cost at 10,000 partitions: ListPartitionReassignments request %d bytes, response %d bytes (none in progress)", size(ra), size(raResp))

	// DescribeTopicPartitions: none in a healthy cluster; the worst case
	// asks for every topic, answered in pages of up to 2,000 partitions.
	dtp := kmsg.NewPtrDescribeTopicPartitionsRequest()
	for _, tm := range md.Topics {
		rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
		rt.Topic = tm.Name
		dtp.Topics = append(dtp.Topics, rt)
	}
	page := kmsg.NewPtrDescribeTopicPartitionsResponse()
	for _, tm := range md.Topics[:20] { // 20 topics x 100 = one page of 2,000 partitions
		rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
		name := tm.Name
		rt.Topic = &name
		for _, p := range tm.Partitions {
			rp := kmsg.NewDescribeTopicPartitionsResponseTopicPartition()
			rp.Partition, rp.LeaderID, rp.Replicas, rp.ISR = p.ID, p.Leader, p.Replicas, p.Isr
			rp.EligibleLeaderReplicas, rp.LastKnownELR = []int32{}, []int32{}
			rt.Partitions = append(rt.Partitions, rp)
		}
		page.Topics = append(page.Topics, rt)
	}
	t.Logf("FIGURE request cost at 10,000 partitions: DescribeTopicPartitions 0 requests while every ISR is at or above min ISR; "+
		"with all 10,000 below: 5 requests of %d bytes, 5 responses of about %d bytes", size(dtp), size(page))

	// DescribeQuorum: one request, independent of partitions.
	dq := kmsg.NewPtrDescribeQuorumRequest()
	dt := kmsg.NewDescribeQuorumRequestTopic()
	dt.Topic = clusterMetadataTopic
	dt.Partitions = append(dt.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
	dq.Topics = append(dq.Topics, dt)
	dqResp := kmsg.NewPtrDescribeQuorumResponse()
	rt := kmsg.NewDescribeQuorumResponseTopic()
	rt.Topic = clusterMetadataTopic
	rp := kmsg.NewDescribeQuorumResponseTopicPartition()
	for id := int32(1); id <= 3; id++ {
		v := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
		v.ReplicaID = id
		rp.CurrentVoters = append(rp.CurrentVoters, v)
	}
	rt.Partitions = append(rt.Partitions, rp)
	dqResp.Topics = append(dqResp.Topics, rt)
	t.Logf("FIGURE request cost at 10,000 partitions: DescribeQuorum 1 request of %d bytes, response about %d bytes (3 voters), whatever the partition count", size(dq), size(dqResp))

	if size(ra) < 4*10_000 {
		t.Errorf("ListPartitionReassignments request of %d bytes cannot name 10,000 partitions", size(ra))
	}
}
