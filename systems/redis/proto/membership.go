package redisproto

import (
	"cmp"
	"slices"
)

// Membership: which of the nodes that answered belong to the cluster.
//
// The exporter reaches every address any node mentions, and a node answers
// for itself whether or not the cluster still counts it: a replica removed
// with CLUSTER FORGET keeps listing the others, a node after CLUSTER RESET
// SOFT lists only itself, a seed address may serve another cluster. Redis
// Cluster decides such questions by the majority of the masters that serve
// slots (failure reports, failover votes), so the exporter does the same: a
// node is a member when a majority of those masters list it, and, if the
// exporter reached it, when it lists a majority of them in turn. Everything
// else that answered is reported apart as a foreign node and is kept out of
// every member metric.

// ForeignReason says why a node that answered is not a member.
type ForeignReason string

const (
	// ForeignNotListed: the majority of the cluster's slot-serving masters
	// do not list the node (it was forgotten, or never met).
	ForeignNotListed ForeignReason = "not_listed"
	// ForeignNotListing: the cluster lists the node, but the node does not
	// list the majority of the cluster's masters (it was reset, or belongs
	// to another cluster that shares a seed).
	ForeignNotListing ForeignReason = "not_listing_cluster"
)

// Foreign is a node that answered but is not a member: its address as
// dialled (a node that never learnt its own address still has one), its own
// line and why it is not a member.
type Foreign struct {
	Addr   string
	Self   NodeLine
	Reason ForeignReason
	// KnownNodes is how many nodes the node's own CLUSTER NODES lists.
	KnownNodes int
}

// membership is the outcome of decideMembership: the member views (by
// index into the views given), every member id, reached or not, and the
// foreign nodes.
type membership struct {
	views   []int
	members map[string]bool
	foreign []Foreign
}

// decideMembership splits the views into members and foreign nodes. Views
// must be deduplicated (one per node id).
func decideMembership(views []*View) membership {
	// The ids each view lists, by the view's address (one view per node).
	listed := make(map[string]map[string]bool, len(views))
	for _, v := range views {
		ids := make(map[string]bool, len(v.Nodes))
		for _, line := range v.Nodes {
			ids[line.ID] = true
		}
		listed[v.Addr] = ids
	}
	lists := func(v *View, id string) bool { return listed[v.Addr][id] }

	voters := chooseVoters(views, lists)
	quorum := len(voters)/2 + 1
	listedBy := map[string]int{}
	voterIDs := make([]string, 0, len(voters))
	for _, v := range voters {
		voterIDs = append(voterIDs, v.Self().ID)
		for _, line := range v.Nodes {
			listedBy[line.ID]++
		}
	}

	m := membership{members: map[string]bool{}}
	for id, n := range listedBy {
		if n >= quorum {
			m.members[id] = true
		}
	}
	for i, v := range views {
		self := v.Self()
		reason := ForeignReason("")
		switch {
		case !m.members[self.ID]:
			reason = ForeignNotListed
		case countListed(v, voterIDs, lists) < quorum:
			reason = ForeignNotListing
			delete(m.members, self.ID)
		}
		if reason == "" {
			m.views = append(m.views, i)
			continue
		}
		m.foreign = append(m.foreign, Foreign{Addr: v.Addr, Self: *self, Reason: reason, KnownNodes: len(v.Nodes)})
	}
	slices.SortFunc(m.foreign, func(a, b Foreign) int {
		return cmp.Or(cmp.Compare(a.Addr, b.Addr), cmp.Compare(a.Self.ID, b.Self.ID))
	})
	return m
}

// chooseVoters returns the views of the masters whose majority decides
// membership: the reached nodes whose own line says they serve slots. Masters
// that know each other form one cluster; if several clusters answered (a
// foreign one on a seed address), the one with the most slot-serving masters
// reached is this exporter's cluster, ties going to the one with the lowest
// address. With no slot-serving master reached (all down, or slots not yet
// assigned) every reached node votes, by the same grouping.
func chooseVoters(views []*View, lists func(*View, string) bool) []*View {
	var candidates []*View
	for _, v := range views {
		if self := v.Self(); self.Flags.Master && self.SlotCount() > 0 {
			candidates = append(candidates, v)
		}
	}
	if len(candidates) == 0 {
		candidates = views
	}

	// Union the candidates that list each other.
	group := make([]int, len(candidates))
	for i := range group {
		group[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		if group[i] != i {
			group[i] = find(group[i])
		}
		return group[i]
	}
	for i := range candidates {
		for j := i + 1; j < len(candidates); j++ {
			if lists(candidates[i], candidates[j].Self().ID) && lists(candidates[j], candidates[i].Self().ID) {
				group[find(i)] = find(j)
			}
		}
	}
	size := map[int]int{}
	lowest := map[int]string{}
	for i, v := range candidates {
		g := find(i)
		size[g]++
		if l, ok := lowest[g]; !ok || v.Addr < l {
			lowest[g] = v.Addr
		}
	}
	best := -1
	for g := range size {
		if best < 0 || size[g] > size[best] || (size[g] == size[best] && lowest[g] < lowest[best]) {
			best = g
		}
	}
	var voters []*View
	for i, v := range candidates {
		if find(i) == best {
			voters = append(voters, v)
		}
	}
	return voters
}

// countListed counts the ids the view lists.
func countListed(v *View, ids []string, lists func(*View, string) bool) int {
	n := 0
	for _, id := range ids {
		if lists(v, id) {
			n++
		}
	}
	return n
}
