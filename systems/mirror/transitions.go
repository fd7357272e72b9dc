package mirror

import (
	"maps"
	"slices"
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
		snap.Events.Add(at, EventStalled, events.Subject{}, "", heartbeatText(snap.Heartbeat))
	case !snap.Stalled && prev.Stalled:
		snap.Events.Add(at, EventResumed, events.Subject{}, heartbeatText(prev.Heartbeat), heartbeatText(snap.Heartbeat))
	}
	if prev.Connect.Read && snap.Connect.Read {
		connectorTransitions(prev.Connect, snap)
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
			snap.Events.Add(at, EventTopicMissing, events.Subject{Topic: t.Name}, "", t.Remote)
		case !t.Missing && known && missing:
			snap.Events.Add(at, EventTopicAppeared, events.Subject{Topic: t.Name}, "", t.Remote)
		}
	}
}

func heartbeatText(h HeartbeatState) string {
	if !h.Known {
		return "no heartbeat"
	}
	return "heartbeat age " + h.Age.Round(100*time.Millisecond).String()
}

// connectorTransitions records the connectors and tasks whose state
// changed since prev, and those that appeared (from none) or went.
func connectorTransitions(prev ConnectState, snap *Snapshot) {
	at := snap.ReadAt
	was := map[string]Connector{}
	for _, c := range prev.Connectors {
		was[c.Name] = c
	}
	for _, c := range snap.Connect.Connectors {
		old, known := was[c.Name]
		delete(was, c.Name)
		if !known {
			snap.Events.Add(at, EventConnectorState, events.ConnectorSubject(c.Name, nil), "", stateText(c.State, c.Trace))
			continue
		}
		if old.State != c.State {
			snap.Events.Add(at, EventConnectorState, events.ConnectorSubject(c.Name, nil), old.State, stateText(c.State, c.Trace))
		}
		oldTasks := map[int32]string{}
		for _, t := range old.Tasks {
			oldTasks[t.ID] = t.State
		}
		for _, t := range c.Tasks {
			if oldTasks[t.ID] != t.State {
				id := t.ID
				snap.Events.Add(at, EventConnectorState, events.ConnectorSubject(c.Name, &id), oldTasks[t.ID], stateText(t.State, t.Trace))
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(was)) {
		snap.Events.Add(at, EventConnectorState, events.ConnectorSubject(name, nil), was[name].State, "gone")
	}
}

// stateText is a state, with the failure's first line for FAILED.
func stateText(state, trace string) string {
	if state == "FAILED" && trace != "" {
		return state + ": " + trace
	}
	return state
}
