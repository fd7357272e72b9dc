package redis

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/failover-exporter/failover_exporter/systems/redis/proto"
)

// without returns the lines minus the one of node id.
func without(lines []string, id string) []string {
	return slices.DeleteFunc(slices.Clone(lines), func(l string) bool { return l[:len(id)] == id })
}

// The replica D was forgotten (CLUSTER FORGET) by the five others. D still
// lists them all and says it replicates A; the cluster no longer counts it.
func TestBuildSnapshotForgottenReplica(t *testing.T) {
	rest := without(healthyLines, idD)
	views := []nodeView{
		testView(t, idA, rest, 6, true, masterRepl(1000)),
		testView(t, idB, rest, 6, true, masterRepl(500, replicaOffset{Addr: addrOf[idE], Offset: 500})),
		testView(t, idC, rest, 6, true, masterRepl(0, replicaOffset{Addr: addrOf[idF], Offset: 0})),
		testView(t, idD, healthyLines, 6, true, replicaUp),
		testView(t, idE, rest, 6, true, replicaUp),
		testView(t, idF, rest, 6, true, replicaUp),
	}
	snap, err := buildSnapshot(views)
	if err != nil {
		t.Fatal(err)
	}
	if snap.KnownNodes != 5 || snap.SlotsWithoutReplica != 5461 || snap.Masters != 3 || !snap.StateOK || !snap.ViewsConsistent {
		t.Errorf("cluster: known %d without replica %d masters %d state %v consistent %v",
			snap.KnownNodes, snap.SlotsWithoutReplica, snap.Masters, snap.StateOK, snap.ViewsConsistent)
	}
	if a := nodeByID(t, snap, idA); a.HealthyReplicas != 0 {
		t.Errorf("A has %d healthy replicas, want 0: the cluster forgot D", a.HealthyReplicas)
	}
	for _, n := range snap.Nodes {
		if n.ID == idD {
			t.Errorf("forgotten D is still a member: %+v", n)
		}
	}
	want := []ForeignNode{{ID: idD, Addr: addrOf[idD], Reason: ForeignNotListed, Role: RoleReplica, KnownNodes: 6}}
	if !slices.Equal(snap.Foreign, want) {
		t.Errorf("foreign = %+v, want %+v", snap.Foreign, want)
	}
}

// CLUSTER RESET SOFT on replica D: D now lists only itself, as an empty
// master whose cluster_state is fail; the others still list it.
func TestBuildSnapshotResetReplica(t *testing.T) {
	resetD := []string{idD + " 127.0.0.1:17103@27103 master - 0 0 0 connected"}
	others := append(without(healthyLines, idD), idD+" 127.0.0.1:17103@27103 master - 0 0 0 connected")
	views := []nodeView{
		testView(t, idA, others, 6, true, masterRepl(0)),
		testView(t, idB, others, 6, true, masterRepl(0)),
		testView(t, idC, others, 6, true, masterRepl(0)),
		testView(t, idD, resetD, 0, false, masterRepl(0)),
		testView(t, idE, others, 6, true, replicaUp),
	}
	snap, err := buildSnapshot(views)
	if err != nil {
		t.Fatal(err)
	}
	if !snap.StateOK {
		t.Error("state_ok is 0 because of the reset node, which is not a member")
	}
	if snap.SlotsOK != redisproto.SlotCount || snap.KnownNodes != 5 || snap.Masters != 3 || snap.SlotsWithoutReplica != 5461 {
		t.Errorf("cluster: ok %d known %d masters %d without replica %d",
			snap.SlotsOK, snap.KnownNodes, snap.Masters, snap.SlotsWithoutReplica)
	}
	if len(snap.Foreign) != 1 || snap.Foreign[0].ID != idD || snap.Foreign[0].Reason != ForeignNotListing ||
		snap.Foreign[0].Role != RoleMaster || snap.Foreign[0].KnownNodes != 1 {
		t.Errorf("foreign = %+v, want D, not listing the cluster", snap.Foreign)
	}
}

