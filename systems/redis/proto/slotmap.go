package redisproto

import (
	"sort"
)

// Master is a member master that owns slots.
type Master struct {
	ID string
	// Addr is "ip:port", empty for a node without an address; chosen as
	// MergedNode.Addr chooses it.
	Addr string
}

// SlotMap is which master owns each slot, by the one slot-ownership rule
// (Merge): what a reader that only needs owners keeps (the write canary).
type SlotMap struct {
	owners  *[SlotCount]string // node ids, "" unassigned
	masters map[string]Master  // by id, the masters that own slots
}

// NewSlotMap merges the views by the rule the watcher's snapshot uses.
func NewSlotMap(views []View) (*SlotMap, error) {
	mv, err := Merge(views)
	if err != nil {
		return nil, err
	}
	sm := &SlotMap{owners: mv.Owners, masters: map[string]Master{}}
	for _, id := range mv.Owners {
		if _, ok := sm.masters[id]; id != "" && !ok {
			sm.masters[id] = Master{ID: id, Addr: mv.Nodes[id].Addr()}
		}
	}
	return sm, nil
}

// Owner returns the master owning slot, false if the slot is unassigned.
func (m *SlotMap) Owner(slot int) (Master, bool) {
	if slot < 0 || slot >= SlotCount || m.owners[slot] == "" {
		return Master{}, false
	}
	return m.masters[m.owners[slot]], true
}

// Masters lists the masters that own slots, by id.
func (m *SlotMap) Masters() []Master {
	out := make([]Master, 0, len(m.masters))
	for _, master := range m.masters {
		out = append(out, master)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Addrs lists every address the views' CLUSTER NODES mention, sorted: the
// nodes a reader dials next.
func Addrs[V any, PV Viewer[V]](views []V) []string {
	seen := map[string]bool{}
	var addrs []string
	for i := range views {
		for _, line := range PV(&views[i]).ProtoView().Nodes {
			if line.Addr != "" && !seen[line.Addr] {
				seen[line.Addr] = true
				addrs = append(addrs, line.Addr)
			}
		}
	}
	sort.Strings(addrs)
	return addrs
}
