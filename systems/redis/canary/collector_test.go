package rediscanary

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/failover-exporter/failover_exporter/collector/canary"
	"github.com/failover-exporter/failover_exporter/collector/episode"
	"github.com/failover-exporter/failover_exporter/collector/exposition"
	"github.com/failover-exporter/failover_exporter/collector/watch"
	"github.com/failover-exporter/failover_exporter/collector/watch/watchtest"
	redisproto "github.com/failover-exporter/failover_exporter/systems/redis/proto"
	"github.com/failover-exporter/failover_exporter/systems/redis/settings"
)

func testSnapshot() *Snapshot {
	return &Snapshot{
		Leader: true,
		Checks: 1,
		Masters: map[string]*MasterStats{
			"aaa": {Addr: "127.0.0.1:7000", Key: "k:{0}", Attempts: 20, Acknowledged: 17, Lost: 14, Unverifiable: 2,
				Failures: map[string]uint64{"connection": 3}, Latency: (*canary.Histogram)(nil).Observe(0.0008).Observe(0.002),
				Stalls: (*episode.Histogram)(nil).ObserveDuration(3200 * time.Millisecond)},
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
