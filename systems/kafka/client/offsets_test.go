package kafkaclient

import (
	"reflect"
	"testing"
)

func TestListOffsetsRequest(t *testing.T) {
	type key struct {
		topic     string
		partition int32
	}
	parts := []key{{"b", 1}, {"a", 0}, {"b", 0}}
	req := ListOffsetsRequest(parts, func(k key) (string, int32) { return k.topic, k.partition }, -2)
	if req.ReplicaID != -1 {
		t.Errorf("replica %d, want -1 (a consumer)", req.ReplicaID)
	}
	got := map[string][]int32{}
	var topics []string
	for _, rt := range req.Topics {
		topics = append(topics, rt.Topic)
		for _, rp := range rt.Partitions {
			if rp.Timestamp != -2 || rp.CurrentLeaderEpoch != -1 {
				t.Errorf("%s/%d: timestamp %d, leader epoch %d; want -2, -1", rt.Topic, rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch)
			}
			got[rt.Topic] = append(got[rt.Topic], rp.Partition)
		}
	}
	if !reflect.DeepEqual(topics, []string{"b", "a"}) || !reflect.DeepEqual(got, map[string][]int32{"b": {1, 0}, "a": {0}}) {
		t.Errorf("topics %v, partitions %v: want one entry a topic, in the order given", topics, got)
	}
}
