package redis

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/failover-exporter/failover_exporter/collector/watch/watchtest"
	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func entry(slot int64, keys int64, usage ...int64) slotStatEntry {
	e := slotStatEntry{slot: slot, fields: map[string]int64{"key-count": keys}}
	if len(usage) == 3 {
		e.fields["cpu-usec"], e.fields["network-bytes-in"], e.fields["network-bytes-out"] = usage[0], usage[1], usage[2]
		e.hasUsage = true
	}
	return e
}

func TestHottestSlots(t *testing.T) {
	cases := []struct {
		name    string
		entries []slotStatEntry
		metric  string
		top     int
		want    []SlotStat
		wantErr string
	}{
		{name: "empty slots are left out", metric: "key-count", top: 3,
			entries: []slotStatEntry{entry(5, 10), entry(0, 0), entry(1, 0)},
			want:    []SlotStat{{Slot: 5, Keys: 10}}},
		{name: "highest first, ties by slot, cut at top", metric: "key-count", top: 2,
			entries: []slotStatEntry{entry(9, 3), entry(2, 7), entry(4, 7)},
			want:    []SlotStat{{Slot: 2, Keys: 7}, {Slot: 4, Keys: 7}}},
		{name: "by cpu, with every counter of the slot", metric: "cpu-usec", top: 5,
			entries: []slotStatEntry{entry(1, 4, 10, 100, 5), entry(2, 9, 30, 7, 8), entry(3, 1, 0, 1, 1)},
			want: []SlotStat{{Slot: 2, Keys: 9, CPUMicroseconds: 30, NetworkBytesIn: 7, NetworkBytesOut: 8},
				{Slot: 1, Keys: 4, CPUMicroseconds: 10, NetworkBytesIn: 100, NetworkBytesOut: 5}}},
		{name: "by bytes out", metric: "network-bytes-out", top: 1,
			entries: []slotStatEntry{entry(1, 4, 10, 100, 5), entry(2, 9, 30, 7, 8)},
			want:    []SlotStat{{Slot: 2, Keys: 9, CPUMicroseconds: 30, NetworkBytesIn: 7, NetworkBytesOut: 8}}},
		{name: "slot out of range", metric: "key-count", top: 1, entries: []slotStatEntry{entry(16384, 1)}, wantErr: "slot 16384 out of range"},
		{name: "negative slot", metric: "key-count", top: 1, entries: []slotStatEntry{entry(-1, 1)}, wantErr: "out of range"},
		{name: "statistic missing", metric: "cpu-usec", top: 1, entries: []slotStatEntry{entry(3, 1)}, wantErr: "slot 3 has no cpu-usec"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := hottestSlots(c.entries, c.metric, c.top)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(c.want) {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Errorf("[%d] = %+v, want %+v", i, got[i], c.want[i])
				}
			}
		})
	}
}

// withSlotStats gives testSnapshot's reachable master hot slots, with the
// usage counters.
func withSlotStats(s *Snapshot) *Snapshot {
	for i := range s.Nodes {
		if s.Nodes[i].ID != idA {
			continue
		}
		hot := SlotStat{Slot: 42, Keys: 900, CPUMicroseconds: 2_500_000, NetworkBytesIn: 4096, NetworkBytesOut: 512}
		warm := SlotStat{Slot: 7, Keys: 30, CPUMicroseconds: 10, NetworkBytesIn: 64, NetworkBytesOut: 8192}
		s.Nodes[i].SlotStats = &SlotStats{ByKeys: []SlotStat{hot, warm}, Usage: true,
			ByCPU: []SlotStat{hot, warm}, ByNetworkIn: []SlotStat{hot, warm}, ByNetworkOut: []SlotStat{warm, hot}}
	}
	return s
}

func TestSlotStatsExposition(t *testing.T) {
	c := NewCollector()
	c.Set("main", watchtest.Static[Snapshot]("main", withSlotStats(testSnapshot()), nil))
	const labels = `address="127.0.0.1:7000",node_id="` + idA + `",redis_cluster="main"`
	want := `
# HELP redis_cluster_slot_keys ` + slotStatsMetrics.keys.Help + `
# TYPE redis_cluster_slot_keys gauge
redis_cluster_slot_keys{` + labels + `,slot="42"} 900
redis_cluster_slot_keys{` + labels + `,slot="7"} 30
# HELP redis_cluster_slot_cpu_seconds_total ` + slotStatsMetrics.cpu.Help + `
# TYPE redis_cluster_slot_cpu_seconds_total counter
redis_cluster_slot_cpu_seconds_total{` + labels + `,slot="42"} 2.5
redis_cluster_slot_cpu_seconds_total{` + labels + `,slot="7"} 1e-05
# HELP redis_cluster_slot_network_received_bytes_total ` + slotStatsMetrics.networkIn.Help + `
# TYPE redis_cluster_slot_network_received_bytes_total counter
redis_cluster_slot_network_received_bytes_total{` + labels + `,slot="42"} 4096
redis_cluster_slot_network_received_bytes_total{` + labels + `,slot="7"} 64
# HELP redis_cluster_slot_network_sent_bytes_total ` + slotStatsMetrics.networkOut.Help + `
# TYPE redis_cluster_slot_network_sent_bytes_total counter
redis_cluster_slot_network_sent_bytes_total{` + labels + `,slot="42"} 512
redis_cluster_slot_network_sent_bytes_total{` + labels + `,slot="7"} 8192
`
	names := []string{"redis_cluster_slot_keys", "redis_cluster_slot_cpu_seconds_total",
		"redis_cluster_slot_network_received_bytes_total", "redis_cluster_slot_network_sent_bytes_total"}
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}
	if problems, err := testutil.CollectAndLint(c, names...); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %+v", err, problems)
	}
	// Without slot stats (off, unsupported, not read) the families are absent.
	c.Set("main", watchtest.Static[Snapshot]("main", testSnapshot(), nil))
	if n := testutil.CollectAndCount(c, names...); n != 0 {
		t.Errorf("%d hot-slot series without slot stats, want none", n)
	}
}

// A server without the command, or an ACL that refuses it, is logged once
// per source; anything else at debug level only.
func TestSlotStatsReportLogsOnce(t *testing.T) {
	var buf bytes.Buffer
	r := &slotStatsReader{top: 5, logger: log.NewLogfmtLogger(&buf)}
	unknown := errors.New("CLUSTER SLOT-STATS ORDERBY key-count: ERR unknown subcommand 'slot-stats'. Try CLUSTER HELP.")
	noperm := errors.New("CLUSTER SLOT-STATS ORDERBY key-count: NOPERM User exporter has no permissions to run the 'cluster|slot-stats' command")
	for range 3 {
		r.report("127.0.0.1:7000", unknown)
		r.report("127.0.0.1:7001", noperm)
	}
	out := buf.String()
	if n := strings.Count(out, "not supported here"); n != 1 {
		t.Errorf("unsupported logged %d times, want once:\n%s", n, out)
	}
	if n := strings.Count(out, "allow +cluster|slot-stats"); n != 1 {
		t.Errorf("refusal logged %d times, want once:\n%s", n, out)
	}
	if n := strings.Count(out, "level=warn"); n != 2 {
		t.Errorf("%d warnings, want 2:\n%s", n, out)
	}
}
