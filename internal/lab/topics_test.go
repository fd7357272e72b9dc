package lab

import (
	"slices"
	"testing"
)

// The lines are TopicCommand 4.1 output as printed on the lab: a topic
// header, a partition mid-reassignment and a leaderless one with ELR.
func TestParseTopicDescribe(t *testing.T) {
	out := "Topic: moving\tTopicId: 3fJ0oYgTQyuS2iHYBv4x1g\tPartitionCount: 2\tReplicationFactor: 2\tConfigs: min.insync.replicas=2\n" +
		"\tTopic: moving\tPartition: 0\tLeader: 1\tReplicas: 1,2,3\tIsr: 1,2\tAdding Replicas: 3\tRemoving Replicas: \tElr: \tLastKnownElr: \n" +
		"\tTopic: moving\tPartition: 1\tLeader: none\tReplicas: 2,1\tIsr: \tElr: 2\tLastKnownElr: 1\n" +
		"\tTopic: old\tPartition: 0\tLeader: 2\tReplicas: 2\tIsr: 2\tElr: N/A\tLastKnownElr: N/A\n"
	parts, err := ParseTopicDescribe(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 3 {
		t.Fatalf("got %d partitions, want 3: %+v", len(parts), parts)
	}
	p0, p1, old := parts[0], parts[1], parts[2]
	if p0.Key() != "moving/0" || p0.Leader != 1 || !slices.Equal(p0.Replicas, []int32{1, 2, 3}) || !slices.Equal(p0.ISR, []int32{1, 2}) ||
		!p0.Reassigning || !slices.Equal(p0.AddingReplicas, []int32{3}) || len(p0.RemovingReplicas) != 0 || !p0.ELRKnown {
		t.Errorf("partition 0 = %+v", p0)
	}
	if p1.Leader != -1 || len(p1.ISR) != 0 || p1.Reassigning || !slices.Equal(p1.ELR, []int32{2}) || !slices.Equal(p1.LastKnownELR, []int32{1}) {
		t.Errorf("partition 1 = %+v", p1)
	}
	if old.ELRKnown {
		t.Errorf("Elr: N/A parsed as known: %+v", old)
	}
	for _, bad := range []string{
		"Error while executing topic command : boom\n",
		"\tTopic: t\tPartition: x\tLeader: 1\tReplicas: 1\tIsr: 1\n",
		"\tTopic: t\tPartition: 0\tLeader: 1\tIsr: 1\n",
	} {
		if _, err := ParseTopicDescribe(bad); err == nil {
			t.Errorf("ParseTopicDescribe(%q) accepted it", bad)
		}
	}
}
