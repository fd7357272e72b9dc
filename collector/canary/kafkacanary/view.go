package kafkacanary

import (
	"strconv"
	"time"

	"github.com/failover-exporter/failover_exporter/collector/watch"
	"github.com/failover-exporter/failover_exporter/status/model"
)

// Views are the status page's parts of the given canaries, named by their
// cluster: each joins its Kafka cluster's section with only its canary
// part set.
func Views(states []watch.Named[Snapshot], _ time.Time) []model.Cluster {
	out := make([]model.Cluster, 0, len(states))
	for _, named := range states {
		if named.State == nil {
			continue
		}
		out = append(out, model.Cluster{System: "kafka", Name: named.Name, KafkaCanary: view(named.State)})
	}
	return out
}

// view is the canary's topic on its cluster's summary: its shape against
// the configured one and the healing step.
func view(st *watch.State[Snapshot]) *model.KafkaCanary {
	v := &model.KafkaCanary{Up: st.Up}
	if st.LastError != nil {
		v.LastError = st.LastError.Error()
	}
	// As in the metrics: a failed round's topic shape is not current.
	if !st.Up || st.Snapshot == nil || st.Snapshot.Topic == nil {
		return v
	}
	t := st.Snapshot.Topic
	minISR := "?"
	if t.MinInsyncReplicas > 0 {
		minISR = strconv.Itoa(t.MinInsyncReplicas)
	}
	v.Known, v.Degraded, v.Reasons, v.Managed = true, t.Degraded(), t.Reasons(), t.Managed
	v.RF = strconv.Itoa(t.ReplicationFactor) + " / " + strconv.Itoa(t.WantReplicationFactor)
	v.MinISR = minISR + " / " + strconv.Itoa(t.WantMinInsyncReplicas)
	v.Healing, v.HealError = t.Healing, t.HealError
	return v
}
