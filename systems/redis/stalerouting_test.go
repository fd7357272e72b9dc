package redis

import (
	"strings"
	"testing"
	"time"
)

// staleStep is one refresh of a two-node shard: A the old master, B its
// replica, promoted at the second step.
func staleStep(at time.Time, aRole Role, aSlots int, aRead bool, moved uint64) *Snapshot {
	a := Node{ID: "a", Addr: "127.0.0.1:7000", Role: aRole, Slots: aSlots, Reachable: aRead, State: NodeStateOK}
	if !aRead {
		a.State = NodeStateFail
	}
	if aRead {
		a.ErrorReplies = map[string]uint64{"MOVED": moved}
	}
	b := Node{ID: "b", Addr: "127.0.0.1:7001", Role: RoleReplica, MasterID: "a", Reachable: true}
	if aSlots == 0 {
		b.Role, b.MasterID, b.Slots = RoleMaster, "", 16384
	}
	return &Snapshot{ReadAt: at, Nodes: []Node{a, b}}
}

// A master killed, its replica promoted, the master back as a replica and
// taking misrouted writes for a while: the episode runs from the
// promotion to the last refresh that saw its MOVED count grow, counts
// what grew after the restart (the counters start again), and ends once
// the node was quiet for staleRoutingQuiet while read.
func TestStaleRoutingAfterAFailover(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 6, 0, 0, 0, time.UTC)
	steps := []*Snapshot{
		staleStep(t0, RoleMaster, 16384, true, 2),                                   // 2 MOVED from long ago
		staleStep(t0.Add(time.Second), RoleMaster, 0, false, 0),                     // killed, B promoted
		staleStep(t0.Add(5*time.Second), RoleReplica, 0, true, 0),                   // back, counters from 0
		staleStep(t0.Add(6*time.Second), RoleReplica, 0, true, 4),                   // 4 misrouted
		staleStep(t0.Add(7*time.Second), RoleReplica, 0, true, 9),                   // 5 more
		staleStep(t0.Add(30*time.Second), RoleReplica, 0, true, 9),                  // quiet
		staleStep(t0.Add(7*time.Second+staleRoutingQuiet), RoleReplica, 0, true, 9), // quiet a minute
	}
	// The refresh that sees the count grow lists the node's clients.
	steps[3].Nodes[0].Clients = &ClientLibraries{Libraries: []ClientLibrary{{Name: "naive", Version: "1.0", Connections: 1}}}
	var prev *Snapshot
	for i, next := range steps {
		carryStaleRouting(prev, next)
		w := next.StaleRouting["a"]
		switch i {
		case 0:
			if w != nil {
				t.Errorf("step 0: watching %+v before any demotion", w)
			}
		case 1, 2:
			if w == nil || w.Open() || w.DemotedAt != steps[1].ReadAt {
				t.Errorf("step %d: %+v, want watched since the promotion, no episode", i, w)
			}
		case 3, 4, 5:
			wantN, wantLast := uint64(4), steps[3].ReadAt
			if i > 3 {
				wantN, wantLast = 9, steps[4].ReadAt
			}
			if w == nil || !w.Open() || w.Redirections != wantN || w.LastRedirectionAt != wantLast {
				t.Errorf("step %d: %+v, want %d redirections, the last at %s", i, w, wantN, wantLast)
			}
		case 6:
			if w != nil {
				t.Errorf("step 6: still watched after a quiet minute: %+v", w)
			}
			if h := next.StaleRoutingSeconds; h.Count != 1 || h.Sum != 6 {
				t.Errorf("step 6: histogram count %d sum %v, want one episode of 6 s (promotion to the last redirection)", h.Count, h.Sum)
			}
		}
		prev = next
	}
	var kinds []string
	for _, s := range steps {
		for _, ev := range s.Events.All() {
			kinds = append(kinds, string(ev.Kind)+": "+ev.After)
		}
	}
	if len(kinds) != 2 || !strings.HasPrefix(kinds[0], "stale_routing_started: clients still routing to the demoted node: 4 MOVED or READONLY replies, 5s after") ||
		!strings.HasSuffix(kinds[0], "; connected: naive 1.0 (1)") ||
		!strings.HasPrefix(kinds[1], "stale_routing_ended: none since 6s after the promotion") {
		t.Errorf("events %q", kinds)
	}
}

// A demoted master no client reaches any more is watched for a quiet
// minute of reads and forgotten without an episode; one not read does not
// run the quiet window down.
func TestStaleRoutingWithoutClients(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 6, 0, 0, 0, time.UTC)
	prev := staleStep(t0, RoleMaster, 16384, true, 0)
	carryStaleRouting(nil, prev)
	next := staleStep(t0.Add(time.Second), RoleMaster, 0, false, 0)
	carryStaleRouting(prev, next)
	prev, next = next, staleStep(t0.Add(2*staleRoutingQuiet), RoleMaster, 0, false, 0)
	carryStaleRouting(prev, next)
	if next.StaleRouting["a"] == nil {
		t.Fatalf("a node down for two minutes after its demotion was forgotten: its clients cannot have reached it yet")
	}
	prev, next = next, staleStep(t0.Add(3*staleRoutingQuiet), RoleReplica, 0, true, 0)
	carryStaleRouting(prev, next)
	prev, next = next, staleStep(t0.Add(4*staleRoutingQuiet), RoleReplica, 0, true, 0)
	carryStaleRouting(prev, next)
	if next.StaleRouting != nil || next.StaleRoutingSeconds.Count != 0 || len(next.Events.All()) != 0 {
		t.Errorf("quiet a minute while read: %v, %d observed, %v; want forgotten, nothing observed", next.StaleRouting, next.StaleRoutingSeconds.Count, next.Events.All())
	}
}

// A healthy master whose slots were all resharded away is not demoted: its
// MOVED replies are how clients learn of a reshard.
func TestStaleRoutingNotAfterAReshard(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 6, 0, 0, 0, time.UTC)
	prev := staleStep(t0, RoleMaster, 16384, true, 0)
	carryStaleRouting(nil, prev)
	next := staleStep(t0.Add(time.Second), RoleMaster, 0, true, 5)
	carryStaleRouting(prev, next)
	if next.StaleRouting != nil {
		t.Errorf("an emptied healthy master is watched as demoted: %+v", next.StaleRouting["a"])
	}
}
