package redis

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/failover-exporter/failover_exporter/internal/redisproto"
)

// mergeSlotOwnersBySlot is mergeSlotOwners as it was first written: every
// view painted into a full slot table and compared slot by slot. It is the
// reference the faster version must agree with.
func mergeSlotOwnersBySlot(views []nodeView, members map[string]bool) (owners [redisproto.SlotCount]string, disputed []int) {
	var epochs [redisproto.SlotCount]uint64
	var claimed, differs [redisproto.SlotCount]bool
	var first, current [redisproto.SlotCount]string
	for vi := range views {
		current = [redisproto.SlotCount]string{}
		for _, line := range views[vi].Nodes {
			if !members[line.ID] {
				continue
			}
			for _, r := range line.Slots {
				for slot := r.First; slot <= r.Last; slot++ {
					current[slot] = line.ID
					if !claimed[slot] || line.ConfigEpoch > epochs[slot] {
						owners[slot], epochs[slot], claimed[slot] = line.ID, line.ConfigEpoch, true
					}
				}
			}
		}
		if vi == 0 {
			first = current
			continue
		}
		for slot := range current {
			differs[slot] = differs[slot] || current[slot] != first[slot]
		}
	}
	for slot, d := range differs {
		if d {
			disputed = append(disputed, slot)
		}
	}
	return owners, disputed
}

// randomSlotViews builds views of nodes that split the slots into random
// ranges, then disturbs some views the ways real ones differ: lines in
// another order, a range split in two, a range given to another node, an
// overlapping claim, a non-member's claim.
func randomSlotViews(r *rand.Rand, nodes, views int) ([]nodeView, map[string]bool) {
	ids := make([]string, nodes)
	members := map[string]bool{}
	for i := range ids {
		ids[i] = fmt.Sprintf("%040x", i+1)
		members[ids[i]] = i != nodes-1 // the last node is foreign
	}
	cuts := []int{0}
	for len(cuts) < nodes {
		cuts = append(cuts, 1+r.IntN(redisproto.SlotCount-1))
	}
	slices.Sort(cuts)
	cuts = slices.Compact(cuts)
	base := make([]clusterNodeLine, nodes)
	for i := range base {
		base[i] = clusterNodeLine{ID: ids[i], ConfigEpoch: uint64(i + 1)}
		if i < len(cuts) {
			last := redisproto.SlotCount - 1
			if i+1 < len(cuts) {
				last = cuts[i+1] - 1
			}
			base[i].Slots = []slotRange{{cuts[i], last}}
		}
	}
	out := make([]nodeView, views)
	for v := range out {
		lines := make([]clusterNodeLine, nodes)
		for i := range base {
			lines[i] = base[i]
			lines[i].Slots = slices.Clone(base[i].Slots)
		}
		r.Shuffle(len(lines), func(i, j int) { lines[i], lines[j] = lines[j], lines[i] })
		switch r.IntN(6) {
		case 0: // split a range in two
			l := &lines[r.IntN(nodes)]
			if len(l.Slots) == 1 && l.Slots[0].Last > l.Slots[0].First {
				mid := l.Slots[0].First + (l.Slots[0].Last-l.Slots[0].First)/2
				l.Slots = []slotRange{{l.Slots[0].First, mid}, {mid + 1, l.Slots[0].Last}}
			}
		case 1: // another node claims some slots, with a higher epoch
			l := &lines[r.IntN(nodes)]
			first := r.IntN(redisproto.SlotCount)
			l.Slots = append(l.Slots, slotRange{first, min(first+r.IntN(50), redisproto.SlotCount-1)})
			l.ConfigEpoch += uint64(nodes)
		case 2: // a node's slots are unassigned in this view
			lines[r.IntN(nodes)].Slots = nil
		}
		out[v] = nodeView{Addr: fmt.Sprintf("127.0.0.1:%d", 7000+v), Nodes: lines}
	}
	return out, members
}

func TestMergeSlotOwnersAgreesWithSlotBySlot(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	withDisputes := 0
	for i := 0; i < 300; i++ {
		views, members := randomSlotViews(r, 2+r.IntN(8), 1+r.IntN(5))
		wantOwners, wantDisputed := mergeSlotOwnersBySlot(views, members)
		owners, disputed := mergeSlotOwners(views, members)
		if *owners != wantOwners {
			t.Fatalf("case %d: owners differ from the slot-by-slot merge", i)
		}
		if !slices.Equal(disputed, wantDisputed) {
			t.Fatalf("case %d: disputed %d slots, slot by slot %d", i, len(disputed), len(wantDisputed))
		}
		if len(disputed) > 0 {
			withDisputes++
		}
	}
	// Both paths, the quick agreement and the slot-by-slot one, are taken.
	if withDisputes < 50 || withDisputes > 250 {
		t.Errorf("%d of 300 random cases have disputes; the generator no longer exercises both paths", withDisputes)
	}
}

// Views that agree, in any line order and however they cut their ranges,
// dispute nothing.
func TestMergeSlotOwnersAgreeingViews(t *testing.T) {
	a := testView(t, idA, healthyLines, 6, true, masterRepl(0))
	reversed := slices.Clone(healthyLines)
	slices.Reverse(reversed)
	b := testView(t, idB, reversed, 6, true, masterRepl(0))
	for i, l := range b.Nodes {
		if l.ID == idC { // "10923-16383" as two ranges
			b.Nodes[i].Slots = []slotRange{{10923, 12000}, {12001, 16383}}
		}
	}
	members := map[string]bool{idA: true, idB: true, idC: true, idD: true, idE: true, idF: true}
	owners, disputed := mergeSlotOwners([]nodeView{a, b}, members)
	if len(disputed) != 0 {
		t.Errorf("%d slots disputed between agreeing views", len(disputed))
	}
	if owners[0] != idA || owners[5461] != idB || owners[16383] != idC {
		t.Errorf("owners: %s %s %s", owners[0], owners[5461], owners[16383])
	}
}

// benchmarkMerge runs merge over the views of a 100-node cluster.
func benchmarkMerge(b *testing.B, merge func([]nodeView, map[string]bool)) {
	views := views100Nodes(b)
	members := map[string]bool{}
	for _, l := range views[0].Nodes {
		members[l.ID] = true
	}
	b.ReportAllocs()
	for b.Loop() {
		merge(views, members)
	}
}

func BenchmarkMergeSlotOwners100Nodes(b *testing.B) {
	benchmarkMerge(b, func(v []nodeView, m map[string]bool) { mergeSlotOwners(v, m) })
}

// The slot-by-slot reference, for the ratio in one run.
func BenchmarkMergeSlotOwnersBySlot100Nodes(b *testing.B) {
	benchmarkMerge(b, func(v []nodeView, m map[string]bool) { mergeSlotOwnersBySlot(v, m) })
}
