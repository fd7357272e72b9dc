package rediscanary

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/failover-exporter/failover_exporter/collector/canary"
	"github.com/failover-exporter/failover_exporter/collector/events"
	"github.com/failover-exporter/failover_exporter/collector/exposition"
	"github.com/failover-exporter/failover_exporter/collector/watch"
	"github.com/failover-exporter/failover_exporter/collector/watch/watchtest"
	"github.com/failover-exporter/failover_exporter/systems/redis/proto"
	"github.com/failover-exporter/failover_exporter/systems/redis/settings"
)

func testSnapshot() *Snapshot {
	return &Snapshot{
		Leader: true,
		Checks: 1,
		Masters: map[string]*MasterStats{
			"aaa": {Addr: "127.0.0.1:7000", Key: "k:{0}", Attempts: 20, Acknowledged: 17, Lost: 14, Unverifiable: 2,
				Failures: map[string]uint64{"connection": 3}, Latency: (*canary.Histogram)(nil).Observe(0.0008).Observe(0.002)},
			"bbb": {Addr: "127.0.0.1:7001", Key: "k:{0}", Attempts: 5, Acknowledged: 5, Failures: map[string]uint64{},
				Latency: (*canary.Histogram)(nil).Observe(0.0009)},
		},
	}
}

// An exporter that does not hold the canary lease serves its round health
// and redis_canary_leader 0, and no write counter: the holder's are the
// cluster's, and two sets would be summed or compared by mistake.
func TestCollectorServesNoCountersWithoutTheLease(t *testing.T) {
	s := testSnapshot()
	s.Leader = false
	c := NewCollector()
	c.Set("main", watchtest.Static[Snapshot]("main", s, nil))
	plain, err := exposition.PlainText(c)
	if err != nil {
		t.Fatal(err)
	}
	text := string(plain)
	for _, line := range []string{`redis_canary_up{redis_cluster="main"} 1`, `redis_canary_leader{redis_cluster="main"} 0`} {
		if !strings.Contains(text, line+"\n") {
			t.Errorf("text lacks %s:\n%s", line, text)
		}
	}
	for _, name := range []string{"redis_canary_write_attempts_total", "redis_canary_writes_acknowledged_total", "redis_canary_acknowledged_lost_writes_total", "redis_canary_lost_write_checks_total"} {
		if strings.Contains(text, name+"{") {
			t.Errorf("a canary without the lease serves %s:\n%s", name, text)
		}
	}
}

func TestCollectorSeries(t *testing.T) {
	c := NewCollector()
	c.Set("main", watchtest.Static[Snapshot]("main", testSnapshot(), nil))
	if problems, err := testutil.CollectAndLint(c); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %+v", err, problems)
	}
	plain, err := exposition.PlainText(c)
	if err != nil {
		t.Fatal(err)
	}
	text := string(plain)
	for _, line := range []string{
		`redis_canary_up{redis_cluster="main"} 1`,
		`redis_canary_leader{redis_cluster="main"} 1`,
		`redis_canary_acknowledged_lost_writes_total{address="127.0.0.1:7000",node_id="aaa",redis_cluster="main"} 14`,
		`redis_canary_write_failures_total{address="127.0.0.1:7000",error="connection",node_id="aaa",redis_cluster="main"} 3`,
		`redis_canary_write_duration_seconds_bucket{address="127.0.0.1:7000",node_id="aaa",redis_cluster="main",le="0.001"} 1`,
		`redis_canary_write_duration_seconds_count{address="127.0.0.1:7000",node_id="aaa",redis_cluster="main"} 2`,
		`redis_canary_lost_write_checks_total{redis_cluster="main"} 1`,
	} {
		if !strings.Contains(text, line+"\n") {
			t.Errorf("text lacks %s:\n%s", line, text)
		}
	}
}

// The text path served on /metrics and the prometheus.Collector path must
// produce the same families, series and values; a failed round keeps the
// counters served.
func TestWriteTextMatchesCollect(t *testing.T) {
	c := NewCollector()
	c.Set("main", watchtest.Static[Snapshot]("main", testSnapshot(), nil))
	c.Set("other", watchtest.Static[Snapshot]("main", nil, errors.New("no node answered CLUSTER NODES")))
	plain, err := exposition.PlainText(c)
	if err != nil {
		t.Fatal(err)
	}
	text := string(plain)
	if err := testutil.CollectAndCompare(c, strings.NewReader(text)); err != nil {
		t.Errorf("text rendering differs from Collect: %v", err)
	}
}

