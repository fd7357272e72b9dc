package status

import (
	"strconv"

	"github.com/failover-exporter/failover_exporter/collector/canary/kafkacanary"
	"github.com/failover-exporter/failover_exporter/collector/watch"
)

// kafkaCanaryView is the Kafka write canary's topic on a cluster's
// summary: its shape against the configured one and the healing step.
type kafkaCanaryView struct {
	Up        bool
	LastError string
	Known     bool // the last round read the topic
	Degraded  bool
	// RF and MinISR read "2 / 3": the topic's against the configured.
	RF, MinISR string
	Reasons    []string
	Managed    bool
	Healing    string
	HealError  string
}

func kafkaCanaryViewOf(st *watch.State[kafkacanary.Snapshot]) *kafkaCanaryView {
	if st == nil {
		return nil
	}
	v := &kafkaCanaryView{Up: st.Up}
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
