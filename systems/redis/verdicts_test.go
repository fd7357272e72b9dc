package redis

import (
	"strings"
	"testing"
)

// TestEmptyMasterDecidesNothing: Valkey 9.1 after CLUSTER RESET SOFT of
// replica D (issue 20, item 2). D is a member again as an empty master,
// with a higher current epoch than anyone, says cluster_state:fail, and
// lists a peer it is still shaking hands with and one it suspects. The
// slot-serving masters say ok: so does the cluster, and every node's state
// is theirs; D's own state is D's.
func TestEmptyMasterDecidesNothing(t *testing.T) {
	reset := append([]string(nil), healthyLines...)
	reset[3] = idD + " 127.0.0.1:17103@27103 master - 0 0 7 connected"
	views := []nodeView{
		testView(t, idA, reset, 7, true, masterRepl(0)),
		testView(t, idB, reset, 7, true, masterRepl(0)),
		testView(t, idC, reset, 7, true, masterRepl(0)),
		testView(t, idE, reset, 7, true, replicaUp),
		testView(t, idF, reset, 7, true, replicaUp),
	}
	// D's own view: B in handshake, C suspected.
	own := append([]string(nil), reset...)
	own[1] = strings.Replace(own[1], " master ", " master,handshake ", 1)
	own[2] = strings.Replace(own[2], " master ", " master,fail? ", 1)
	views = append(views, testView(t, idD, own, 8, false, masterRepl(0)))

	snap, err := buildSnapshot(views)
	if err != nil {
		t.Fatal(err)
	}
	if !snap.StateOK {
		t.Error("StateOK false: the empty master's cluster_state:fail decided it")
	}
	for _, n := range snap.Nodes {
		if n.State != NodeStateOK {
			t.Errorf("node %s in state %s: the empty master's flags decided it", n.Addr, n.State)
		}
		if want := n.ID != idD; n.ClusterStateOK != want {
			t.Errorf("node %s: ClusterStateOK %v, want %v", n.Addr, n.ClusterStateOK, want)
		}
	}
	if d := nodeByID(t, snap, idD); d.Role != RoleMaster || d.Slots != 0 {
		t.Errorf("D: role %s, %d slots; want an empty master", d.Role, d.Slots)
	}
	if len(snap.disputes) != 0 {
		t.Errorf("disputes %v: the empty master's flags count", snap.disputes)
	}

	// A real failure: a slot-serving master says fail.
	views[1].Info.StateOK = false
	if snap, err = buildSnapshot(views); err != nil {
		t.Fatal(err)
	}
	if snap.StateOK {
		t.Error("StateOK true while a slot-serving master says fail")
	}

	// With no slot-serving master reached, whoever answered decides, the
	// empty master included.
	views = views[3:]
	if snap, err = buildSnapshot(views); err != nil {
		t.Fatal(err)
	}
	if snap.StateOK {
		t.Error("StateOK true while the only master reached says fail")
	}
	if c := nodeByID(t, snap, idC); c.State != NodeStatePFail {
		t.Errorf("C in state %s with only replicas and the empty master reached, want pfail (the empty master's flag counts then)", c.State)
	}
}