func TestMetricNamesAreCollected(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	c := NewCollector()
	c.Set("main", watchtest.Static[Snapshot]("main", testSnapshot(), nil))
	reg.MustRegister(c)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, f := range families {
		got[f.GetName()] = true
	}
	for _, d := range append(table.Health.Descs(), table.Series.Descs()...) {
		if !got[d.Name] {
			t.Errorf("%s is in the table but not collected", d.Name)
		}
	}
}

func TestCountersStayServedWhenARoundFails(t *testing.T) {
	calls := 0
	w := watch.New("main", time.Minute, time.Second, func(context.Context, *Snapshot) (*Snapshot, error) {
		calls++
		if calls == 1 {
			return testSnapshot(), nil
		}
		return nil, errors.New("no node answered CLUSTER NODES")
	}, log.NewNopLogger())
	w.RefreshOnce(context.Background())
	w.RefreshOnce(context.Background())
	c := NewCollector()
	c.Set("main", w)
	plain, err := exposition.PlainText(c)
	if err != nil {
		t.Fatal(err)
	}
	text := string(plain)
	for _, line := range []string{
		`redis_canary_up{redis_cluster="main"} 0`,
		`redis_canary_acknowledged_lost_writes_total{address="127.0.0.1:7000",node_id="aaa",redis_cluster="main"} 14`,
		`redis_canary_acknowledged_unverifiable_writes_total{address="127.0.0.1:7000",node_id="aaa",redis_cluster="main"} 2`,
	} {
		if !strings.Contains(text, line+"\n") {
			t.Errorf("text lacks %s:\n%s", line, text)
		}
	}
}

// apply is where lost writes are counted: values base+1..acked were
// acknowledged by the old owner; whatever the new owner lacks is lost. A
// key missing altogether lost only the writes whose TTL cannot have run
// out when it was read (recent of them, sent a second before the read);
// the others may have expired and are unverifiable.
func TestApplyCountsLostWrites(t *testing.T) {
	src := &source{logger: log.NewNopLogger(), cfg: settings.Cluster{Canary: settings.Canary{KeyTTL: time.Minute}}}
	old := redisproto.Master{ID: "old", Addr: "127.0.0.1:1"}
	promoted := redisproto.Master{ID: "new", Addr: "127.0.0.1:2"}
	cases := []struct {
		name               string
		base, acked, found uint64
		recent             int
		wantLost, wantUnv  uint64
	}{
		{"new owner has everything", 10, 25, 25, 15, 0, 0},
		{"new owner has a write that was never acknowledged", 10, 25, 26, 15, 0, 0},
		{"new owner lacks the last five", 10, 25, 20, 15, 5, 0},
		{"new owner lacks the last five, the others' TTL run out: the key is there, so lost", 10, 25, 20, 0, 5, 0},
		{"new owner lacks the key, no TTL can have run out: only writes since the key was read count", 10, 25, 0, 15, 15, 0},
		{"new owner lacks the key, every TTL may have run out: unverifiable", 10, 25, 0, 0, 0, 15},
		{"new owner lacks the key, five TTLs cannot have run out: five lost", 10, 25, 0, 5, 5, 10},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			next := (*Snapshot)(nil).clone()
			at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
			st := &keyState{key: "k", owner: old.ID, ownerAddr: old.Addr, base: c.base, acked: c.acked}
			for range c.recent {
				st.ackedAt = append(st.ackedAt, at.Add(-time.Second))
			}
			src.apply(next, at, st, writeResult{owner: promoted, checked: true, read: true, found: c.found, readAt: at, wrote: true, ok: true, sent: at})
			var got, unv uint64
			if m, ok := next.Masters["old"]; ok {
				got, unv = m.Lost, m.Unverifiable
			}
			if got != c.wantLost || unv != c.wantUnv {
				t.Errorf("lost = %d, unverifiable = %d; want %d and %d", got, unv, c.wantLost, c.wantUnv)
			}
			if next.Checks != 1 || st.owner != "new" || st.acked != c.found+1 || next.Masters["new"].Acknowledged != 1 {
				t.Errorf("after the check: checks %d, state %+v, new master %+v", next.Checks, st, next.Masters["new"])
			}
			// The loss is an event about the old master, with the count,
			// for the event log; no loss, no event.
			var want []events.Event
			if c.wantLost > 0 {
				want = []events.Event{{Time: at, Kind: canary.EventAcknowledgedWritesLost,
					Subject: events.NodeSubject(old.ID, old.Addr), After: strconv.FormatUint(c.wantLost, 10)}}
			}
			if got := next.Events.All(); !reflect.DeepEqual(got, want) {
				t.Errorf("events %+v, want %+v", got, want)
			}
		})
	}
}

