package redis

import (
	"slices"
	"strings"
	"testing"

	"github.com/failover-exporter/failover_exporter/systems/redis/proto"
)

// healthyLines is a 3+3 cluster: A, B, C masters; D, E, F their replicas.
var healthyLines = []string{
	idA + " 127.0.0.1:17100@27100 master - 0 0 1 connected 0-5460",
	idB + " 127.0.0.1:17101@27101 master - 0 0 2 connected 5461-10922",
	idC + " 127.0.0.1:17102@27102 master - 0 0 3 connected 10923-16383",
	idD + " 127.0.0.1:17103@27103 slave " + idA + " 0 0 1 connected",
	idE + " 127.0.0.1:17104@27104 slave " + idB + " 0 0 2 connected",
	idF + " 127.0.0.1:17105@27105 slave " + idC + " 0 0 3 connected",
}

var addrOf = map[string]string{
	idA: "127.0.0.1:17100", idB: "127.0.0.1:17101", idC: "127.0.0.1:17102",
	idD: "127.0.0.1:17103", idE: "127.0.0.1:17104", idF: "127.0.0.1:17105",
}

// testView builds the view node self has of a topology given as CLUSTER
// NODES lines; self's line gets the myself flag.
func testView(t testing.TB, self string, lines []string, currentEpoch uint64, stateOK bool, repl replicationInfo) nodeView {
	t.Helper()
	var b strings.Builder
	for _, line := range lines {
		fields := strings.Fields(line)
		if fields[0] == self {
			fields[2] = "myself," + fields[2]
		}
		b.WriteString(strings.Join(fields, " ") + "\n")
	}
	nodes, err := redisproto.ParseClusterNodes(b.String())
	if err != nil {
		t.Fatalf("test topology: %v", err)
	}
	return nodeView{
		View:        redisproto.View{Addr: addrOf[self], Nodes: nodes, Info: redisproto.ClusterInfo{StateOK: stateOK, CurrentEpoch: currentEpoch}},
		Replication: repl,
		UsedMemory:  1000,
		Keys:        10,
	}
}

func masterRepl(offset int64, replicas ...replicaOffset) replicationInfo {
	return replicationInfo{IsMaster: true, MasterReplOffset: offset, Replicas: replicas}
}

var replicaUp = replicationInfo{MasterLinkUp: true}

func healthyViews(t testing.TB) []nodeView {
	return []nodeView{
		testView(t, idA, healthyLines, 6, true, masterRepl(1042, replicaOffset{Addr: addrOf[idD], Offset: 1000})),
		testView(t, idB, healthyLines, 6, true, masterRepl(500, replicaOffset{Addr: addrOf[idE], Offset: 500})),
		testView(t, idC, healthyLines, 6, true, masterRepl(0, replicaOffset{Addr: addrOf[idF], Offset: 0})),
		testView(t, idD, healthyLines, 6, true, replicaUp),
		testView(t, idE, healthyLines, 6, true, replicaUp),
		testView(t, idF, healthyLines, 6, true, replicaUp),
	}
}

func nodeByID(t testing.TB, s *Snapshot, id string) Node {
	t.Helper()
	for _, n := range s.Nodes {
		if n.ID == id {
			return n
		}
	}
	t.Fatalf("node %s not in snapshot", id)
	return Node{}
}

func TestBuildSnapshotHealthy(t *testing.T) {
	snap, err := buildSnapshot(healthyViews(t))
	if err != nil {
		t.Fatal(err)
	}
	if !snap.StateOK || snap.SlotsOK != redisproto.SlotCount || snap.SlotsWithoutReplica != 0 || snap.Masters != 3 ||
		snap.KnownNodes != 6 || snap.CurrentEpoch != 6 || !snap.ViewsConsistent {
		t.Errorf("cluster: %+v", *snap)
	}
	a := nodeByID(t, snap, idA)
	if a.Role != RoleMaster || a.Slots != 5461 || a.HealthyReplicas != 1 || !a.Reachable || a.State != NodeStateOK {
		t.Errorf("A: %+v", a)
	}
	d := nodeByID(t, snap, idD)
	if d.Role != RoleReplica || d.MasterID != idA || !d.MasterLinkUp || !d.HasReplicationLag || d.ReplicationLagBytes != 42 {
		t.Errorf("D: %+v", d)
	}
	if e := nodeByID(t, snap, idE); !e.HasReplicationLag || e.ReplicationLagBytes != 0 {
		t.Errorf("E: %+v", e)
	}
	wantRanges := []SlotRange{{0, 5460, idA}, {5461, 10922, idB}, {10923, 16383, idC}}
	if !slices.Equal(snap.SlotRanges, wantRanges) {
		t.Errorf("slot ranges %+v, want %+v", snap.SlotRanges, wantRanges)
	}
	for i := 1; i < len(snap.Nodes); i++ {
		if snap.Nodes[i-1].Addr > snap.Nodes[i].Addr {
			t.Errorf("nodes not sorted by address: %s before %s", snap.Nodes[i-1].Addr, snap.Nodes[i].Addr)
		}
	}
}

