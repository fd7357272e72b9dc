package redis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/go-kit/log"

	"github.com/failover-exporter/failover_exporter/config"
	"github.com/failover-exporter/failover_exporter/internal/redisproto"
)

// Slot ownership has one rule, mergeViews: members only (by the majority
// of the slot-serving masters), and per slot the claim with the highest
// config epoch. The watcher's snapshot, the write canary (SlotMap) and the
// slot command (ReadSlotOwners) all go through it, so they name the same
// owner for the same replies.

// NoOwner is what ReadSlotOwners gives for a slot no master owns, and for
// an owner without an address.
const NoOwner = "-"

// ReadSlotOwners maps every slot to the address of the master that owns
// it, reading the cluster as the watcher does: the seeds, then every node
// they list, merged by the one slot-ownership rule. It is what the slot
// command prints, and names the owner /metrics would for the same replies.
// cfg must have its defaults applied (config.Config.Complete).
func ReadSlotOwners(ctx context.Context, cfg config.RedisCluster) (*[redisproto.SlotCount]string, error) {
	s, err := newSource(cfg, log.NewNopLogger())
	if err != nil {
		return nil, err
	}
	defer s.close()
	snap, err := s.refresh(ctx, nil)
	if err != nil {
		if none, ok := errors.AsType[*noNodeAnsweredError](err); ok {
			return nil, fmt.Errorf("no seed answered CLUSTER NODES: %w", errors.Join(none.errs...))
		}
		return nil, err
	}
	return snap.slotOwnerAddrs(), nil
}

// slotOwnerAddrs maps every slot to its owner's address, NoOwner where
// there is none.
func (s *Snapshot) slotOwnerAddrs() *[redisproto.SlotCount]string {
	addrs := make(map[string]string, len(s.Nodes))
	for _, n := range s.Nodes {
		addrs[n.ID] = n.Addr
	}
	owners := new([redisproto.SlotCount]string)
	for _, r := range s.SlotRanges {
		addr := addrs[r.Owner]
		if r.Owner == "" || addr == "" {
			addr = NoOwner
		}
		for slot := r.First; slot <= r.Last; slot++ {
			owners[slot] = addr
		}
	}
	return owners
}

// ClusterView is one node's CLUSTER NODES and CLUSTER INFO replies, for
// readers of the slot map other than the watcher (the write canary).
type ClusterView struct {
	view nodeView
}

// ParseClusterView decodes the replies of the node the reader dialled at
// addr.
func ParseClusterView(addr, clusterNodes, clusterInfo string) (ClusterView, error) {
	v := nodeView{Addr: addr}
	var err error
	if v.Nodes, err = parseClusterNodes(clusterNodes); err != nil {
		return ClusterView{}, err
	}
	if v.self() == nil {
		return ClusterView{}, errors.New("CLUSTER NODES has no myself line")
	}
	if v.Info, err = parseClusterInfo(clusterInfo); err != nil {
		return ClusterView{}, err
	}
	return ClusterView{view: v}, nil
}

// Addrs lists every address the view's CLUSTER NODES mentions, sorted.
func (v ClusterView) Addrs() []string {
	return topologyAddrs([]nodeView{v.view})
}

// Master is a member master that owns slots.
type Master struct {
	ID string
	// Addr is "ip:port", empty for a node without an address; chosen as the
	// snapshot's Node.Addr is.
	Addr string
}

// SlotMap is which master owns each slot, by the one slot-ownership rule.
type SlotMap struct {
	owners  *[redisproto.SlotCount]string // node ids, "" unassigned
	masters map[string]Master             // by id, the masters that own slots
}

// NewSlotMap merges the views by the rule the watcher's snapshot uses.
func NewSlotMap(views []ClusterView) (*SlotMap, error) {
	nodeViews := make([]nodeView, len(views))
	for i, v := range views {
		nodeViews[i] = v.view
	}
	mv, err := mergeViews(nodeViews)
	if err != nil {
		return nil, err
	}
	sm := &SlotMap{owners: mv.owners, masters: map[string]Master{}}
	for _, id := range mv.owners {
		if _, ok := sm.masters[id]; id != "" && !ok {
			sm.masters[id] = Master{ID: id, Addr: mv.nodes[id].addr()}
		}
	}
	return sm, nil
}

// Owner returns the master owning slot, false if the slot is unassigned.
func (m *SlotMap) Owner(slot int) (Master, bool) {
	if slot < 0 || slot >= redisproto.SlotCount || m.owners[slot] == "" {
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

// noNodeAnsweredError is a refresh that no node answered, with each
// node's error.
type noNodeAnsweredError struct {
	errs []error
}

func (e *noNodeAnsweredError) Error() string {
	if len(e.errs) == 0 {
		return "no node answered"
	}
	return "no node answered: " + errors.Join(e.errs...).Error()
}

func (e *noNodeAnsweredError) Unwrap() []error { return slices.Clone(e.errs) }
