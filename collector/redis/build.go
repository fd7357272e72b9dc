package redis

import (
	"cmp"
	"errors"
	"slices"
	"time"

	"github.com/failover-exporter/failover_exporter/internal/redisproto"
)

// nodeView is what one reachable node told the exporter in one refresh.
type nodeView struct {
	// Addr is the address the exporter dialled.
	Addr        string
	Nodes       []clusterNodeLine
	Info        clusterInfo
	Replication replicationInfo
	UsedMemory  uint64
	Keys        int64
	// Zone is the availability-zone from HELLO (Valkey 8.1+), empty when
	// the server has none or none is set.
	Zone string
	// Migrations are the node's atomic slot migration jobs (Valkey 9.0+,
	// Redis 8.4+), read when MigrationsRead.
	Migrations     []SlotMigration
	MigrationsRead bool
	// AnsweredAt is when the node's replies arrived.
	AnsweredAt time.Time
	// NodeTimeout is the node's cluster-node-timeout (CONFIG GET, read once
	// per connection), 0 when unread or refused.
	NodeTimeout time.Duration
}

// self returns the view's myself line.
func (v *nodeView) self() *clusterNodeLine {
	for i := range v.Nodes {
		if v.Nodes[i].Flags.Myself {
			return &v.Nodes[i]
		}
	}
	return nil
}

// mergedNode gathers what the views say about one node.
type mergedNode struct {
	own   *clusterNodeLine // the node's own myself line, if it was reached
	other *clusterNodeLine // the line from the most authoritative other view
	view  *nodeView        // the node's own view, if it was reached

	failSeen, pfailSeen, noaddrSeen, handshakeSeen bool
	// notFailSeen: some other view lists the node without the fail flag.
	notFailSeen bool
}

// line is the node's own line if it was reached (a node knows its own role
// best), else the most authoritative other view's (the others learn it by
// gossip).
func (m *mergedNode) line() *clusterNodeLine {
	if m.own != nil {
		return m.own
	}
	return m.other
}

// addr is the node's address: the one the other nodes dial it at, else the
// one it gives itself, else (for a node nobody has met, which does not
// know its own address yet) the one the exporter reached it at.
func (m *mergedNode) addr() string {
	if m.other != nil && m.other.Addr != "" {
		return m.other.Addr
	}
	if m.own != nil && m.own.Addr != "" {
		return m.own.Addr
	}
	if m.view != nil {
		return m.view.Addr
	}
	return ""
}

// mergedViews is the members' views merged node by node and slot by slot.
// It is the one place that decides which node owns a slot: the watcher's
// snapshot (buildSnapshot), the write canary (SlotMap) and the slot
// command (ReadSlotOwners) all read the cluster through it.
type mergedViews struct {
	members membership
	// views are the members' own views, most up-to-date first.
	views []nodeView
	nodes map[string]*mergedNode
	// ids are the members' ids in the order the views first list them.
	ids []string
	// owners holds the id of every slot's owner, "" for unassigned;
	// disputed are the slots on which the views disagree.
	owners   *[redisproto.SlotCount]string
	disputed []int
}

// mergeViews keeps one view per node and the members' only (membership by
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
func mergeViews(views []nodeView) (*mergedViews, error) {
	views = dedupeViews(views)
	if len(views) == 0 {
		return nil, errors.New("no node answered")
	}
	mv := &mergedViews{members: decideMembership(views), nodes: map[string]*mergedNode{}}
	mv.views = mv.members.views
	if len(mv.views) == 0 {
		return nil, errors.New("no node that answered is a member of the cluster")
	}
	servingReached := slices.ContainsFunc(mv.views, servesSlots)
	// decides: whether the view's flags on other nodes count.
	decides := func(v *nodeView) bool { return !servingReached || servesSlots(*v) || !v.self().Flags.Master }
	slices.SortStableFunc(mv.views, func(a, b nodeView) int {
		if c := cmpBool(decides(&b), decides(&a)); c != 0 {
			return c
		}
		if c := cmp.Compare(b.Info.CurrentEpoch, a.Info.CurrentEpoch); c != 0 {
			return c
		}
		return cmp.Compare(a.Addr, b.Addr)
	})

	get := func(id string) *mergedNode {
		m, ok := mv.nodes[id]
		if !ok {
			m = &mergedNode{}
			mv.nodes[id] = m
			mv.ids = append(mv.ids, id)
		}
		return m
	}
	for vi := range mv.views {
		v := &mv.views[vi]
		for li := range v.Nodes {
			line := &v.Nodes[li]
			if !mv.members.members[line.ID] {
				continue // a foreign node some member still lists
			}
			m := get(line.ID)
			if line.Flags.Myself {
				m.own, m.view = line, v
				continue
			}
			if m.other == nil {
				m.other = line
			}
			if !decides(v) {
				continue
			}
			// FAIL is agreed by a majority of masters and spread to every
			// node, so one view saying it is enough; PFAIL is one observer's
			// suspicion, reported as such.
			m.failSeen = m.failSeen || line.Flags.Fail
			m.notFailSeen = m.notFailSeen || !line.Flags.Fail
			m.pfailSeen = m.pfailSeen || line.Flags.PFail
			m.noaddrSeen = m.noaddrSeen || line.Flags.NoAddr
			m.handshakeSeen = m.handshakeSeen || line.Flags.Handshake
		}
	}
	mv.owners, mv.disputed = mergeSlotOwners(mv.views, mv.members.members)
	return mv, nil
}

