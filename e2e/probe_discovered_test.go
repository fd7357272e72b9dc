package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/internal/exportertest"
	"github.com/failover-exporter/failover_exporter/internal/lab"
	"github.com/failover-exporter/failover_exporter/internal/promtest"
)

// TestKafkaDiscoveredProbeTargets: Prometheus discovers three clusters by
// file_sd and scrapes each at /probe: a Kafka cluster of the config by its
// name, and a second Kafka cluster and a Redis Cluster the config does not
// list, by their addresses and a module each. A user checks that every
// target has its own up and its own cluster's series under its address;
// that a discovered Kafka cluster whose only broker is killed answers
// kafka_up 0 at once and pages for itself alone; that a cluster nobody can
// reach answers up 0 at once, never a hang; that a target past
// --probe.max-targets takes the place of one that never answered; and that once Prometheus stops scraping,
// the discovered targets are stopped after the idle timeout and the
// exporter's goroutines come back to where they were before it started
// them.
func TestKafkaDiscoveredProbeTargets(t *testing.T) {
	const (
		configuredName = "orders"
		idle           = 5 * time.Second
	)
	orders := lab.SharedKafka(t, lab.KafkaOptions{Nodes: 3})
	single := lab.SharedKafka(t, lab.KafkaOptions{Nodes: 1})
	redis := lab.StartRedisCluster(t, lab.RedisOptions{})
	singleAddr, redisAddr := single.BrokerAddr(1), redis.Addrs()[0]

	dir := t.TempDir()
	cfg := secWriteFile(t, filepath.Join(dir, "config.yaml"), fmt.Sprintf(`kafka:
  - name: %s
    bootstrap_servers: [%s]
    refresh_interval: 1s
kafka_modules:
  - name: plain
    refresh_interval: 1s
    allowed_targets: ["127.0.0.1:*"]
redis_modules:
  - name: seeds
    refresh_interval: 1s
    allowed_targets: ["127.0.0.1:*"]
`, configuredName, strings.Join(orders.Bootstrap(), ", ")))
	exporter := exportertest.Start(t, "--config.file="+cfg, "--probe.max-targets=3", "--probe.idle-timeout="+idle.String())
	exporter.WaitReady(t, 60*time.Second)
	goroutines := func() float64 { return value(t, exporter.Scrape(t), "go_goroutines", nil) }
	before := goroutines()

	// One file_sd file per job, as a discovery tool writes them.
	sd := func(job string, targets ...string) string {
		path := filepath.Join(dir, job+".json")
		b, err := json.Marshal([]map[string]any{{"targets": targets}})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	job := func(name, params string, targets ...string) string {
		return probeJob(name, exporter.Addr, params, fmt.Sprintf("file_sd_configs:\n  - files: [%q]\n    refresh_interval: 1s", sd(name, targets...)))
	}
	root := lab.RepoRoot(t)
	prom := promtest.StartPrometheus(t, promtest.PrometheusOptions{
		RulesFile: promtest.RewriteRules(t, filepath.Join(root, "prometheus", "alerts.yml"), 0),
		ScrapeConfigs: job("configured", "", configuredName) +
			job("kafka-discovered", "params: {system: [kafka], module: [plain]}", singleAddr) +
			// system= left out: only the redis list has a module "seeds".
			job("redis-discovered", "params: {module: [seeds]}", redisAddr),
	})

	// One up per target, each 1, and each cluster up under its own name.
	waitProm(t, 60*time.Second, "the three targets up, each cluster read", func() (bool, string) {
		up := map[string]float64{}
		for _, s := range prom.Query(t, `up{job=~"configured|kafka-discovered|redis-discovered"} or kafka_up or redis_cluster_up`) {
			up[s.Labels["__name__"]+"/"+s.Labels["job"]+"/"+s.Labels["kafka_cluster"]+s.Labels["redis_cluster"]] = s.Last()
		}
		return len(up) == 6 && up["up/configured/"] == 1 && up["up/kafka-discovered/"] == 1 && up["up/redis-discovered/"] == 1 &&
			up["kafka_up/configured/"+configuredName] == 1 && up["kafka_up/kafka-discovered/"+singleAddr] == 1 &&
			up["redis_cluster_up/redis-discovered/"+redisAddr] == 1, fmt.Sprint(up)
	})
	for _, c := range []struct{ job, selector string }{
		{"configured", `__name__=~"kafka_.+|redis_.+", kafka_cluster!="` + configuredName + `"`},
		{"kafka-discovered", `__name__=~"kafka_.+|redis_.+", kafka_cluster!="` + singleAddr + `"`},
		{"redis-discovered", `__name__=~"kafka_.+|redis_.+", redis_cluster!="` + redisAddr + `"`},
	} {
		if other := prom.Query(t, `count by (__name__) ({job="`+c.job+`", `+c.selector+`})`); len(other) > 0 {
			t.Errorf("target of job %s serves another cluster's series: %v", c.job, other)
		}
	}
	m := exporter.Scrape(t)
	for system, want := range map[string]float64{"kafka": 1, "redis": 1} {
		if got := value(t, m, "failover_exporter_probe_discovered_targets", map[string]string{"system": system}); got != want {
			t.Errorf("discovered %s targets = %v, want %v", system, got, want)
		}
	}
	with := goroutines()

	// A cluster nobody can reach: answered at once, up 0; then the limit.
	dead := deadAddr(t)
	asked := time.Now()
	resp, err := exporter.Get("/probe?system=kafka&module=plain&target=" + dead)
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(t, resp)
	took := time.Since(asked)
	t.Logf("FIGURE probe: first probe of an unreachable discovered cluster answered in %s", took.Round(time.Millisecond))
	if resp.StatusCode != 200 || !strings.Contains(body, `kafka_up{kafka_cluster="`+dead+`"} 0`) || took > 15*time.Second {
		t.Errorf("first probe of unreachable %s: %d in %s, want 200 with kafka_up 0 within the wait (9.5 s):\n%s", dead, resp.StatusCode, took, body)
	}
	if !strings.Contains(exporter.Logs(), dead) {
		t.Errorf("the log does not say why %s is down:\n%s", dead, exporter.Logs())
	}
	// A fourth target past --probe.max-targets=3 takes the place of the
	// unreachable one, which never answered: junk cannot hold the table.
	resp, err = exporter.Get("/probe?system=redis&module=seeds&target=" + deadAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(t, resp); resp.StatusCode != 200 {
		t.Errorf("a fourth discovered target with --probe.max-targets=3 and one target that never answered: %d %q, want 200", resp.StatusCode, body)
	}
	if got := value(t, exporter.Scrape(t), "failover_exporter_probe_discovered_targets_stopped_total", map[string]string{"system": "kafka", "reason": "evicted"}); got != 1 {
		t.Errorf("Kafka targets evicted = %v, want 1 (the unreachable one, for the fourth target)", got)
	}

	// The discovered Kafka cluster's only broker dies: its target answers
	// kafka_up 0 and it pages for itself alone.
	single.Kill(t, 1)
	killedAt := time.Now()
	waitProm(t, 60*time.Second, "KafkaClusterUnreachable firing for the discovered cluster", func() (bool, string) {
		var all []string
		for _, a := range prom.Alerts(t) {
			all = append(all, promtest.FormatLabels(a.Labels)+" "+a.State)
			if a.Labels["alertname"] == "KafkaClusterUnreachable" && a.State == "firing" && a.Labels["kafka_cluster"] == singleAddr {
				return true, ""
			}
		}
		return false, strings.Join(all, "\n")
	})
	t.Logf("FIGURE probe: KafkaClusterUnreachable firing for the discovered cluster %s after its broker's kill (scrape 1s, refresh 1s, for: 0)", time.Since(killedAt).Round(100*time.Millisecond))
	for _, a := range prom.Alerts(t) {
		if name := a.Labels["alertname"]; strings.HasPrefix(name, "Kafka") && a.Labels["kafka_cluster"] != singleAddr {
			t.Errorf("the discovered cluster's broker kill raised %s for another cluster: %v", name, a.Labels)
		}
	}
	if got := prom.Query(t, `up{job="kafka-discovered"}`); len(got) != 1 || got[0].Last() != 1 {
		t.Errorf("up of the discovered Kafka target during its outage: %v, want 1 (the exporter answers; kafka_up says the cluster is down)", got)
	}

	// Nobody probes any more: the discovered targets stop after the idle
	// timeout, and their goroutines go with them.
	prom.Stop()
	stoppedAt := time.Now()
	waitMetrics(t, exporter, 10*idle, "every discovered target stopped", func(m exportertest.Metrics) (bool, string) {
		k, _ := m.Value("failover_exporter_probe_discovered_targets", map[string]string{"system": "kafka"})
		r, _ := m.Value("failover_exporter_probe_discovered_targets", map[string]string{"system": "redis"})
		return k == 0 && r == 0, m.Describe("failover_exporter_probe_discovered_targets", nil)
	})
	t.Logf("FIGURE probe: discovered targets stopped %s after the last scrape (idle timeout %s)", time.Since(stoppedAt).Round(100*time.Millisecond), idle)
	m = exporter.Scrape(t)
	for system, want := range map[string]float64{"kafka": 1, "redis": 2} {
		if got := value(t, m, "failover_exporter_probe_discovered_targets_stopped_total", map[string]string{"system": system, "reason": "idle"}); got != want {
			t.Errorf("%s targets stopped idle = %v, want %v (kafka: the discovered cluster; redis: it and the unreachable one)", system, got, want)
		}
	}
	var after float64
	waitMetrics(t, exporter, 30*time.Second, "goroutines back to where they were", func(m exportertest.Metrics) (bool, string) {
		after, _ = m.Value("go_goroutines", nil)
		return after <= before+2, fmt.Sprintf("%v goroutines, %v before the targets", after, before)
	})
	t.Logf("FIGURE probe: goroutines %v before the discovered targets, %v with two, %v after they stopped", before, with, after)
}
