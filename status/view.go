package status

import (
	"fmt"
	"html/template"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/failover-exporter/failover_exporter/collector/events"
	"github.com/failover-exporter/failover_exporter/collector/kafka"
	"github.com/failover-exporter/failover_exporter/collector/redis"
	"github.com/failover-exporter/failover_exporter/collector/watch"
)

// Limits keep the page cheap whatever the cluster's size: tables list at
// most this many rows and say how many more there are.
const (
	maxUnhealthyPartitions = 50
	maxBrokers             = 100
	maxMasters             = 100
	maxEvents              = 25
)

type pageView struct {
	Title       string
	Version     string
	Now         time.Time
	RefreshSecs int
	Links       []Link
	Kafka       []kafkaView
	Redis       []redisView
}

type clusterHead struct {
	Name       string
	Up         bool
	HasData    bool // a snapshot was ever read
	LastError  string
	LastOK     string // "3s ago"
	Refreshes  uint64
	Failures   uint64
	EventsLink string
}

func head(name string, up bool, hasData bool, lastErr error, lastOK time.Time, refreshes, failures uint64, now time.Time) clusterHead {
	h := clusterHead{Name: name, Up: up, HasData: hasData, Refreshes: refreshes, Failures: failures,
		EventsLink: "api/v1/events?cluster=" + name}
	if lastErr != nil {
		h.LastError = lastErr.Error()
	}
	if !lastOK.IsZero() {
		h.LastOK = ago(now.Sub(lastOK))
	}
	return h
}

type kafkaView struct {
	clusterHead
	BrokersLive, BrokersExpected                int
	Topics, Partitions                          int
	Offline, UnderMinISR, UnderReplicated       int
	OpenOffline, OpenUnderMinISR, OpenUnderRepl string // age of the oldest open episode
	Unhealthy                                   []partitionRow
	UnhealthyMore                               int
	Brokers                                     []brokerRow
	BrokersMore                                 int
	Events                                      []eventRow
	Canary                                      *kafkaCanaryView // nil without a write canary
}

type partitionRow struct {
	Topic      string
	Partition  int32
	Leader     string
	Replicas   string
	ISR        string
	Conditions []string
	Since      string
	since      time.Time
}

type brokerRow struct {
	ID        int32
	Address   string
	Rack      string
	Up        bool
	Reachable bool
	Leaders   int
	Replicas  int
	OutOfSync int
}

type redisView struct {
	clusterHead
	StateOK                        bool
	KnownNodes, Masters, Reachable int
	SlotsOK, SlotsPFail, SlotsFail int
	SlotsUnassigned                int
	ViewsConsistent                bool
	OpenFailover, OpenUnserved     string
	Strip                          []slotRun
	Shards                         []shardRow
	ShardsMore                     int
	Foreign                        []foreignRow
	Events                         []eventRow
}

type slotRun struct {
	First, Last int
	Owner       string       // address, or "unassigned"
	State       string       // ok, pfail, fail, unassigned
	Color       template.CSS // computed here, never from the cluster
	Percent     string       // width
}

// foreignRow is a node that answered but is not a member of the cluster.
type foreignRow struct {
	ShortID string
	Address string
	Reason  string
}

type shardRow struct {
	Master   nodeRow
	Replicas []nodeRow
}

type nodeRow struct {
	ID        string
	ShortID   string
	Address   string
	State     string
	Reachable bool
	Slots     int
	Lag       string
	LinkUp    bool
	IsReplica bool
}

type eventRow struct {
	Time    string
	Kind    string
	Subject string
	Change  string
}

func ago(d time.Duration) string {
	switch {
	case d < time.Second:
		return "now"
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds ago", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm ago", int(d.Hours()), int(d.Minutes())%60)
}

func age(d time.Duration) string {
	if d < time.Second {
		return "0s"
	}
	return strings.TrimSuffix(ago(d), " ago")
}

func eventRows(log *events.Log, cluster string, now time.Time) []eventRow {
	if log == nil {
		return nil
	}
	var rows []eventRow
	for _, e := range log.Query(cluster, time.Time{}, maxEvents) {
		subject := e.Subject.Address
		switch {
		case e.Subject.Partition != nil:
			subject = fmt.Sprintf("%s/%d", e.Subject.Topic, *e.Subject.Partition)
			if e.Subject.NodeID != "" { // the write canary names the leader it wrote to
				subject += " (broker " + e.Subject.NodeID + ")"
			}
		case e.Subject.NodeID != "" && e.Subject.Address != "":
			subject = fmt.Sprintf("%s (%s)", e.Subject.Address, shortID(e.Subject.NodeID))
		case e.Subject.NodeID != "":
			subject = e.Subject.NodeID
		}
		change := e.After
		if e.Before != "" || e.After != "" {
			change = e.Before + " → " + e.After
		}
		if !e.FirstFailure.IsZero() {
			// The outage began before the cluster confirmed it.
			change += fmt.Sprintf(" · first failed probe %s (%.1fs before)", e.FirstFailure.UTC().Format("15:04:05"), e.Time.Sub(e.FirstFailure).Seconds())
		}
		rows = append(rows, eventRow{Time: e.Time.UTC().Format("15:04:05") + " (" + ago(now.Sub(e.Time)) + ")", Kind: string(e.Kind), Subject: subject, Change: change})
	}
	return rows
}

