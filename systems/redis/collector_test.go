package redis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"

	"github.com/failover-exporter/failover_exporter/collector/exposition"
	"github.com/failover-exporter/failover_exporter/collector/watch"
	"github.com/failover-exporter/failover_exporter/collector/watch/watchtest"
	"github.com/failover-exporter/failover_exporter/systems/redis/proto"
)

// testSnapshot is a small cluster: a master with one replica and a failed
// master that the exporter cannot reach.
func testSnapshot() *Snapshot {
	return &Snapshot{
		StateOK: true, SlotsOK: 10001, SlotsFail: 383, SlotsUnassigned: 6000,
		SlotsWithoutReplica: 383, Masters: 2, KnownNodes: 3, CurrentEpoch: 7, ViewsConsistent: true, Failovers: 2,
		SlotsInMigration: 1, SlotsOneHost: 0, SlotsOneZone: 10001, ZonesKnown: true,
		Nodes: []Node{
			{ID: idA, Addr: "127.0.0.1:7000", Role: RoleMaster, State: NodeStateOK, LinkConnected: true,
				ConfigEpoch: 7, Slots: 10001, HealthyReplicas: 1, Reachable: true, ClusterStateOK: true, Migrating: []redisproto.SlotMove{{Slot: 7, NodeID: idB}},
				Zone: "z1", ReplicasOtherHost: 1, HasZoneSpread: true, ReplicasOtherZone: 0,
				Keys: 42, MemoryUsed: 2e6, RoleChanges: 1, ErrorReplies: map[string]uint64{"MOVED": 3},
				HasBacklog: true, BacklogBytes: 1048576, BacklogHeld: 4096, ReplOffset: 123456, Syncs: &SyncCounts{Full: 2, PartialOK: 5, PartialErr: 1}},
			{ID: idB, Addr: "127.0.0.1:7001", Role: RoleMaster, State: NodeStateFail, ConfigEpoch: 2, Slots: 383},
			{ID: idD, Addr: "127.0.0.1:7003", Role: RoleReplica, MasterID: idA, State: NodeStateOK, LinkConnected: true,
				ConfigEpoch: 7, Reachable: true, ClusterStateOK: true, MasterLinkUp: true, Keys: 42, MemoryUsed: 1e6,
				HasReplicationLag: true, ReplicationLagBytes: 14, HasPartialResync: true, PartialResync: true, RoleChanges: 1},
		},
		Foreign: []ForeignNode{
			{ID: idE, Addr: "127.0.0.1:7004", Reason: ForeignNotListed, Role: RoleReplica, KnownNodes: 4},
		},
	}
}

// stableNames are the metrics whose values do not depend on the clock.
func stableNames() []string {
	return slices.DeleteFunc(exposition.Names(Sets()...), func(n string) bool {
		return n == "redis_cluster_exporter_refresh_duration_seconds" ||
			n == "redis_cluster_exporter_last_refresh_success_timestamp_seconds"
	})
}

func TestCollector(t *testing.T) {
	c := NewCollector()
	c.Set("main", watchtest.Static[Snapshot]("main", testSnapshot(), nil))
	if err := testutil.CollectAndCompare(c, strings.NewReader(expectedExposition), stableNames()...); err != nil {
		t.Error(err)
	}
	if problems, err := testutil.CollectAndLint(c); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %+v", err, problems)
	}
}

