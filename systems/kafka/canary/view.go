package kafkacanary

import (
	"strconv"
	"strings"
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
		c := model.Cluster{System: "kafka", Name: named.Name}
		view(named.State).parts(&c)
		out = append(out, c)
	}
	return out
}

// topicView is the write canary's topic: its shape against the configured
// one and the healing step; parts lays it out on its cluster's section.
type topicView struct {
	Up        bool
	LastError string
	// Known is true when the last round read the topic.
	Known    bool
	Degraded bool
	// RF and MinISR read "2 / 3": the topic's against the configured.
	RF, MinISR string
	Reasons    []string
	// Managed is false when canary.create_topic is false.
	Managed   bool
	Healing   string
	HealError string
}

// view is the canary's topic on its cluster's summary.
func view(st *watch.State[Snapshot]) *topicView {
	v := &topicView{Up: st.Up}
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

// parts adds the canary's topic to its cluster's section: a stat, and
// notes when the round failed or the topic is weaker than configured.
func (v *topicView) parts(c *model.Cluster) {
	stat := model.Stat{Name: "canary-topic", Label: "canary topic", Value: "ok", Level: "good"}
	switch {
	case !v.Up:
		stat.Value, stat.Level = "down", "bad"
	case !v.Known:
		stat.Value = "unknown"
	case v.Degraded:
		stat.Value, stat.Level = "degraded", "warn"
	}
	if v.Known {
		stat.Detail = "RF " + v.RF + " · min ISR " + v.MinISR
	}
	c.Stats = append(c.Stats, stat)
	if v.LastError != "" {
		c.Notes = append(c.Notes, model.Note{Level: "error", Attrs: []model.Attr{{Name: "data-canary", Value: "error"}},
			Text: "Last canary round failed: " + v.LastError})
	}
	if v.Degraded {
		text := "The write canary's topic is weaker than configured: " + strings.Join(v.Reasons, ", ") + ".\n"
		var failed []model.Span
		switch {
		case !v.Managed:
			text += " canary.create_topic is false: the canary does not change it."
		case v.Healing != "":
			text += " Healing: " + v.Healing + "."
		}
		if v.Managed && v.HealError != "" {
			failed = []model.Span{{Text: " "}, {Level: "error", Text: "Failed: " + v.HealError}}
		}
		c.Notes = append(c.Notes, model.Note{Level: "warn", Attrs: []model.Attr{{Name: "data-canary", Value: "degraded"}},
			Text: text, Spans: append(failed, model.Span{Text: "\nIts NOT_ENOUGH_REPLICAS failures do not page (KafkaCanaryTopicDegraded)."})})
	}
}