// failedALines is the topology once A has been marked failed, before its
// replica D took over.
var failedALines = []string{
	idA + " 127.0.0.1:17100@27100 master,fail - 0 0 1 disconnected 0-5460",
	healthyLines[1], healthyLines[2], healthyLines[3], healthyLines[4], healthyLines[5],
}

func TestBuildSnapshotMasterFailed(t *testing.T) {
	replicaDown := replicationInfo{MasterLinkUp: false}
	views := []nodeView{
		testView(t, idB, failedALines, 6, false, masterRepl(0)),
		testView(t, idC, failedALines, 6, false, masterRepl(0)),
		testView(t, idD, failedALines, 6, false, replicaDown),
	}
	snap, err := buildSnapshot(views)
	if err != nil {
		t.Fatal(err)
	}
	if snap.StateOK {
		t.Error("state_ok: a reachable master says fail")
	}
	if snap.SlotsFail != 5461 || snap.SlotsOK != redisproto.SlotCount-5461 || snap.SlotsPFail != 0 || snap.SlotsUnassigned != 0 {
		t.Errorf("slots ok %d pfail %d fail %d unassigned %d", snap.SlotsOK, snap.SlotsPFail, snap.SlotsFail, snap.SlotsUnassigned)
	}
	// D's link to A is down, so A has no healthy replica; E and F were not
	// reached but the cluster says they are fine.
	if snap.SlotsWithoutReplica != 5461 {
		t.Errorf("slots without replica = %d, want 5461", snap.SlotsWithoutReplica)
	}
	a := nodeByID(t, snap, idA)
	if a.State != NodeStateFail || a.Reachable || a.LinkConnected || a.HealthyReplicas != 0 {
		t.Errorf("A: %+v", a)
	}
	if d := nodeByID(t, snap, idD); d.HasReplicationLag || d.MasterLinkUp {
		t.Errorf("D: lag or link reported although A is unreachable: %+v", d)
	}
}

func TestBuildSnapshotAfterFailoverWithConflictingViews(t *testing.T) {
	promoted := []string{
		idA + " 127.0.0.1:17100@27100 master,fail - 0 0 1 disconnected",
		healthyLines[1], healthyLines[2],
		idD + " 127.0.0.1:17103@27103 master - 0 0 7 connected 0-5460",
		healthyLines[4], healthyLines[5],
	}
	views := []nodeView{
		// C has not heard of the failover yet; its view ranks lower.
		testView(t, idC, failedALines, 6, true, masterRepl(0)),
		testView(t, idB, promoted, 7, true, masterRepl(0)),
		testView(t, idD, promoted, 7, true, masterRepl(0)),
	}
	snap, err := buildSnapshot(views)
	if err != nil {
		t.Fatal(err)
	}
	if snap.ViewsConsistent {
		t.Error("views_consistent: C still gives A's slots to A")
	}
	d := nodeByID(t, snap, idD)
	if d.Role != RoleMaster || d.Slots != 5461 || d.ConfigEpoch != 7 {
		t.Errorf("D: %+v", d)
	}
	if a := nodeByID(t, snap, idA); a.Slots != 0 || a.State != NodeStateFail {
		t.Errorf("A: %+v", a)
	}
	if snap.SlotsOK != redisproto.SlotCount || snap.Masters != 3 || snap.CurrentEpoch != 7 || !snap.StateOK {
		t.Errorf("cluster: ok %d masters %d epoch %d state %v", snap.SlotsOK, snap.Masters, snap.CurrentEpoch, snap.StateOK)
	}
	// The higher epoch wins whatever the order of the views.
	views[0], views[2] = views[2], views[0]
	again, err := buildSnapshot(views)
	if err != nil {
		t.Fatal(err)
	}
	if nodeByID(t, again, idD).Slots != 5461 {
		t.Error("slot owner depends on view order")
	}
}

