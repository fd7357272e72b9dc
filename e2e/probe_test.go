package e2e

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/failover-exporter/failover_exporter/internal/exportertest"
	"github.com/failover-exporter/failover_exporter/internal/lab"
	"github.com/failover-exporter/failover_exporter/internal/promtest"
)

// TestKafkaAndRedisProbeTargets: one exporter watches a real Kafka cluster
// and a real Redis Cluster, and a real Prometheus scrapes each as its own
// target through /probe?target=NAME, with the relabeling of the
// multi-target exporter pattern (blackbox_exporter's). A user checks that
// each target has its own up and only its own cluster's series, that
// none carries the exporter's own series (those stay on /metrics), that a
// target naming no configured cluster is up 0 and the others unaffected,
// and that a killed broker's alert, from the shipped rules, names that
// Kafka cluster (and every alert its own target's cluster) and fires while
// every target stays up.
func TestKafkaAndRedisProbeTargets(t *testing.T) {
	const (
		kafkaName = "orders"
		redisName = "sessions"
		typo      = "ordres" // in the scrape config, not the exporter's
		topic     = "probed"
		killed    = 3
	)
	cluster := lab.SharedKafka(t, lab.KafkaOptions{Nodes: 3})
	redis := lab.StartRedisCluster(t, lab.RedisOptions{})
	admin, err := sarama.NewClusterAdmin(cluster.Bootstrap(), lab.ClientConfig())
	if err != nil {
		t.Fatalf("admin client: %v", err)
	}
	if err := admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 3, ReplicationFactor: 3}, false); err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
	admin.Close()

	dir := t.TempDir()
	cfg := secWriteFile(t, filepath.Join(dir, "config.yaml"), fmt.Sprintf(`kafka:
  - name: %s
    bootstrap_servers: [%s]
    refresh_interval: 1s
redis:
  - name: %s
    addrs: [%s]
    refresh_interval: 1s
`, kafkaName, strings.Join(cluster.Bootstrap(), ", "), redisName, redis.Addrs()[0]))
	exporter := exportertest.Start(t, "--config.file="+cfg)
	exporter.WaitReady(t, 60*time.Second)

	root := lab.RepoRoot(t)
	prom := promtest.StartPrometheus(t, promtest.PrometheusOptions{
		RulesFile:     promtest.RewriteRules(t, filepath.Join(root, "prometheus", "alerts.yml"), 0),
		ScrapeConfigs: probeJob("clusters", exporter.Addr, "", fmt.Sprintf("static_configs:\n  - targets: [%q, %q, %q]", kafkaName, redisName, typo)),
	})

	upOf := func() map[string]float64 {
		up := map[string]float64{}
		for _, s := range prom.Query(t, `up{job="clusters"}`) {
			up[s.Labels["instance"]] = s.Last()
		}
		return up
	}
	waitProm(t, 60*time.Second, "one up per target: both clusters 1, the typo 0", func() (bool, string) {
		up := upOf()
		return len(up) == 3 && up[kafkaName] == 1 && up[redisName] == 1 && up[typo] == 0, fmt.Sprint(up)
	})

	// Each target serves its own cluster's series only.
	familiesOf := func(selector string) map[string][]string {
		by := map[string][]string{}
		for _, s := range prom.Query(t, `count by (instance, __name__) ({job="clusters", `+selector+`})`) {
			by[s.Labels["instance"]] = append(by[s.Labels["instance"]], s.Labels["__name__"])
		}
		return by
	}
	waitProm(t, 30*time.Second, "the Kafka cluster's partition series", func() (bool, string) {
		got := prom.Query(t, `kafka_partition_in_sync_replicas{job="clusters", topic="`+topic+`"}`)
		return len(got) == 3, fmt.Sprint(got)
	})
	kafkaFamilies, redisFamilies := familiesOf(`__name__=~"kafka_.+"`), familiesOf(`__name__=~"redis_.+"`)
	if len(kafkaFamilies) != 1 || len(kafkaFamilies[kafkaName]) < 10 {
		t.Errorf("kafka_* families by target: want many, all from target %s; got %v", kafkaName, kafkaFamilies)
	}
	if len(redisFamilies) != 1 || len(redisFamilies[redisName]) < 10 {
		t.Errorf("redis_* families by target: want many, all from target %s; got %v", redisName, redisFamilies)
	}
	if other := prom.Query(t, `{job="clusters", instance="`+kafkaName+`", kafka_cluster!="`+kafkaName+`", __name__=~"kafka_.+"}`); len(other) > 0 {
		t.Errorf("target %s serves another Kafka cluster's series: %v", kafkaName, other)
	}
	if self := familiesOf(`__name__=~"go_.+|process_.+|failover_exporter_.+|promhttp_.+"`); len(self) > 0 {
		t.Errorf("the exporter's own series belong on /metrics, not in a probe: %v", self)
	}
	// What /probe answers the typo, as Prometheus's target page shows it.
	resp, err := exporter.Get("/probe?target=" + typo)
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(t, resp); resp.StatusCode != 400 || !strings.Contains(body, `no cluster called "`+typo+`" is configured`) {
		t.Errorf("GET /probe?target=%s: %d %q, want 400 naming it", typo, resp.StatusCode, body)
	}

	// A killed broker pages for its cluster; the targets stay up.
	cluster.Kill(t, killed)
	killedAt := time.Now()
	var firing promtest.Alert
	waitProm(t, 90*time.Second, "KafkaBrokerDown firing for the killed broker", func() (bool, string) {
		var names []string
		for _, a := range prom.Alerts(t) {
			names = append(names, promtest.FormatLabels(a.Labels)+" "+a.State)
			if a.Labels["alertname"] == "KafkaBrokerDown" && a.State == "firing" {
				firing = a
				return true, ""
			}
		}
		sort.Strings(names)
		return false, strings.Join(names, "\n")
	})
	t.Logf("FIGURE probe: KafkaBrokerDown firing %s after the kill (scrape 1s, refresh 1s, for: 0)", time.Since(killedAt).Round(100*time.Millisecond))
	if firing.Labels["kafka_cluster"] != kafkaName || firing.Labels["broker"] != fmt.Sprint(killed) {
		t.Errorf("KafkaBrokerDown labels %v: want kafka_cluster %s, broker %d", firing.Labels, kafkaName, killed)
	}
	// Every alert names the one cluster it is about, as its own target
	// served it (the Redis Cluster has no replicas, which its own warnings
	// say): a Kafka alert Kafka cluster orders, a Redis alert sessions.
	for _, a := range prom.Alerts(t) {
		k, r := a.Labels["kafka_cluster"], a.Labels["redis_cluster"]
		if strings.HasPrefix(a.Labels["alertname"], "Kafka") && (k != kafkaName || r != "") ||
			strings.HasPrefix(a.Labels["alertname"], "Redis") && (r != redisName || k != "") {
			t.Errorf("alert %s names another cluster than its target's: %v", a.Labels["alertname"], a.Labels)
		}
	}
	if up := upOf(); up[kafkaName] != 1 || up[redisName] != 1 {
		t.Errorf("up by target during the broker's outage: %v, want both clusters' targets 1", up)
	}
}
