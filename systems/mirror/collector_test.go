package mirror

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/failover-exporter/failover_exporter/collector/exposition"
	"github.com/failover-exporter/failover_exporter/collector/watch/watchtest"
)

var readAt = time.Unix(1_700_000_100, 0)

func testSnapshot() *Snapshot {
	lagging := Partition{ID: 1, SourceEnd: 1500, TargetEnd: 851, Lag: partitionLag(0, 1500, 851, &OffsetSync{Upstream: 1000, Downstream: 400}), RPO: 12 * time.Second, RPOKnown: true}
	return &Snapshot{
		SourceCluster: "eu", TargetCluster: "us", ReadAt: readAt, SourceUp: true, TargetUp: true,
		Topics: []Topic{
			{Name: "orders", Remote: "eu.orders", Partitions: 2, RemotePartitions: 2, NotReplicated: 49, RPO: 12 * time.Second, RPOKnown: true,
				Parts: []Partition{{ID: 0, SourceEnd: 10, TargetEnd: 10, Lag: Lag{Known: true}, RPOKnown: true}, lagging}},
			{Name: "payments", Remote: "eu.payments", Partitions: 1, Missing: true, NotReplicated: 100, RPO: time.Minute, RPOKnown: true,
				Parts: []Partition{{ID: 0, SourceEnd: 100, Lag: Lag{Known: true, NotReplicated: 100}, RPO: time.Minute, RPOKnown: true}}},
		},
		Heartbeat: HeartbeatState{Known: true, Timestamp: readAt.Add(-3 * time.Second), Age: 3 * time.Second},
		Syncs:     SyncsState{Partitions: 2, Newest: readAt.Add(-time.Minute), CaughtUp: true},
		Groups: []GroupTopic{{Group: "billing", Topic: "orders", Reread: 25, RereadKnown: true, OldestCheckpoint: readAt.Add(-30 * time.Second),
			Partitions: []GroupPartition{{ID: 0, Resume: 7, Checkpointed: 10, Committed: 35, Reread: 25, At: readAt.Add(-30 * time.Second)}}}},
		GroupsCheckpointed: 3, GroupsLeftOut: 2,
		Errors: map[string]uint64{readTimestamps: 2},
	}
}

// flowText is the exposition of one flow "eu-us" in snap's state, its
// cluster names from the snapshot, without partition series.
func flowText(t *testing.T, snap *Snapshot) string {
	t.Helper()
	c := NewCollector()
	c.Set("eu-us", watchtest.Static[Snapshot]("eu-us", snap, nil))
	plain, err := exposition.PlainText(c)
	if err != nil {
		t.Fatal(err)
	}
	return string(plain)
}