// buildSnapshot merges the views of the reachable nodes into one snapshot
// (mergeViews decides membership and slot ownership). Counters are left at
// zero; carryTransitions fills them.
func buildSnapshot(nodeViews []nodeView) (*Snapshot, error) {
	mv, err := mergeViews(nodeViews)
	if err != nil {
		return nil, err
	}
	views, merged, ids, owners := mv.views, mv.nodes, mv.ids, mv.owners

	snap := &Snapshot{Foreign: mv.members.foreign}
	snap.disputes, snap.SlotsInMigration = findDisputes(views, merged, mv.disputed)
	// Until settleDisputes has seen the disputes last, every one counts.
	snap.ViewsConsistent = len(snap.disputes) == 0
	index := map[string]int{}
	for _, id := range ids {
		index[id] = len(snap.Nodes)
		snap.Nodes = append(snap.Nodes, mergedNodeEntry(id, merged[id]))
	}
	for _, owner := range owners {
		if owner == "" {
			continue
		}
		snap.Nodes[index[owner]].Slots++
	}
	linkReplicas(snap, index, merged)
	snap.SlotRanges = slotRanges(owners)
	countSlotStates(snap, index, owners)

	assessFailureDomains(snap)
	snap.StateOK = clusterStateOK(snap, merged)
	for _, v := range views {
		snap.CurrentEpoch = max(snap.CurrentEpoch, v.Info.CurrentEpoch)
	}
	for _, n := range snap.Nodes {
		if n.Slots > 0 {
			snap.Masters++
		}
	}
	snap.KnownNodes = len(snap.Nodes)
	slices.SortFunc(snap.Nodes, func(a, b Node) int {
		if c := cmp.Compare(a.Addr, b.Addr); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return snap, nil
}

// mergedNodeEntry is the snapshot's entry for one member, from its merged
// line and, when it was reachable, its own view. Slots and replica counts
// are filled later, from the other members.
func mergedNodeEntry(id string, m *mergedNode) Node {
	line := m.line()
	n := Node{
		ID:            id,
		Addr:          m.addr(),
		MasterID:      line.MasterID,
		ConfigEpoch:   line.ConfigEpoch,
		Role:          RoleMaster,
		LinkConnected: true,
	}
	if line.Flags.Replica {
		n.Role = RoleReplica
	}
	if m.other != nil {
		// Link state is per observer; a node's own line always says connected.
		n.LinkConnected = m.other.LinkConnected
	}
	switch {
	case m.failSeen:
		n.State = NodeStateFail
	case m.pfailSeen:
		n.State = NodeStatePFail
	case m.noaddrSeen || line.Flags.NoAddr:
		n.State = NodeStateNoAddr
	case m.handshakeSeen || line.Flags.Handshake:
		n.State = NodeStateHandshake
	default:
		n.State = NodeStateOK
	}
	if v := m.view; v != nil {
		n.Reachable = true
		n.ClusterStateOK = v.Info.StateOK
		n.MigratingSlots = len(m.own.Migrating)
		n.ImportingSlots = len(m.own.Importing)
		n.MasterLinkUp = !v.Replication.IsMaster && v.Replication.MasterLinkUp
		n.Keys = v.Keys
		n.MemoryUsed = v.UsedMemory
		n.Zone = v.Zone
		if v.MigrationsRead {
			n.Migrations = &NodeMigrations{Jobs: v.Migrations}
		}
	}
	return n
}

// linkReplicas counts each master's healthy replicas and reads each
// replica's replication lag from its master's view: both need the
// master's entry.
func linkReplicas(snap *Snapshot, index map[string]int, merged map[string]*mergedNode) {
	for i := range snap.Nodes {
		r := &snap.Nodes[i]
		if r.Role != RoleReplica || r.MasterID == "" {
			continue
		}
		mi, ok := index[r.MasterID]
		if !ok {
			continue
		}
		master := &snap.Nodes[mi]
		if r.IsHealthyReplica() {
			master.HealthyReplicas++
		}
		mv := merged[r.MasterID].view
		if mv == nil || !mv.Replication.IsMaster || r.Addr == "" {
			continue
		}
		for _, ro := range mv.Replication.Replicas {
			if ro.Addr == r.Addr {
				r.HasReplicationLag = true
				r.ReplicationLagBytes = max(mv.Replication.MasterReplOffset-ro.Offset, 0)
				break
			}
		}
	}
}

// countSlotStates counts the slots by their owner's state, and those
// whose owner has no healthy replica.
func countSlotStates(snap *Snapshot, index map[string]int, owners *[redisproto.SlotCount]string) {
	for _, owner := range owners {
		if owner == "" {
			snap.SlotsUnassigned++
			continue
		}
		master := &snap.Nodes[index[owner]]
		switch master.State {
		case NodeStateFail:
			snap.SlotsFail++
		case NodeStatePFail:
			snap.SlotsPFail++
		default:
			snap.SlotsOK++
		}
		if master.HealthyReplicas == 0 {
			snap.SlotsWithoutReplica++
		}
	}
}

// servesSlots reports whether the view is a master's that owns slots by its
// own line: one of the masters whose views decide the cluster-wide verdicts.
func servesSlots(v nodeView) bool {
	self := v.self()
	return self != nil && self.Flags.Master && self.SlotCount() > 0
}

// cmpBool orders false before true.
func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	default:
		return -1
	}
}

