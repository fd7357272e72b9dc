package redis

import (
	"strings"
	"testing"
)

// onHosts rewrites the healthy topology so that each node listens on the
// given IP instead of 127.0.0.1.
func onHosts(t *testing.T, ips map[string]string, zones map[string]string) []nodeView {
	t.Helper()
	lines := make([]string, len(healthyLines))
	for i, line := range healthyLines {
		id := line[:40]
		lines[i] = strings.Replace(line, "127.0.0.1:", ips[id]+":", 1)
	}
	var views []nodeView
	for _, v := range healthyViews(t) {
		id := v.Self().ID
		nv := testView(t, id, lines, 6, true, v.Replication)
		nv.Addr = strings.Replace(v.Addr, "127.0.0.1:", ips[id]+":", 1)
		nv.Zone = zones[id]
		views = append(views, nv)
	}
	return views
}

func TestFailureDomains(t *testing.T) {
	// A and its replica D share 10.0.0.1; B/E and C/F are split.
	ips := map[string]string{
		idA: "10.0.0.1", idD: "10.0.0.1",
		idB: "10.0.0.2", idE: "10.0.0.3",
		idC: "10.0.0.3", idF: "10.0.0.2",
	}
	snap, err := buildSnapshot(onHosts(t, ips, nil))
	if err != nil {
		t.Fatal(err)
	}
	if snap.SlotsOneHost != 5461 || snap.ZonesKnown {
		t.Errorf("slots on one host %d (want 5461, A's), zones known %v", snap.SlotsOneHost, snap.ZonesKnown)
	}
	if a := nodeByID(t, snap, idA); a.ReplicasOtherHost != 0 || a.HealthyReplicas != 1 {
		t.Errorf("A: %d replicas on another host, want 0", a.ReplicasOtherHost)
	}
	if b := nodeByID(t, snap, idB); b.ReplicasOtherHost != 1 || b.HasZoneSpread {
		t.Errorf("B: %+v", b)
	}

	// Zones: B and its replica E are both in z1 (different hosts, same
	// zone); everyone else is spread. Only masters whose copies all report
	// a zone are judged.
	zones := map[string]string{idA: "z1", idD: "z2", idB: "z1", idE: "z1", idC: "z2", idF: "z1"}
	snap, err = buildSnapshot(onHosts(t, ips, zones))
	if err != nil {
		t.Fatal(err)
	}
	if !snap.ZonesKnown || snap.SlotsOneZone != 5462 || snap.SlotsOneHost != 5461 {
		t.Errorf("zones known %v, slots in one zone %d (want 5462, B's), on one host %d", snap.ZonesKnown, snap.SlotsOneZone, snap.SlotsOneHost)
	}
	if b := nodeByID(t, snap, idB); !b.HasZoneSpread || b.ReplicasOtherZone != 0 {
		t.Errorf("B: %+v", b)
	}
	delete(zones, idF) // C's replica reports no zone: C is not judged
	snap, err = buildSnapshot(onHosts(t, ips, zones))
	if err != nil {
		t.Fatal(err)
	}
	if c := nodeByID(t, snap, idC); c.HasZoneSpread || snap.SlotsOneZone != 5462 {
		t.Errorf("C judged without its replica's zone: %+v, slots in one zone %d", c, snap.SlotsOneZone)
	}

	// A master without a healthy replica is SlotsWithoutReplica, not this.
	views := onHosts(t, ips, nil)
	views[3].Replication = replicationInfo{MasterLinkUp: false} // D's link down
	snap, err = buildSnapshot(views)
	if err != nil {
		t.Fatal(err)
	}
	if snap.SlotsOneHost != 0 || snap.SlotsWithoutReplica != 5461 {
		t.Errorf("slots on one host %d, without replica %d", snap.SlotsOneHost, snap.SlotsWithoutReplica)
	}
}