// A seed address serves another cluster (X, Y, Z): the cluster with more
// slot-serving masters reached is ours, and the other one changes nothing.
func TestBuildSnapshotForeignCluster(t *testing.T) {
	const (
		idX = "1111111111111111111111111111111111111111"
		idY = "2222222222222222222222222222222222222222"
	)
	otherLines := []string{
		idX + " 127.0.0.1:18000@28000 master - 0 0 1 connected 0-8191",
		idY + " 127.0.0.1:18001@28001 master - 0 0 2 connected 8192-16383",
	}
	x := testView(t, idX, otherLines, 9, false, masterRepl(0))
	x.Addr = "127.0.0.1:18000"
	views := append(healthyViews(t), x)
	snap, err := buildSnapshot(views)
	if err != nil {
		t.Fatal(err)
	}
	if !snap.StateOK || snap.KnownNodes != 6 || snap.CurrentEpoch != 6 || !snap.ViewsConsistent ||
		nodeByID(t, snap, idA).Slots != 5461 {
		t.Errorf("the other cluster leaked into this one: %+v", *snap)
	}
	if len(snap.Foreign) != 1 || snap.Foreign[0].ID != idX || snap.Foreign[0].Reason != ForeignNotListed ||
		snap.Foreign[0].Slots != 8192 {
		t.Errorf("foreign = %+v, want X claiming 8192 slots", snap.Foreign)
	}
}

// A node that never met anyone does not know its own IP (CLUSTER NODES
// says ":port@bus"); it is reported at the address it was reached on.
func TestBuildSnapshotNeverMetNode(t *testing.T) {
	const idN = "3333333333333333333333333333333333333333"
	lone := testView(t, idN, []string{idN + " :17200@27200 master - 0 0 0 connected"}, 0, false, masterRepl(0))
	lone.Addr = "127.0.0.1:17200"

	snap, err := buildSnapshot(append(healthyViews(t), lone))
	if err != nil {
		t.Fatal(err)
	}
	if snap.KnownNodes != 6 || !snap.StateOK {
		t.Errorf("cluster: known %d state %v", snap.KnownNodes, snap.StateOK)
	}
	if len(snap.Foreign) != 1 || snap.Foreign[0].Addr != "127.0.0.1:17200" || snap.Foreign[0].Reason != ForeignNotListed {
		t.Errorf("foreign = %+v", snap.Foreign)
	}

	// Alone, it is the whole cluster, still with its seed address.
	snap, err = buildSnapshot([]nodeView{lone})
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Nodes) != 1 || snap.Nodes[0].Addr != "127.0.0.1:17200" || len(snap.Foreign) != 0 {
		t.Errorf("lone node: nodes %+v foreign %+v", snap.Nodes, snap.Foreign)
	}
}

// Forgetting a node on one master of three changes nothing: the majority
// still lists it.
func TestBuildSnapshotForgottenByMinority(t *testing.T) {
	views := healthyViews(t)
	views[0] = testView(t, idA, without(healthyLines, idF), 6, true, masterRepl(0, replicaOffset{Addr: addrOf[idD]}))
	snap, err := buildSnapshot(views)
	if err != nil {
		t.Fatal(err)
	}
	if snap.KnownNodes != 6 || len(snap.Foreign) != 0 || nodeByID(t, snap, idC).HealthyReplicas != 1 {
		t.Errorf("known %d foreign %+v", snap.KnownNodes, snap.Foreign)
	}
}

