package kafkaclient

import "github.com/twmb/franz-go/pkg/kmsg"

// ListOffsetsRequest builds one ListOffsets request as a consumer sends it
// (replica -1, no leader epoch) for the offset at timestamp of each part
// (-2 the log start, -1 the high watermark, or another of KIP-1005's), the
// partitions grouped by topic in the order parts come. topicPartition
// names a part: the callers keep their own partition keys.
func ListOffsetsRequest[P any](parts []P, topicPartition func(P) (string, int32), timestamp int64) *kmsg.ListOffsetsRequest {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	byTopic := map[string]int{}
	for _, part := range parts {
		topic, partition := topicPartition(part)
		i, ok := byTopic[topic]
		if !ok {
			i = len(req.Topics)
			byTopic[topic] = i
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = topic
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp = partition, timestamp
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	return req
}
