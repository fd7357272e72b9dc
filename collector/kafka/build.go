package kafka

import (
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/IBM/sarama"
)

// buildSnapshot turns one Metadata response into a Snapshot. keepTopic
// decides which topics get topic and partition series; broker counts cover
// every partition, because a broker's load does not depend on what the
// exporter is asked to show. configs supplies min.insync.replicas.
func buildSnapshot(md *sarama.MetadataResponse, keepTopic func(string) bool, configs TopicConfigCache, readAt time.Time) *Snapshot {
	brokers := map[int32]*Broker{}
	for _, b := range md.Brokers {
		brokers[b.ID()] = &Broker{ID: b.ID(), Address: b.Addr(), Rack: b.Rack(), Up: true}
	}
	brokerFor := func(id int32) *Broker {
		b, ok := brokers[id]
		if !ok {
			// Assigned a replica but not registered and live: down.
			b = &Broker{ID: id}
			brokers[id] = b
		}
		return b
	}

	snap := &Snapshot{ReadAt: readAt, TopicConfigs: configs}
	for _, tm := range md.Topics {
		if tm.Err != sarama.ErrNoError && len(tm.Partitions) == 0 {
			// A topic being deleted or not yet created has no partition data.
			continue
		}
		topic := Topic{Name: tm.Name, MinISR: configs.MinISR[tm.Name]}
		keep := keepTopic(tm.Name)
		if keep {
			topic.Partitions = make([]Partition, 0, len(tm.Partitions))
		}
		for _, pm := range tm.Partitions {
			p := Partition{
				ID:       pm.ID,
				Leader:   pm.Leader,
				Replicas: pm.Replicas,
				ISR:      pm.Isr,
			}
			if p.Leader < 0 {
				p.Leader = NoLeader
			}
			inISR := func(id int32) bool { return slices.Contains(p.ISR, id) }
			for _, id := range p.Replicas {
				b := brokerFor(id)
				b.ReplicaPartitions++
				if !inISR(id) {
					b.OutOfSyncReplicas++
				}
				if !b.Up || slices.Contains(pm.OfflineReplicas, id) {
					p.OfflineReplicas = append(p.OfflineReplicas, id)
				}
			}
			if p.Leader != NoLeader {
				brokerFor(p.Leader).LeaderPartitions++
			}
			if !keep {
				continue
			}
			topic.ReplicationFactor = max(topic.ReplicationFactor, len(p.Replicas))
			if p.UnderReplicated() {
				topic.UnderReplicated++
			}
			if p.UnderMinISR(topic.MinISR) {
				topic.UnderMinISR++
			}
			if p.AtMinISR(topic.MinISR) {
				topic.AtMinISR++
			}
			if p.Offline() {
				topic.Offline++
			}
			topic.Partitions = append(topic.Partitions, p)
		}
		if keep {
			sort.Slice(topic.Partitions, func(i, j int) bool { return topic.Partitions[i].ID < topic.Partitions[j].ID })
			snap.Topics = append(snap.Topics, topic)
		}
	}
	sort.Slice(snap.Topics, func(i, j int) bool { return snap.Topics[i].Name < snap.Topics[j].Name })

	snap.Brokers = make([]Broker, 0, len(brokers))
	for _, b := range brokers {
		snap.Brokers = append(snap.Brokers, *b)
	}
	sort.Slice(snap.Brokers, func(i, j int) bool { return snap.Brokers[i].ID < snap.Brokers[j].ID })
	return snap
}

// brokerLabel formats a broker ID as a label value.
func brokerLabel(id int32) string { return strconv.FormatInt(int64(id), 10) }