func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

func kafkaViewOf(named watch.Named[kafka.Snapshot], log *events.Log, now time.Time) kafkaView {
	st := named.State
	v := kafkaView{clusterHead: head(named.Name, st.Up, st.Snapshot != nil, st.LastError, st.LastSuccess, st.Refreshes, st.Failures, now)}
	v.Events = eventRows(log, named.Name, now)
	s := st.Snapshot
	if s == nil {
		return v
	}
	v.BrokersLive, v.BrokersExpected = s.LiveBrokers(), len(s.Brokers)
	v.Topics = len(s.Topics)
	for i := range s.Topics {
		t := &s.Topics[i]
		v.Partitions += len(t.Partitions)
		v.Offline += t.Offline
		v.UnderMinISR += t.UnderMinISR
		v.UnderReplicated += t.UnderReplicated
	}
	oldest := func(c kafka.Condition) string {
		var first time.Time
		for _, o := range s.Episodes.Open[c] {
			if first.IsZero() || o.Since.Before(first) {
				first = o.Since
			}
		}
		if first.IsZero() {
			return ""
		}
		return age(s.ReadAt.Sub(first))
	}
	v.OpenOffline, v.OpenUnderMinISR, v.OpenUnderRepl = oldest(kafka.ConditionOffline), oldest(kafka.ConditionUnderMinISR), oldest(kafka.ConditionUnderReplicated)
	v.Unhealthy, v.UnhealthyMore = unhealthyPartitions(s)
	for i := range s.Brokers {
		if i == maxBrokers {
			v.BrokersMore = len(s.Brokers) - maxBrokers
			break
		}
		b := &s.Brokers[i]
		v.Brokers = append(v.Brokers, brokerRow{ID: b.ID, Address: b.Address, Rack: b.Rack, Up: b.Up, Reachable: b.Reachable,
			Leaders: b.LeaderPartitions, Replicas: b.ReplicaPartitions, OutOfSync: b.OutOfSyncReplicas})
	}
	return v
}

// unhealthyPartitions lists the partitions with an open episode, oldest
// first. The open episodes are exactly the unhealthy partitions, so the
// cost follows the trouble, not the partition count.
func unhealthyPartitions(s *kafka.Snapshot) ([]partitionRow, int) {
	labels := [...]string{kafka.ConditionOffline: "offline", kafka.ConditionUnderMinISR: "under min ISR", kafka.ConditionUnderReplicated: "under-replicated"}
	byKey := map[kafka.PartitionKey]*partitionRow{}
	for c, open := range s.Episodes.Open {
		for key, o := range open {
			row := byKey[key]
			if row == nil {
				row = &partitionRow{Topic: key.Topic, Partition: key.Partition, since: o.Since}
				byKey[key] = row
			}
			row.Conditions = append(row.Conditions, labels[c])
			if o.Since.Before(row.since) {
				row.since = o.Since
			}
		}
	}
	rows := make([]*partitionRow, 0, len(byKey))
	for _, r := range byKey {
		rows = append(rows, r)
	}
	sort.Slice(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if !a.since.Equal(b.since) {
			return a.since.Before(b.since)
		}
		if a.Topic != b.Topic {
			return a.Topic < b.Topic
		}
		return a.Partition < b.Partition
	})
	more := 0
	if len(rows) > maxUnhealthyPartitions {
		more = len(rows) - maxUnhealthyPartitions
		rows = rows[:maxUnhealthyPartitions]
	}
	out := make([]partitionRow, len(rows))
	for i, r := range rows {
		out[i] = *r
		// Conditions were appended in map order of conditions: fixed order.
		slices.SortFunc(out[i].Conditions, func(a, b string) int { return slices.Index(labels[:], a) - slices.Index(labels[:], b) })
		out[i].Since = age(s.ReadAt.Sub(r.since))
		if p := findPartition(s, r.Topic, r.Partition); p != nil {
			out[i].Leader = "none"
			if !p.Offline() {
				out[i].Leader = fmt.Sprint(p.Leader)
			}
			out[i].Replicas, out[i].ISR = fmt.Sprint(p.Replicas), fmt.Sprint(p.ISR)
		}
	}
	return out, more
}

func findPartition(s *kafka.Snapshot, topic string, id int32) *kafka.Partition {
	i, ok := slices.BinarySearchFunc(s.Topics, topic, func(t kafka.Topic, name string) int { return strings.Compare(t.Name, name) })
	if !ok {
		return nil
	}
	ps := s.Topics[i].Partitions
	j, ok := slices.BinarySearchFunc(ps, id, func(p kafka.Partition, id int32) int { return int(p.ID - id) })
	if !ok {
		return nil
	}
	return &ps[j]
}

