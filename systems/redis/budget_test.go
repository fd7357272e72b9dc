package redis

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/failover-exporter/failover_exporter/collector/budget"
	"github.com/failover-exporter/failover_exporter/collector/exposition"
	"github.com/failover-exporter/failover_exporter/collector/watch/watchtest"
	"github.com/failover-exporter/failover_exporter/systems/redis/proto"
	"github.com/failover-exporter/failover_exporter/systems/redis/settings"
)

// bnode is one node of a hand-built budget topology.
type bnode struct {
	id, addr, master string // master: a replica's master id; "" for a master
	first, last      int    // a master's slots; last < first for none
	state            NodeState
	linkDown         bool // a replica's master link
	lag              int64
	lagUnknown       bool
	zone             string
	// unread: the exporter did not read the node this refresh (the
	// cluster still calls it ok).
	unread               bool
	migrating, importing []redisproto.SlotMove
	jobs                 []SlotMigration
	// syncing: a replica in a full sync (its link down); noResume: a
	// replica whose acknowledged offset is no longer in its master's
	// backlog.
	syncing, noResume bool
}

// budgetSnapshot builds a snapshot as buildSnapshot would fill the fields
// the budget reads: slot counts and ranges, healthy replicas, masters,
// the slots' states, and cluster_state from the masters' states.
func budgetSnapshot(nodes ...bnode) *Snapshot {
	s := &Snapshot{StateOK: true}
	owners := new([redisproto.SlotCount]string)
	index := map[string]int{}
	for _, b := range nodes {
		n := Node{ID: b.id, Addr: b.addr, State: b.state, LinkConnected: true, Reachable: b.state == NodeStateOK, Zone: b.zone}
		if n.State == "" {
			n.State, n.Reachable = NodeStateOK, true
		}
		if b.unread {
			n.Reachable = false
		}
		n.Migrating, n.Importing = b.migrating, b.importing
		if b.jobs != nil {
			n.Migrations = &NodeMigrations{Jobs: b.jobs}
		}
		if b.master == "" {
			n.Role = RoleMaster
			for slot := b.first; slot <= b.last; slot++ {
				owners[slot] = b.id
				n.Slots++
			}
		} else {
			n.Role, n.MasterID = RoleReplica, b.master
			n.MasterLinkUp = !b.linkDown
			n.HasReplicationLag, n.ReplicationLagBytes = !b.lagUnknown, b.lag
			// Both come from the master's INFO: its replica's offset.
			n.HasPartialResync, n.PartialResync = !b.lagUnknown, !b.noResume
			if b.syncing {
				n.MasterLinkUp, n.Sync = false, replicaSync{InProgress: true, ReadBytes: 1000, TotalBytes: 4000}
			}
		}
		index[b.id] = len(s.Nodes)
		s.Nodes = append(s.Nodes, n)
	}
	for i := range s.Nodes {
		// A master not read: its replicas' offsets in it are unknown.
		if r := &s.Nodes[i]; r.Role == RoleReplica && !s.Nodes[index[r.MasterID]].Reachable {
			r.HasReplicationLag, r.HasPartialResync = false, false
		}
		if r := &s.Nodes[i]; r.IsHealthyReplica() {
			s.Nodes[index[r.MasterID]].HealthyReplicas++
		}
	}
	for _, owner := range owners {
		switch {
		case owner == "":
			s.SlotsUnassigned++
		case s.Nodes[index[owner]].State == NodeStateFail:
			s.SlotsFail++
		case s.Nodes[index[owner]].State == NodeStatePFail:
			s.SlotsPFail++
		default:
			s.SlotsOK++
		}
	}
	s.StateOK = s.SlotsFail+s.SlotsUnassigned == 0
	for _, n := range s.Nodes {
		if n.Slots > 0 {
			s.Masters++
		}
	}
	s.KnownNodes = len(s.Nodes)
	s.SlotRanges = slotRanges(owners)
	return s
}

// threeShards is three masters with one caught-up replica each.
func threeShards() []bnode {
	return []bnode{
		{id: "A", addr: "10.0.0.1:7000", first: 0, last: 5460, zone: "z1"},
		{id: "B", addr: "10.0.0.2:7001", first: 5461, last: 10922, zone: "z2"},
		{id: "C", addr: "10.0.0.3:7002", first: 10923, last: 16383, zone: "z3"},
		{id: "D", addr: "10.0.0.2:7003", master: "A", lag: 100, zone: "z2"},
		{id: "E", addr: "10.0.0.3:7004", master: "B", lag: 0, zone: "z3"},
		{id: "F", addr: "10.0.0.1:7005", master: "C", lag: 5, zone: "z1"},
	}
}

