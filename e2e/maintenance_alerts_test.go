package e2e

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/internal/exportertest"
	"github.com/failover-exporter/failover_exporter/internal/lab"
	"github.com/failover-exporter/failover_exporter/internal/promtest"
)

// TestMaintenanceAlertsKafka runs the shipped alert rules (for: rewritten
// to 0s, so that every alert fires at its first evaluation) in a real
// Prometheus scraping two exporters of a real 3-node KRaft cluster, through
// a rolling restart's stop announced on one exporter only:
//   - broker 1 announced (safe-to-stop --announce) and killed by PID: its
//     stop is a ticket (KafkaBrokerDownAnnounced, the Announced
//     under-replicated and at-min-ISR alerts) and KafkaBrokerDown,
//     KafkaPartitionUnderReplicated and KafkaPartitionAtMinISR never fire;
//   - broker 2 SIGSTOPped for 20 s meanwhile: it pages (with one node dead
//     and one frozen the 3-voter quorum cannot fence it, so the page is
//     KafkaBrokerUnreachable), and broker 1 still does not;
//   - broker 1 restarted: the window closes once it is back in every ISR
//     (kafka-topics.sh is the clock);
//   - broker 1 SIGSTOPped after that: its partitions under-replicated page
//     again, and no Announced alert fires.
func TestMaintenanceAlertsKafka(t *testing.T) {
	root := lab.RepoRoot(t)
	rules := promtest.RewriteRules(t, filepath.Join(root, "prometheus", "alerts.yml"), 0)
	c := lab.SharedKafka(t, lab.KafkaOptions{})
	const topic = "maintenance-alerts"
	createTopic(t, c.Bootstrap(), topic, nil)
	token := "maintenance-token-0123456789abcdef"
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := faultConfig(t, fmt.Sprintf(`kafka:
  - name: lab
    bootstrap_servers: [%s]
    refresh_interval: 1s
    refresh_timeout: 1s
`, strings.Join(c.Bootstrap(), ", ")))
	l := &liveLab{root: root, kafka: c}
	for range 2 {
		l.exporters = append(l.exporters, exportertest.Start(t, "--config.file="+cfg, "--web.maintenance-token-file="+tokenFile))
	}
	for _, e := range l.exporters {
		e.WaitReady(t, 60*time.Second)
	}
	l.prom = promtest.StartPrometheus(t, promtest.PrometheusOptions{
		ScrapeTargets: []string{l.exporters[0].Addr, l.exporters[1].Addr},
		RulesFile:     rules,
	})
	l.waitQuery(t, 90*time.Second, "both exporters read the cluster, "+topic+" in sync", func(q func(string) []promtest.Series) (bool, string) {
		res := q(fmt.Sprintf(`count(kafka_partition_in_sync_replicas{kafka_cluster="lab",topic=%q} == 3)`, topic))
		return len(res) == 1 && res[0].Last() == 6, describeSeries(res)
	})

	// Announced on the first exporter only: a window on either holds the
	// alerts back.
	code, out := stopCommand(t, l.exporters[0], 60*time.Second, "--cluster", "lab", "--broker", "1", "--wait", "45s",
		"--announce", "--maintenance-token-file", tokenFile, "--ttl", "10m")
	if code != 0 || !strings.Contains(out, "announced") {
		t.Fatalf("safe-to-stop --broker 1 --announce: exit %d:\n%s", code, out)
	}
	announcedAt := time.Now()
	c.Kill(t, 1)
	killedAt := time.Now()
	tickets := []string{"KafkaBrokerDownAnnounced", "KafkaPartitionUnderReplicatedAnnounced", "KafkaPartitionAtMinISRAnnounced"}
	took := l.waitQuery(t, 60*time.Second, "the announced stop's tickets firing", func(q func(string) []promtest.Series) (bool, string) {
		for _, name := range tickets {
			if res := q(fmt.Sprintf(`ALERTS{alertname=%q,alertstate="firing"}`, name)); len(res) == 0 {
				return false, name + " not firing"
			}
		}
		return true, ""
	})
	t.Logf("FIGURE maintenance alerts: broker 1 killed inside its window -> its tickets firing after %s", took.Round(10*time.Millisecond))
	pages := []string{"KafkaBrokerDown", "KafkaPartitionUnderReplicated", "KafkaPartitionAtMinISR"}
	l.checkNeverFired(t, announcedAt, pages, map[string]string{})

	// Broker 2 frozen beside it: a page for broker 2, still none for 1.
	resume := faultHang(t, "kafka", c.PID(2))
	frozenAt := time.Now()
	took = l.waitQuery(t, 20*time.Second, "a page for the frozen broker 2", func(q func(string) []promtest.Series) (bool, string) {
		res := q(`ALERTS{alertname=~"KafkaBrokerUnreachable|KafkaBrokerDown",broker="2",alertstate="firing"}`)
		return len(res) > 0, "no KafkaBrokerUnreachable or KafkaBrokerDown for broker 2"
	})
	t.Logf("FIGURE maintenance alerts: broker 2 SIGSTOPped beside the announced stop -> paged after %s", took.Round(10*time.Millisecond))
	time.Sleep(time.Until(frozenAt.Add(20 * time.Second)))
	resume()
	l.checkNeverFired(t, announcedAt, []string{"KafkaBrokerDown"}, map[string]string{"broker": "1"})
	if res := l.prom.Query(t, `ALERTS{alertname="KafkaBrokerDownAnnounced",broker="1",alertstate="firing"}`); len(res) == 0 {
		t.Error("KafkaBrokerDownAnnounced for broker 1 stopped firing while broker 1 was still down inside its window")
	}

	// Broker 1 back: the window closes once it is in every ISR again.
	c.Restart(t, 1)
	var inSync time.Time
	lab.WaitFor(t, 120*time.Second, 250*time.Millisecond, func() (bool, string) {
		if inSync.IsZero() {
			for _, p := range c.DescribeTopics(t, "--topic", topic) {
				if !slices.Contains(p.ISR, 1) {
					return false, fmt.Sprintf("partition %d: ISR %v", p.Partition, p.ISR)
				}
			}
			inSync = time.Now()
		}
		status, r := maintenanceCall(t, l.exporters[0], http.MethodGet, "", "")
		return status == http.StatusOK && len(r.Windows) == 0, fmt.Sprintf("windows %+v", r.Windows)
	})
	closedAt := time.Now()
	t.Logf("FIGURE maintenance alerts: broker 1 back in every ISR of %s (kafka-topics.sh) %s after the kill; the window closed by %s after that",
		topic, inSync.Sub(killedAt).Round(10*time.Millisecond), closedAt.Sub(inSync).Round(10*time.Millisecond))
	l.waitQuery(t, 30*time.Second, "the window's series gone from Prometheus", func(q func(string) []promtest.Series) (bool, string) {
		res := q(`kafka_maintenance_active`)
		return len(res) == 0, describeSeries(res)
	})

	// After the window, broker 1's partitions under-replicated page again.
	resume = faultHang(t, "kafka", c.PID(1))
	took = l.waitQuery(t, 60*time.Second, "broker 1's partitions under-replicated paging", func(q func(string) []promtest.Series) (bool, string) {
		res := q(fmt.Sprintf(`ALERTS{alertname="KafkaPartitionUnderReplicated",topic=%q,alertstate="firing"}`, topic))
		return len(res) > 0, "KafkaPartitionUnderReplicated not firing"
	})
	resume()
	t.Logf("FIGURE maintenance alerts: broker 1 SIGSTOPped after its window closed -> KafkaPartitionUnderReplicated after %s", took.Round(10*time.Millisecond))
	l.checkNeverFired(t, closedAt.Add(5*time.Second), tickets, map[string]string{})
}

// checkNeverFired fails the test if Prometheus's ALERTS series has any of
// the alerts, with labels including match, firing since since.
func (l *liveLab) checkNeverFired(t *testing.T, since time.Time, names []string, match map[string]string) {
	t.Helper()
	selector := fmt.Sprintf(`alertname=~%q,alertstate="firing"`, strings.Join(names, "|"))
	for k, v := range match {
		selector += fmt.Sprintf(`,%s=%q`, k, v)
	}
	window := time.Since(since).Round(time.Second) + time.Second
	if res := l.prom.Query(t, fmt.Sprintf(`max_over_time(ALERTS{%s}[%ds])`, selector, int(window.Seconds()))); len(res) > 0 {
		t.Errorf("fired in the last %s, which the announced stop explains: %s", window, describeSeries(res))
	}
}
