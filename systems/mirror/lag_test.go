package mirror

import (
	"strings"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/config"
)

func TestPartitionLag(t *testing.T) {
	sync := func(u, d int64) *OffsetSync { return &OffsetSync{Upstream: u, Downstream: d} }
	for _, tc := range []struct {
		name                         string
		sourceStart, sourceEnd, tEnd int64
		sync                         *OffsetSync
		want                         int64
		known, behindSync            bool
	}{
		// The sync is for source 1000 → target 400; the target has 450
		// records since (targetEnd 851), so the source's 1000..1450 are
		// replicated and 1451..1499 are not.
		{"sparse sync, 1:1 since", 0, 1500, 851, sync(1000, 400), 49, true, false},
		{"caught up at the sync", 0, 1001, 401, sync(1000, 400), 0, true, false},
		// Target ahead of the source's end: lacks nothing.
		{"target ahead", 0, 1000, 900, sync(1000, 400), 0, true, false},
		// The target lost records after the sync (an unclean election):
		// counted as not replicated, flagged.
		{"target behind its sync", 0, 1200, 300, sync(1000, 400), 300, true, true},
		// Records the source deleted cannot be lost with it.
		{"replicated end before log start", 5000, 5100, 10, sync(100, 5), 100, true, false},
		{"nothing on the target", 200, 300, 0, nil, 100, true, false},
		{"empty source partition", 7, 7, 3, nil, 0, true, false},
		{"no sync read yet", 0, 300, 100, nil, 0, false, false},
	} {
		lag := partitionLag(tc.sourceStart, tc.sourceEnd, tc.tEnd, tc.sync)
		if lag.NotReplicated != tc.want || lag.Known != tc.known || lag.TargetBehindSync != tc.behindSync {
			t.Errorf("%s: got %+v, want %d not replicated, known %v, behind sync %v", tc.name, lag, tc.want, tc.known, tc.behindSync)
		}
	}
}

func TestSecondsBehind(t *testing.T) {
	base := time.Unix(1_700_000_000, 0)
	if d, ok := secondsBehind(0, time.Time{}, time.Time{}); d != 0 || !ok {
		t.Errorf("caught up: %v %v", d, ok)
	}
	if d, ok := secondsBehind(5, base.Add(90*time.Second), base); d != 90*time.Second || !ok {
		t.Errorf("90 s behind: %v %v", d, ok)
	}
	// Non-monotonic CreateTime: never negative.
	if d, ok := secondsBehind(5, base, base.Add(time.Second)); d != 0 || !ok {
		t.Errorf("newer replicated record: %v %v", d, ok)
	}
	if _, ok := secondsBehind(5, base, time.Time{}); ok {
		t.Error("a missing record gave a figure")
	}
}

func TestReread(t *testing.T) {
	if n, ok := reread(150, 100); n != 50 || !ok {
		t.Errorf("committed past the checkpoint: %d %v", n, ok)
	}
	// Rewound on the source since the checkpoint.
	if n, ok := reread(80, 100); n != 0 || !ok {
		t.Errorf("rewound: %d %v", n, ok)
	}
	if _, ok := reread(-1, 100); ok {
		t.Error("unknown committed offset gave a figure")
	}
}

func TestPolicy(t *testing.T) {
	all, _ := config.NewRegexp(".*")
	orders, _ := config.NewRegexp("orders.*")
	def := policy{sourceAlias: "eu", targetAlias: "us", separator: ".", internalSeparator: ".", heartbeats: "heartbeats", topics: all}
	if got := def.remoteTopic("orders"); got != "eu.orders" {
		t.Errorf("default remote topic %q", got)
	}
	if got, ok := def.sourceTopic("eu.orders"); got != "orders" || !ok {
		t.Errorf("default source topic %q %v", got, ok)
	}
	id := policy{identity: true, sourceAlias: "eu", targetAlias: "us", separator: ".", internalSeparator: ".", heartbeats: "heartbeats", topics: orders}
	if got := id.remoteTopic("orders"); got != "orders" {
		t.Errorf("identity remote topic %q", got)
	}
	if got := id.remoteHeartbeats(); got != "eu.heartbeats" {
		t.Errorf("identity heartbeats %q", got)
	}
	for topic, want := range map[string]bool{
		"orders": true, "__consumer_offsets": false, "mm2-offset-syncs.us.internal": false, "connect-offsets-internal": false,
		"heartbeats": false, "xx.heartbeats": false, "us.orders": false, "orders.replica": false, ".hidden": false,
	} {
		if got := def.replicates(topic); got != want {
			t.Errorf("default replicates(%q) = %v", topic, got)
		}
	}
	if id.replicates("payments") || !id.replicates("orders-eu") || !id.replicates("orders.us") {
		t.Error("identity policy with a topics filter")
	}
}