// The times of acknowledged writes kept for a key are bounded: those whose
// TTL may have run out are forgotten, and at most maxTrackedAcks kept.
func TestTrackAckIsBounded(t *testing.T) {
	st := &keyState{}
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	ttl := time.Hour
	for i := range maxTrackedAcks + 10 {
		sent := start.Add(time.Duration(i) * time.Millisecond)
		st.trackAck(sent, sent, ttl)
	}
	if len(st.ackedAt) != maxTrackedAcks {
		t.Errorf("%d write times kept, want at most %d", len(st.ackedAt), maxTrackedAcks)
	}
	// An hour later every one of them may have expired.
	later := start.Add(ttl)
	st.trackAck(later, later, ttl)
	if len(st.ackedAt) != 1 || !st.ackedAt[0].Equal(later) {
		t.Errorf("after a TTL, %d write times kept, want only the newest", len(st.ackedAt))
	}
}

// With the lease, the first read of a key (a takeover) counts what the
// master held as acknowledged, the previous holder's writes: a failover
// that then loses them is counted by the new holder. Without it, only the
// exporter's own writes count.
func TestFirstReadOfATakeoverCountsThePredecessorsWrites(t *testing.T) {
	m := redisproto.Master{ID: "m", Addr: "127.0.0.1:1"}
	promoted := redisproto.Master{ID: "p", Addr: "127.0.0.1:2"}
	for _, c := range []struct {
		name     string
		lease    *leaseRunner
		wantLost uint64
	}{
		{"lease: the predecessor's 10 and this holder's 3", newLeaseRunner(time.Second, time.Second), 13},
		{"no lease: this exporter's 3 only", nil, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := &source{logger: log.NewNopLogger(), lease: c.lease}
			st := &keyState{key: "k"}
			next := (*Snapshot)(nil).clone()
			// The first read finds 110 on the master; three writes follow.
			src.apply(next, time.Now(), st, writeResult{owner: m, read: true, found: 110, wrote: true, ok: true})
			src.apply(next, time.Now(), st, writeResult{owner: m, wrote: true, ok: true})
			src.apply(next, time.Now(), st, writeResult{owner: m, wrote: true, ok: true})
			// The replica promoted had 100: 13 writes the master applied.
			src.apply(next, time.Now(), st, writeResult{owner: promoted, checked: true, read: true, found: 100, wrote: true, ok: true})
			if got := next.Masters["m"].Lost; got != c.wantLost {
				t.Errorf("lost = %d, want %d", got, c.wantLost)
			}
		})
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestErrorKind(t *testing.T) {
	cases := []struct {
		err  error
		want string
	}{
		{fmt.Errorf("SET k: %w", context.DeadlineExceeded), "timeout"},
		{&net.OpError{Op: "read", Err: timeoutErr{}}, "timeout"},
		{&net.OpError{Op: "dial", Err: errors.New("connection refused")}, "connection"},
		{fmt.Errorf("SET k: %w", io.EOF), "connection"},
		{errNotReplicated, "not_replicated"},
		{errors.New("something else"), "other"},
	}
	for _, c := range cases {
		if got := errorKind(c.err); got != c.want {
			t.Errorf("errorKind(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}

// Key choice: deterministic, inside the master's slots, with the prefix.
func TestChooseKey(t *testing.T) {
	src := &source{cfg: settings.Cluster{Canary: settings.Canary{KeyPrefix: "p:"}}}
	// A owns every slot but 12345, B that one only.
	slots := slotMap(t, map[string]string{
		"127.0.0.1:7000": "" +
			idA + " 127.0.0.1:7000@17000 myself,master - 0 0 1 connected 0-12344 12346-16383\n" +
			idB + " 127.0.0.1:7001@17001 master - 0 0 2 connected 12345\n",
		"127.0.0.1:7001": "" +
			idA + " 127.0.0.1:7000@17000 master - 0 0 1 connected 0-12344 12346-16383\n" +
			idB + " 127.0.0.1:7001@17001 myself,master - 0 0 2 connected 12345\n",
	})
	key, slot, ok := src.chooseKey(idB, slots)
	if !ok || slot != 12345 || redisproto.KeySlot(key) != 12345 || !strings.HasPrefix(key, "p:{") {
		t.Errorf("chooseKey(B) = %q, slot %d, %v", key, slot, ok)
	}
	if again, _, _ := src.chooseKey(idB, slots); again != key {
		t.Errorf("chooseKey is not deterministic: %q then %q", key, again)
	}
	if _, _, ok := src.chooseKey("nobody", slots); ok {
		t.Error("found a key for a master that owns no slot")
	}
}
