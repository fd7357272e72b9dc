package redisproto

import (
	"cmp"
	"errors"
	"slices"
)

// Slot ownership has one rule, Merge: members only (by the majority of the
// slot-serving masters), and per slot the claim with the highest config
// epoch. The watcher's snapshot, the write canary (SlotMap) and the slot
// command all read the cluster through it, so they name the same owner for
// the same replies.

// MergedNode gathers what the member views say about one node.
type MergedNode[V any] struct {
	// Own is the node's own myself line, if it was reached; Other the line
	// from the most authoritative other view.
	Own, Other *NodeLine
	// View is the node's own view, if it was reached.
	View *V
	// viewAddr is the address View was read at.
	viewAddr string

	FailSeen, PFailSeen, NoAddrSeen, HandshakeSeen bool
	// NotFailSeen: some other view lists the node without the fail flag.
	NotFailSeen bool
}

// Line is the node's own line if it was reached (a node knows its own role
// best), else the most authoritative other view's (the others learn it by
// gossip).
func (m *MergedNode[V]) Line() *NodeLine {
	if m.Own != nil {
		return m.Own
	}
	return m.Other
}

// Addr is the node's address: the one the other nodes dial it at, else the
// one it gives itself, else (for a node nobody has met, which does not
// know its own address yet) the one the reader reached it at.
func (m *MergedNode[V]) Addr() string {
	if m.Other != nil && m.Other.Addr != "" {
		return m.Other.Addr
	}
	if m.Own != nil && m.Own.Addr != "" {
		return m.Own.Addr
	}
	return m.viewAddr
}

// Merged is the members' views merged node by node and slot by slot.
type Merged[V any] struct {
	// Views are the members' own views, most up-to-date first.
	Views []V
	Nodes map[string]*MergedNode[V]
	// IDs are the members' ids in the order the views first list them.
	IDs []string
	// Members holds every member id, reached or not.
	Members map[string]bool
	// Foreign are the nodes that answered but are not members, sorted by
	// address, then id.
	Foreign []Foreign
	// Owners holds the id of every slot's owner, "" for unassigned;
	// Disputed are the slots on which the views disagree.
	Owners   *[SlotCount]string
	Disputed []int
}

// Merge keeps one view per node and the members' only (membership by
// the majority of slot-serving masters), ranks them by
// cluster_current_epoch (highest first), so that the node that has seen the
// latest configuration speaks first wherever one view must be picked, and
// gives each slot to the member claiming it with the highest config epoch
// (mergeSlotOwners).
//
// An empty master (a master serving no slot: just added, or a replica
// after CLUSTER RESET SOFT, which Valkey 9 takes back as a member within a
// second) is still rebuilding its node table: it lists peers in handshake
// under made-up ids and says cluster_state:fail for its rejoin delay while
// the masters that serve slots say ok. Its view ranks after the others and
// its flags on other nodes count only when no slot-serving master answered;
// its own state is its own (Node.ClusterStateOK).
func Merge[V any, PV Viewer[V]](views []V) (*Merged[V], error) {
	views = dedupe[V, PV](views)
	if len(views) == 0 {
		return nil, errors.New("no node answered")
	}
	protos := make([]*View, len(views))
	for i := range views {
		protos[i] = PV(&views[i]).ProtoView()
	}
	members := decideMembership(protos)
	if len(members.views) == 0 {
		return nil, errors.New("no node that answered is a member of the cluster")
	}
	servingReached := false
	for _, i := range members.views {
		servingReached = servingReached || protos[i].servesSlots()
	}
	// decides: whether the view's flags on other nodes count.
	decides := func(v *View) bool { return !servingReached || v.servesSlots() || !v.Self().Flags.Master }
	// The member views are ranked by index: a reader's view may be large,
	// and the comparisons need only its View.
	order := members.views
	slices.SortStableFunc(order, func(i, j int) int {
		va, vb := protos[i], protos[j]
		if c := CompareBool(decides(vb), decides(va)); c != 0 {
			return c
		}
		if c := cmp.Compare(vb.Info.CurrentEpoch, va.Info.CurrentEpoch); c != 0 {
			return c
		}
		return cmp.Compare(va.Addr, vb.Addr)
	})
	mv := &Merged[V]{
		Views: make([]V, len(order)), Nodes: make(map[string]*MergedNode[V], len(protos)),
		Members: members.members, Foreign: members.foreign,
	}
	ranked := make([]*View, len(order))
	for k, i := range order {
		mv.Views[k] = views[i]
		ranked[k] = PV(&mv.Views[k]).ProtoView()
		mv.addLines(&mv.Views[k], ranked[k], decides(ranked[k]))
	}
	mv.Owners, mv.Disputed = mergeSlotOwners(ranked, mv.Members)
	return mv, nil
}