func TestExposition(t *testing.T) {
	c := NewCollector()
	c.SetEmit("eu-us", watchtest.Static[Snapshot]("eu-us", testSnapshot(), nil), Emitter("eu", "us", true))
	c.SetEmit("down", watchtest.Static[Snapshot]("eu-us", nil, errors.New("source: refused; target: refused")), Emitter("eu", "ap", false))
	if problems, err := testutil.CollectAndLint(c); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %+v", err, problems)
	}
	plain, err := exposition.PlainText(c)
	if err != nil {
		t.Fatal(err)
	}
	text := string(plain)
	if err := testutil.CollectAndCompare(c, strings.NewReader(text)); err != nil {
		t.Errorf("text rendering differs from Collect: %v", err)
	}
	flow := `mirror="eu-us",source_cluster="eu",target_cluster="us"`
	for _, line := range []string{
		`kafka_mirror_up{mirror="down",source_cluster="eu",target_cluster="ap"} 0`,
		`kafka_mirror_refresh_failures_total{mirror="down",source_cluster="eu",target_cluster="ap"} 1`,
		`kafka_mirror_up{` + flow + `} 1`,
		`kafka_mirror_read_errors_total{mirror="eu-us",read="timestamps",source_cluster="eu",target_cluster="us"} 2`,
		`kafka_mirror_read_errors_total{mirror="eu-us",read="decode",source_cluster="eu",target_cluster="us"} 0`,
		`kafka_mirror_heartbeat_age_seconds{` + flow + `} 3`,
		`kafka_mirror_heartbeat_timestamp_seconds{` + flow + `} 1700000097`,
		`kafka_mirror_stalled{` + flow + `} 0`,
		`kafka_mirror_offset_syncs_newest_timestamp_seconds{` + flow + `} 1700000040`,
		`kafka_mirror_topics{` + flow + `} 2`,
		`kafka_mirror_topics_missing_on_target{` + flow + `} 1`,
		`kafka_mirror_topic_missing_on_target{` + flow + `,topic="payments"} 1`,
		`kafka_mirror_topic_partition_mismatch{` + flow + `,topic="orders"} 0`,
		`kafka_mirror_topic_records_not_replicated{` + flow + `,topic="orders"} 49`,
		`kafka_mirror_topic_rpo_seconds{` + flow + `,topic="payments"} 60`,
		`kafka_mirror_partition_records_not_replicated{mirror="eu-us",partition="1",source_cluster="eu",target_cluster="us",topic="orders"} 49`,
		`kafka_mirror_partition_rpo_seconds{mirror="eu-us",partition="1",source_cluster="eu",target_cluster="us",topic="orders"} 12`,
		`kafka_mirror_groups{` + flow + `} 3`,
		`kafka_mirror_groups_left_out{` + flow + `} 2`,
		`kafka_mirror_group_records_to_reread{group="billing",` + flow + `,topic="orders"} 25`,
		`kafka_mirror_group_checkpoint_age_seconds{group="billing",` + flow + `,topic="orders"} 30`,
		`kafka_mirror_group_resume_offset{group="billing",mirror="eu-us",partition="0",source_cluster="eu",target_cluster="us",topic="orders"} 7`,
	} {
		if !strings.Contains(text, line+"\n") {
			t.Errorf("text lacks %s:\n%s", line, text)
		}
	}
	// The flow that reached neither cluster serves its health only.
	if strings.Contains(text, `kafka_mirror_stalled{mirror="down"`) {
		t.Error("a failed flow serves state series")
	}
}

// Without partition_metrics, no per-partition series; without the
// source, no topic series.
func TestExpositionLean(t *testing.T) {
	snap := testSnapshot()
	snap.SourceUp = false
	text := flowText(t, snap)
	for _, absent := range []string{"kafka_mirror_partition_", "kafka_mirror_group_resume_offset{", "kafka_mirror_topic_records_not_replicated{"} {
		if strings.Contains(text, absent) {
			t.Errorf("text has %s:\n%s", absent, text)
		}
	}
	for _, line := range []string{
		`kafka_mirror_up{mirror="eu-us",source_cluster="eu",target_cluster="us"} 0`,
		`kafka_mirror_target_up{mirror="eu-us",source_cluster="eu",target_cluster="us"} 1`,
		`kafka_mirror_heartbeat_age_seconds{mirror="eu-us",source_cluster="eu",target_cluster="us"} 3`,
	} {
		if !strings.Contains(text, line+"\n") {
			t.Errorf("text lacks %s:\n%s", line, text)
		}
	}
}

func TestTransitions(t *testing.T) {
	prev := testSnapshot()
	next := testSnapshot()
	next.ReadAt = readAt.Add(5 * time.Second)
	next.Stalled = true
	next.Heartbeat.Age = 45 * time.Second
	next.Topics[1].Missing = false // payments appeared
	next.Topics = append(next.Topics, Topic{Name: "refunds", Remote: "eu.refunds", Missing: true})
	findTransitions(prev, next)
	var got []string
	for _, e := range next.Events.All() {
		got = append(got, string(e.Kind)+" "+e.Subject.Topic+" "+e.After)
	}
	want := []string{"mirror_stalled  heartbeat age 45s", "mirror_topic_appeared payments eu.payments", "mirror_topic_missing refunds eu.refunds"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("events %q, want %q", got, want)
	}
	after := testSnapshot()
	after.ReadAt = next.ReadAt.Add(5 * time.Second)
	after.SourceUp = false // topics not compared
	findTransitions(next, after)
	if evs := after.Events.All(); len(evs) != 1 || evs[0].Kind != EventResumed || evs[0].Before != "heartbeat age 45s" {
		t.Errorf("resumed: %+v", evs)
	}
}