// resharding is threeShards with an empty master H (zone z9) importing
// slots 100 and 101 from A, which has them migrating: a classic reshard
// in progress.
func resharding() []bnode {
	nodes := with(threeShards(), "A", func(n *bnode) {
		n.migrating = []redisproto.SlotMove{{Slot: 100, NodeID: "H"}, {Slot: 101, NodeID: "H"}}
	})
	return append(nodes, bnode{id: "H", addr: "10.0.0.9:7009", first: 1, last: 0, zone: "z9",
		importing: []redisproto.SlotMove{{Slot: 100, NodeID: "A"}, {Slot: 101, NodeID: "A"}}})
}

// with returns nodes with the node of id changed by f.
func with(nodes []bnode, id string, f func(*bnode)) []bnode {
	for i := range nodes {
		if nodes[i].id == id {
			f(&nodes[i])
		}
	}
	return nodes
}

func ask(t *testing.T, snap *Snapshot, q budget.Question) budget.Answer {
	t.Helper()
	a, err := answerBudget(snap, q)
	if err != nil {
		t.Fatalf("%+v: %v", q, err)
	}
	return a
}

func reasons(a budget.Answer) string {
	var rs []string
	for _, f := range a.Findings {
		rs = append(rs, string(f.Reason))
	}
	return strings.Join(rs, ",")
}

var failoverAdvice = regexp.MustCompile(`^fail over to replica \S+ \((\S+)\) first`)

// A stop whose resync the exporter cannot judge says so: the replica's
// offset in its master's backlog was not read, so a full sync on its
// return is not ruled out, and the answer is not "safe".
func TestBudgetResyncNotJudged(t *testing.T) {
	snap := budgetSnapshot(with(threeShards(), "D", func(n *bnode) { n.lagUnknown = true })...)
	snap.FailureBudget = assessBudget(snap, settings.Budget{}, 2*time.Second)
	a := ask(t, snap, budget.Question{Scope: ScopeNode, ID: "D"})
	if a.Safe || len(a.Findings) != 1 || !strings.HasPrefix(a.Findings[0].Message, "not judged: ") || !strings.Contains(a.Findings[0].Message, "whether 10.0.0.2:7003 (master 10.0.0.1:7000) could resume") {
		t.Errorf("stopping D, its resume unread: %+v", a)
	}
}

