package redis

import (
	"fmt"
	"sort"

	"github.com/failover-exporter/failover_exporter/collector/events"
	"github.com/failover-exporter/failover_exporter/collector/system"
	"github.com/failover-exporter/failover_exporter/status/model"
	"github.com/failover-exporter/failover_exporter/systems/redis/proto"
)

// maxMasters bounds the status page's tables of masters and of foreign
// nodes; the rest are counted.
const maxMasters = 100

// Views are the status page's parts of the given clusters, as of now.
var Views = system.Views("redis", "Redis Cluster ", func(c *model.Cluster, s *Snapshot) {
	c.Stats = summarize(s).stats()
	c.Tables = newClusterView(s).tables()
})

// clusterView is what the page shows under a cluster's summary row, as
// counted, bounded and formatted values; tables (view_parts.go) lays it
// out as the page's generic parts.
type clusterView struct {
	// Strip is the slot map: consecutive slots with the same owner.
	Strip []slotRun
	// Keys shades the slot map by keys; nil unless slot_stats is on and
	// some master answered CLUSTER SLOT-STATS.
	Keys *keyMap
	// Moving are the atomic slot migration jobs in flight, oldest first,
	// bounded; MovingMore counts those left out (their slots are not
	// marked on the slot map).
	Moving     []movingJob
	MovingMore int
	Shards     []shard
	ShardsMore int
	Foreign    []foreignNode
}

// slotRun is a range of slots with one owner.
type slotRun struct {
	First, Last int
	// Owner is the owning master's address, or "unassigned".
	Owner string
	// State is ok, pfail, fail, noaddr, handshake or unassigned.
	State string
	// Color is a #rrggbb colour.
	Color string
	// Percent is the run's share of the strip's width.
	Percent string
}

// shard is a master and its replicas.
type shard struct {
	Master   node
	Replicas []node
}

// node is one node of a shard.
type node struct {
	ID        string
	ShortID   string
	Address   string
	State     string
	Reachable bool
	Slots     int
	// Lag is the replication lag ("12 B"), empty when unknown.
	Lag       string
	LinkUp    bool
	IsReplica bool
}

// foreignNode is a node that answered but is not a member of the cluster.
type foreignNode struct {
	ShortID string
	Address string
	Reason  string
}

func newClusterView(s *Snapshot) clusterView {
	var v clusterView
	byID := make(map[string]*Node, len(s.Nodes))
	for i := range s.Nodes {
		byID[s.Nodes[i].ID] = &s.Nodes[i]
	}
	v.Strip = slotStrip(s, byID)
	v.Keys = newKeyMap(s)
	v.Moving, v.MovingMore = slotMoves(s, byID)
	v.Shards, v.ShardsMore = shards(s)
	for i, f := range s.Foreign {
		if i == maxMasters {
			break
		}
		v.Foreign = append(v.Foreign, foreignNode{ShortID: events.ShortID(f.ID), Address: f.Addr, Reason: string(f.Reason)})
	}
	return v
}

// shards are the masters with their replicas, bounded, masters serving
// slots first, then in the snapshot's order (by address).
func shards(s *Snapshot) (out []shard, more int) {
	row := func(n *Node) node {
		r := node{ID: n.ID, ShortID: events.ShortID(n.ID), Address: n.Addr, State: string(n.State), Reachable: n.Reachable,
			Slots: n.Slots, LinkUp: n.MasterLinkUp, IsReplica: n.Role == RoleReplica}
		if n.HasReplicationLag {
			r.Lag = fmt.Sprintf("%d B", n.ReplicationLagBytes)
		}
		return r
	}
	for i := range s.Nodes {
		n := &s.Nodes[i]
		if n.Role != RoleMaster {
			continue
		}
		if len(out) == maxMasters {
			more++
			continue
		}
		sh := shard{Master: row(n)}
		for j := range s.Nodes {
			if r := &s.Nodes[j]; r.Role == RoleReplica && r.MasterID == n.ID {
				sh.Replicas = append(sh.Replicas, row(r))
			}
		}
		out = append(out, sh)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Master.Slots > 0 && out[j].Master.Slots == 0 })
	return out, more
}

// summary is the cluster's summary row as counted and formatted values;
// stats lays it out as the page's generic stats.
type summary struct {
	StateOK                        bool
	KnownNodes, Masters, Reachable int
	SlotsOK, SlotsPFail, SlotsFail int
	SlotsUnassigned                int
	ViewsConsistent                bool
	// Ages of the open failover and unserved-slots episodes; empty when
	// none is open.
	OpenFailover, OpenUnserved string
}

