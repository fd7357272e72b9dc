package mirror

import (
	"time"

	"github.com/failover-exporter/failover_exporter/collector/events"
)

// findTransitions records what changed since prev: the flow stalled or
// resumed, a replicated topic went missing on the target or appeared
// there. Topics are compared only between refreshes that read both
// clusters.
func findTransitions(prev, snap *Snapshot) {
	if prev == nil {
		return
	}
	at := snap.ReadAt
	switch {
	case snap.Stalled && !prev.Stalled:
		snap.Events.Add(at, events.MirrorStalled, events.Subject{}, "", heartbeatText(snap.Heartbeat))
	case !snap.Stalled && prev.Stalled:
		snap.Events.Add(at, events.MirrorResumed, events.Subject{}, heartbeatText(prev.Heartbeat), heartbeatText(snap.Heartbeat))
	}
	if !(snap.SourceUp && snap.TargetUp && prev.SourceUp && prev.TargetUp) {
		return
	}
	wasMissing := map[string]bool{}
	for _, t := range prev.Topics {
		wasMissing[t.Name] = t.Missing
	}
	for _, t := range snap.Topics {
		missing, known := wasMissing[t.Name]
		switch {
		case t.Missing && (!known || !missing):
			snap.Events.Add(at, events.MirrorTopicMissing, events.Subject{Topic: t.Name}, "", t.Remote)
		case !t.Missing && known && missing:
			snap.Events.Add(at, events.MirrorTopicAppeared, events.Subject{Topic: t.Name}, "", t.Remote)
		}
	}
}

func heartbeatText(h HeartbeatState) string {
	if !h.Known {
		return "no heartbeat"
	}
	return "heartbeat age " + h.Age.Round(100*time.Millisecond).String()
}
