package kafka

import "sort"

// InternalFeatures are the internal topics whose loss stops a feature of
// the cluster, by the feature (the feature label): consumer groups'
// offsets and coordination, transactions, share groups (Kafka 4.0+, GA in
// 4.2), and tiered storage's remote log metadata (KIP-405). Their health
// is served whatever the topic filter, since a cluster without them
// serves those features no more.
var InternalFeatures = map[string]string{
	"__consumer_offsets":    "consumer_offsets",
	"__transaction_state":   "transactions",
	"__share_group_state":   "share_groups",
	"__remote_log_metadata": "tiered_storage_metadata",
}

// InternalTopic is the health of one internal topic that exists.
type InternalTopic struct {
	Name, Feature string
	// MinISR is its effective min.insync.replicas, 0 while unknown.
	MinISR                                   int
	Partitions, UnderReplicated, UnderMinISR int
	Offline                                  int
}

// countInternal adds a partition of an internal topic to its health.
func (t *InternalTopic) countPartition(p *Partition) {
	t.Partitions++
	if p.UnderReplicated() {
		t.UnderReplicated++
	}
	if p.UnderMinISR(t.MinISR) {
		t.UnderMinISR++
	}
	if p.Offline() {
		t.Offline++
	}
}

// sortInternal orders the internal topics by name.
func sortInternal(ts []InternalTopic) {
	sort.Slice(ts, func(i, j int) bool { return ts[i].Name < ts[j].Name })
}
