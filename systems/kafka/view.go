package kafka

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/failover-exporter/failover_exporter/collector/system"
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
var Views = system.Views("kafka", "Kafka cluster ", func(c *model.Cluster, s *Snapshot) {
	summarize(s).parts(c)
	uncleanNotes(c, s)
})

// uncleanNotes says, for each partition without a clean leader, what an
// unclean election of each live replica would lose.
func uncleanNotes(c *model.Cluster, s *Snapshot) {
	for _, text := range s.UncleanNotes(s.ReadAt) {
		c.Notes = append(c.Notes, model.Note{Level: "error", Attrs: []model.Attr{{Name: "data-unclean", Value: "estimate"}}, Text: text})
	}
}

// summary is a Kafka cluster's section as counted, bounded and formatted
// values; parts lays it out as the page's generic parts.
type summary struct {
	BrokersLive, BrokersExpected          int
	Topics, Partitions                    int
	Offline, UnderMinISR, UnderReplicated int
	// The age of the oldest open episode of each kind ("45s"); empty when
	// none is open.
	OpenOffline, OpenUnderMinISR, OpenUnderRepl string
	// Unhealthy are the partitions with an open episode, oldest first,
	// bounded; UnhealthyMore counts those left out.
	Unhealthy     []partitionRow
	UnhealthyMore int
	Brokers       []brokerRow
	BrokersMore   int
}

// partitionRow is an unhealthy partition.
type partitionRow struct {
	Topic     string
	Partition int32
	// Leader is a broker ID, or "none".
	Leader     string
	Replicas   string
	ISR        string
	Conditions []string
	// Since is the age of its oldest open episode.
	Since string
}

// brokerRow is one broker.
type brokerRow struct {
	ID        int32
	Address   string
	Rack      string
	Up        bool
	Reachable bool
	// State is up, or why not: fenced (registered, serving nothing),
	// unregistered, or down when the cluster does not say (before 4.0).
	State     string
	Leaders   int
	Replicas  int
	OutOfSync int
}

func summarize(s *Snapshot) *summary {
	v := &summary{}
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
		state := "up"
		switch {
		case b.Up:
		case s.FencedKnown && b.Fenced:
			state = "fenced"
		case s.FencedKnown:
			state = "unregistered"
		default:
			state = "down"
		}
		if cordoned := b.CordonedLogDirs(); cordoned > 0 {
			state += fmt.Sprintf(", %d of %d log dirs cordoned", cordoned, len(b.LogDirs))
			// A cordon is the step before draining a broker; a reassignment
			// still adding replicas to it works against the drain (the
			// controller refuses new ones onto a fully cordoned broker, but
			// not those under way when the cordon came).
			if b.AddingReplicas > 0 {
				state += fmt.Sprintf(", yet a reassignment is adding %d replica(s) to it", b.AddingReplicas)
			}
		}
		v.Brokers = append(v.Brokers, brokerRow{ID: b.ID, Address: b.Address, Rack: b.Rack, Up: b.Up, Reachable: b.Reachable, State: state,
			Leaders: b.LeaderPartitions, Replicas: b.ReplicaPartitions, OutOfSync: b.OutOfSyncReplicas})
	}
	return v
}

