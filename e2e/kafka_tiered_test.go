package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/internal/exportertest"
	"github.com/failover-exporter/failover_exporter/internal/lab"
)

// runTieredScenario runs on a lab with tiered storage (Kafka 4.3 and its
// LocalTieredStorage): a topic with remote.storage.enable=true and 1 MiB
// segments is written, its rolled segments are copied to tiered storage,
// and kafka_topic_untiered_records must agree with kafka-get-offsets.sh
// (the high watermark minus the newest tiered offset + 1). The copy is
// then stopped (remote.log.manager.copy.max.bytes.per.second, KIP-956, at
// 1 byte/s on every broker) while more is written: the figure grows by
// what was written; once the quota is lifted it comes back down to the
// active segment's records.
func runTieredScenario(t *testing.T, cluster *lab.KafkaCluster) {
	const topic = "tiered"
	oneMiB := "1048576"
	createTopic(t, cluster.Bootstrap(), topic, map[string]*string{
		"remote.storage.enable": strPtr("true"),
		"segment.bytes":         &oneMiB,
	})
	exporter := exportertest.Start(t, "--kafka.server="+strings.Join(cluster.Bootstrap(), ","), "--kafka.cluster-name=lab", "--refresh.interval=500ms")
	labels := map[string]string{"topic": topic}
	// What only local replicas hold, by Kafka's own tool: partition 0's
	// high watermark minus its newest tiered offset + 1 (the log start, 0,
	// while nothing is tiered).
	oracle := func() int64 {
		end, tiered := cluster.Offsets(t, topic, -1)[0], cluster.Offsets(t, topic, -5)[0]
		return end - max(tiered+1, 0)
	}
	write := func(n int) {
		value := []byte(strings.Repeat("x", 1024))
		for range n / 500 {
			batch := make([]lab.Record, 500)
			for i := range batch {
				batch[i] = lab.Record{Value: value}
			}
			cluster.Produce(t, topic, 0, batch...)
		}
	}
	// agree waits until the exporter's figure equals the tool's, read
	// before and after the scrape (the copy moves on meanwhile), and cond
	// holds for it.
	agree := func(what string, cond func(untiered float64) bool) float64 {
		var last string
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			before := oracle()
			v, ok := exporter.Scrape(t).Value("kafka_topic_untiered_records", labels)
			after := oracle()
			if ok && cond(v) && (v == float64(before) || v == float64(after)) {
				return v
			}
			last = fmt.Sprintf("exporter %v (served %v), kafka-get-offsets.sh %d then %d", v, ok, before, after)
			time.Sleep(300 * time.Millisecond)
		}
		t.Fatalf("tiered storage, %s: no agreement in 60s; last: %s", what, last)
		return 0
	}

	write(4000) // about 4 MiB: three or four rolled segments
	copied := agree("segments copied", func(v float64) bool { return v < 2000 })
	t.Logf("FIGURE kafka tiered storage: %v of 4000 records only on local replicas once the rolled segments were copied", copied)

	cluster.Configs(t, "--entity-type", "brokers", "--entity-default", "--alter", "--add-config", "remote.log.manager.copy.max.bytes.per.second=1")
	stopped := false
	t.Cleanup(func() {
		if stopped {
			cluster.Configs(t, "--entity-type", "brokers", "--entity-default", "--alter", "--delete-config", "remote.log.manager.copy.max.bytes.per.second")
		}
	})
	stopped = true
	write(4000)
	grown := agree("copy stopped, 4000 more records written", func(v float64) bool { return v >= copied+3000 })
	t.Logf("FIGURE kafka tiered storage: copy stopped (1 byte/s quota) and 4000 records written -> %v only on local replicas", grown)

	cluster.Configs(t, "--entity-type", "brokers", "--entity-default", "--alter", "--delete-config", "remote.log.manager.copy.max.bytes.per.second")
	stopped = false
	liftedAt := time.Now()
	back := agree("copy resumed", func(v float64) bool { return v < 2000 })
	t.Logf("FIGURE kafka tiered storage: quota lifted -> back to %v only on local replicas after %s", back, time.Since(liftedAt).Round(10*time.Millisecond))

	// Kafka 4.3 says whether log directories are cordoned (KIP-1066).
	if s := exporter.Scrape(t).Series("kafka_broker_cordoned_log_dirs", nil); len(s) != cluster.Nodes() {
		t.Errorf("kafka_broker_cordoned_log_dirs on Kafka %s: %d series, want one per broker", cluster.Version(), len(s))
	}
	// Topics without tiered storage (the internal ones here) have no such
	// series.
	for _, s := range exporter.Scrape(t).Series("kafka_topic_untiered_records", nil) {
		if s.Labels["topic"] != topic {
			t.Errorf("kafka_topic_untiered_records served for %s, which has no tiered storage", s.Labels["topic"])
		}
	}
}

func strPtr(s string) *string { return &s }
