package kafkacanary

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/failover-exporter/failover_exporter/collector/canary"
	"github.com/failover-exporter/failover_exporter/collector/canary/lease"
	"github.com/failover-exporter/failover_exporter/collector/exposition"
	"github.com/failover-exporter/failover_exporter/collector/watch"
	"github.com/failover-exporter/failover_exporter/collector/watch/watchtest"
)

func testSnapshot() *Snapshot {
	return &Snapshot{
		Leader: true,
		Checks: 2,
		Partitions: map[int32]map[int32]*PartitionStats{
			0: {
				1: {Attempts: 10, Acknowledged: 8, Failures: map[string]uint64{"connection": 2}},
				2: {Attempts: 5, Acknowledged: 3, Failures: map[string]uint64{"NOT_ENOUGH_REPLICAS": 2}, Lost: 1},
			},
			1: {2: {Attempts: 15, Acknowledged: 15, Failures: map[string]uint64{}, Unverifiable: 4}},
		},
		Latency: map[int32]*canary.Histogram{1: (*canary.Histogram)(nil).Observe(0.003), 2: (*canary.Histogram)(nil).Observe(0.2)},
		// Created while broker 3 was down.
		Topic: &TopicHealth{Partitions: 2, ReplicationFactor: 2, WantReplicationFactor: 3, MinInsyncReplicas: 2, WantMinInsyncReplicas: 2,
			Unpreferred: []int32{3}, NotLeading: []int32{3}, Managed: true},
	}
}

func TestWriteTextMatchesCollect(t *testing.T) {
	c := NewCollector()
	c.Set("lab", watchtest.Static[Snapshot]("lab", testSnapshot(), nil))
	c.Set("down", watchtest.Static[Snapshot]("lab", nil, errors.New("connect: no broker")))
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
	for _, line := range []string{
		`kafka_canary_up{kafka_cluster="down"} 0`,
		`kafka_canary_acknowledged_lost_total{broker="2",kafka_cluster="lab",partition="0"} 1`,
		`kafka_canary_acknowledged_unverifiable_total{broker="2",kafka_cluster="lab",partition="1"} 4`,
		`kafka_canary_produce_failures_total{broker="2",error="NOT_ENOUGH_REPLICAS",kafka_cluster="lab",partition="0"} 2`,
		`kafka_canary_produce_duration_seconds_bucket{broker="1",kafka_cluster="lab",le="0.005"} 1`,
		`kafka_canary_read_back_checks_total{kafka_cluster="lab"} 2`,
		`kafka_canary_topic_degraded{kafka_cluster="lab"} 1`,
		`kafka_canary_topic_replication_factor{kafka_cluster="lab"} 2`,
		`kafka_canary_topic_min_insync_replicas{kafka_cluster="lab"} 2`,
		`kafka_canary_topic_brokers_not_leading{kafka_cluster="lab"} 1`,
	} {
		if !strings.Contains(text, line+"\n") {
			t.Errorf("text lacks %s:\n%s", line, text)
		}
	}
}

// The topic's shape is not served from a failed round's stale snapshot,
// while the counters are.
func TestTopicSeriesOnlyWhileUp(t *testing.T) {
	c := NewCollector()
	w := watch.New("lab", time.Minute, time.Second, func() func(context.Context, *Snapshot) (*Snapshot, error) {
		calls := 0
		return func(context.Context, *Snapshot) (*Snapshot, error) {
			if calls++; calls == 1 {
				return testSnapshot(), nil
			}
			return nil, errors.New("metadata of the canary topic: timeout")
		}
	}(), log.NewNopLogger())
	c.Set("lab", w)
	w.RefreshOnce(context.Background())
	w.RefreshOnce(context.Background())
	text, err := exposition.PlainText(c)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(text), "kafka_canary_topic_") || !strings.Contains(string(text), "kafka_canary_read_back_checks_total") {
		t.Errorf("after a failed round, want the counters and no topic series:\n%s", text)
	}
	// Its rounds failing, the holder writes nothing: not the writer now.
	if !strings.Contains(string(text), `kafka_canary_leader{kafka_cluster="lab"} 0`+"\n") {
		t.Errorf("after a failed round, want kafka_canary_leader 0:\n%s", text)
	}
}

