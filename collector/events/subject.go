package events

import "fmt"

// ShortID is the first 8 characters of a node ID: how the event log and
// the status page name a Redis node beside its address.
func ShortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// Text is how the status page names the subject: "orders/3", "orders/3
// (broker 2)", "10.0.0.1:7000 (07c37dfe)", "sink task 1". The subject
// renders itself, so that the page names no system.
func (s Subject) Text() string {
	switch {
	case s.Partition != nil:
		text := fmt.Sprintf("%s/%d", s.Topic, *s.Partition)
		if s.NodeID != "" { // the write canary names the leader it wrote to
			text += " (broker " + s.NodeID + ")"
		}
		return text
	case s.NodeID != "" && s.Address != "":
		return fmt.Sprintf("%s (%s)", s.Address, ShortID(s.NodeID))
	case s.NodeID != "":
		return s.NodeID
	case s.Task != nil:
		return fmt.Sprintf("%s task %d", s.Connector, *s.Task)
	case s.Connector != "":
		return s.Connector
	case s.Topic != "":
		return s.Topic
	}
	return s.Address
}
