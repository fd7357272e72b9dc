package sentinelcanary

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/failover-exporter/failover_exporter/collector/canary"
	"github.com/failover-exporter/failover_exporter/collector/exposition"
	"github.com/failover-exporter/failover_exporter/collector/watch/watchtest"
)

// The canary writes where a client of the sentinels would: to the address
// most of the sentinels that answered give, the first answer's on a tie,
// and it knows when they disagree.
func TestPickFollowsTheMostSentinels(t *testing.T) {
	a, b := "10.0.0.1:6379", "10.0.0.2:6379"
	for _, tc := range []struct {
		name     string
		answers  []map[string]string
		want     string
		disagree bool
	}{
		{"all agree", []map[string]string{{"m": a}, {"m": a}, {"m": a}}, a, false},
		{"one of three differs", []map[string]string{{"m": b}, {"m": a}, {"m": a}}, a, true},
		{"a tie goes to the first answer", []map[string]string{nil, {"m": b}, {"m": a}}, b, true},
		{"only one answered", []map[string]string{nil, nil, {"m": a}}, a, false},
		{"the others do not monitor it", []map[string]string{{"x": b}, {"m": a}}, a, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, disagree := pick(tc.answers, "m"); got != tc.want || disagree != tc.disagree {
				t.Errorf("pick = %q, %v; want %q, %v", got, disagree, tc.want, tc.disagree)
			}
		})
	}
}

func TestRunIDAndAddresses(t *testing.T) {
	info := "# Server\r\nredis_version:7.0.15\r\nrun_id:4b1c0fd2e47ad3e0a8dbf2a1f6f8f2e9f0a1b2c3\r\ntcp_port:6379\r\n"
	if got := runID(info); got != "4b1c0fd2e47ad3e0a8dbf2a1f6f8f2e9f0a1b2c3" {
		t.Errorf("runID = %q", got)
	}
	if got := runID("run_id:has space\r\n"); got != "" {
		t.Errorf("runID of a value that cannot be one = %q", got)
	}
	if hostPort("10.0.0.1", "6379") != "10.0.0.1:6379" || hostPort("::1", "6379") != "[::1]:6379" {
		t.Errorf("hostPort of good addresses: %q, %q", hostPort("10.0.0.1", "6379"), hostPort("::1", "6379"))
	}
	for _, bad := range [][2]string{{"10.0.0.1", "0"}, {"10.0.0.1", "x"}, {"10.0.0.1", "70000"}, {"", "6379"}, {"a b", "6379"}} {
		if got := hostPort(bad[0], bad[1]); got != "" {
			t.Errorf("hostPort(%q, %q) = %q, want none", bad[0], bad[1], got)
		}
	}
}

func testSnapshot(leader bool) *Snapshot {
	return &Snapshot{
		Leader: leader,
		Checks: 1,
		Masters: map[string]*MasterStats{
			"127.0.0.1:6379": {Addr: "127.0.0.1:6379", Set: "mymaster", Attempts: 20, Acknowledged: 17, Lost: 14, Unverifiable: 2,
				Failures: map[string]uint64{"connection": 3}, Latency: (*canary.Histogram)(nil).Observe(0.0008).Observe(0.002)},
			"127.0.0.1:6380": {Addr: "127.0.0.1:6380", Set: "mymaster", Key: "__failover_exporter_canary:{mymaster}", Attempts: 5, Acknowledged: 5,
				Failures: map[string]uint64{}, Latency: (*canary.Histogram)(nil).Observe(0.0009)},
		},
	}
}

// The holder serves its counters per master name and node; an exporter
// without the lease serves only its round health and leader 0.
func TestCollectorSeries(t *testing.T) {
	c := NewCollector()
	c.Set("main", watchtest.Static[Snapshot]("main", testSnapshot(true), nil))
	c.Set("standby", watchtest.Static[Snapshot]("standby", testSnapshot(false), nil))
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
		`redis_sentinel_canary_up{sentinel_cluster="main"} 1`,
		`redis_sentinel_canary_leader{sentinel_cluster="main"} 1`,
		`redis_sentinel_canary_leader{sentinel_cluster="standby"} 0`,
		`redis_sentinel_canary_acknowledged_lost_writes_total{address="127.0.0.1:6379",master="mymaster",sentinel_cluster="main"} 14`,
		`redis_sentinel_canary_acknowledged_unverifiable_writes_total{address="127.0.0.1:6379",master="mymaster",sentinel_cluster="main"} 2`,
		`redis_sentinel_canary_write_failures_total{address="127.0.0.1:6379",error="connection",master="mymaster",sentinel_cluster="main"} 3`,
		`redis_sentinel_canary_writes_acknowledged_total{address="127.0.0.1:6380",master="mymaster",sentinel_cluster="main"} 5`,
		`redis_sentinel_canary_write_duration_seconds_count{address="127.0.0.1:6379",master="mymaster",sentinel_cluster="main"} 2`,
		`redis_sentinel_canary_lost_write_checks_total{sentinel_cluster="main"} 1`,
	} {
		if !strings.Contains(text, line+"\n") {
			t.Errorf("text lacks %s:\n%s", line, text)
		}
	}
	if strings.Contains(text, `redis_sentinel_canary_write_attempts_total{address="127.0.0.1:6379",master="mymaster",sentinel_cluster="standby"}`) {
		t.Errorf("an exporter without the lease serves write counters:\n%s", text)
	}
}
