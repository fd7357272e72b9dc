package kafka

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/systems/kafka/settings"
)

// TestLeanReplacementsGiveTheFullSeries checks the PromQL METRICS.md gives
// for each per-partition family lean leaves out: promtool evaluates it
// over the series the lean mode serves for a snapshot and must get the
// series the full mode serves for the same snapshot, partition by
// partition (counters: per topic). Two snapshots: a healthy cluster with
// racks, a leader that is not the preferred one, a partition at its min
// ISR and one rack-unsafe; and a failover with an offline partition and a
// reassignment.
func TestLeanReplacementsGiveTheFullSeries(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool (Debian's prometheus package, scripts/install-deps.sh): %v", err)
	}
	rs := []int32{1, 2, 3}
	withRacks := func(s *Snapshot) *Snapshot {
		for i := range s.Brokers {
			s.Brokers[i].Rack = "rack-" + brokerLabel(s.Brokers[i].ID%2)
		}
		s.countRacks()
		return s
	}
	t0 := time.Now()
	healthyBefore := at(snapshotOf([]int32{1, 2, 3}, part{1, rs, rs}, part{2, rs, rs}, part{1, []int32{1, 2}, []int32{1, 2}}, part{1, []int32{1, 3}, []int32{1, 3}}), t0, 0)
	healthy := at(snapshotOf([]int32{1, 2, 3}, part{1, rs, rs}, part{2, rs, rs}, part{1, []int32{1, 2}, []int32{1, 2}}, part{1, []int32{1, 3}, []int32{1, 3}}), t0, time.Second)
	failover := at(snapshotOf([]int32{2, 3}, part{2, rs, []int32{2, 3}}, part{-1, rs, nil}, part{2, []int32{1, 2}, []int32{2}}, part{3, []int32{1, 3}, []int32{3}}), t0, 2*time.Second)
	failover.Topics[0].Partitions[0].setReassignment(nil, []int32{1})
	refreshes(time.Minute, healthyBefore, healthy, failover)
	for _, s := range []*Snapshot{healthy, failover} {
		withRacks(s)
		s.countNoCleanLeader()
	}

	var tests strings.Builder
	tests.WriteString("tests:\n")
	for i, snap := range []*Snapshot{healthy, failover} {
		lean, full := render(snap, settings.PartitionMetricsLean), render(snap, settings.PartitionMetricsFull)
		fmt.Fprintf(&tests, "  - interval: 1m\n    name: snapshot %d\n    input_series:\n", i)
		for _, key := range sortedKeys(lean) {
			fmt.Fprintf(&tests, "      - series: '%s'\n        values: '%g'\n", withInstance(key), lean[key])
		}
		tests.WriteString("    promql_expr_test:\n")
		for _, s := range PartitionSeriesModes {
			if s.Replacement == "" {
				continue
			}
			expr, want := "("+s.Replacement+") + 0", full.family(s.Family)
			if strings.HasSuffix(s.Family, "_total") {
				// The topic counter is the sum of the partitions'.
				want = full.sumByTopic(s.Family)
			}
			if len(want) == 0 {
				continue // not served in this snapshot (racks in the second, say)
			}
			fmt.Fprintf(&tests, "      - expr: '%s'\n        eval_time: 0\n        exp_samples:\n", expr)
			for _, labels := range sortedKeys(want) {
				fmt.Fprintf(&tests, "          - labels: '%s'\n            value: %g\n", withInstance(labels), want[labels])
			}
		}
	}
	path := filepath.Join(t.TempDir(), "replacements_test.yml")
	if err := os.WriteFile(path, []byte(tests.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(promtool, "test", "rules", path).CombinedOutput()
	if err != nil {
		t.Errorf("promtool test rules: %v\n%s\ntests:\n%s", err, out, tests.String())
	}
}

// withInstance adds the labels a scrape adds to a series key.
func withInstance(key string) string {
	return strings.Replace(key, "{", `{instance="exporter:9308",job="failover_exporter",`, 1)
}

// family returns the series of one family, keyed by their labels alone.
func (s seriesSink) family(name string) map[string]float64 {
	out := map[string]float64{}
	for key, v := range s {
		if strings.HasPrefix(key, name+"{") {
			out[key[len(name):]] = v
		}
	}
	return out
}

// sumByTopic sums a per-partition family by cluster and topic, keyed by
// labels.
func (s seriesSink) sumByTopic(name string) map[string]float64 {
	out := map[string]float64{}
	for labels, v := range s.family(name) {
		var kept []string
		for _, l := range strings.Split(strings.Trim(labels, "{}"), ",") {
			if !strings.HasPrefix(l, "partition=") {
				kept = append(kept, l)
			}
		}
		out["{"+strings.Join(kept, ",")+"}"] += v
	}
	return out
}

func sortedKeys(m map[string]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