// parts adds the summary to the cluster's section: the counts as stats,
// the partitions and brokers as tables.
func (v *summary) parts(c *model.Cluster) {
	c.Stats = append(c.Stats,
		model.Stat{Name: "brokers", Label: "brokers live", Value: fmt.Sprintf("%d / %d", v.BrokersLive, v.BrokersExpected), Level: statLevel(v.BrokersLive < v.BrokersExpected, "bad")},
		model.Stat{Name: "partitions", Label: "partitions", Value: fmt.Sprint(v.Partitions), Detail: fmt.Sprintf("in %d topics", v.Topics)},
		model.Stat{Name: "offline", Label: "offline", Value: fmt.Sprint(v.Offline), Detail: oldestText(v.OpenOffline), Level: statLevel(v.Offline > 0, "bad")},
		model.Stat{Name: "under-min-isr", Label: "under min ISR", Value: fmt.Sprint(v.UnderMinISR), Detail: oldestText(v.OpenUnderMinISR), Level: statLevel(v.UnderMinISR > 0, "bad")},
		model.Stat{Name: "under-replicated", Label: "under-replicated", Value: fmt.Sprint(v.UnderReplicated), Detail: oldestText(v.OpenUnderRepl), Level: statLevel(v.UnderReplicated > 0, "warn")},
	)
	unhealthy := model.Table{Name: "unhealthy", Title: "Unhealthy partitions", Empty: "None.",
		Columns: []model.Column{{Title: "topic"}, {Title: "partition", Numeric: true}, {Title: "leader"}, {Title: "replicas"}, {Title: "ISR"}, {Title: "condition"}, {Title: "for"}}}
	for _, r := range v.Unhealthy {
		unhealthy.Rows = append(unhealthy.Rows, model.Row{
			Attrs: []model.Attr{{Name: "data-topic", Value: r.Topic}, {Name: "data-partition", Value: fmt.Sprint(r.Partition)}},
			Cells: []string{r.Topic, fmt.Sprint(r.Partition), r.Leader, r.Replicas, r.ISR, strings.Join(r.Conditions, ", "), r.Since}})
	}
	if v.UnhealthyMore > 0 {
		unhealthy.More, unhealthy.MoreText = v.UnhealthyMore, fmt.Sprintf("and %d more (oldest first; the counts above are complete)", v.UnhealthyMore)
	}
	brokers := model.Table{Name: "brokers", Title: "Brokers",
		Columns: []model.Column{{Title: "broker"}, {Title: "address"}, {Title: "rack"}, {Title: "state"}, {Title: "reachable"}, {Title: "leads", Numeric: true}, {Title: "replicas", Numeric: true}, {Title: "out of sync", Numeric: true}}}
	for _, b := range v.Brokers {
		brokers.Rows = append(brokers.Rows, model.Row{
			Attrs: []model.Attr{{Name: "data-broker", Value: fmt.Sprint(b.ID)}, {Name: "class", Value: badIf(!b.Up)}},
			Cells: []string{fmt.Sprint(b.ID), b.Address, b.Rack, b.State, yesNo(b.Reachable, "yes", "no"), fmt.Sprint(b.Leaders), fmt.Sprint(b.Replicas), fmt.Sprint(b.OutOfSync)}})
	}
	if v.BrokersMore > 0 {
		brokers.More, brokers.MoreText = v.BrokersMore, fmt.Sprintf("and %d more brokers", v.BrokersMore)
	}
	c.Tables = append(c.Tables, unhealthy, brokers)
}

// statLevel is bad (or warn) when trouble holds, good otherwise.
func statLevel(trouble bool, bad string) string {
	if trouble {
		return bad
	}
	return "good"
}

// badIf is a row's class: bad when trouble holds, none otherwise.
func badIf(trouble bool) string {
	if trouble {
		return "bad"
	}
	return ""
}

func oldestText(age string) string {
	if age == "" {
		return ""
	}
	return "oldest " + age
}

func yesNo(b bool, yes, no string) string {
	if b {
		return yes
	}
	return no
}

// unhealthyPartitions lists the partitions with an open episode, oldest
// first. The open episodes are exactly the unhealthy partitions, so the
// cost follows the trouble, not the partition count.
func unhealthyPartitions(s *Snapshot) ([]partitionRow, int) {
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
	out := make([]partitionRow, len(rows))
	for i, r := range rows {
		slices.Sort(r.conditions)
		out[i] = partitionRow{Topic: r.key.Topic, Partition: r.key.Partition, Since: model.Age(s.ReadAt.Sub(r.since))}
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
