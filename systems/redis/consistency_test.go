package redis

import (
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/systems/redis/proto"
)

// reshardViews: slot 100 moves from A to B. B already owns it (SETSLOT NODE
// reached B), A still migrates it, C has not heard yet.
func reshardViews(t *testing.T, aMigrating bool) []nodeView {
	moved := append([]string(nil), healthyLines...)
	moved[0] = idA + " 127.0.0.1:17100@27100 master - 0 0 1 connected 0-99 101-5460"
	moved[1] = idB + " 127.0.0.1:17101@27101 master - 0 0 7 connected 100 5461-10922"
	a := testView(t, idA, healthyLines, 7, true, masterRepl(0))
	if aMigrating {
		a.Self().Migrating = []redisproto.SlotMove{{Slot: 100, NodeID: idB}}
	}
	return []nodeView{
		a,
		testView(t, idB, moved, 7, true, masterRepl(0)),
		testView(t, idC, healthyLines, 6, true, masterRepl(0)),
	}
}

func TestConsistencyDuringReshard(t *testing.T) {
	snap, err := buildSnapshot(reshardViews(t, true))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Unix(1000, 0)
	settleDisputes(nil, snap, start)
	if !snap.ViewsConsistent || snap.SlotsInMigration != 1 || snap.SlotsInConflict != 0 {
		t.Errorf("mid-migration: consistent %v in migration %d in conflict %d", snap.ViewsConsistent, snap.SlotsInMigration, snap.SlotsInConflict)
	}
	// The newer epoch owns the slot; the states still sum to 16384.
	if b := nodeByID(t, snap, idB); b.Slots != 5463 {
		t.Errorf("B owns %d slots, want 5463", b.Slots)
	}
	if snap.SlotsOK != redisproto.SlotCount {
		t.Errorf("slots ok %d", snap.SlotsOK)
	}

	// A has finished (no migrating state), C still has the old owner: that
	// is gossip catching up, forgiven for disputeSettleTime from when it
	// was first seen (1 s after start) only.
	prev := snap
	for _, step := range []struct {
		after      time.Duration
		consistent bool
	}{
		{time.Second, true},
		{time.Second + disputeSettleTime - time.Millisecond, true},
		{time.Second + disputeSettleTime, false},
		{time.Hour, false},
	} {
		next, err := buildSnapshot(reshardViews(t, false))
		if err != nil {
			t.Fatal(err)
		}
		settleDisputes(prev, next, start.Add(step.after))
		wantConflict := 0
		if !step.consistent {
			wantConflict = 1
		}
		if next.ViewsConsistent != step.consistent || next.SlotsInConflict != wantConflict || next.SlotsInMigration != 0 {
			t.Errorf("%s after: consistent %v in conflict %d in migration %d, want %v %d 0",
				step.after, next.ViewsConsistent, next.SlotsInConflict, next.SlotsInMigration, step.consistent, wantConflict)
		}
		prev = next
	}

	// Once every view agrees, the dispute is forgotten: a new one starts
	// its own settling time.
	agreed, err := buildSnapshot(healthyViews(t))
	if err != nil {
		t.Fatal(err)
	}
	settleDisputes(prev, agreed, start.Add(2*time.Hour))
	if !agreed.ViewsConsistent || len(agreed.disputes) != 0 {
		t.Errorf("agreed: consistent %v disputes %v", agreed.ViewsConsistent, agreed.disputes)
	}
	again, err := buildSnapshot(reshardViews(t, false))
	if err != nil {
		t.Fatal(err)
	}
	settleDisputes(agreed, again, start.Add(2*time.Hour+time.Second))
	if !again.ViewsConsistent {
		t.Error("a new dispute counted from the start of an old one")
	}
}

