package redis

import (
	"fmt"

	"github.com/failover-exporter/failover_exporter/status/model"
	"github.com/failover-exporter/failover_exporter/systems/redis/proto"
)

// tables lays the cluster's view out as the page's generic parts, in the
// page's order: the slot map, the migrations in flight, the keys by slot,
// the masters and replicas, and the foreign nodes.
func (v clusterView) tables() []model.Table {
	tables := []model.Table{slotMapTable(v.Strip, v.Moving)}
	if len(v.Moving) > 0 {
		tables = append(tables, movesTable(v.Moving, v.MovingMore))
	}
	if v.Keys != nil {
		tables = append(tables, keysTable(v.Keys))
	}
	tables = append(tables, shardsTable(v.Shards, v.ShardsMore))
	if len(v.Foreign) > 0 {
		tables = append(tables, foreignTable(v.Foreign))
	}
	return tables
}

// slotMapTable is the slot map alone: a strip of the slot runs coloured by
// owner, hatched by the owner's state, with the slots in flight marked over
// it, and its legend.
func slotMapTable(strip []slotRun, moving []movingJob) model.Table {
	s := &model.Strip{Label: fmt.Sprintf("%d hash slots by owner", redisproto.SlotCount)}
	for _, r := range strip {
		class := "st-" + r.State
		s.Segments = append(s.Segments, model.Segment{Class: class, Width: r.Percent, Color: r.Color,
			Title: fmt.Sprintf("slots %d-%d: %s (%s)", r.First, r.Last, r.Owner, r.State),
			Attrs: append(slotAttrs(r.First, r.Last), model.Attr{Name: "data-owner", Value: r.Owner}, model.Attr{Name: "data-state", Value: r.State})})
		s.Legend = append(s.Legend, model.LegendEntry{Class: class, Color: r.Color, Text: fmt.Sprintf("%d–%d %s (%s)", r.First, r.Last, r.Owner, r.State)})
	}
	for _, m := range moving {
		for _, b := range m.Bands {
			s.Marks = append(s.Marks, model.Segment{Class: "moving", Left: b.Left, Width: b.Percent,
				Title: fmt.Sprintf("slots %d-%d moving %s → %s (%s)", b.First, b.Last, m.Source, m.Target, m.State),
				Attrs: append(slotAttrs(b.First, b.Last), model.Attr{Name: "data-moving", Value: m.Name})})
		}
	}
	if len(moving) > 0 {
		s.Legend = append(s.Legend, model.LegendEntry{Class: "moving", Text: "moving (atomic slot migration)"})
	}
	return model.Table{Name: "slot-map", Title: "Slot map", Strip: s}
}

// slotAttrs are the data-* attributes of a run of slots on a strip.
func slotAttrs(first, last int) []model.Attr {
	return []model.Attr{{Name: "data-first", Value: fmt.Sprint(first)}, {Name: "data-last", Value: fmt.Sprint(last)}}
}

// movesTable lists the atomic slot migrations in flight.
func movesTable(moving []movingJob, more int) model.Table {
	t := model.Table{Name: "slot-moves", Title: "Slot migrations in flight",
		Columns: []model.Column{{Title: "slots"}, {Title: "count", Numeric: true}, {Title: "from"}, {Title: "to"},
			{Title: "state"}, {Title: "for"}, {Title: "stream left", Numeric: true}},
		NoteSpans: []model.Span{{Text: "Atomic slot migrations (Valkey 9.0+ "}, {Text: "CLUSTER GETSLOTMIGRATIONS", Code: true},
			{Text: ", Redis 8.4+ "}, {Text: "CLUSTER MIGRATION STATUS", Code: true},
			{Text: "): each job as its source reports it, else its target; a move, never a conflict."}},
	}
	for _, m := range moving {
		t.Rows = append(t.Rows, model.Row{Attrs: []model.Attr{{Name: "data-moving", Value: m.Name}},
			Cells: []string{m.Ranges, fmt.Sprint(m.Slots), m.Source, m.Target, m.State, m.Age, m.Remaining}})
	}
	if more > 0 {
		t.More, t.MoreText = more, fmt.Sprintf("and %d more jobs, oldest first (their slots are not marked above)", more)
	}
	return t
}

