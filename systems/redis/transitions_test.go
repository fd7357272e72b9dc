package redis

import "testing"

func snapshotOf(nodes ...Node) *Snapshot { return &Snapshot{Nodes: nodes} }

func TestApplyTransitions(t *testing.T) {
	master := func(id string, slots int) Node { return Node{ID: id, Role: RoleMaster, Slots: slots} }
	replica := func(id, of string) Node { return Node{ID: id, Role: RoleReplica, MasterID: of} }

	tests := []struct {
		name          string
		prev, next    *Snapshot
		wantFailovers uint64
		wantChanges   map[string]uint64
	}{
		{
			name:        "first snapshot starts at zero",
			prev:        nil,
			next:        snapshotOf(master(idA, 5461), replica(idD, idA)),
			wantChanges: map[string]uint64{idA: 0, idD: 0},
		},
		{
			name:        "nothing changed",
			prev:        snapshotOf(master(idA, 5461), replica(idD, idA)),
			next:        snapshotOf(master(idA, 5461), replica(idD, idA)),
			wantChanges: map[string]uint64{idA: 0, idD: 0},
		},
		{
			name:          "automatic failover: replica promoted, dead master keeps its role",
			prev:          snapshotOf(master(idA, 5461), replica(idD, idA)),
			next:          snapshotOf(master(idA, 0), master(idD, 5461)),
			wantFailovers: 1,
			wantChanges:   map[string]uint64{idA: 0, idD: 1},
		},
		{
			name:          "manual failover: roles swap, counted once",
			prev:          snapshotOf(master(idA, 5461), replica(idD, idA)),
			next:          snapshotOf(replica(idA, idD), master(idD, 5461)),
			wantFailovers: 1,
			wantChanges:   map[string]uint64{idA: 1, idD: 1},
		},
		{
			name:        "replica turned into an empty master: a role change, not a failover",
			prev:        snapshotOf(master(idA, 5461), replica(idD, idA)),
			next:        snapshotOf(master(idA, 5461), master(idD, 0)),
			wantChanges: map[string]uint64{idA: 0, idD: 1},
		},
		{
			name: "counters carried forward and a node disappearing",
			prev: func() *Snapshot {
				s := snapshotOf(Node{ID: idA, Role: RoleMaster, Slots: 5461, RoleChanges: 3}, Node{ID: idD, Role: RoleReplica, RoleChanges: 2})
				s.Failovers = 5
				return s
			}(),
			next:          snapshotOf(master(idA, 5461)),
			wantFailovers: 5,
			wantChanges:   map[string]uint64{idA: 3},
		},
		{
			name:        "a node that comes back starts again at zero",
			prev:        snapshotOf(master(idA, 5461)),
			next:        snapshotOf(master(idA, 5461), replica(idD, idA)),
			wantChanges: map[string]uint64{idA: 0, idD: 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			carryTransitions(tt.prev, tt.next)
			if tt.next.Failovers != tt.wantFailovers {
				t.Errorf("failovers = %d, want %d", tt.next.Failovers, tt.wantFailovers)
			}
			if len(tt.next.Nodes) != len(tt.wantChanges) {
				t.Fatalf("%d nodes, want %d", len(tt.next.Nodes), len(tt.wantChanges))
			}
			for _, n := range tt.next.Nodes {
				if n.RoleChanges != tt.wantChanges[n.ID] {
					t.Errorf("node %s role changes = %d, want %d", n.ID[:6], n.RoleChanges, tt.wantChanges[n.ID])
				}
			}
		})
	}
}