func redisViewOf(named watch.Named[redis.Snapshot], log *events.Log, now time.Time) redisView {
	st := named.State
	v := redisView{clusterHead: head(named.Name, st.Up, st.Snapshot != nil, st.LastError, st.LastSuccess, st.Refreshes, st.Failures, now)}
	v.Events = eventRows(log, named.Name, now)
	s := st.Snapshot
	if s == nil {
		return v
	}
	v.StateOK, v.KnownNodes, v.Masters, v.ViewsConsistent = s.StateOK, s.KnownNodes, s.Masters, s.ViewsConsistent
	v.SlotsOK, v.SlotsPFail, v.SlotsFail, v.SlotsUnassigned = s.SlotsOK, s.SlotsPFail, s.SlotsFail, s.SlotsUnassigned
	if o, ok := s.Episodes.OldestFailover(); ok {
		v.OpenFailover = age(o.Age(s.ReadAt))
	}
	if s.Episodes.SlotsUnserved != nil {
		v.OpenUnserved = age(s.Episodes.SlotsUnserved.Age(s.ReadAt))
	}
	byID := make(map[string]*redis.Node, len(s.Nodes))
	for i := range s.Nodes {
		byID[s.Nodes[i].ID] = &s.Nodes[i]
		if s.Nodes[i].Reachable {
			v.Reachable++
		}
	}
	// Masters are numbered in slot order, so that neighbours differ and a
	// promoted replica takes the colour of the master whose slots it took.
	ownerIndex := make(map[string]int)
	for _, r := range s.SlotRanges {
		run := slotRun{First: r.First, Last: r.Last, Owner: "unassigned", State: "unassigned", Color: colorUnassigned,
			Percent: fmt.Sprintf("%.4f", float64(r.Last-r.First+1)*100/redis.SlotCount)}
		if n := byID[r.Owner]; n != nil {
			i, seen := ownerIndex[r.Owner]
			if !seen {
				i = len(ownerIndex)
				ownerIndex[r.Owner] = i
			}
			run.Owner, run.State, run.Color = n.Addr, string(n.State), slotColor(n.State, i)
		}
		v.Strip = append(v.Strip, run)
	}
	row := func(n *redis.Node) nodeRow {
		r := nodeRow{ID: n.ID, ShortID: shortID(n.ID), Address: n.Addr, State: string(n.State), Reachable: n.Reachable,
			Slots: n.Slots, LinkUp: n.MasterLinkUp, IsReplica: n.Role == redis.RoleReplica}
		if n.HasReplicationLag {
			r.Lag = fmt.Sprintf("%d B", n.ReplicationLagBytes)
		}
		return r
	}
	for i := range s.Nodes {
		n := &s.Nodes[i]
		if n.Role != redis.RoleMaster {
			continue
		}
		if len(v.Shards) == maxMasters {
			v.ShardsMore++
			continue
		}
		shard := shardRow{Master: row(n)}
		for j := range s.Nodes {
			if r := &s.Nodes[j]; r.Role == redis.RoleReplica && r.MasterID == n.ID {
				shard.Replicas = append(shard.Replicas, row(r))
			}
		}
		v.Shards = append(v.Shards, shard)
	}
	for i, f := range s.Foreign {
		if i == maxMasters {
			break
		}
		v.Foreign = append(v.Foreign, foreignRow{ShortID: shortID(f.ID), Address: f.Addr, Reason: string(f.Reason)})
	}
	// Masters serving slots first, then by address.
	sort.SliceStable(v.Shards, func(i, j int) bool { return v.Shards[i].Master.Slots > 0 && v.Shards[j].Master.Slots == 0 })
	return v
}

// Slot map colours. On this page red, orange and magenta-red mean trouble,
// so a healthy master's colour never has one of those hues; the test
// computes the hue of every colour below.
const (
	// A node suspects the master (PFAIL); its slots are still served.
	colorPFail template.CSS = "#e8710a"
	// The master is FAIL (or has no address, or is still in handshake):
	// its slots are not served.
	colorFail template.CSS = "#c62828"
	// No master claims these slots.
	colorUnassigned template.CSS = "#8e1616"
)

// healthyPalette colours masters in state ok: blues, greens, teals and
// violets, alternating hue and lightness so that neighbours in the slot map
// stand apart.
var healthyPalette = []template.CSS{
	"#317ac4", // blue
	"#3b9b4b", // green
	"#9464c4", // violet
	"#248f8f", // teal
	"#6e9933", // olive green
	"#7d84d4", // periwinkle
	"#59c09d", // sea green
	"#8a5095", // plum
	"#78c8e2", // sky
	"#90bb81", // sage
	"#524691", // slate blue
	"#227745", // dark green
}

// slotColor is the colour of slots owned by a master in the given state,
// the index-th master in slot order.
func slotColor(state redis.NodeState, index int) template.CSS {
	switch state {
	case redis.NodeStateOK:
		return healthyPalette[index%len(healthyPalette)]
	case redis.NodeStatePFail:
		return colorPFail
	default:
		return colorFail
	}
}
