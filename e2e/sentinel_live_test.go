package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/internal/exportertest"
	"github.com/failover-exporter/failover_exporter/internal/lab"
	"github.com/failover-exporter/failover_exporter/internal/promtest"
)

// liveSentinel is the sentinel_cluster label of TestSentinelLive's deployment.
const liveSentinel = "live-sentinel"

// TestSentinelLive is the monitoring chain for a Redis Sentinel
// deployment, with real processes on 127.0.0.1: one master, two replicas
// and three sentinels, two exporters reading it, Prometheus scraping both
// every second with prometheus/alerts.yml (for: rewritten to 0s) and a
// real Alertmanager. A sentinel made to monitor a replica under the
// master's name (split brain) fires RedisSentinelsDisagree, notified once
// although two exporters report it, and undone resolves it; a kill -9 of
// the master fires RedisSentinelFailover once the sentinels promoted a
// replica; every panel of the Sentinel dashboard, the write canary's of
// the first exporter included, has data over that window, and its stat
// panels read with two exporters what they read with one and what the
// first exporter's /metrics says.
func TestSentinelLive(t *testing.T) {
	root := lab.RepoRoot(t)
	rules := promtest.RewriteRules(t, filepath.Join(root, "prometheus", "alerts.yml"), 0)
	s := lab.StartSentinel(t, lab.SentinelOptions{})
	config := fmt.Sprintf("sentinel:\n  - name: %s\n    sentinels: [%s]\n    refresh_interval: 1s\n    refresh_timeout: 1s\n",
		liveSentinel, strings.Join(s.SentinelAddrs(), ", "))
	// The first exporter also runs the write canary, so that the canary
	// row of the dashboard has data: alone, without the lease (a lone
	// writer, docs/canary.md), so that it writes through the kill -9 (its
	// writes to the dead master fail until the sentinels promote a
	// replica) and the stat panels read the same with one exporter as with
	// two. The lease between two writers is tested in
	// systems/sentinel/canary.
	canaryConfig := config + "    canary: {enabled: true, interval: 250ms, lease: false}\n"
	dir := t.TempDir()
	var configPaths []string
	for i, c := range []string{canaryConfig, config} {
		path := filepath.Join(dir, fmt.Sprintf("exporter%d.yml", i))
		if err := os.WriteFile(path, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
		configPaths = append(configPaths, path)
	}
	l := &liveLab{root: root}
	for _, path := range configPaths {
		l.exporters = append(l.exporters, exportertest.Start(t, "--config.file="+path))
	}
	for _, e := range l.exporters {
		e.WaitReady(t, 60*time.Second)
	}
	l.hook = promtest.StartWebhook(t)
	l.am = promtest.StartAlertmanagerNotifying(t, l.hook)
	l.prom = promtest.StartPrometheus(t, promtest.PrometheusOptions{
		ScrapeTargets:   []string{l.exporters[0].Addr, l.exporters[1].Addr},
		RulesFile:       rules,
		AlertmanagerURL: l.am.URL,
		ScrapeInterval:  time.Second,
		EvalInterval:    time.Second,
	})
	settledQuery := func(q func(string) []promtest.Series) (bool, string) {
		for _, c := range []struct{ expr, want string }{
			{`count(redis_sentinel_up == 1)`, "2"},
			{`min(redis_sentinel_master_promotable_replicas)`, "2"},
			{`min(redis_sentinel_master_sentinels_reachable)`, "3"},
			{`max(redis_sentinel_master_sentinels_disagree)`, "0"},
		} {
			res := q(c.expr)
			if len(res) != 1 || strconv.FormatFloat(res[0].Last(), 'f', -1, 64) != c.want {
				return false, fmt.Sprintf("%s = %v, want %s", c.expr, describeSeries(res), c.want)
			}
		}
		return true, ""
	}
	l.waitQuery(t, 90*time.Second, "both exporters scraped, every sentinel read, both replicas promotable", settledQuery)
	start := time.Now()
	master := map[string]string{"sentinel_cluster": liveSentinel, "master": s.MasterName()}

	// Split brain: the last sentinel monitors a replica under the master's name.
	notified := len(l.hook.Notifications())
	rogue, replica := s.SentinelPorts()[2], s.DataPorts()[1]
	monitor := func(port int) {
		s.CLI(t, rogue, "SENTINEL", "REMOVE", s.MasterName())
		s.CLI(t, rogue, "SENTINEL", "MONITOR", s.MasterName(), "127.0.0.1", strconv.Itoa(port), strconv.Itoa(s.Quorum()))
		s.CLI(t, rogue, "SENTINEL", "SET", s.MasterName(), "down-after-milliseconds", strconv.Itoa(int(s.DownAfter().Milliseconds())),
			"failover-timeout", strconv.Itoa(int(s.FailoverTimeout().Milliseconds())))
	}
	splitAt := time.Now()
	monitor(replica)
	firing, inAM := l.waitAlert(t, 60*time.Second, "RedisSentinelsDisagree", master, true)
	t.Logf("FIGURE sentinel split brain: RedisSentinelsDisagree firing in Prometheus after %s, in Alertmanager after %s",
		firing.Sub(splitAt).Round(10*time.Millisecond), inAM.Sub(splitAt).Round(10*time.Millisecond))
	// Healed only once the page went out: Alertmanager sends no resolved
	// notification of an alert it never notified firing, and a CI run
	// healed the split within its group_wait.
	l.waitNotified(t, 30*time.Second, notified, "firing", "RedisSentinelsDisagree", master)
	monitor(s.FirstMasterPort())
	l.waitAlert(t, 60*time.Second, "RedisSentinelsDisagree", master, false)
	l.waitNotified(t, 30*time.Second, notified, "resolved", "RedisSentinelsDisagree", master)
	l.checkNotifiedOnce(t, notified, "RedisSentinelsDisagree")
	l.waitQuery(t, 60*time.Second, "settled after the split", settledQuery)

	// A kill -9 of the master: a failover, alerted once it happened; the
	// old master, started again, rejoins as a replica.
	killedAt := s.Kill(t, s.FirstMasterPort())
	firing, _ = l.waitAlert(t, 60*time.Second, "RedisSentinelFailover", master, true)
	t.Logf("FIGURE sentinel kill -9 of the master: RedisSentinelFailover firing in Prometheus after %s", firing.Sub(killedAt).Round(10*time.Millisecond))
	s.Restart(t, s.FirstMasterPort())
	l.waitQuery(t, 90*time.Second, "settled with the old master back as a replica", settledQuery)
	end := windowEnd()

	vars := map[string]string{"sentinel_cluster": liveSentinel, "master": s.MasterName()}
	l.evaluateDashboard(t, "redis-sentinel.json", liveSentinel, vars, start, end)
	l.checkStatPanels(t, "redis-sentinel.json", "sentinel_cluster", vars, func() map[string]float64 {
		m := l.exporters[0].Scrape(t)
		return map[string]float64{
			"Promotable replicas":       value(t, m, "redis_sentinel_master_promotable_replicas", master),
			"Sentinel losses tolerated": value(t, m, "redis_sentinel_master_sentinel_losses_tolerated", master),
		}
	})
}
