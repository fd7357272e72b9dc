// Package events keeps the transitions the watchers observe between
// consecutive snapshots: each is logged once, at info level, and the last
// ones are kept in memory for /api/v1/events and the status page.
//
// The sources put the transitions of a refresh in their snapshot (with
// Add); a Log follows each watcher and records the events of every new
// snapshot it publishes. Neither the Log nor its readers talk to a cluster.
package events

import (
	"strconv"
	"time"
)

// Kind names a transition. Kinds are stable strings: they are logged and
// served as they are.
type Kind string

// EventsTruncated marks a refresh whose transitions exceeded MaxPerRefresh:
// its After is how many were left out.
const EventsTruncated Kind = "events_truncated"

// Event is one transition seen between two consecutive refreshes.
type Event struct {
	// Time is when the refresh that saw the transition read the cluster.
	Time time.Time `json:"time"`
	// System is "kafka" or "redis"; Cluster is the configured cluster name
	// (the kafka_cluster or redis_cluster label). The Log fills both in.
	System  string  `json:"system"`
	Cluster string  `json:"cluster"`
	Kind    Kind    `json:"kind"`
	Subject Subject `json:"subject"`
	// Before and After are the values that changed, as text (a leader's
	// broker ID, an ISR "[1 2 3]", a node state); empty when not
	// applicable.
	Before string `json:"before,omitempty"`
	After  string `json:"after,omitempty"`
	// FirstFailure is, for a failure the cluster confirmed (a node
	// flagged, a broker gone, a partition offline or under min ISR), the
	// exporter's first failed probe of the node or broker that caused it,
	// when that came before Time: when clients began to fail, as the
	// outage clock dates the episode. Zero otherwise.
	FirstFailure time.Time `json:"first_failure,omitzero"`
}

// Subject is what a transition happened to.
type Subject struct {
	Topic string `json:"topic,omitempty"`
	// Partition is set with Topic (a pointer, so that partition 0 shows).
	Partition *int32 `json:"partition,omitempty"`
	// NodeID is a Kafka broker ID or a Redis node ID.
	NodeID  string `json:"node_id,omitempty"`
	Address string `json:"address,omitempty"`
	// Connector is a Kafka Connect connector's name; Task one of its
	// tasks, when set.
	Connector string `json:"connector,omitempty"`
	Task      *int32 `json:"task,omitempty"`
}

// PartitionSubject names a Kafka partition.
func PartitionSubject(topic string, partition int32) Subject {
	return Subject{Topic: topic, Partition: &partition}
}

// BrokerSubject names a Kafka broker.
func BrokerSubject(id int32, addr string) Subject {
	return Subject{NodeID: strconv.FormatInt(int64(id), 10), Address: addr}
}

// NodeSubject names a Redis node.
func NodeSubject(id, addr string) Subject { return Subject{NodeID: id, Address: addr} }

// ConnectorSubject names a Kafka Connect connector, or one of its tasks
// when task is not nil.
func ConnectorSubject(name string, task *int32) Subject { return Subject{Connector: name, Task: task} }

// MaxPerRefresh bounds the events one refresh records: a broker death in
// a cluster of 100,000 partitions changes most of them at once, and the log
// and memory should carry the story, not every partition of it. The rest
// are counted in one EventsTruncated event.
const MaxPerRefresh = 1000

// List collects the events of one refresh. The zero value is ready to use.
type List struct {
	Events []Event
	// Dropped counts events beyond MaxPerRefresh.
	Dropped int
}

// Add records one transition seen by the refresh that read the cluster at
// at. It is what a source calls for every transition it detects.
func (l *List) Add(at time.Time, kind Kind, subject Subject, before, after string) {
	if len(l.Events) >= MaxPerRefresh {
		l.Dropped++
		return
	}
	l.Events = append(l.Events, Event{Time: at, Kind: kind, Subject: subject, Before: before, After: after})
}

// All returns the events, followed by an EventsTruncated event when some
// were dropped.
func (l *List) All() []Event {
	if l.Dropped == 0 || len(l.Events) == 0 {
		return l.Events
	}
	last := l.Events[len(l.Events)-1]
	return append(l.Events[:len(l.Events):len(l.Events)], Event{Time: last.Time, Kind: EventsTruncated, After: strconv.Itoa(l.Dropped)})
}