// dedupeViews keeps one view per node: a node reached under two addresses
// (a seed hostname and its IP) must not be counted twice. Views without a
// myself line are dropped; they cannot be attributed to a node.
func dedupeViews(views []nodeView) []nodeView {
	seen := map[string]bool{}
	out := make([]nodeView, 0, len(views))
	for _, v := range views {
		self := v.self()
		if self == nil || seen[self.ID] {
			continue
		}
		seen[self.ID] = true
		out = append(out, v)
	}
	return out
}

// mergeSlotOwners returns the owner of every slot and the slots on which
// the views disagree. Where they disagree the claim with the highest config
// epoch wins, which is the rule Redis Cluster itself uses to settle
// conflicts; views are ranked so that equal epochs go to the most up-to-date
// view. Whether a disagreement is a conflict is for settleDisputes.
func mergeSlotOwners(views []nodeView, members map[string]bool) (owners *[redisproto.SlotCount]string, disputed []int) {
	// On the heap, not the stack: the per-slot tables are over 400 KB, and
	// a goroutine stack grown to hold them stays grown (and is copied on
	// every growth) for no other use.
	owners = new([redisproto.SlotCount]string)
	epochs := make([]uint64, redisproto.SlotCount)
	claimed := make([]bool, redisproto.SlotCount)
	// Claims in line order (for painting) and sorted (for comparing).
	var first, current, firstSorted, currentSorted []ownedRange
	var firstOwners, currentOwners *[redisproto.SlotCount]string // only when views differ
	var differs []bool
	for vi := range views {
		current = appendClaims(current[:0], &views[vi], members)
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
			firstOwners, currentOwners = paintClaims(new([redisproto.SlotCount]string), first), new([redisproto.SlotCount]string)
			differs = make([]bool, redisproto.SlotCount)
		}
		*currentOwners = [redisproto.SlotCount]string{}
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
func appendClaims(claims []ownedRange, v *nodeView, members map[string]bool) []ownedRange {
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
func paintClaims(owners *[redisproto.SlotCount]string, claims []ownedRange) *[redisproto.SlotCount]string {
	for _, c := range claims {
		for slot := c.First; slot <= c.Last; slot++ {
			owners[slot] = c.ID
		}
	}
	return owners
}

// clusterStateOK is false as soon as one reachable master that serves slots
// reports cluster_state:fail. An empty master's state is its own (see
// mergeViews); replicas and empty masters only decide when no slot-serving
// master was reached.
func clusterStateOK(snap *Snapshot, merged map[string]*mergedNode) bool {
	reachedMaster := false
	for _, n := range snap.Nodes {
		if n.Role != RoleMaster || !n.Reachable || n.Slots == 0 {
			continue
		}
		reachedMaster = true
		if !merged[n.ID].view.Info.StateOK {
			return false
		}
	}
	if reachedMaster {
		return true
	}
	for _, n := range snap.Nodes {
		if n.Reachable && !merged[n.ID].view.Info.StateOK {
			return false
		}
	}
	return true
}

// slotRanges turns the slot map into runs of consecutive slots with the
// same owner ("" for unassigned), in slot order.
func slotRanges(owners *[redisproto.SlotCount]string) []SlotRange {
	var runs []SlotRange
	for slot, owner := range owners {
		if n := len(runs); n > 0 && runs[n-1].Owner == owner {
			runs[n-1].Last = slot
			continue
		}
		runs = append(runs, SlotRange{First: slot, Last: slot, Owner: owner})
	}
	return runs
}
