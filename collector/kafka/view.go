package kafka

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/failover-exporter/failover_exporter/collector/watch"
	"github.com/failover-exporter/failover_exporter/status/model"
)

// The status page's tables list at most this many rows and count the rest,
// so that the page stays cheap whatever the cluster's size.
const (
	maxUnhealthyPartitions = 50
	maxBrokers             = 100
)

// conditionText names each condition on the status page, in the order the
// page lists them.
var conditionText = [...]string{ConditionOffline: "offline", ConditionUnderMinISR: "under min ISR", ConditionUnderReplicated: "under-replicated"}

// Views are the status page's parts of the given clusters, as of now.
func Views(states []watch.Named[Snapshot], now time.Time) []model.Cluster {
	out := make([]model.Cluster, 0, len(states))
	for _, named := range states {
		out = append(out, view(named, now))
	}
	return out
}

func view(named watch.Named[Snapshot], now time.Time) model.Cluster {
	c := model.Cluster{System: "kafka", Name: named.Name, Head: watch.Head(named.State, now), Kafka: &model.Kafka{}}
	s := named.State.Snapshot
	if s == nil {
		return c
	}
	v := c.Kafka
	v.BrokersLive, v.BrokersExpected = s.LiveBrokers(), len(s.Brokers)
	v.Topics = len(s.Topics)
	for i := range s.Topics {
		t := &s.Topics[i]
		v.Partitions += len(t.Partitions)
		v.Offline += t.Offline
		v.UnderMinISR += t.UnderMinISR
		v.UnderReplicated += t.UnderReplicated
	}
	oldest := func(c Condition) string {
		var first time.Time
		for _, o := range s.Episodes.Open[c] {
			if first.IsZero() || o.Since.Before(first) {
				first = o.Since
			}
		}
		if first.IsZero() {
			return ""
		}
		return model.Age(s.ReadAt.Sub(first))
	}
	v.OpenOffline, v.OpenUnderMinISR, v.OpenUnderRepl = oldest(ConditionOffline), oldest(ConditionUnderMinISR), oldest(ConditionUnderReplicated)
	v.Unhealthy, v.UnhealthyMore = unhealthyPartitions(s)
	for i := range s.Brokers {
		if i == maxBrokers {
			v.BrokersMore = len(s.Brokers) - maxBrokers
			break
		}
		b := &s.Brokers[i]
		v.Brokers = append(v.Brokers, model.BrokerRow{ID: b.ID, Address: b.Address, Rack: b.Rack, Up: b.Up, Reachable: b.Reachable,
			Leaders: b.LeaderPartitions, Replicas: b.ReplicaPartitions, OutOfSync: b.OutOfSyncReplicas})
	}
	return c
}

// unhealthyPartitions lists the partitions with an open episode, oldest
// first. The open episodes are exactly the unhealthy partitions, so the
// cost follows the trouble, not the partition count.
func unhealthyPartitions(s *Snapshot) ([]model.PartitionRow, int) {
	type row struct {
		key        PartitionKey
		since      time.Time
		conditions []Condition
	}
	byKey := map[PartitionKey]*row{}
	for c, open := range s.Episodes.Open {
		for key, o := range open {
			r := byKey[key]
			if r == nil {
				r = &row{key: key, since: o.Since}
				byKey[key] = r
			}
			r.conditions = append(r.conditions, Condition(c))
			if o.Since.Before(r.since) {
				r.since = o.Since
			}
		}
	}
	rows := make([]*row, 0, len(byKey))
	for _, r := range byKey {
		rows = append(rows, r)
	}
	sort.Slice(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if !a.since.Equal(b.since) {
			return a.since.Before(b.since)
		}
		if a.key.Topic != b.key.Topic {
			return a.key.Topic < b.key.Topic
		}
		return a.key.Partition < b.key.Partition
	})
	more := 0
	if len(rows) > maxUnhealthyPartitions {
		more = len(rows) - maxUnhealthyPartitions
		rows = rows[:maxUnhealthyPartitions]
	}
	out := make([]model.PartitionRow, len(rows))
	for i, r := range rows {
		slices.Sort(r.conditions)
		out[i] = model.PartitionRow{Topic: r.key.Topic, Partition: r.key.Partition, Since: model.Age(s.ReadAt.Sub(r.since))}
		for _, c := range r.conditions {
			out[i].Conditions = append(out[i].Conditions, conditionText[c])
		}
		if t := findTopic(s.Topics, r.key.Topic); t != nil {
			if p := findPartition(t.Partitions, r.key.Partition); p != nil {
				out[i].Leader = "none"
				if !p.Offline() {
					out[i].Leader = fmt.Sprint(p.Leader)
				}
				out[i].Replicas, out[i].ISR = fmt.Sprint(p.Replicas), fmt.Sprint(p.ISR)
			}
		}
	}
	return out, more
}
