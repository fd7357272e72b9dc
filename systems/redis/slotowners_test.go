package redis

import (
	"errors"
	"testing"

	"github.com/failover-exporter/failover_exporter/systems/redis/proto"
)

// The write canary's slot map (redisproto.NewSlotMap) and the slot command's owners
// (Snapshot.slotOwnerAddrs) name, for every slot, the owner the snapshot
// behind /metrics names: one rule. The cases are those where a simpler rule
// would not: a view that has not heard of a failover (listed first, as a
// seed would be), a seed serving another cluster.
func TestSlotOwnershipOneRule(t *testing.T) {
	promoted := []string{
		idA + " 127.0.0.1:17100@27100 master,fail - 0 0 1 disconnected",
		healthyLines[1], healthyLines[2],
		idD + " 127.0.0.1:17103@27103 master - 0 0 7 connected 0-5460",
		healthyLines[4], healthyLines[5],
	}
	foreign := testView(t, idA, []string{
		"1111111111111111111111111111111111111111 127.0.0.1:18000@28000 master - 0 0 9 connected 0-16383",
	}, 9, true, masterRepl(0))
	foreign.Nodes[0].Flags.Myself, foreign.Addr = true, "127.0.0.1:18000"
	cases := []struct {
		name  string
		views []nodeView
		// want is the owner's address of slots 0, 5461 and 16383.
		want [3]string
	}{
		{"healthy", healthyViews(t), [3]string{addrOf[idA], addrOf[idB], addrOf[idC]}},
		{"C has not heard of D's promotion", []nodeView{
			testView(t, idC, failedALines, 6, true, masterRepl(0)),
			testView(t, idB, promoted, 7, true, masterRepl(0)),
			testView(t, idD, promoted, 7, true, masterRepl(0)),
		}, [3]string{addrOf[idD], addrOf[idB], addrOf[idC]}},
		{"a seed serves another cluster", append([]nodeView{foreign}, healthyViews(t)...),
			[3]string{addrOf[idA], addrOf[idB], addrOf[idC]}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			snap, err := buildSnapshot(c.views)
			if err != nil {
				t.Fatal(err)
			}
			protoViews := make([]redisproto.View, len(c.views))
			for i, v := range c.views {
				protoViews[i] = v.View
			}
			slots, err := redisproto.NewSlotMap(protoViews)
			if err != nil {
				t.Fatal(err)
			}
			addrs := snap.slotOwnerAddrs()
			byID := map[string]Node{}
			for _, n := range snap.Nodes {
				byID[n.ID] = n
			}
			for _, r := range snap.SlotRanges {
				for slot := r.First; slot <= r.Last; slot++ {
					owner, ok := slots.Owner(slot)
					if ok != (r.Owner != "") || owner.ID != r.Owner || owner.Addr != byID[r.Owner].Addr {
						t.Fatalf("slot %d: canary's owner %+v, snapshot's %s at %s", slot, owner, r.Owner, byID[r.Owner].Addr)
					}
					if want := byID[r.Owner].Addr; addrs[slot] != want {
						t.Fatalf("slot %d: slot command's owner %s, snapshot's %s", slot, addrs[slot], want)
					}
				}
			}
			if got := [3]string{addrs[0], addrs[5461], addrs[16383]}; got != c.want {
				t.Errorf("owners of slots 0, 5461, 16383: %v, want %v", got, c.want)
			}
		})
	}
}

// Unassigned slots, and owners without an address, print as NoOwner.
func TestSlotOwnerAddrsNoOwner(t *testing.T) {
	snap := &Snapshot{
		Nodes:      []Node{{ID: "a", Addr: "127.0.0.1:1"}, {ID: "b"}},
		SlotRanges: []SlotRange{{0, 99, "a"}, {100, 199, ""}, {200, redisproto.SlotCount - 1, "b"}},
	}
	addrs := snap.slotOwnerAddrs()
	if addrs[0] != "127.0.0.1:1" || addrs[99] != "127.0.0.1:1" || addrs[100] != NoOwner || addrs[redisproto.SlotCount-1] != NoOwner {
		t.Errorf("owners: %s %s %s %s", addrs[0], addrs[99], addrs[100], addrs[redisproto.SlotCount-1])
	}
}

// The slot command reports that no seed answered, naming each seed's error.
func TestNoNodeAnsweredError(t *testing.T) {
	seedErr := errors.New("127.0.0.1:1: connect: refused")
	err := error(&noNodeAnsweredError{errs: []error{seedErr}})
	if !errors.Is(err, seedErr) || err.Error() != "no node answered: 127.0.0.1:1: connect: refused" {
		t.Errorf("err = %v", err)
	}
	if (&noNodeAnsweredError{}).Error() != "no node answered" {
		t.Error("without errors")
	}
}