// An exporter that does not hold the canary lease serves its round health
// and kafka_canary_leader 0, and no write counter or topic series: the
// holder's are the cluster's.
func TestCollectorServesNoCountersWithoutTheLease(t *testing.T) {
	s := testSnapshot()
	s.Leader = false
	c := NewCollector()
	c.Set("lab", watchtest.Static[Snapshot]("lab", s, nil))
	plain, err := exposition.PlainText(c)
	if err != nil {
		t.Fatal(err)
	}
	text := string(plain)
	for _, line := range []string{`kafka_canary_up{kafka_cluster="lab"} 1`, `kafka_canary_leader{kafka_cluster="lab"} 0`} {
		if !strings.Contains(text, line+"\n") {
			t.Errorf("text lacks %s:\n%s", line, text)
		}
	}
	for _, name := range []string{"kafka_canary_produce_attempts_total", "kafka_canary_produce_acknowledged_total", "kafka_canary_acknowledged_lost_total", "kafka_canary_read_back_checks_total", "kafka_canary_topic_degraded"} {
		if strings.Contains(text, name+"{") {
			t.Errorf("a standby serves %s:\n%s", name, text)
		}
	}
}

func TestAssignmentSpreadsLeadership(t *testing.T) {
	got := assignment([]int32{3, 1, 2}, 0, 3, 3)
	want := [][]int32{{1, 2, 3}, {2, 3, 1}, {3, 1, 2}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("assignment = %v, want %v", got, want)
	}
	// A fourth broker joins: one new partition, led by it.
	if got := assignment([]int32{1, 2, 3, 4}, 3, 4, 3); len(got) != 1 || !slices.Equal(got[0], []int32{4, 1, 2}) {
		t.Errorf("added partition = %v, want [[4 1 2]]", got)
	}
	// Fewer brokers than the replication factor: capped.
	if got := assignment([]int32{1, 2}, 0, 2, 3); fmt.Sprint(got) != "[[1 2] [2 1]]" {
		t.Errorf("capped assignment = %v", got)
	}
}