// Two masters claim one slot, neither migrating it: a conflict once it
// outlives the settling time, whatever the epochs say.
func TestConsistencyTwoMastersClaimASlot(t *testing.T) {
	bClaims := append([]string(nil), healthyLines...)
	bClaims[1] = idB + " 127.0.0.1:17101@27101 master - 0 0 2 connected 0 5461-10922"
	views := []nodeView{
		testView(t, idB, bClaims, 6, true, masterRepl(0)),
		testView(t, idC, healthyLines, 6, true, masterRepl(0)),
	}
	start := time.Unix(1000, 0)
	first, err := buildSnapshot(views)
	if err != nil {
		t.Fatal(err)
	}
	settleDisputes(nil, first, start)
	later, err := buildSnapshot(views)
	if err != nil {
		t.Fatal(err)
	}
	settleDisputes(first, later, start.Add(disputeSettleTime+time.Second))
	if later.ViewsConsistent || later.SlotsInConflict != 1 {
		t.Errorf("consistent %v in conflict %d, want false 1", later.ViewsConsistent, later.SlotsInConflict)
	}
	// Meanwhile the claim with the higher config epoch (B's 2 over A's 1)
	// is the owner, as Redis would settle it.
	if b := nodeByID(t, later, idB); b.Slots != 5463 {
		t.Errorf("B owns %d slots, want 5463 (its epoch is higher)", b.Slots)
	}
}

// A node marked fail by some members and not by others, for longer than the
// settling time, is a conflict too; the slot counts are not affected.
func TestConsistencyNodeFailDisputed(t *testing.T) {
	failedC := append([]string(nil), healthyLines...)
	failedC[5] = idF + " 127.0.0.1:17105@27105 slave,fail " + idC + " 0 0 3 disconnected"
	views := []nodeView{
		testView(t, idA, failedC, 6, true, masterRepl(0)),
		testView(t, idB, healthyLines, 6, true, masterRepl(0)),
		testView(t, idC, healthyLines, 6, true, masterRepl(0)),
	}
	start := time.Unix(1000, 0)
	first, err := buildSnapshot(views)
	if err != nil {
		t.Fatal(err)
	}
	settleDisputes(nil, first, start)
	if !first.ViewsConsistent {
		t.Error("a fresh fail flag not yet everywhere is not a conflict")
	}
	later, err := buildSnapshot(views)
	if err != nil {
		t.Fatal(err)
	}
	settleDisputes(first, later, start.Add(disputeSettleTime))
	if later.ViewsConsistent || later.SlotsInConflict != 0 {
		t.Errorf("consistent %v slots in conflict %d, want false 0", later.ViewsConsistent, later.SlotsInConflict)
	}
}

// A refresh that misses one side of a conflict (the view that disagrees
// did not answer in time) does not restart its settling clock; a dispute
// gone for longer than disputeGap does.
func TestConsistencyGapKeepsAge(t *testing.T) {
	bClaims := append([]string(nil), healthyLines...)
	bClaims[1] = idB + " 127.0.0.1:17101@27101 master - 0 0 2 connected 0 5461-10922"
	both := []nodeView{
		testView(t, idB, bClaims, 6, true, masterRepl(0)),
		testView(t, idC, healthyLines, 6, true, masterRepl(0)),
	}
	onlyB := both[:1]
	start := time.Unix(1000, 0)
	step := func(prev *Snapshot, views []nodeView, at time.Duration) *Snapshot {
		t.Helper()
		snap, err := buildSnapshot(views)
		if err != nil {
			t.Fatal(err)
		}
		settleDisputes(prev, snap, start.Add(at))
		return snap
	}
	s := step(nil, both, 0)
	s = step(s, onlyB, 4*time.Second) // C missed: no dispute seen
	if !s.ViewsConsistent {
		t.Error("a missed view is not a conflict")
	}
	s = step(s, both, disputeSettleTime)
	if s.ViewsConsistent || s.SlotsInConflict != 1 {
		t.Errorf("after a 4 s gap the dispute restarted its clock: consistent %v in conflict %d", s.ViewsConsistent, s.SlotsInConflict)
	}

	s = step(nil, both, 0)
	s = step(s, onlyB, time.Second)
	s = step(s, onlyB, disputeGap+time.Second) // gone for longer than the gap
	s = step(s, both, disputeSettleTime)
	if !s.ViewsConsistent {
		t.Error("a dispute gone for longer than disputeGap kept its old age")
	}
}