func TestCollectorDoesNotServeStaleSnapshot(t *testing.T) {
	calls := 0
	w := watch.New("main", time.Minute, time.Second, func(context.Context, *Snapshot) (*Snapshot, error) {
		calls++
		if calls == 1 {
			return testSnapshot(), nil
		}
		return nil, errors.New("no node answered")
	}, log.NewNopLogger())
	w.RefreshOnce(context.Background())
	w.RefreshOnce(context.Background())
	c := NewCollector()
	c.Set("main", w)
	want := `
# HELP redis_cluster_up 1 if the last refresh read the cluster topology from at least one node.
# TYPE redis_cluster_up gauge
redis_cluster_up{redis_cluster="main"} 0
# HELP redis_cluster_exporter_refreshes_total Refreshes of this cluster attempted since the exporter started.
# TYPE redis_cluster_exporter_refreshes_total counter
redis_cluster_exporter_refreshes_total{redis_cluster="main"} 2
# HELP redis_cluster_exporter_refresh_failures_total Refreshes of this cluster that failed since the exporter started.
# TYPE redis_cluster_exporter_refresh_failures_total counter
redis_cluster_exporter_refresh_failures_total{redis_cluster="main"} 1
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), stableNames()...); err != nil {
		t.Error(err)
	}
}

func TestCollectorSetRemove(t *testing.T) {
	c := NewCollector()
	c.Set("a", watchtest.Static[Snapshot]("a", testSnapshot(), nil))
	c.Set("b", watchtest.Static[Snapshot]("b", testSnapshot(), nil))
	// Per cluster of testSnapshot: 5 health series, 16 cluster series (with
	// the zone row of slots_in_one_failure_domain: it has zones), one series
	// for its foreign node, and node series: 27 for the reachable master
	// (with its host and zone spread, its 5 error reply counts, its backlog and offset and its 3 sync counts), 13 for the unreachable one (nothing
	// read from the node itself), 21 for the replica (its lag, partial resync, master
	// link and that it is not syncing).
	if got := testutil.CollectAndCount(c); got != 2*(5+16+1+31+13+21) {
		t.Errorf("two clusters: %d series, want %d", got, 2*(5+16+1+31+13+21))
	}
	c.Set("b", watchtest.Static[Snapshot]("b", &Snapshot{ViewsConsistent: true}, nil))
	c.Remove("a")
	// A cluster without nodes: the health and cluster series only, without
	// a zone row.
	if got := testutil.CollectAndCount(c); got != 5+15 {
		t.Errorf("after replacing b and removing a: %d series, want %d", got, 5+15)
	}
	c.Remove("b")
	if got := testutil.CollectAndCount(c); got != 0 {
		t.Errorf("after removing all: %d series, want 0", got)
	}
}

func TestMetricNamesAreCollected(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	c := NewCollector()
	snap := withBudget(withMigrations(withSlotStats(withEpisodes(testSnapshot()))))
	// A second replica of A, in a full sync, and a third loading one.
	snap.Nodes = append(snap.Nodes, Node{ID: idE, Addr: "127.0.0.1:7005", Role: RoleReplica, MasterID: idA, State: NodeStateOK, LinkConnected: true,
		Reachable: true, ClusterStateOK: true, Sync: replicaSync{InProgress: true, ReadBytes: 1000, TotalBytes: 4000}},
		Node{ID: idF, Addr: "127.0.0.1:7006", Role: RoleReplica, MasterID: idA, State: NodeStateOK, Loading: true, Sync: replicaSync{InProgress: true},
			Load: loadProgress{Read: true, LoadedBytes: 100, TotalBytes: 400, ETASeconds: 9}})
	c.Set("main", watchtest.Static[Snapshot]("main", snap, nil))
	reg.MustRegister(c)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, f := range families {
		got[f.GetName()] = true
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "cluster" {
					t.Errorf("%s has a label named cluster", f.GetName())
				}
			}
		}
	}
	for _, name := range exposition.Names(Sets()...) {
		if !got[name] {
			t.Errorf("the metric tables list %s but the collector did not emit it", name)
		}
		delete(got, name)
	}
	for name := range got {
		t.Errorf("collector emitted %s, missing from the metric tables", name)
	}
}

// The text path served on /metrics and the prometheus.Collector path must
// produce the same families, series and values.
func TestWriteTextMatchesCollect(t *testing.T) {
	c := NewCollector()
	c.Set("main", watchtest.Static[Snapshot]("main", withEpisodes(testSnapshot()), nil))
	c.Set("other", watchtest.Static[Snapshot]("other", nil, errors.New("no node answered")))

	plain, err := exposition.PlainText(c)
	if err != nil {
		t.Fatal(err)
	}
	text := string(plain)
	if err := testutil.CollectAndCompare(c, strings.NewReader(text)); err != nil {
		t.Errorf("text rendering differs from Collect: %v", err)
	}
	for _, line := range []string{
		`redis_cluster_up{redis_cluster="other"} 0`,
		`redis_cluster_node_slots{address="127.0.0.1:7000",node_id="` + idA + `",redis_cluster="main"} 10001`,
		`redis_cluster_failover_seconds_bucket{redis_cluster="main",le="2.5"} 1`,
		`redis_cluster_slots_unserved_episode_seconds_sum{redis_cluster="main"} 23`,
	} {
		if !strings.Contains(text, line+"\n") {
			t.Errorf("text lacks %s:\n%s", line, text)
		}
	}
	if strings.Contains(text, `redis_cluster_state_ok{redis_cluster="other"}`) {
		t.Error("text serves snapshot series of a cluster whose refresh failed")
	}
}

// snapshot100Nodes is a cluster of 50 masters with one replica each.
func snapshot100Nodes() *Snapshot {
	snap := &Snapshot{StateOK: true, SlotsOK: redisproto.SlotCount, Masters: 50, KnownNodes: 100, ViewsConsistent: true}
	for i := range 50 {
		masterID := fmt.Sprintf("%040x", i)
		snap.Nodes = append(snap.Nodes,
			Node{ID: masterID, Addr: fmt.Sprintf("10.0.0.%d:6379", i), Role: RoleMaster, State: NodeStateOK,
				LinkConnected: true, ConfigEpoch: uint64(i), Slots: redisproto.SlotCount / 50, HealthyReplicas: 1,
				ReplicasOtherHost: 1, Reachable: true, Keys: 1e6, MemoryUsed: 1e9},
			Node{ID: fmt.Sprintf("%040x", 1000+i), Addr: fmt.Sprintf("10.0.1.%d:6379", i), Role: RoleReplica,
				MasterID: masterID, State: NodeStateOK, LinkConnected: true, ConfigEpoch: uint64(i),
				Reachable: true, MasterLinkUp: true, HasReplicationLag: true, Keys: 1e6, MemoryUsed: 1e9})
	}
	return snap
}

func BenchmarkCollect100Nodes(b *testing.B) {
	snap := snapshot100Nodes()
	c := NewCollector()
	c.Set("bench", watchtest.Static[Snapshot]("bench", snap, nil))
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	var out strings.Builder
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		families, err := reg.Gather()
		if err != nil {
			b.Fatal(err)
		}
		out.Reset()
		enc := expfmt.NewEncoder(&out, expfmt.NewFormat(expfmt.TypeTextPlain))
		for _, f := range families {
			if err := enc.Encode(f); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(out.Len()), "bytes/scrape")
}

// expectedExposition is the exposition of testSnapshot, less the series
// whose values depend on the clock.
const expectedExposition = `
# HELP redis_cluster_current_epoch Highest cluster current epoch reported by a reachable node. As of the last refresh.
# TYPE redis_cluster_current_epoch gauge
redis_cluster_current_epoch{redis_cluster="main"} 7
# HELP redis_cluster_exporter_refresh_failures_total Refreshes of this cluster that failed since the exporter started.
# TYPE redis_cluster_exporter_refresh_failures_total counter
redis_cluster_exporter_refresh_failures_total{redis_cluster="main"} 0
# HELP redis_cluster_exporter_refreshes_total Refreshes of this cluster attempted since the exporter started.
# TYPE redis_cluster_exporter_refreshes_total counter
redis_cluster_exporter_refreshes_total{redis_cluster="main"} 1
# HELP redis_cluster_failovers_total Times a shard's master changed to a node that was its replica, observed by this exporter. As of the last refresh.
# TYPE redis_cluster_failovers_total counter
redis_cluster_failovers_total{redis_cluster="main"} 2
# HELP redis_cluster_node_partial_resync_possible For a replica whose master was read: 1 if, should its link break now, it could resume from the master's replication backlog (the offset the master last saw it acknowledge is still in it), 0 if it would need a full sync of the whole data set, during which its shard has no usable replica. From the master's INFO replication (repl_backlog_*). As of the last refresh.
# TYPE redis_cluster_node_partial_resync_possible gauge
redis_cluster_node_partial_resync_possible{address="127.0.0.1:7003",node_id="c096849e540e19e62780faa5bf76a837fe1752f6",redis_cluster="main"} 1
# HELP redis_cluster_node_repl_backlog_bytes For a master: the size of its replication backlog (repl-backlog-size); 0 while it has none (no replica since its start). As of the last refresh.
# TYPE redis_cluster_node_repl_backlog_bytes gauge
redis_cluster_node_repl_backlog_bytes{address="127.0.0.1:7000",node_id="099acb3ad33355bfc624e555c95f92f2c4c98dbe",redis_cluster="main"} 1.048576e+06
# HELP redis_cluster_node_repl_backlog_history_bytes For a master: the replication stream its backlog holds (repl_backlog_histlen): how far behind a replica may fall and still resume without a full sync. As of the last refresh.
# TYPE redis_cluster_node_repl_backlog_history_bytes gauge
redis_cluster_node_repl_backlog_history_bytes{address="127.0.0.1:7000",node_id="099acb3ad33355bfc624e555c95f92f2c4c98dbe",redis_cluster="main"} 4096
# HELP redis_cluster_node_replicas_outside_failure_domain For a master with healthy replicas, how many are on another host (domain=host) or in another availability zone (domain=zone, when every copy reports one). As of the last refresh.
# TYPE redis_cluster_node_replicas_outside_failure_domain gauge
redis_cluster_node_replicas_outside_failure_domain{address="127.0.0.1:7000",domain="host",node_id="099acb3ad33355bfc624e555c95f92f2c4c98dbe",redis_cluster="main"} 1
redis_cluster_node_replicas_outside_failure_domain{address="127.0.0.1:7000",domain="zone",node_id="099acb3ad33355bfc624e555c95f92f2c4c98dbe",redis_cluster="main"} 0
# HELP redis_cluster_slots_in_one_failure_domain Hash slots whose master has healthy replicas, all in the master's failure domain: its host (IP), or its availability zone where every copy reports one (Valkey 8.1+). As of the last refresh.
# TYPE redis_cluster_slots_in_one_failure_domain gauge
redis_cluster_slots_in_one_failure_domain{domain="host",redis_cluster="main"} 0
redis_cluster_slots_in_one_failure_domain{domain="zone",redis_cluster="main"} 10001
# HELP redis_cluster_foreign_nodes Nodes that answered but are not members: not listed by the majority of slot-serving masters, or not listing them. As of the last refresh.
# TYPE redis_cluster_foreign_nodes gauge
redis_cluster_foreign_nodes{redis_cluster="main"} 1
# HELP redis_cluster_foreign_node_info Always 1 for a foreign node; reason is not_listed or not_listing_cluster, role what the node claims. As of the last refresh.
# TYPE redis_cluster_foreign_node_info gauge
redis_cluster_foreign_node_info{address="127.0.0.1:7004",node_id="40b05f86ee6521480c7d10fefca3163a70a1e6c3",reason="not_listed",redis_cluster="main",role="replica"} 1
# HELP redis_cluster_known_nodes Member nodes: listed by the majority of slot-serving masters (foreign nodes are counted apart). As of the last refresh.
# TYPE redis_cluster_known_nodes gauge
redis_cluster_known_nodes{redis_cluster="main"} 3
# HELP redis_cluster_masters Masters that own at least one hash slot. As of the last refresh.
# TYPE redis_cluster_masters gauge
redis_cluster_masters{redis_cluster="main"} 2
# HELP redis_cluster_node_cluster_state_ok 1 if the node itself reports cluster_state:ok, 0 if fail; for reachable members. Only masters that serve slots decide redis_cluster_state_ok. As of the last refresh.
# TYPE redis_cluster_node_cluster_state_ok gauge
redis_cluster_node_cluster_state_ok{address="127.0.0.1:7000",node_id="099acb3ad33355bfc624e555c95f92f2c4c98dbe",redis_cluster="main"} 1
redis_cluster_node_cluster_state_ok{address="127.0.0.1:7003",node_id="c096849e540e19e62780faa5bf76a837fe1752f6",redis_cluster="main"} 1
# HELP redis_cluster_node_config_epoch The node's config epoch. As of the last refresh.
# TYPE redis_cluster_node_config_epoch gauge
redis_cluster_node_config_epoch{address="127.0.0.1:7000",node_id="099acb3ad33355bfc624e555c95f92f2c4c98dbe",redis_cluster="main"} 7
redis_cluster_node_config_epoch{address="127.0.0.1:7001",node_id="a5d1837466ddee36fb8f66a06a54c9d80ece254f",redis_cluster="main"} 2
redis_cluster_node_config_epoch{address="127.0.0.1:7003",node_id="c096849e540e19e62780faa5bf76a837fe1752f6",redis_cluster="main"} 7
# HELP redis_cluster_node_importing_slots Slots the node is importing from another node. As of the last refresh.
# TYPE redis_cluster_node_importing_slots gauge
redis_cluster_node_importing_slots{address="127.0.0.1:7000",node_id="099acb3ad33355bfc624e555c95f92f2c4c98dbe",redis_cluster="main"} 0
redis_cluster_node_importing_slots{address="127.0.0.1:7003",node_id="c096849e540e19e62780faa5bf76a837fe1752f6",redis_cluster="main"} 0
# HELP redis_cluster_node_info Always 1; role is master or replica, master_id the id of a replica's master. As of the last refresh.
# TYPE redis_cluster_node_info gauge
redis_cluster_node_info{address="127.0.0.1:7000",master_id="",node_id="099acb3ad33355bfc624e555c95f92f2c4c98dbe",redis_cluster="main",role="master"} 1
redis_cluster_node_info{address="127.0.0.1:7001",master_id="",node_id="a5d1837466ddee36fb8f66a06a54c9d80ece254f",redis_cluster="main",role="master"} 1
redis_cluster_node_info{address="127.0.0.1:7003",master_id="099acb3ad33355bfc624e555c95f92f2c4c98dbe",node_id="c096849e540e19e62780faa5bf76a837fe1752f6",redis_cluster="main",role="replica"} 1
# HELP redis_cluster_node_keys Keys stored on the node (DBSIZE). As of the last refresh.
# TYPE redis_cluster_node_keys gauge
redis_cluster_node_keys{address="127.0.0.1:7000",node_id="099acb3ad33355bfc624e555c95f92f2c4c98dbe",redis_cluster="main"} 42
redis_cluster_node_keys{address="127.0.0.1:7003",node_id="c096849e540e19e62780faa5bf76a837fe1752f6",redis_cluster="main"} 42
# HELP redis_cluster_node_link_connected 1 if the cluster bus link to the node is connected, as another node sees it. As of the last refresh.
# TYPE redis_cluster_node_link_connected gauge
redis_cluster_node_link_connected{address="127.0.0.1:7000",node_id="099acb3ad33355bfc624e555c95f92f2c4c98dbe",redis_cluster="main"} 1
redis_cluster_node_link_connected{address="127.0.0.1:7001",node_id="a5d1837466ddee36fb8f66a06a54c9d80ece254f",redis_cluster="main"} 0
redis_cluster_node_link_connected{address="127.0.0.1:7003",node_id="c096849e540e19e62780faa5bf76a837fe1752f6",redis_cluster="main"} 1
# HELP redis_cluster_node_master 1 if the node is a master, 0 if a replica. As of the last refresh.
# TYPE redis_cluster_node_master gauge
redis_cluster_node_master{address="127.0.0.1:7000",node_id="099acb3ad33355bfc624e555c95f92f2c4c98dbe",redis_cluster="main"} 1
redis_cluster_node_master{address="127.0.0.1:7001",node_id="a5d1837466ddee36fb8f66a06a54c9d80ece254f",redis_cluster="main"} 1
redis_cluster_node_master{address="127.0.0.1:7003",node_id="c096849e540e19e62780faa5bf76a837fe1752f6",redis_cluster="main"} 0
# HELP redis_cluster_node_master_link_up For a replica, 1 if its replication link to its master is up. As of the last refresh.
# TYPE redis_cluster_node_master_link_up gauge
redis_cluster_node_master_link_up{address="127.0.0.1:7003",node_id="c096849e540e19e62780faa5bf76a837fe1752f6",redis_cluster="main"} 1
# HELP redis_cluster_node_sync_in_progress For a replica the exporter read: 1 while a full sync from its master is in progress (master_sync_in_progress: from the start of the RDB's transfer until it is loaded); its link is down and its shard has no usable copy in it meanwhile. As of the last refresh.
# TYPE redis_cluster_node_sync_in_progress gauge
redis_cluster_node_sync_in_progress{address="127.0.0.1:7003",node_id="c096849e540e19e62780faa5bf76a837fe1752f6",redis_cluster="main"} 0
# HELP redis_cluster_node_syncs_total Syncs the node served its replicas as a master since its start or CONFIG RESETSTAT, by result (sent for masters, and replicas that served any): full (a full sync of the whole data set), partial_ok (a reconnect resumed from its backlog), partial_err (a PSYNC it refused, which became a full sync). Full syncs repeating while a replica's link never comes up are a resync loop. From INFO stats (sync_full, sync_partial_ok, sync_partial_err). As of the last refresh.
# TYPE redis_cluster_node_syncs_total counter
redis_cluster_node_syncs_total{address="127.0.0.1:7000",node_id="099acb3ad33355bfc624e555c95f92f2c4c98dbe",redis_cluster="main",result="full"} 2
redis_cluster_node_syncs_total{address="127.0.0.1:7000",node_id="099acb3ad33355bfc624e555c95f92f2c4c98dbe",redis_cluster="main",result="partial_err"} 1
redis_cluster_node_syncs_total{address="127.0.0.1:7000",node_id="099acb3ad33355bfc624e555c95f92f2c4c98dbe",redis_cluster="main",result="partial_ok"} 5
# HELP redis_cluster_node_error_replies_total Error replies the node sent since its start or CONFIG RESETSTAT, by kind: MOVED and ASK (a client sent a key to a node that does not serve its slot: its view of the cluster is stale, or a migration runs), TRYAGAIN, CLUSTERDOWN, READONLY (a write sent to a replica, as to a demoted master); from INFO errorstats (Redis 6.2+, Valkey), absent where the server does not report them. As of the last refresh.
# TYPE redis_cluster_node_error_replies_total counter
redis_cluster_node_error_replies_total{address="127.0.0.1:7000",error="ASK",node_id="099acb3ad33355bfc624e555c95f92f2c4c98dbe",redis_cluster="main"} 0
redis_cluster_node_error_replies_total{address="127.0.0.1:7000",error="CLUSTERDOWN",node_id="099acb3ad33355bfc624e555c95f92f2c4c98dbe",redis_cluster="main"} 0
redis_cluster_node_error_replies_total{address="127.0.0.1:7000",error="MOVED",node_id="099acb3ad33355bfc624e555c95f92f2c4c98dbe",redis_cluster="main"} 3
redis_cluster_node_error_replies_total{address="127.0.0.1:7000",error="READONLY",node_id="099acb3ad33355bfc624e555c95f92f2c4c98dbe",redis_cluster="main"} 0
redis_cluster_node_error_replies_total{address="127.0.0.1:7000",error="TRYAGAIN",node_id="099acb3ad33355bfc624e555c95f92f2c4c98dbe",redis_cluster="main"} 0
# HELP redis_cluster_node_memory_used_bytes Memory the node uses (used_memory). As of the last refresh.
# TYPE redis_cluster_node_memory_used_bytes gauge
redis_cluster_node_memory_used_bytes{address="127.0.0.1:7000",node_id="099acb3ad33355bfc624e555c95f92f2c4c98dbe",redis_cluster="main"} 2e+06
redis_cluster_node_memory_used_bytes{address="127.0.0.1:7003",node_id="c096849e540e19e62780faa5bf76a837fe1752f6",redis_cluster="main"} 1e+06
# HELP redis_cluster_node_migrating_slots Slots the node is migrating to another node. As of the last refresh.
# TYPE redis_cluster_node_migrating_slots gauge
redis_cluster_node_migrating_slots{address="127.0.0.1:7000",node_id="099acb3ad33355bfc624e555c95f92f2c4c98dbe",redis_cluster="main"} 1
redis_cluster_node_migrating_slots{address="127.0.0.1:7003",node_id="c096849e540e19e62780faa5bf76a837fe1752f6",redis_cluster="main"} 0
# HELP redis_cluster_node_replication_offset_bytes For a master: its replication offset (master_repl_offset), the bytes of replication stream it has produced; its rate is the write rate its backlog must cover, and repl_backlog_bytes over that rate the seconds of writes a replica may miss and still resume. A restart without data or a full sync from another master can set it back. As of the last refresh.
# TYPE redis_cluster_node_replication_offset_bytes gauge
redis_cluster_node_replication_offset_bytes{address="127.0.0.1:7000",node_id="099acb3ad33355bfc624e555c95f92f2c4c98dbe",redis_cluster="main"} 123456
# HELP redis_cluster_node_replicas For a master, its healthy replicas (state ok, link to the master up). As of the last refresh.
# TYPE redis_cluster_node_replicas gauge
redis_cluster_node_replicas{address="127.0.0.1:7000",node_id="099acb3ad33355bfc624e555c95f92f2c4c98dbe",redis_cluster="main"} 1
redis_cluster_node_replicas{address="127.0.0.1:7001",node_id="a5d1837466ddee36fb8f66a06a54c9d80ece254f",redis_cluster="main"} 0
# HELP redis_cluster_node_replication_lag_bytes For a replica, its master's replication offset minus the offset the replica acknowledged. As of the last refresh.
# TYPE redis_cluster_node_replication_lag_bytes gauge
redis_cluster_node_replication_lag_bytes{address="127.0.0.1:7003",node_id="c096849e540e19e62780faa5bf76a837fe1752f6",redis_cluster="main"} 14
# HELP redis_cluster_node_role_changes_total Role changes of the node observed by this exporter. As of the last refresh.
# TYPE redis_cluster_node_role_changes_total counter
redis_cluster_node_role_changes_total{address="127.0.0.1:7000",node_id="099acb3ad33355bfc624e555c95f92f2c4c98dbe",redis_cluster="main"} 1
redis_cluster_node_role_changes_total{address="127.0.0.1:7001",node_id="a5d1837466ddee36fb8f66a06a54c9d80ece254f",redis_cluster="main"} 0
redis_cluster_node_role_changes_total{address="127.0.0.1:7003",node_id="c096849e540e19e62780faa5bf76a837fe1752f6",redis_cluster="main"} 1
# HELP redis_cluster_node_slots Hash slots the node owns. As of the last refresh.
# TYPE redis_cluster_node_slots gauge
redis_cluster_node_slots{address="127.0.0.1:7000",node_id="099acb3ad33355bfc624e555c95f92f2c4c98dbe",redis_cluster="main"} 10001
redis_cluster_node_slots{address="127.0.0.1:7001",node_id="a5d1837466ddee36fb8f66a06a54c9d80ece254f",redis_cluster="main"} 383
redis_cluster_node_slots{address="127.0.0.1:7003",node_id="c096849e540e19e62780faa5bf76a837fe1752f6",redis_cluster="main"} 0
# HELP redis_cluster_node_state 1 for the node's state in the cluster's view, 0 for the other states. As of the last refresh.
# TYPE redis_cluster_node_state gauge
redis_cluster_node_state{address="127.0.0.1:7000",node_id="099acb3ad33355bfc624e555c95f92f2c4c98dbe",redis_cluster="main",state="fail"} 0
redis_cluster_node_state{address="127.0.0.1:7000",node_id="099acb3ad33355bfc624e555c95f92f2c4c98dbe",redis_cluster="main",state="handshake"} 0
redis_cluster_node_state{address="127.0.0.1:7000",node_id="099acb3ad33355bfc624e555c95f92f2c4c98dbe",redis_cluster="main",state="noaddr"} 0
redis_cluster_node_state{address="127.0.0.1:7000",node_id="099acb3ad33355bfc624e555c95f92f2c4c98dbe",redis_cluster="main",state="ok"} 1
redis_cluster_node_state{address="127.0.0.1:7000",node_id="099acb3ad33355bfc624e555c95f92f2c4c98dbe",redis_cluster="main",state="pfail"} 0
redis_cluster_node_state{address="127.0.0.1:7001",node_id="a5d1837466ddee36fb8f66a06a54c9d80ece254f",redis_cluster="main",state="fail"} 1
redis_cluster_node_state{address="127.0.0.1:7001",node_id="a5d1837466ddee36fb8f66a06a54c9d80ece254f",redis_cluster="main",state="handshake"} 0
redis_cluster_node_state{address="127.0.0.1:7001",node_id="a5d1837466ddee36fb8f66a06a54c9d80ece254f",redis_cluster="main",state="noaddr"} 0
redis_cluster_node_state{address="127.0.0.1:7001",node_id="a5d1837466ddee36fb8f66a06a54c9d80ece254f",redis_cluster="main",state="ok"} 0
redis_cluster_node_state{address="127.0.0.1:7001",node_id="a5d1837466ddee36fb8f66a06a54c9d80ece254f",redis_cluster="main",state="pfail"} 0
redis_cluster_node_state{address="127.0.0.1:7003",node_id="c096849e540e19e62780faa5bf76a837fe1752f6",redis_cluster="main",state="fail"} 0
redis_cluster_node_state{address="127.0.0.1:7003",node_id="c096849e540e19e62780faa5bf76a837fe1752f6",redis_cluster="main",state="handshake"} 0
redis_cluster_node_state{address="127.0.0.1:7003",node_id="c096849e540e19e62780faa5bf76a837fe1752f6",redis_cluster="main",state="noaddr"} 0
redis_cluster_node_state{address="127.0.0.1:7003",node_id="c096849e540e19e62780faa5bf76a837fe1752f6",redis_cluster="main",state="ok"} 1
redis_cluster_node_state{address="127.0.0.1:7003",node_id="c096849e540e19e62780faa5bf76a837fe1752f6",redis_cluster="main",state="pfail"} 0
# HELP redis_cluster_node_up 1 if the exporter read the node itself. As of the last refresh.
# TYPE redis_cluster_node_up gauge
redis_cluster_node_up{address="127.0.0.1:7000",node_id="099acb3ad33355bfc624e555c95f92f2c4c98dbe",redis_cluster="main"} 1
redis_cluster_node_up{address="127.0.0.1:7001",node_id="a5d1837466ddee36fb8f66a06a54c9d80ece254f",redis_cluster="main"} 0
redis_cluster_node_up{address="127.0.0.1:7003",node_id="c096849e540e19e62780faa5bf76a837fe1752f6",redis_cluster="main"} 1
# HELP redis_cluster_slots Hash slots by the state of the master owning them in the cluster's view (unassigned: no owner); the states sum to 16384. As of the last refresh.
# TYPE redis_cluster_slots gauge
redis_cluster_slots{redis_cluster="main",state="fail"} 383
redis_cluster_slots{redis_cluster="main",state="ok"} 10001
redis_cluster_slots{redis_cluster="main",state="pfail"} 0
redis_cluster_slots{redis_cluster="main",state="unassigned"} 6000
# HELP redis_cluster_slots_without_replica Hash slots whose master has no healthy replica. As of the last refresh.
# TYPE redis_cluster_slots_without_replica gauge
redis_cluster_slots_without_replica{redis_cluster="main"} 383
# HELP redis_cluster_state_ok 1 if every reachable member master that serves slots reports cluster_state:ok, 0 if any reports fail (with none reachable, every reachable member decides). An empty master's own state is in redis_cluster_node_cluster_state_ok. As of the last refresh.
# TYPE redis_cluster_state_ok gauge
redis_cluster_state_ok{redis_cluster="main"} 1
# HELP redis_cluster_up 1 if the last refresh read the cluster topology from at least one node.
# TYPE redis_cluster_up gauge
redis_cluster_up{redis_cluster="main"} 1
# HELP redis_cluster_views_consistent 0 if the members have disagreed on a slot's owner or on a node's failure for over 15 s, outside any slot migration; 1 otherwise. As of the last refresh.
# TYPE redis_cluster_views_consistent gauge
redis_cluster_views_consistent{redis_cluster="main"} 1
# HELP redis_cluster_slots_in_migration Hash slots some member has in migrating or importing state (a reshard in progress), or in an atomic slot migration job it reports running (Valkey 9.0+, Redis 8.4+). As of the last refresh.
# TYPE redis_cluster_slots_in_migration gauge
redis_cluster_slots_in_migration{redis_cluster="main"} 1
# HELP redis_cluster_slots_in_conflict Hash slots whose owner the members have disputed for over 15 s, outside any slot migration. As of the last refresh.
# TYPE redis_cluster_slots_in_conflict gauge
redis_cluster_slots_in_conflict{redis_cluster="main"} 0
`

// BenchmarkWriteText100Nodes is what a plain-text scrape pays: the page is
// rendered and compressed once per refresh and decompressed per scrape (a
// gzip scrape copies the compressed bytes).
func BenchmarkWriteText100Nodes(b *testing.B) {
	c := NewCollector()
	c.Set("bench", watchtest.Static[Snapshot]("bench", snapshot100Nodes(), nil))
	var out []byte
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		var err error
		if out, err = exposition.PlainText(c); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(out)), "bytes/scrape")
}

// BenchmarkRender100Nodes is what each refresh pays to render the page,
// its buffers sized from the previous page as Collector.page does.
func BenchmarkRender100Nodes(b *testing.B) {
	snap := snapshot100Nodes()
	emit := func(s exposition.Sink) { emitSnapshot(s, "bench", snap) }
	prev := table.Series.Render(nil, emit)
	b.ReportAllocs()
	for b.Loop() {
		table.Series.Render(prev, emit)
	}
}