// addLines merges the lines of the member view v (whose View is p) into
// the nodes; its flags on others count when it decides.
func (mv *Merged[V]) addLines(v *V, p *View, decides bool) {
	for li := range p.Nodes {
		line := &p.Nodes[li]
		if !mv.Members[line.ID] {
			continue // a foreign node some member still lists
		}
		m, ok := mv.Nodes[line.ID]
		if !ok {
			m = &MergedNode[V]{}
			mv.Nodes[line.ID] = m
			mv.IDs = append(mv.IDs, line.ID)
		}
		if line.Flags.Myself {
			m.Own, m.View, m.viewAddr = line, v, p.Addr
			continue
		}
		if m.Other == nil {
			m.Other = line
		}
		if !decides {
			continue
		}
		// FAIL is agreed by a majority of masters and spread to every
		// node, so one view saying it is enough; PFAIL is one observer's
		// suspicion, reported as such.
		m.FailSeen = m.FailSeen || line.Flags.Fail
		m.NotFailSeen = m.NotFailSeen || !line.Flags.Fail
		m.PFailSeen = m.PFailSeen || line.Flags.PFail
		m.NoAddrSeen = m.NoAddrSeen || line.Flags.NoAddr
		m.HandshakeSeen = m.HandshakeSeen || line.Flags.Handshake
	}
}

// dedupe keeps one view per node: a node reached under two addresses (a
// seed hostname and its IP) must not be counted twice. Views without a
// myself line are dropped; they cannot be attributed to a node.
func dedupe[V any, PV Viewer[V]](views []V) []V {
	seen := map[string]bool{}
	out := make([]V, 0, len(views))
	for i := range views {
		self := PV(&views[i]).ProtoView().Self()
		if self == nil || seen[self.ID] {
			continue
		}
		seen[self.ID] = true
		out = append(out, views[i])
	}
	return out
}

// CompareBool orders false before true, as cmp.Compare orders numbers.
func CompareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	default:
		return -1
	}
}

// mergeSlotOwners returns the owner of every slot and the slots on which
// the views disagree. Where they disagree the claim with the highest config
// epoch wins, which is the rule Redis Cluster itself uses to settle
// conflicts; views are ranked so that equal epochs go to the most up-to-date
// view. Whether a disagreement is a conflict is for settleDisputes.
func mergeSlotOwners(views []*View, members map[string]bool) (owners *[SlotCount]string, disputed []int) {
	// On the heap, not the stack: the per-slot tables are over 400 KB, and
	// a goroutine stack grown to hold them stays grown (and is copied on
	// every growth) for no other use.
	owners = new([SlotCount]string)
	epochs := make([]uint64, SlotCount)
	claimed := make([]bool, SlotCount)
	// Claims in line order (for painting) and sorted (for comparing).
	var first, current, firstSorted, currentSorted []ownedRange
	var firstOwners, currentOwners *[SlotCount]string // only when views differ
	var differs []bool
	for vi := range views {
		current = appendClaims(current[:0], views[vi], members)
		for _, c := range current {
			for slot := c.First; slot <= c.Last; slot++ {
				if !claimed[slot] || c.Epoch > epochs[slot] {
					owners[slot], epochs[slot], claimed[slot] = c.ID, c.Epoch, true
				}
			}
		}
		currentSorted = sortClaims(append(currentSorted[:0], current...))
		if vi == 0 {
			first, firstSorted = slices.Clone(current), slices.Clone(currentSorted)
			continue
		}
		if sameClaims(firstSorted, currentSorted) {
			continue
		}
		// The views may differ: compare slot by slot.
		if firstOwners == nil {
			firstOwners, currentOwners = paintClaims(new([SlotCount]string), first), new([SlotCount]string)
			differs = make([]bool, SlotCount)
		}
		*currentOwners = [SlotCount]string{}
		paintClaims(currentOwners, current)
		for slot := range currentOwners {
			differs[slot] = differs[slot] || currentOwners[slot] != firstOwners[slot]
		}
	}
	for slot, d := range differs {
		if d {
			disputed = append(disputed, slot)
		}
	}
	return owners, disputed
}

// ownedRange is one slot range a view gives to a node.
type ownedRange struct {
	First, Last int
	ID          string
	Epoch       uint64
}

// appendClaims appends the slot ranges a view gives to member nodes, in the
// order of its lines (a later line wins a slot two lines claim).
func appendClaims(claims []ownedRange, v *View, members map[string]bool) []ownedRange {
	for _, line := range v.Nodes {
		if !members[line.ID] {
			continue
		}
		for _, r := range line.Slots {
			claims = append(claims, ownedRange{First: r.First, Last: r.Last, ID: line.ID, Epoch: line.ConfigEpoch})
		}
	}
	return claims
}

func sortClaims(claims []ownedRange) []ownedRange {
	slices.SortStableFunc(claims, func(x, y ownedRange) int { return cmp.Compare(x.First, y.First) })
	return claims
}

// sameClaims reports whether two views give every slot to the same node
// when it can tell cheaply: both sorted claim lists are identical and free
// of overlaps (where claims overlap, which wins depends on line order).
// Otherwise the caller compares slot by slot.
func sameClaims(a, b []ownedRange) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].First != b[i].First || a[i].Last != b[i].Last || a[i].ID != b[i].ID {
			return false
		}
		if i > 0 && a[i].First <= a[i-1].Last {
			return false
		}
	}
	return true
}

// paintClaims sets each claimed slot's owner in line order.
func paintClaims(owners *[SlotCount]string, claims []ownedRange) *[SlotCount]string {
	for _, c := range claims {
		for slot := c.First; slot <= c.Last; slot++ {
			owners[slot] = c.ID
		}
	}
	return owners
}