func TestBudgetStop(t *testing.T) {
	cases := []struct {
		name     string
		nodes    []bnode
		cfg      settings.Budget
		scope    budget.Scope
		id       string
		safe     bool
		reasons  string
		failover int // unserved_slots_failover
		never    int // unserved_slots_never
		atRisk   string
		advice   string // a part the advice must contain
		loss     float64
		hasLoss  bool
		// tolerated is redis_cluster_master_losses_tolerated.
		tolerated int
	}{
		{name: "master with a caught-up replica: fail over first", nodes: threeShards(), scope: ScopeNode, id: "A",
			reasons: "serves_slots", failover: 5461, atRisk: "0-5460",
			advice: "fail over to replica D (10.0.0.2:7003) first: redis-cli -h 10.0.0.2 -p 7003 CLUSTER FAILOVER", loss: 100, hasLoss: true, tolerated: 1},
		{name: "by address", nodes: threeShards(), scope: ScopeNode, id: "10.0.0.2:7001",
			reasons: "serves_slots", failover: 5462, atRisk: "5461-10922", advice: "replica E (10.0.0.3:7004)", hasLoss: true, tolerated: 1},
		{name: "a replica is safe", nodes: threeShards(), scope: ScopeNode, id: "D", safe: true, tolerated: 1},
		{name: "a replica in a full sync: its own stop waits for the sync",
			nodes: with(threeShards(), "D", func(n *bnode) { n.syncing = true }), scope: ScopeNode, id: "D",
			reasons: "shard_syncing", tolerated: 1},
		{name: "another replica of a shard in a full sync waits too; the master names the sync",
			nodes: append(with(threeShards(), "D", func(n *bnode) { n.syncing = true }), bnode{id: "G", addr: "10.0.0.3:7006", master: "A"}), scope: ScopeNode, id: "G",
			reasons: "shard_syncing", tolerated: 1},
		{name: "a replica in a full sync: allowed by allow_resync_stops",
			nodes: with(threeShards(), "D", func(n *bnode) { n.syncing = true }), cfg: settings.Budget{AllowResyncStops: true}, scope: ScopeNode, id: "D",
			safe: true, tolerated: 1},
		{name: "the master of a shard in a full sync: no healthy replica, and the advice names the sync",
			nodes: with(threeShards(), "D", func(n *bnode) { n.syncing = true }), scope: ScopeNode, id: "A",
			reasons: "serves_slots,no_healthy_replica", never: 5461, atRisk: "0-5460", advice: "its replica 10.0.0.2:7003 is in a full sync, 1000 of 4000 bytes read", tolerated: 1},
		{name: "a replica outside its master's backlog would come back to a full sync",
			nodes: with(threeShards(), "D", func(n *bnode) { n.noResume = true }), scope: ScopeNode, id: "D",
			reasons: "full_sync_on_return", tolerated: 1},
		{name: "a replica outside its master's backlog: allowed by allow_resync_stops",
			nodes: with(threeShards(), "D", func(n *bnode) { n.noResume = true }), cfg: settings.Budget{AllowResyncStops: true}, scope: ScopeNode, id: "D",
			safe: true, tolerated: 1},
		{name: "a replica its master does not list (its backlog unread): a full sync on its return is not ruled out",
			nodes: with(threeShards(), "D", func(n *bnode) { n.lagUnknown = true }), scope: ScopeNode, id: "D",
			reasons: "full_sync_on_return", tolerated: 1},
		{name: "a replica whose resume is not judged: allowed by allow_resync_stops",
			nodes: with(threeShards(), "D", func(n *bnode) { n.lagUnknown = true }), cfg: settings.Budget{AllowResyncStops: true}, scope: ScopeNode, id: "D",
			safe: true, tolerated: 1},
		{name: "master whose replica failed: its slots unserved for good",
			nodes: with(threeShards(), "D", func(n *bnode) { n.state = NodeStateFail }), scope: ScopeNode, id: "A",
			reasons: "serves_slots,no_healthy_replica", never: 5461, atRisk: "0-5460", advice: "master 10.0.0.1:7000 has no healthy replica to fail over to", tolerated: 1},
		{name: "replica whose master link is down does not protect",
			nodes: with(threeShards(), "D", func(n *bnode) { n.linkDown = true }), scope: ScopeNode, id: "A",
			reasons: "serves_slots,no_healthy_replica", never: 5461, atRisk: "0-5460", tolerated: 1},
		{name: "lagging replica: promoted all the same, losing its lag; not advised as caught up",
			nodes: with(threeShards(), "D", func(n *bnode) { n.lag = 10 << 20 }), scope: ScopeNode, id: "A",
			reasons: "serves_slots", failover: 5461, atRisk: "0-5460", advice: "no replica of 10.0.0.1:7000 is caught up (within 1048576 bytes): the best, D (10.0.0.2:7003), it is 10485760 bytes behind",
			loss: 10 << 20, hasLoss: true, tolerated: 1},
		{name: "caught_up_bytes raised: the lagging replica is caught up",
			nodes: with(threeShards(), "D", func(n *bnode) { n.lag = 10 << 20 }), cfg: settings.Budget{CaughtUpBytes: ptr(int64(20 << 20))}, scope: ScopeNode, id: "A",
			reasons: "serves_slots", failover: 5461, atRisk: "0-5460", advice: "fail over to replica D", loss: 10 << 20, hasLoss: true, tolerated: 1},
		{name: "the best of two replicas is advised",
			nodes: append(threeShards(), bnode{id: "G", addr: "10.0.0.3:7006", master: "A", lag: 7}), scope: ScopeNode, id: "A",
			reasons: "serves_slots", failover: 5461, atRisk: "0-5460", advice: "replica G (10.0.0.3:7006)", loss: 7, hasLoss: true, tolerated: 1},
		{name: "last healthy replica without headroom: safe", nodes: threeShards(), scope: ScopeNode, id: "E", safe: true, tolerated: 1},
		{name: "last healthy replica with headroom", nodes: threeShards(), cfg: settings.Budget{HealthyReplicaHeadroom: true}, scope: ScopeNode, id: "E",
			reasons: "last_healthy_replica", atRisk: "5461-10922", tolerated: 1},
		{name: "one of two healthy replicas with headroom: safe",
			nodes: append(threeShards(), bnode{id: "G", addr: "10.0.0.1:7006", master: "B"}), cfg: settings.Budget{HealthyReplicaHeadroom: true}, scope: ScopeNode, id: "E",
			safe: true, tolerated: 1},
		{name: "an empty master is safe", nodes: append(threeShards(), bnode{id: "H", addr: "10.0.0.9:7009", first: 1, last: 0}), scope: ScopeNode, id: "H",
			safe: true, tolerated: 1},
		{name: "two masters: a stop breaks the majority, even with a replica",
			nodes: []bnode{
				{id: "A", addr: "10.0.0.1:7000", first: 0, last: 8191},
				{id: "B", addr: "10.0.0.2:7001", first: 8192, last: 16383},
				{id: "D", addr: "10.0.0.2:7003", master: "A"},
			}, scope: ScopeNode, id: "A",
			reasons: "masters_majority,serves_slots", never: 8192, atRisk: "0-8191", advice: "fail over to replica D", hasLoss: true, tolerated: 0},
		{name: "a failed master: the cluster is degraded, and the next master's stop breaks the majority",
			nodes: with(threeShards(), "C", func(n *bnode) { n.state = NodeStateFail }), scope: ScopeNode, id: "B",
			reasons: "cluster_degraded,masters_majority,serves_slots", never: 5462, atRisk: "5461-10922", advice: "replica E", hasLoss: true, tolerated: 0},
		{name: "degraded: even a replica is unsafe",
			nodes: with(threeShards(), "C", func(n *bnode) { n.state = NodeStatePFail }), scope: ScopeNode, id: "D",
			reasons: "cluster_degraded", tolerated: 0},
		{name: "zone of one master with its replica elsewhere", nodes: threeShards(), scope: ScopeZone, id: "z3",
			reasons: "serves_slots", failover: 5461, atRisk: "10923-16383", advice: "fail over to replica F (10.0.0.1:7005)", hasLoss: true, tolerated: 1},
		{name: "zone holding a master and its replica",
			nodes: with(threeShards(), "D", func(n *bnode) { n.zone = "z1" }), scope: ScopeZone, id: "z1",
			reasons: "serves_slots,no_healthy_replica", never: 5461, atRisk: "0-5460", tolerated: 1},
		{name: "zone holding two of three masters breaks the majority",
			nodes: with(with(threeShards(), "B", func(n *bnode) { n.zone = "z1" }), "D", func(n *bnode) { n.zone = "z3" }), scope: ScopeZone, id: "z1",
			reasons: "masters_majority,serves_slots", never: 10923, atRisk: "0-5460,5461-10922", hasLoss: true, tolerated: 1},
		{name: "zone of replicas only with headroom",
			nodes: with(with(threeShards(), "F", func(n *bnode) { n.zone = "z9" }), "D", func(n *bnode) { n.zone = "z9" }),
			cfg:   settings.Budget{HealthyReplicaHeadroom: true}, scope: ScopeZone, id: "z9",
			reasons: "last_healthy_replica", atRisk: "0-5460,10923-16383", tolerated: 1},
		{name: "configured zones override availability_zone",
			nodes: threeShards(), cfg: settings.Budget{Zones: map[string]string{"10.0.0.2:7003": "z1"}}, scope: ScopeZone, id: "z1",
			reasons: "serves_slots,no_healthy_replica", never: 5461, atRisk: "0-5460", tolerated: 1},

		// Slot migrations in progress (issue 42, item 1).
		{name: "an empty master importing a slot is not safe", nodes: resharding(), scope: ScopeNode, id: "H",
			reasons: "slot_migration", atRisk: "100-101", advice: "finish the slot migration first", tolerated: 1},
		{name: "the migrating source: its slots and the move; no failover_to before the move ends", nodes: resharding(), scope: ScopeNode, id: "A",
			reasons: "serves_slots,slot_migration", failover: 5461, atRisk: "0-5460",
			advice: "finish the slot migration first: MIGRATE the slot's remaining keys, then CLUSTER SETSLOT <slot> NODE <target id> on the target and the source (redis-cli --cluster fix finishes a stuck one); fail over to replica D", loss: 100, hasLoss: true, tolerated: 1},
		{name: "the importing end alone reports the move (the source unread)",
			nodes: with(with(resharding(), "A", func(n *bnode) { n.migrating = nil }), "H", func(n *bnode) { n.importing = n.importing[:1] }), scope: ScopeNode, id: "H",
			reasons: "slot_migration", atRisk: "100-100", tolerated: 1},
		{name: "the migrating end alone reports the move (the target unread)",
			nodes: with(resharding(), "H", func(n *bnode) { n.importing, n.unread = nil, true }), scope: ScopeNode, id: "H",
			reasons: "slot_migration", atRisk: "100-101", tolerated: 1},
		{name: "a replica of the source is safe", nodes: resharding(), scope: ScopeNode, id: "D", safe: true, tolerated: 1},
		{name: "a zone holding the importing master", nodes: resharding(), scope: ScopeZone, id: "z9",
			reasons: "slot_migration", atRisk: "100-101", tolerated: 1},
		{name: "an atomic slot migration job's target",
			nodes: append(threeShards(), bnode{id: "H", addr: "10.0.0.9:7009", first: 1, last: 0, jobs: []SlotMigration{
				{Name: "job1", Operation: MigrationImport, Slots: []SlotSpan{{200, 300}}, Source: "B", Target: "H", State: "snapshotting"},
				{Name: "old", Operation: MigrationImport, Slots: []SlotSpan{{400, 500}}, Source: "B", Target: "H", State: "success", Outcome: MigrationSuccess},
			}}), scope: ScopeNode, id: "H",
			reasons: "slot_migration", atRisk: "200-300", advice: "let the atomic slot migration end first", tolerated: 1},

		// Replicas the exporter did not read (issue 42, item 5).
		{name: "a master whose only replica is unread: not judged, so no healthy replica",
			nodes: with(threeShards(), "D", func(n *bnode) { n.unread = true }), scope: ScopeNode, id: "A",
			reasons: "serves_slots,no_healthy_replica", never: 5461, atRisk: "0-5460", advice: "master 10.0.0.1:7000 has no healthy replica to fail over to", tolerated: 1},
		{name: "an unread replica is never advised, however caught up",
			nodes: append(threeShards(), bnode{id: "G", addr: "10.0.0.3:7006", master: "A", lag: 0, unread: true}), scope: ScopeNode, id: "A",
			reasons: "serves_slots", failover: 5461, atRisk: "0-5460", advice: "fail over to replica D (10.0.0.2:7003)", loss: 100, hasLoss: true, tolerated: 1},
		{name: "headroom: the other replica unread, so this one is the last",
			nodes: append(threeShards(), bnode{id: "G", addr: "10.0.0.1:7006", master: "B", unread: true}), cfg: settings.Budget{HealthyReplicaHeadroom: true}, scope: ScopeNode, id: "E",
			reasons: "last_healthy_replica", atRisk: "5461-10922", tolerated: 1},
		{name: "the replica of a master the exporter did not read: not judged",
			nodes: with(threeShards(), "A", func(n *bnode) { n.unread = true }), scope: ScopeNode, id: "D",
			reasons: "master_not_read", atRisk: "0-5460", tolerated: 1},
		{name: "a master unread: its replica's resume from the backlog is not judged while another read one stays",
			nodes: append(with(threeShards(), "A", func(n *bnode) { n.unread = true }), bnode{id: "G", addr: "10.0.0.3:7006", master: "A"}), scope: ScopeNode, id: "D",
			reasons: "full_sync_on_return", tolerated: 1},
		{name: "a master unread: its replica is safe while another read one stays, with allow_resync_stops",
			nodes: append(with(threeShards(), "A", func(n *bnode) { n.unread = true }), bnode{id: "G", addr: "10.0.0.3:7006", master: "A"}), cfg: settings.Budget{AllowResyncStops: true}, scope: ScopeNode, id: "D",
			safe: true, tolerated: 1},
		{name: "a master unread: a zone holding both its replicas is not judged",
			nodes: append(with(threeShards(), "A", func(n *bnode) { n.unread = true }), bnode{id: "G", addr: "10.0.0.3:7006", master: "A", zone: "z2"}), scope: ScopeZone, id: "z2",
			reasons: "serves_slots,master_not_read", failover: 5462, atRisk: "0-5460,5461-10922", advice: "replica E", hasLoss: true, tolerated: 1},
		{name: "another master unread: a replica elsewhere is judged as before",
			nodes: with(threeShards(), "A", func(n *bnode) { n.unread = true }), scope: ScopeNode, id: "E", safe: true, tolerated: 1},
		{name: "headroom: stopping the unread replica leaves the read one",
			nodes: append(threeShards(), bnode{id: "G", addr: "10.0.0.1:7006", master: "B", unread: true}), cfg: settings.Budget{HealthyReplicaHeadroom: true}, scope: ScopeNode, id: "G",
			safe: true, tolerated: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			snap := budgetSnapshot(tc.nodes...)
			snap.FailureBudget = assessBudget(snap, tc.cfg, 2*time.Second)
			a := ask(t, snap, budget.Question{Scope: tc.scope, ID: tc.id})
			if a.Safe != tc.safe || reasons(a) != tc.reasons {
				t.Errorf("safe %v, reasons %q; want %v, %q: %+v", a.Safe, reasons(a), tc.safe, tc.reasons, a.Findings)
			}
			if f, n := a.Facts["unserved_slots_failover"], a.Facts["unserved_slots_never"]; f != float64(tc.failover) || n != float64(tc.never) {
				t.Errorf("unserved until failover %v, never %v; want %d, %d", f, n, tc.failover, tc.never)
			}
			if got := strings.Join(a.AtRisk, ","); got != tc.atRisk || a.AtRiskTotal != len(a.AtRisk) {
				t.Errorf("at risk %q (total %d), want %q", got, a.AtRiskTotal, tc.atRisk)
			}
			if !strings.Contains(a.Advice, tc.advice) || tc.advice == "" && a.Advice != "" && tc.safe {
				t.Errorf("advice %q, want it to contain %q", a.Advice, tc.advice)
			}
			// failover_to is the address the advice tells a script to fail
			// over to: set exactly when the advice names one caught-up
			// replica of one master.
			wantTo := ""
			if m := failoverAdvice.FindStringSubmatch(a.Advice); m != nil && !strings.Contains(a.Advice, "; ") {
				wantTo = m[1]
			}
			if a.FailoverTo != wantTo {
				t.Errorf("failover_to %q, want %q for advice %q", a.FailoverTo, wantTo, a.Advice)
			}
			loss, hasLoss := a.Facts["failover_data_loss_bytes"]
			if hasLoss != tc.hasLoss || tc.loss != 0 && loss != tc.loss {
				t.Errorf("data loss %v (present %v), want %v (present %v)", loss, hasLoss, tc.loss, tc.hasLoss)
			}
			wantSeconds := 0.0
			if tc.failover > 0 {
				wantSeconds = 3 // the node timeout read, plus the election delay
			}
			if got := a.Facts["unserved_seconds_estimate"]; got != wantSeconds {
				t.Errorf("unserved_seconds_estimate %v, want %v", got, wantSeconds)
			}
			if got := snap.FailureBudget.LossesTolerated(); got != tc.tolerated {
				t.Errorf("losses tolerated %d, want %d", got, tc.tolerated)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestBudgetNodeTimeoutDefault(t *testing.T) {
	snap := budgetSnapshot(threeShards()...)
	snap.FailureBudget = assessBudget(snap, settings.Budget{}, 0)
	a := ask(t, snap, budget.Question{Scope: ScopeNode, ID: "A"})
	if got := a.Facts["unserved_seconds_estimate"]; got != 16 {
		t.Errorf("with no cluster-node-timeout read: estimate %v, want 16 (the 15 s default plus the election delay)", got)
	}
}

func TestBudgetAtRiskIsBounded(t *testing.T) {
	// A master owning every other slot: 8192 ranges.
	nodes := []bnode{{id: "B", addr: "10.0.0.2:7001", first: 0, last: 16383}, {id: "A", addr: "10.0.0.1:7000", first: 1, last: 0}}
	snap := budgetSnapshot(nodes...)
	for i := range snap.SlotRanges {
		snap.SlotRanges[i].Owner = "" // rebuilt below
	}
	owners := new([redisproto.SlotCount]string)
	for slot := range owners {
		owners[slot] = []string{"A", "B"}[slot%2]
	}
	snap.SlotRanges = slotRanges(owners)
	snap.Nodes[0].Slots, snap.Nodes[1].Slots, snap.Masters = 8192, 8192, 2
	snap.FailureBudget = assessBudget(snap, settings.Budget{}, time.Second)
	a := ask(t, snap, budget.Question{Scope: ScopeNode, ID: "A"})
	if len(a.AtRisk) != budget.MaxAtRisk || a.AtRiskTotal != 8192 || a.AtRisk[0] != "0-0" {
		t.Errorf("at risk: %d listed (first %q), %d in all; want %d, 8192", len(a.AtRisk), a.AtRisk[0], a.AtRiskTotal, budget.MaxAtRisk)
	}
}

func TestBudgetErrors(t *testing.T) {
	noZones := threeShards()
	for i := range noZones {
		noZones[i].zone = ""
	}
	snap := budgetSnapshot(noZones...)
	snap.FailureBudget = assessBudget(snap, settings.Budget{}, time.Second)
	for _, tc := range []struct {
		q    budget.Question
		want error
		says string
	}{
		{budget.Question{Scope: ScopeNode, ID: "nope"}, budget.ErrUnknown, `"nope"`},
		{budget.Question{Scope: ScopeNode, ID: ""}, budget.ErrUnknown, `""`},
		{budget.Question{Scope: ScopeZone, ID: "z1"}, budget.ErrUnsupported, "availability_zone"},
		{budget.Question{Scope: budget.Scope("broker"), ID: "1"}, budget.ErrUnsupported, "broker"},
	} {
		_, err := answerBudget(snap, tc.q)
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%+v: %v, want %v naming %s", tc.q, err, tc.want, tc.says)
		}
	}
	zoned := budgetSnapshot(threeShards()...)
	zoned.FailureBudget = assessBudget(zoned, settings.Budget{}, time.Second)
	if _, err := answerBudget(zoned, budget.Question{Scope: ScopeZone, ID: "z7"}); !errors.Is(err, budget.ErrUnknown) || !strings.Contains(err.Error(), "z7") {
		t.Errorf("unknown zone: %v", err)
	}
	if _, err := answerBudget(&Snapshot{}, budget.Question{Scope: ScopeNode, ID: "A"}); !errors.Is(err, budget.ErrUnsupported) {
		t.Errorf("no budget: %v", err)
	}
	a := ask(t, zoned, budget.Question{Scope: ScopeZone, ID: "z1"})
	if strings.Join(a.Members, ",") != "10.0.0.1:7000,10.0.0.1:7005" {
		t.Errorf("zone z1 members %v", a.Members)
	}
}

func TestBudgetRecovered(t *testing.T) {
	cases := []struct {
		name    string
		nodes   []bnode
		id      string
		reasons string
	}{
		{"synced replica", threeShards(), "D", ""},
		{"master", threeShards(), "A", ""},
		{"replica behind", with(threeShards(), "D", func(n *bnode) { n.lag = 2 << 20 }), "D", "not_caught_up"},
		{"replica not listed by its master", with(threeShards(), "D", func(n *bnode) { n.lagUnknown = true }), "D", "not_caught_up"},
		{"replica link down", with(threeShards(), "D", func(n *bnode) { n.linkDown = true; n.lagUnknown = true }), "D", "master_link_down,not_caught_up"},
		{"node still failing", with(threeShards(), "A", func(n *bnode) { n.state = NodeStatePFail }), "A", "not_reachable,node_failing"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			snap := budgetSnapshot(tc.nodes...)
			snap.FailureBudget = assessBudget(snap, settings.Budget{}, time.Second)
			a := ask(t, snap, budget.Question{Scope: ScopeNode, ID: tc.id, Recovered: true})
			if a.Safe != (tc.reasons == "") || reasons(a) != tc.reasons {
				t.Errorf("recovered %v, reasons %q; want %q: %+v", a.Safe, reasons(a), tc.reasons, a.Findings)
			}
		})
	}
	snap := budgetSnapshot(with(threeShards(), "F", func(n *bnode) { n.lag = 2 << 20 })...)
	snap.FailureBudget = assessBudget(snap, settings.Budget{}, time.Second)
	if a := ask(t, snap, budget.Question{Scope: ScopeZone, ID: "z1", Recovered: true}); a.Safe || reasons(a) != "not_caught_up" {
		t.Errorf("zone z1 with a lagging replica: recovered %v, %+v", a.Safe, a.Findings)
	}
}

// withBudget gives a hand-built snapshot its failure budget, as a refresh
// would.
func withBudget(s *Snapshot) *Snapshot {
	s.FailureBudget = assessBudget(s, settings.Budget{}, 15*time.Second)
	return s
}

func TestBudgetSeries(t *testing.T) {
	snap := budgetSnapshot(with(resharding(), "F", func(n *bnode) { n.state = NodeStateFail })...)
	snap.ViewsConsistent = true
	snap.FailureBudget = assessBudget(snap, settings.Budget{}, time.Second)
	c := NewCollector()
	c.Set("main", watchtest.Static[Snapshot]("main", snap, nil))
	plain, err := exposition.PlainText(c)
	if err != nil {
		t.Fatal(err)
	}
	text := string(plain)
	node := func(id, addr string) string {
		return `address="` + addr + `",node_id="` + id + `",redis_cluster="main"`
	}
	for _, line := range []string{
		`redis_cluster_master_losses_tolerated{redis_cluster="main"} 1`,
		`redis_cluster_node_safe_to_stop{` + node("A", "10.0.0.1:7000") + `} 0`,
		`redis_cluster_node_safe_to_stop{` + node("D", "10.0.0.2:7003") + `} 1`,
		`redis_cluster_node_stop_unsafe{address="10.0.0.1:7000",node_id="A",reason="serves_slots",redis_cluster="main"} 1`,
		`redis_cluster_node_stop_unsafe{address="10.0.0.1:7000",node_id="A",reason="no_healthy_replica",redis_cluster="main"} 0`,
		`redis_cluster_node_stop_unsafe{address="10.0.0.3:7002",node_id="C",reason="no_healthy_replica",redis_cluster="main"} 1`,
		`redis_cluster_node_stop_unserved_slots{` + node("A", "10.0.0.1:7000") + `,until="failover"} 5461`,
		`redis_cluster_node_stop_unserved_slots{` + node("C", "10.0.0.3:7002") + `,until="never"} 5461`,
		`redis_cluster_node_stop_unserved_slots{` + node("D", "10.0.0.2:7003") + `,until="failover"} 0`,
		`redis_cluster_node_failover_data_loss_bytes{` + node("A", "10.0.0.1:7000") + `} 100`,
		`redis_cluster_zone_safe_to_stop{redis_cluster="main",zone="z3"} 0`,
		`redis_cluster_zone_stop_unserved_slots{redis_cluster="main",until="never",zone="z3"} 5461`,
		`redis_cluster_zone_stop_unsafe{reason="no_healthy_replica",redis_cluster="main",zone="z3"} 1`,
		`redis_cluster_node_safe_to_stop{` + node("H", "10.0.0.9:7009") + `} 0`,
		`redis_cluster_node_stop_unsafe{address="10.0.0.9:7009",node_id="H",reason="slot_migration",redis_cluster="main"} 1`,
		`redis_cluster_node_stop_unsafe{address="10.0.0.1:7000",node_id="A",reason="slot_migration",redis_cluster="main"} 1`,
		`redis_cluster_node_stop_unsafe{address="10.0.0.2:7003",node_id="D",reason="slot_migration",redis_cluster="main"} 0`,
		`redis_cluster_zone_stop_unsafe{reason="slot_migration",redis_cluster="main",zone="z9"} 1`,
	} {
		if !strings.Contains(text, line+"\n") {
			t.Errorf("lacks %s", line)
		}
	}
	// C has no healthy replica: no data loss series for it, nor for replicas.
	for _, absent := range []string{`redis_cluster_node_failover_data_loss_bytes{` + node("C", "10.0.0.3:7002"), `redis_cluster_node_failover_data_loss_bytes{` + node("D", "10.0.0.2:7003")} {
		if strings.Contains(text, absent) {
			t.Errorf("serves %s", absent)
		}
	}
	if problems, err := testutil.CollectAndLint(c); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %+v", err, problems)
	}
}

// BenchmarkAssessBudget100Nodes is the failure budget's share of a refresh
// of 50 masters with one replica each.
func BenchmarkAssessBudget100Nodes(b *testing.B) {
	snap := snapshot100Nodes()
	b.ReportAllocs()
	for b.Loop() {
		assessBudget(snap, settings.Budget{}, time.Second)
	}
}

// TestBudgetFindingsName checks the messages name what the verdict rests
// on: the slots in flight and both ends of the move, and the replicas the
// exporter did not read.
func TestBudgetFindingsName(t *testing.T) {
	snap := budgetSnapshot(resharding()...)
	snap.FailureBudget = assessBudget(snap, settings.Budget{}, time.Second)
	a := ask(t, snap, budget.Question{Scope: ScopeNode, ID: "10.0.0.9:7009"})
	want := "slots 100-101 from 10.0.0.1:7000 to 10.0.0.9:7009 (CLUSTER SETSLOT MIGRATING/IMPORTING)"
	if len(a.Findings) != 1 || a.Findings[0].Count != 2 || !strings.Contains(a.Findings[0].Message, want) || a.FailoverTo != "" {
		t.Errorf("importing master: %+v (failover_to %q), want one slot_migration of 2 slots saying %q", a.Findings, a.FailoverTo, want)
	}

	snap = budgetSnapshot(append(with(threeShards(), "E", func(n *bnode) { n.unread = true }), bnode{id: "G", addr: "10.0.0.1:7006", master: "B", unread: true})...)
	snap.FailureBudget = assessBudget(snap, settings.Budget{}, time.Second)
	a = ask(t, snap, budget.Question{Scope: ScopeNode, ID: "B"})
	want = "not judged: the exporter did not read 10.0.0.3:7004, 10.0.0.1:7006 this refresh, so they are not counted as healthy"
	if reasons(a) != "serves_slots,no_healthy_replica" || !strings.Contains(a.Findings[1].Message, want) || a.FailoverTo != "" || a.Facts["unserved_slots_never"] != 5462 {
		t.Errorf("master with both replicas unread: %+v (failover_to %q, facts %v), want no_healthy_replica saying %q", a.Findings, a.FailoverTo, a.Facts, want)
	}
	// The replica series still count them: the cluster calls them ok.
	if n := snap.findNode("B"); n.HealthyReplicas != 2 {
		t.Errorf("HealthyReplicas %d, want 2 (the cluster's view)", n.HealthyReplicas)
	}
}