// TestPolicySeparator: MM2's replication.policy.separator names remote
// topics, the remote heartbeats and the cycle check; the internal topics
// keep "." when replication.policy.internal.topic.separator.enabled is
// false, and take the separator otherwise.
func TestPolicySeparator(t *testing.T) {
	all, _ := config.NewRegexp(".*")
	for _, internal := range []string{"_", "."} {
		p := policy{sourceAlias: "eu", targetAlias: "us", separator: "_", internalSeparator: internal, heartbeats: "heartbeats", topics: all}
		if got := p.remoteTopic("orders.v1"); got != "eu_orders.v1" {
			t.Errorf("remote topic %q", got)
		}
		if got, ok := p.sourceTopic("eu_orders.v1"); got != "orders.v1" || !ok {
			t.Errorf("source topic %q %v", got, ok)
		}
		if _, ok := p.sourceTopic("eu.orders"); ok {
			t.Error(`"eu.orders" read as a remote topic with separator "_"`)
		}
		if got := p.remoteHeartbeats(); got != "eu_heartbeats" {
			t.Errorf("remote heartbeats %q", got)
		}
		for topic, want := range map[string]bool{
			"orders": true, "us.orders": true, "us_orders": false, "xx_heartbeats": false,
			"mm2-offset-syncs" + internal + "us" + internal + "internal": false,
			"eu" + internal + "checkpoints" + internal + "internal":      false,
		} {
			if got := p.replicates(topic); got != want {
				t.Errorf("internal separator %q: replicates(%q) = %v", internal, topic, got)
			}
		}
	}
}

// TestReportedGroups: past max_groups, the same groups are reported every
// refresh (the first by name), whatever order the checkpoints were read
// in, and the others are counted.
func TestReportedGroups(t *testing.T) {
	checkpoints := func() map[[2]string][]storedCheckpoint {
		return map[[2]string][]storedCheckpoint{
			{"delta", "orders"}: nil, {"alpha", "orders"}: nil, {"alpha", "payments"}: nil,
			{"charlie", "orders"}: nil, {"bravo", "payments"}: nil,
		}
	}
	for range 20 { // map order changes from one run to the next
		byGroupTopic := checkpoints()
		var snap Snapshot
		groups := reportedGroups(byGroupTopic, 2, &snap)
		if strings.Join(groups, ",") != "alpha,bravo" || snap.GroupsCheckpointed != 4 || snap.GroupsLeftOut != 2 {
			t.Fatalf("limit 2: groups %v, %d checkpointed, %d left out", groups, snap.GroupsCheckpointed, snap.GroupsLeftOut)
		}
		if _, ok := byGroupTopic[[2]string{"charlie", "orders"}]; ok || len(byGroupTopic) != 3 {
			t.Fatalf("limit 2 kept %v", byGroupTopic)
		}
	}
	byGroupTopic := checkpoints()
	var snap Snapshot
	if groups := reportedGroups(byGroupTopic, 4, &snap); len(groups) != 4 || snap.GroupsLeftOut != 0 || len(byGroupTopic) != 5 {
		t.Errorf("limit 4 of 4: groups %v, %d left out, %d kept", groups, snap.GroupsLeftOut, len(byGroupTopic))
	}
}

// TestTopicLagsPartitionTheTargetLacks: a source partition the remote
// topic does not have yet (partitions added on the source, MM2 not caught
// up) lacks every record the source keeps of it; a partition the remote
// topic has but whose offset was not read is unknown.
func TestTopicLagsPartitionTheTargetLacks(t *testing.T) {
	all, _ := config.NewRegexp(".*")
	s := &Source{
		policy: policy{sourceAlias: "eu", targetAlias: "us", separator: ".", internalSeparator: ".", heartbeats: "heartbeats", topics: all},
		src: &cluster{topics: map[string]topicMeta{
			"refunds": {leaders: map[int32]int32{0: 1, 1: 1}},
			"orders":  {leaders: map[int32]int32{0: 1, 1: 1}},
		}},
		dst: &cluster{topics: map[string]topicMeta{
			"eu.refunds": {leaders: map[int32]int32{0: 1}},
			"eu.orders":  {leaders: map[int32]int32{0: 1, 1: 1}},
		}},
		latestSync: map[partitionKey]OffsetSync{{"refunds", 0}: {Upstream: 10, Downstream: 10}, {"orders", 0}: {Upstream: 5, Downstream: 5}},
	}
	starts := map[partitionKey]int64{{"refunds", 0}: 0, {"refunds", 1}: 0, {"orders", 0}: 0, {"orders", 1}: 0}
	ends := map[partitionKey]int64{{"refunds", 0}: 10, {"refunds", 1}: 3, {"orders", 0}: 5, {"orders", 1}: 7}
	// eu.orders/1 has an offset in metadata but none was read.
	targetEnds := map[partitionKey]int64{{"eu.refunds", 0}: 10, {"eu.orders", 0}: 5}
	topics := s.topicLags([]string{"orders", "refunds"}, starts, ends, targetEnds, true)
	orders, refunds := topics[0], topics[1]
	if !refunds.PartitionMismatch() || refunds.Unknown != 0 || refunds.NotReplicated != 3 {
		t.Errorf("refunds: mismatch %v, %d unknown, %d not replicated; want a mismatch, 0 unknown, 3", refunds.PartitionMismatch(), refunds.Unknown, refunds.NotReplicated)
	}
	if orders.PartitionMismatch() || orders.Unknown != 1 || orders.NotReplicated != 0 {
		t.Errorf("orders: mismatch %v, %d unknown, %d not replicated; want no mismatch, 1 unknown, 0", orders.PartitionMismatch(), orders.Unknown, orders.NotReplicated)
	}
}