func TestErrorKind(t *testing.T) {
	cases := []struct {
		err  error
		want string
	}{
		{&sarama.ProducerError{Err: sarama.ErrNotEnoughReplicas}, "NOT_ENOUGH_REPLICAS"},
		{fmt.Errorf("x: %w", sarama.ErrNotLeaderForPartition), "NOT_LEADER_OR_FOLLOWER"},
		{sarama.ErrTopicAuthorizationFailed, "TOPIC_AUTHORIZATION_FAILED"},
		{sarama.KError(9999), "KAFKA_ERROR_9999"},
		{sarama.ErrOutOfBrokers, "no_broker"},
		{context.DeadlineExceeded, "timeout"},
		{errors.New("strange"), "other"},
	}
	for _, c := range cases {
		if got := errorKind(c.err); got != c.want {
			t.Errorf("errorKind(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}

// A truncated and rewritten log (unclean election) shows as other values at
// the acknowledged offsets; offsets beyond the high watermark are not
// losses yet.
func TestCompareReadBack(t *testing.T) {
	pending := []ack{
		{offset: 10, value: "r:0:1", leader: 1},
		{offset: 11, value: "r:0:2", leader: 1},
		{offset: 12, value: "r:0:3", leader: 1},
		{offset: 13, value: "r:0:4", leader: 2},
	}
	got := readResult{values: map[int64]string{10: "r:0:1", 11: "other:0:7", 12: "other:0:8"}}
	keep, lost, unverifiable, _, _ := compareReadBack(pending, got)
	if lost[1] != 2 || lost[2] != 0 || len(lost) != 1 || len(unverifiable) != 0 {
		t.Errorf("lost = %v, unverifiable %v, want 2 lost, acknowledged by broker 1", lost, unverifiable)
	}
	if len(keep) != 1 || keep[0].offset != 13 {
		t.Errorf("kept %+v, want only offset 13 (not readable yet)", keep)
	}
	all := readResult{values: map[int64]string{10: "r:0:1", 11: "r:0:2", 12: "r:0:3", 13: "r:0:4"}}
	if keep, lost, unverifiable, dups, intact := compareReadBack(pending, all); len(intact) != 4 || len(keep) != 0 || len(lost) != 0 || len(unverifiable) != 0 || len(dups) != 0 {
		t.Errorf("everything read back: kept %v, lost %v, unverifiable %v, duplicates %v, intact %v", keep, lost, unverifiable, dups, intact)
	}
}

// A record the log holds at its offset and at another one read (an
// attempt appended before the acknowledged retry) is a duplicate, counted
// by the leader that acknowledged it; a record kept for later or lost is
// not judged for copies.
func TestCompareReadBackCountsDuplicates(t *testing.T) {
	pending := []ack{
		{offset: 11, value: "r:0:2", leader: 1},
		{offset: 13, value: "r:0:3", leader: 2},
		{offset: 15, value: "r:0:4", leader: 2},
		{offset: 16, value: "r:0:5", leader: 2},
	}
	// 10: the tail of the previous read-back; 12 and 14: copies of the
	// records acknowledged at 13 (twice) and of the one at 11 once.
	got := readResult{values: map[int64]string{10: "r:0:1", 11: "r:0:2", 12: "r:0:3", 13: "r:0:3", 14: "r:0:2", 15: "x:0:9"}}
	keep, lost, _, dups, _ := compareReadBack(pending, got)
	if dups[1] != 1 || dups[2] != 1 || len(dups) != 2 {
		t.Errorf("duplicates %v, want one extra copy acknowledged by broker 1 and one by broker 2", dups)
	}
	if lost[2] != 1 || len(keep) != 1 || keep[0].offset != 16 {
		t.Errorf("lost %v, kept %v: want offset 15 lost, 16 kept", lost, keep)
	}
}

// Records below the log's start offset (retention, DeleteRecords) are
// unverifiable, never lost, and the records after them are still judged.
func TestCompareReadBackBelowLogStart(t *testing.T) {
	pending := []ack{
		{offset: 10, value: "r:0:1", leader: 1},
		{offset: 11, value: "r:0:2", leader: 2},
		{offset: 12, value: "r:0:3", leader: 2},
		{offset: 13, value: "r:0:4", leader: 2},
	}
	got := readResult{logStart: 12, values: map[int64]string{12: "r:0:3", 13: "other:0:9"}}
	keep, lost, unverifiable, _, _ := compareReadBack(pending, got)
	if unverifiable[1] != 1 || unverifiable[2] != 1 || len(unverifiable) != 2 {
		t.Errorf("unverifiable = %v, want one by broker 1 and one by broker 2", unverifiable)
	}
	if lost[2] != 1 || len(lost) != 1 || len(keep) != 0 {
		t.Errorf("lost %v, kept %v: want offset 13 lost and nothing kept", lost, keep)
	}
}

// A partition whose read-backs keep failing keeps at most maxPending
// records: the oldest are dropped as unverifiable, the newest kept, and
// the drop is logged once until the partition is read back.
func TestPendingIsBounded(t *testing.T) {
	var logged strings.Builder
	s := &source{
		logger:         log.NewLogfmtLogger(log.NewSyncWriter(&logged)),
		pending:        map[int32][]ack{},
		overflowLogged: map[int32]bool{},
		lastError:      map[int32]string{},
	}
	next := (*Snapshot)(nil).clone()
	const extra = 25
	for i := range maxPending + extra {
		leader := int32(1)
		if i >= maxPending {
			leader = 2 // the newest, kept
		}
		s.apply(next, time.Now(), produceResult{partition: 0, leader: leader, offset: int64(i), value: fmt.Sprint(i)})
	}
	pending := s.pending[0]
	if len(pending) != maxPending || pending[0].offset != extra || pending[len(pending)-1].offset != maxPending+extra-1 {
		t.Fatalf("pending holds %d records, offsets %d..%d; want the newest %d", len(pending), pending[0].offset, pending[len(pending)-1].offset, maxPending)
	}
	if st := next.Partitions[0][1]; st.Unverifiable != extra || st.Lost != 0 {
		t.Errorf("broker 1: %d unverifiable, %d lost; want the %d oldest unverifiable, none lost", st.Unverifiable, st.Lost, extra)
	}
	if st := next.Partitions[0][2]; st.Unverifiable != 0 {
		t.Errorf("broker 2: %d unverifiable, want 0: its records are the newest", st.Unverifiable)
	}
	if n := strings.Count(logged.String(), "dropped as unverifiable"); n != 1 {
		t.Errorf("the drop was logged %d times, want once:\n%s", n, logged.String())
	}
}

// Records acknowledged during an earlier hold of the lease are dropped as
// unverifiable when a new hold begins (a standby leading again hours
// later), never read back against what other exporters wrote since.
func TestNewTenureStartsClean(t *testing.T) {
	var logged strings.Builder
	l := lease.New(6*time.Second, 0)
	s := &source{
		logger:         log.NewLogfmtLogger(log.NewSyncWriter(&logged)),
		lease:          &leaseRunner{Lease: l},
		pending:        map[int32][]ack{},
		overflowLogged: map[int32]bool{},
		lastError:      map[int32]string{},
	}
	next := (*Snapshot)(nil).clone()
	now := time.Now()
	l.Record(now, true)
	s.startTenure(next) // the first hold: nothing pending yet
	for i := range 3 {
		s.apply(next, now, produceResult{partition: int32(i % 2), leader: 1, offset: int64(i), value: fmt.Sprint(i)})
	}
	s.startTenure(next) // the same hold: kept
	if n := len(s.pending[0]) + len(s.pending[1]); n != 3 {
		t.Fatalf("%d pending within one hold, want 3", n)
	}
	l.Drop()
	l.Record(now.Add(time.Hour), true) // another hold, an hour later
	s.startTenure(next)
	if n := len(s.pending[0]) + len(s.pending[1]); n != 0 {
		t.Errorf("%d records of the earlier hold still pending", n)
	}
	if u, lost := next.Partitions[0][1].Unverifiable+next.Partitions[1][1].Unverifiable, next.Partitions[0][1].Lost; u != 3 || lost != 0 {
		t.Errorf("%d unverifiable, %d lost; want the 3 of the earlier hold unverifiable", u, lost)
	}
	if !strings.Contains(logged.String(), "earlier hold") {
		t.Errorf("the drop is not logged:\n%s", logged.String())
	}
}

// Records found before are read again after a leader change: one another
// value replaced is lost (by the leader that acknowledged it, once: it
// leaves the window); one beyond the new leader's shorter log waits; one
// below the log's start is dropped without a count; one still there is
// verified under the new leader.
func TestRecheckVerified(t *testing.T) {
	verified := []ack{
		{offset: 5, value: "r:0:0", leader: 1, checkedUnder: 1},
		{offset: 10, value: "r:0:1", leader: 1, checkedUnder: 1},
		{offset: 11, value: "r:0:2", leader: 1, checkedUnder: 1},
		{offset: 12, value: "r:0:3", leader: 2, checkedUnder: 1},
	}
	got := readResult{logStart: 6, values: map[int64]string{10: "r:0:1", 11: "other:0:7"}}
	still, lost := recheckVerified(verified, got, 3)
	if len(lost) != 1 || lost[1] != 1 {
		t.Errorf("lost %v, want 1 acknowledged by broker 1", lost)
	}
	if len(still) != 2 || still[0].offset != 10 || still[0].checkedUnder != 3 || still[1].offset != 12 || still[1].checkedUnder != 1 {
		t.Errorf("still verified %+v, want 10 (under 3) and 12 (not read yet, under 1)", still)
	}
	s := &source{verified: map[int32][]ack{}}
	s.keepVerified(0, true, still, []ack{{offset: 13, value: "r:0:4", leader: 3}}, 3)
	if v := s.verified[0]; len(v) != 3 || v[2].checkedUnder != 3 {
		t.Errorf("verified after the read %+v, want 10, 12 and 13 (under 3)", v)
	}
	many := make([]ack, maxPending+5)
	s.keepVerified(0, false, nil, many, 3)
	if v := s.verified[0]; len(v) != maxPending {
		t.Errorf("%d verified records kept, want the last %d", len(v), maxPending)
	}
}