// keysTable is the slot map shaded by keys, over the table of the hottest
// slots; their CPU and network columns only when some master counts them.
func keysTable(km *keyMap) model.Table {
	s := &model.Strip{Name: "keys", Label: fmt.Sprintf("%d hash slots shaded by keys", redisproto.SlotCount),
		Caption: []model.Span{{Text: "Darker holds more keys. Each master's hottest slots ("}, {Text: "slot_stats", Code: true},
			{Text: ") count exactly; its other keys are shared evenly among its other slots."}}}
	for _, b := range km.Bands {
		title := fmt.Sprintf("slots %d-%d: about %d keys", b.First, b.Last, b.Keys)
		if b.Hottest >= 0 {
			title += fmt.Sprintf("; hottest slot %d with %d", b.Hottest, b.HottestKeys)
		}
		s.Segments = append(s.Segments, model.Segment{Width: b.Percent, Color: b.Color, Title: title,
			Attrs: append(slotAttrs(b.First, b.Last), model.Attr{Name: "data-keys", Value: fmt.Sprint(b.Keys)})})
	}
	t := model.Table{Name: "hot-slots", Title: "Keys by slot", Strip: s, Empty: "No slot counted yet.",
		Columns: []model.Column{{Title: "hottest slots", Numeric: true}, {Title: "keys", Numeric: true}, {Title: "master"}}}
	if km.Usage {
		t.Columns = append(t.Columns, model.Column{Title: "CPU", Numeric: true}, model.Column{Title: "received", Numeric: true},
			model.Column{Title: "sent", Numeric: true})
	}
	for _, h := range km.Hot {
		cells := []string{fmt.Sprint(h.Slot), fmt.Sprint(h.Keys), h.Owner}
		if km.Usage {
			cells = append(cells, h.CPU, h.NetworkIn, h.NetworkOut)
		}
		t.Rows = append(t.Rows, model.Row{Attrs: []model.Attr{{Name: "data-slot", Value: fmt.Sprint(h.Slot)}}, Cells: cells})
	}
	return t
}

// shardsTable lists the masters, each with its replicas under it.
func shardsTable(shards []shard, more int) model.Table {
	t := model.Table{Name: "shards", Title: "Masters and replicas", Empty: "No masters.",
		Columns: []model.Column{{Title: "node", Code: true}, {Title: "address"}, {Title: "role"}, {Title: "state"},
			{Title: "read"}, {Title: "slots", Numeric: true}, {Title: "replication"}}}
	for _, sh := range shards {
		t.Rows = append(t.Rows, nodeRow(sh.Master))
		for _, r := range sh.Replicas {
			t.Rows = append(t.Rows, nodeRow(r))
		}
	}
	if more > 0 {
		t.More, t.MoreText = more, fmt.Sprintf("and %d more masters", more)
	}
	return t
}

// nodeRow is a master's row, or a replica's under its master's: its slots
// for a master, its replication for a replica.
func nodeRow(n node) model.Row {
	role, level := "master", ""
	if n.IsReplica {
		role = "replica"
	}
	if n.State != string(NodeStateOK) {
		level = "bad"
	}
	read := "no"
	if n.Reachable {
		read = "yes"
	}
	row := model.Row{Attrs: []model.Attr{{Name: "data-node", Value: n.ID}, {Name: "data-role", Value: role}, {Name: "class", Value: level}},
		Indent: n.IsReplica, Cells: []string{n.ShortID, n.Address, role, n.State, read, fmt.Sprint(n.Slots), ""}}
	if n.IsReplica {
		row.Cells[5], row.Cells[6] = "", replication(n)
	}
	return row
}

// replication is a replica's lag and master link, as far as known.
func replication(n node) string {
	text := ""
	if n.Lag != "" {
		text = "lag " + n.Lag
	}
	if n.Reachable {
		if n.LinkUp {
			text += " link up"
		} else {
			text += " link down"
		}
	}
	return text
}

// foreignTable lists the nodes that answered but are not members.
func foreignTable(foreign []foreignNode) model.Table {
	t := model.Table{Name: "foreign", Title: "Foreign nodes",
		Intro:   "Nodes that answered but are not members of this cluster (forgotten, reset, or of another cluster); they count in nothing above.",
		Columns: []model.Column{{Title: "node", Code: true}, {Title: "address"}, {Title: "why"}}}
	for _, f := range foreign {
		t.Rows = append(t.Rows, model.Row{Attrs: []model.Attr{{Name: "class", Value: "warn"}}, Cells: []string{f.ShortID, f.Address, f.Reason}})
	}
	return t
}