func TestBuildSnapshotPFailAndMigration(t *testing.T) {
	lines := append([]string(nil), healthyLines...)
	lines[2] = idC + " 127.0.0.1:17102@27102 master,fail? - 0 0 3 connected 10923-16383"
	a := testView(t, idA, healthyLines, 6, true, masterRepl(0))
	a.Self().Migrating = []redisproto.SlotMove{{Slot: 100, NodeID: idB}, {Slot: 101, NodeID: idB}}
	b := testView(t, idB, lines, 6, true, masterRepl(0))
	b.Self().Importing = []redisproto.SlotMove{{Slot: 100, NodeID: idA}, {Slot: 101, NodeID: idA}}
	snap, err := buildSnapshot([]nodeView{a, b, b}) // a duplicate view is ignored
	if err != nil {
		t.Fatal(err)
	}
	if snap.SlotsPFail != redisproto.SlotCount-10923 || !snap.ViewsConsistent {
		t.Errorf("pfail slots %d consistent %v", snap.SlotsPFail, snap.ViewsConsistent)
	}
	if n := nodeByID(t, snap, idC); n.State != NodeStatePFail {
		t.Errorf("C state %s, want pfail", n.State)
	}
	if n := nodeByID(t, snap, idA); len(n.Migrating) != 2 || len(n.Importing) != 0 || n.Migrating[0] != (redisproto.SlotMove{Slot: 100, NodeID: idB}) {
		t.Errorf("A: migrating %v importing %v", n.Migrating, n.Importing)
	}
	if n := nodeByID(t, snap, idB); len(n.Importing) != 2 || n.Importing[1] != (redisproto.SlotMove{Slot: 101, NodeID: idA}) {
		t.Errorf("B: importing %v", n.Importing)
	}
}

func TestBuildSnapshotWithoutReplicas(t *testing.T) {
	lines := healthyLines[:3]
	snap, err := buildSnapshot([]nodeView{testView(t, idA, lines, 3, true, masterRepl(0))})
	if err != nil {
		t.Fatal(err)
	}
	if snap.SlotsWithoutReplica != redisproto.SlotCount || snap.KnownNodes != 3 {
		t.Errorf("slots without replica %d known %d", snap.SlotsWithoutReplica, snap.KnownNodes)
	}
	if _, err := buildSnapshot(nil); err == nil {
		t.Error("no views: want an error")
	}
}

// A replica the exporter cannot read still protects its master while the
// cluster flags it ok (the exporter may merely be cut off from it); one that
// answered LOADING does not: it is loading a full sync's RDB.
func TestBuildSnapshotLoadingReplica(t *testing.T) {
	var views []nodeView
	for _, id := range []string{idA, idB, idC, idE, idF} { // D not read
		repl := replicaUp
		if id == idA || id == idB || id == idC {
			repl = masterRepl(0)
		}
		views = append(views, testView(t, id, healthyLines, 3, true, repl))
	}
	snap, err := buildSnapshot(views)
	if err != nil {
		t.Fatal(err)
	}
	if d := nodeByID(t, snap, idD); snap.SlotsWithoutReplica != 0 || d.Loading || !d.IsHealthyReplica() {
		t.Errorf("D unread: slots without replica %d, D %+v; want it counted healthy", snap.SlotsWithoutReplica, d)
	}
	loading := map[string]loadingNode{addrOf[idD]: {sync: replicaSync{InProgress: true, ReadBytes: 10}, load: loadProgress{Read: true, LoadedBytes: 5, TotalBytes: 10, ETASeconds: 3}}}
	if snap, err = buildSnapshotLoading(views, loading); err != nil {
		t.Fatal(err)
	}
	d := nodeByID(t, snap, idD)
	if snap.SlotsWithoutReplica != 5461 || !d.Loading || d.IsHealthyReplica() || d.Sync != loading[addrOf[idD]].sync || d.Load != loading[addrOf[idD]].load {
		t.Errorf("D loading: slots without replica %d, D %+v; want A's 5461 slots unprotected", snap.SlotsWithoutReplica, d)
	}
	if a := nodeByID(t, snap, idA); a.HealthyReplicas != 0 {
		t.Errorf("A counts %d healthy replicas with D loading", a.HealthyReplicas)
	}
}