// views100Nodes is what 50 masters and their 50 replicas, all reached and
// agreeing, tell one refresh.
func views100Nodes(b *testing.B) []nodeView {
	var text strings.Builder
	ids := make([]string, 100)
	for i := range 50 {
		ids[i], ids[50+i] = fmt.Sprintf("%040x", i), fmt.Sprintf("%040x", 1000+i)
		first, last := i*redisproto.SlotCount/50, (i+1)*redisproto.SlotCount/50-1
		fmt.Fprintf(&text, "%s 10.0.0.%d:6379@16379 master - 0 0 %d connected %d-%d\n", ids[i], i, i+1, first, last)
		fmt.Fprintf(&text, "%s 10.0.1.%d:6379@16379 slave %s 0 0 %d connected\n", ids[50+i], i, ids[i], i+1)
	}
	views := make([]nodeView, 100)
	for i, id := range ids {
		lines, err := redisproto.ParseClusterNodes(text.String())
		if err != nil {
			b.Fatal(err)
		}
		for j := range lines {
			lines[j].Flags.Myself = lines[j].ID == id
		}
		addr := lines[0].Addr
		for _, l := range lines {
			if l.ID == id {
				addr = l.Addr
			}
		}
		views[i] = nodeView{View: redisproto.View{Addr: addr, Nodes: lines, Info: redisproto.ClusterInfo{StateOK: true, CurrentEpoch: 50}},
			Replication: replicationInfo{IsMaster: i < 50, MasterLinkUp: i >= 50}}
	}
	return views
}

// BenchmarkBuildSnapshot100Nodes is the merge each refresh of a 100-node
// cluster pays: membership, slot owners, consistency, failure domains.
func BenchmarkBuildSnapshot100Nodes(b *testing.B) {
	views := views100Nodes(b)
	b.ReportAllocs()
	for b.Loop() {
		snap, err := buildSnapshot(views)
		if err != nil || snap.KnownNodes != 100 || len(snap.Foreign) != 0 {
			b.Fatalf("snapshot: %v %+v", err, snap)
		}
	}
}

// BenchmarkParseNodeView100Nodes is what each refresh of a 100-node cluster
// pays per node, a hundred times over, to decode the replies: CLUSTER NODES
// listing 100 nodes, CLUSTER INFO, INFO replication and a real INFO memory.
func BenchmarkParseNodeView100Nodes(b *testing.B) {
	var nodes strings.Builder
	for i := range 50 {
		master, replica := fmt.Sprintf("%040x", i), fmt.Sprintf("%040x", 1000+i)
		flags := "master"
		if i == 0 {
			flags = "myself,master"
		}
		first, last := i*redisproto.SlotCount/50, (i+1)*redisproto.SlotCount/50-1
		fmt.Fprintf(&nodes, "%s 10.0.0.%d:6379@16379 %s - 0 1764000000000 %d connected %d-%d\n", master, i, flags, i+1, first, last)
		fmt.Fprintf(&nodes, "%s 10.0.1.%d:6379@16379 slave %s 0 1764000000000 %d connected\n", replica, i, master, i+1)
	}
	memory, err := os.ReadFile("testdata/info_memory_redis7.txt")
	if err != nil {
		b.Fatal(err)
	}
	replication := "# Replication\r\nrole:master\r\nconnected_slaves:1\r\n" +
		"slave0:ip=10.0.1.0,port=6379,state=online,offset=1000,lag=0\r\n" +
		"master_failover_state:no-failover\r\nmaster_replid:24d8d8a0f1862ffd06f5ba41e3ce2bdeeaa5ea95\r\n" +
		"master_repl_offset:1042\r\nrepl_backlog_active:1\r\n"
	// RESP3 verbatim strings, as rueidis hands them over.
	nodesReply, infoReply := "txt:"+nodes.String(), "txt:"+labClusterInfo
	replicationReply, memoryReply := "txt:"+replication, "txt:"+string(memory)
	b.ReportAllocs()
	for b.Loop() {
		v, err := parseNodeView("10.0.0.0:6379", nodesReply, infoReply, replicationReply, memoryReply, 7)
		if err != nil || len(v.Nodes) != 100 || v.UsedMemory == 0 {
			b.Fatalf("view: %v, %d nodes", err, len(v.Nodes))
		}
	}
}
