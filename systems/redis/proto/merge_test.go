package redisproto

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// mergeSlotOwnersBySlot is mergeSlotOwners as it was first written: every
// view painted into a full slot table and compared slot by slot. It is the
// reference the faster version must agree with.
func mergeSlotOwnersBySlot(views []*View, members map[string]bool) (owners [SlotCount]string, disputed []int) {
	var epochs [SlotCount]uint64
	var claimed, differs [SlotCount]bool
	var first, current [SlotCount]string
	for vi := range views {
		current = [SlotCount]string{}
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
func randomSlotViews(r *rand.Rand, nodes, views int) ([]*View, map[string]bool) {
	ids := make([]string, nodes)
	members := map[string]bool{}
	for i := range ids {
		ids[i] = fmt.Sprintf("%040x", i+1)
		members[ids[i]] = i != nodes-1 // the last node is foreign
	}
	cuts := []int{0}
	for len(cuts) < nodes {
		cuts = append(cuts, 1+r.IntN(SlotCount-1))
	}
	slices.Sort(cuts)
	cuts = slices.Compact(cuts)
	base := make([]NodeLine, nodes)
	for i := range base {
		base[i] = NodeLine{ID: ids[i], ConfigEpoch: uint64(i + 1)}
		if i < len(cuts) {
			last := SlotCount - 1
			if i+1 < len(cuts) {
				last = cuts[i+1] - 1
			}
			base[i].Slots = []SlotRange{{cuts[i], last}}
		}
	}
	out := make([]*View, views)
	for v := range out {
		lines := make([]NodeLine, nodes)
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
				l.Slots = []SlotRange{{l.Slots[0].First, mid}, {mid + 1, l.Slots[0].Last}}
			}
		case 1: // another node claims some slots, with a higher epoch
			l := &lines[r.IntN(nodes)]
			first := r.IntN(SlotCount)
			l.Slots = append(l.Slots, SlotRange{first, min(first+r.IntN(50), SlotCount-1)})
			l.ConfigEpoch += uint64(nodes)
		case 2: // a node's slots are unassigned in this view
			lines[r.IntN(nodes)].Slots = nil
		}
		out[v] = &View{Addr: fmt.Sprintf("127.0.0.1:%d", 7000+v), Nodes: lines}
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
	a := testView(t, idA, healthyLines)
	reversed := slices.Clone(healthyLines)
	slices.Reverse(reversed)
	b := testView(t, idB, reversed)
	for i, l := range b.Nodes {
		if l.ID == idC { // "10923-16383" as two ranges
			b.Nodes[i].Slots = []SlotRange{{10923, 12000}, {12001, 16383}}
		}
	}
	members := map[string]bool{idA: true, idB: true, idC: true, idD: true, idE: true, idF: true}
	owners, disputed := mergeSlotOwners([]*View{a, b}, members)
	if len(disputed) != 0 {
		t.Errorf("%d slots disputed between agreeing views", len(disputed))
	}
	if owners[0] != idA || owners[5461] != idB || owners[16383] != idC {
		t.Errorf("owners: %s %s %s", owners[0], owners[5461], owners[16383])
	}
}

// benchmarkMerge runs merge over the views of a 100-node cluster.
func benchmarkMerge(b *testing.B, merge func([]*View, map[string]bool)) {
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
	benchmarkMerge(b, func(v []*View, m map[string]bool) { mergeSlotOwners(v, m) })
}

// The slot-by-slot reference, for the ratio in one run.
func BenchmarkMergeSlotOwnersBySlot100Nodes(b *testing.B) {
	benchmarkMerge(b, func(v []*View, m map[string]bool) { mergeSlotOwnersBySlot(v, m) })
}

// healthyLines is a 3+3 cluster: A, B, C masters; D, E, F their replicas.
var healthyLines = []string{
	idA + " 127.0.0.1:17100@27100 master - 0 0 1 connected 0-5460",
	idB + " 127.0.0.1:17101@27101 master - 0 0 2 connected 5461-10922",
	idC + " 127.0.0.1:17102@27102 master - 0 0 3 connected 10923-16383",
	idD + " 127.0.0.1:17103@27103 slave " + idA + " 0 0 1 connected",
	idE + " 127.0.0.1:17104@27104 slave " + idB + " 0 0 2 connected",
	idF + " 127.0.0.1:17105@27105 slave " + idC + " 0 0 3 connected",
}

// testView is the view node self has of a topology given as CLUSTER NODES
// lines; self's line gets the myself flag.
func testView(t testing.TB, self string, lines []string) *View {
	t.Helper()
	var b strings.Builder
	addr := ""
	for _, line := range lines {
		fields := strings.Fields(line)
		if fields[0] == self {
			fields[2] = "myself," + fields[2]
			addr, _, _ = strings.Cut(fields[1], "@")
		}
		b.WriteString(strings.Join(fields, " ") + "\n")
	}
	v, err := ParseView(addr, b.String(), "cluster_state:ok\r\ncluster_current_epoch:6\r\n")
	if err != nil {
		t.Fatalf("test topology: %v", err)
	}
	return &v
}

// views100Nodes is what 50 masters and their 50 replicas, all reached and
// agreeing, tell one refresh.
func views100Nodes(b *testing.B) []*View {
	var text strings.Builder
	ids := make([]string, 100)
	for i := range 50 {
		ids[i], ids[50+i] = fmt.Sprintf("%040x", i), fmt.Sprintf("%040x", 1000+i)
		first, last := i*SlotCount/50, (i+1)*SlotCount/50-1
		fmt.Fprintf(&text, "%s 10.0.0.%d:6379@16379 master - 0 0 %d connected %d-%d\n", ids[i], i, i+1, first, last)
		fmt.Fprintf(&text, "%s 10.0.1.%d:6379@16379 slave %s 0 0 %d connected\n", ids[50+i], i, ids[i], i+1)
	}
	views := make([]*View, 100)
	for i, id := range ids {
		lines, err := ParseClusterNodes(text.String())
		if err != nil {
			b.Fatal(err)
		}
		for j := range lines {
			lines[j].Flags.Myself = lines[j].ID == id
		}
		views[i] = &View{Addr: lines[i].Addr, Nodes: lines, Info: ClusterInfo{StateOK: true, CurrentEpoch: 50}}
	}
	return views
}