func summarize(s *Snapshot) summary {
	v := summary{StateOK: s.StateOK, KnownNodes: s.KnownNodes, Masters: s.Masters, ViewsConsistent: s.ViewsConsistent,
		SlotsOK: s.SlotsOK, SlotsPFail: s.SlotsPFail, SlotsFail: s.SlotsFail, SlotsUnassigned: s.SlotsUnassigned}
	if o, ok := s.Episodes.OldestFailover(); ok {
		v.OpenFailover = model.Age(o.Age(s.ReadAt))
	}
	if s.Episodes.SlotsUnserved != nil {
		v.OpenUnserved = model.Age(s.Episodes.SlotsUnserved.Age(s.ReadAt))
	}
	for i := range s.Nodes {
		if s.Nodes[i].Reachable {
			v.Reachable++
		}
	}
	return v
}

func (v summary) stats() []model.Stat {
	state := model.Stat{Name: "state", Label: "cluster_state", Value: "ok", Level: "good"}
	if !v.StateOK {
		state.Value, state.Level = "fail", "bad"
	}
	slots := model.Stat{Name: "slots", Label: "slots ok", Value: fmt.Sprint(v.SlotsOK), Level: "good",
		Detail: fmt.Sprintf("pfail %d · fail %d · unassigned %d", v.SlotsPFail, v.SlotsFail, v.SlotsUnassigned)}
	switch {
	case v.SlotsFail > 0 || v.SlotsUnassigned > 0:
		slots.Level = "bad"
	case v.SlotsPFail > 0:
		slots.Level = "warn"
	}
	failover := model.Stat{Name: "failover", Label: "failover under way", Value: "no", Level: "good"}
	if v.OpenFailover != "" {
		failover.Value, failover.Level = v.OpenFailover, "bad"
	}
	if v.OpenUnserved != "" {
		failover.Detail = "slots unserved for " + v.OpenUnserved
	}
	stats := []model.Stat{state,
		{Name: "nodes", Label: "nodes read / known", Value: fmt.Sprintf("%d / %d", v.Reachable, v.KnownNodes), Detail: fmt.Sprintf("%d masters with slots", v.Masters)},
		slots, failover}
	if !v.ViewsConsistent {
		stats = append(stats, model.Stat{Name: "views", Label: "views", Value: "disagree", Level: "warn"})
	}
	return stats
}

// slotStrip is the slot map: the snapshot's slot ranges, coloured by owner.
func slotStrip(s *Snapshot, byID map[string]*Node) []slotRun {
	var strip []slotRun
	// Masters are numbered in slot order, so that neighbours differ and a
	// promoted replica takes the colour of the master whose slots it took.
	ownerIndex := make(map[string]int)
	for _, r := range s.SlotRanges {
		run := slotRun{First: r.First, Last: r.Last, Owner: "unassigned", State: "unassigned", Color: colorUnassigned,
			Percent: fmt.Sprintf("%.4f", float64(r.Last-r.First+1)*100/redisproto.SlotCount)}
		if n := byID[r.Owner]; n != nil {
			i, seen := ownerIndex[r.Owner]
			if !seen {
				i = len(ownerIndex)
				ownerIndex[r.Owner] = i
			}
			run.Owner, run.State, run.Color = n.Addr, string(n.State), slotColor(n.State, i)
		}
		strip = append(strip, run)
	}
	return strip
}

// Slot map colours. On the status page red, orange and magenta-red mean
// trouble, so a healthy master's colour never has one of those hues; the
// test computes the hue of every colour below.
const (
	// A node suspects the master (PFAIL); its slots are still served.
	colorPFail = "#e8710a"
	// The master is FAIL (or has no address, or is still in handshake):
	// its slots are not served.
	colorFail = "#c62828"
	// No master claims these slots.
	colorUnassigned = "#8e1616"
)

// healthyPalette colours masters in state ok: blues, greens, teals and
// violets, alternating hue and lightness so that neighbours in the slot map
// stand apart.
var healthyPalette = []string{
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
func slotColor(state NodeState, index int) string {
	switch state {
	case NodeStateOK:
		return healthyPalette[index%len(healthyPalette)]
	case NodeStatePFail:
		return colorPFail
	default:
		return colorFail
	}
}
