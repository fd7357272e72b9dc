package e2e

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/failover-exporter/failover_exporter/internal/exportertest"
	"github.com/failover-exporter/failover_exporter/internal/lab"
)

// runTieredScenario runs on a lab with tiered storage: a topic with
// remote.storage.enable=true and 1 MiB segments is written, its rolled
// segments are copied to tiered storage, and kafka_topic_untiered_records
// must agree with kafka-get-offsets.sh (the high watermark minus the newest
// tiered offset + 1), and the oldest untiered record's timestamp with the
// record a consumer reads at that offset, which the test's clock dates
// within its write. The copy is then held back while more is written: the
// figure grows by what was written and the oldest record stays; once the
// copy is let go the figure comes back down to the active segment's
// records, written by the second write. Kafka 4.4 holds the copy back with
// the topic's own remote.copy.lag.ms/.bytes (KIP-1241), whose series are
// checked too; 4.3 with a copy quota of 1 byte/s on every broker
// (remote.log.manager.copy.max.bytes.per.second, KIP-956).
func runTieredScenario(t *testing.T, cluster *lab.KafkaCluster) {
	const topic, partitions = "tiered", 6 // two partitions per leader
	oneMiB := "1048576"
	admin, err := sarama.NewClusterAdmin(cluster.Bootstrap(), lab.ClientConfig())
	if err != nil {
		t.Fatalf("admin client: %v", err)
	}
	err = admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: partitions, ReplicationFactor: 3, ConfigEntries: map[string]*string{
		"remote.storage.enable": strPtr("true"),
		"segment.bytes":         &oneMiB,
	}}, false)
	admin.Close()
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
	// Topic configs re-read every 2 s (a minute by default): the copy lags
	// change during the scenario.
	config := filepath.Join(t.TempDir(), "tiered.yaml")
	if err := os.WriteFile(config, fmt.Appendf(nil, "kafka:\n  - name: lab\n    bootstrap_servers: [%s]\n    refresh_interval: 500ms\n    topic_config_refresh_interval: 2s\n",
		strings.Join(cluster.Bootstrap(), ", ")), 0o600); err != nil {
		t.Fatal(err)
	}
	exporter := exportertest.Start(t, "--config.file="+config)
	labels := map[string]string{"topic": topic}
	// firstUntiered is each partition's first offset not tiered, by Kafka's
	// own tool: its newest tiered offset + 1, or the log start, 0, while
	// nothing is tiered (kafka-get-offsets.sh then leaves it out); and its
	// high watermark.
	firstUntiered := func() (first, end map[int32]int64) {
		end, tiered := cluster.Offsets(t, topic, -1), cluster.Offsets(t, topic, -5)
		first = map[int32]int64{}
		for p := range end {
			first[p] = 0
			if o, ok := tiered[p]; ok {
				first[p] = max(o+1, 0)
			}
		}
		return first, end
	}
	// What only local replicas hold: the high watermarks minus the first
	// untiered offsets.
	oracle := func() int64 {
		first, end := firstUntiered()
		var sum int64
		for p := range end {
			sum += end[p] - first[p]
		}
		return sum
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

	// window is when a write ran, by the test's clock, to the millisecond
	// the records carry (sarama stamps them with the time they are sent).
	type window struct{ from, to time.Time }
	timedWrite := func(n int) window {
		from := time.Now().Truncate(time.Millisecond)
		write(n)
		return window{from, time.Now()}
	}
	// oldest waits until the exporter's oldest untiered record is the
	// oldest a consumer reads at the partitions' first untiered offsets
	// (by kafka-get-offsets.sh), and returns its time.
	oldest := func(what string) time.Time {
		var last string
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			first, end := firstUntiered()
			var want time.Time
			for p := range end {
				if end[p] == first[p] {
					continue
				}
				if read := cluster.ReadRecords(t, topic, p, first[p], 1, 10*time.Second); len(read) == 1 && (want.IsZero() || read[0].Timestamp.Before(want)) {
					want = read[0].Timestamp
				}
			}
			v, ok := exporter.Scrape(t).Value("kafka_topic_oldest_untiered_record_timestamp_seconds", labels)
			if ok && !want.IsZero() && int64(math.Round(v*1000)) == want.UnixMilli() {
				return want
			}
			last = fmt.Sprintf("exporter %v (served %v), consumer %s at first untiered offsets %v", v, ok, want.Format(time.StampMilli), first)
			time.Sleep(300 * time.Millisecond)
		}
		t.Fatalf("tiered storage, %s: the oldest untiered record disagrees for 60s; last: %s", what, last)
		return time.Time{}
	}
	within := func(what string, ts time.Time, w window) {
		t.Logf("FIGURE kafka tiered storage, %s: the oldest untiered record is dated %s into the write that made it (which took %s), as a consumer reads it",
			what, ts.Sub(w.from).Round(time.Millisecond), w.to.Sub(w.from).Round(time.Millisecond))
		if ts.Before(w.from) || ts.After(w.to) {
			t.Errorf("tiered storage, %s: oldest untiered record at %s, not within its write %s to %s",
				what, ts.Format(time.StampMilli), w.from.Format(time.StampMilli), w.to.Format(time.StampMilli))
		}
	}

	first := timedWrite(4000) // about 4 MiB: three or four rolled segments
	copied := agree("segments copied", func(v float64) bool { return v < 2000 })
	t.Logf("FIGURE kafka tiered storage: %v of 4000 records only on local replicas once the rolled segments were copied", copied)
	firstOldest := oldest("segments copied")
	within("segments copied", firstOldest, first)

	hold, let := holdCopyQuota, letCopyQuota
	how := "1 byte/s copy quota"
	if copyLagSupported(cluster.Version()) {
		hold, let = holdCopyLag, letCopyLag
		how = "remote.copy.lag.ms/.bytes"
	}
	held := false
	t.Cleanup(func() {
		if held {
			let(t, cluster, topic)
		}
	})
	hold(t, cluster, topic, exporter)
	held = true
	second := timedWrite(4000)
	grown := agree("copy held back, 4000 more records written", func(v float64) bool { return v >= copied+3000 })
	t.Logf("FIGURE kafka tiered storage: copy held back (%s) and 4000 records written -> %v only on local replicas", how, grown)
	if grown == copied+4000 { // nothing copied meanwhile: the oldest stays
		// A copy quota lets a segment through now and then (a windowed
		// rate): then the oldest moved, rightly.
		if ts := oldest("copy held back"); !ts.Equal(firstOldest) && oracle() == int64(grown) {
			t.Errorf("copy held back: the oldest untiered record moved from %s to %s, yet nothing was copied", firstOldest.Format(time.StampMilli), ts.Format(time.StampMilli))
		}
	}

	let(t, cluster, topic)
	held = false
	liftedAt := time.Now()
	back := agree("copy resumed", func(v float64) bool { return v < 2000 })
	t.Logf("FIGURE kafka tiered storage: copy let go -> back to %v only on local replicas after %s", back, time.Since(liftedAt).Round(10*time.Millisecond))
	within("copy resumed", oldest("copy resumed"), second)
	if copyLagSupported(cluster.Version()) {
		checkDefaultCopyLags(t, cluster, topic, exporter)
	}

	// Every partition written: each leader has two partitions with untiered
	// records, each fetched for its time, and the topic's oldest is the
	// earliest (partition 0's, written before).
	for p := int32(1); p < partitions; p++ {
		cluster.Produce(t, topic, p, lab.Record{Value: []byte("a")}, lab.Record{Value: []byte("b")})
	}
	agree("every partition written", func(v float64) bool { return v >= back+2*(partitions-1) })
	within("every partition written", oldest("every partition written"), second)

	// Kafka 4.3 says whether log directories are cordoned (KIP-1066).
	if s := exporter.Scrape(t).Series("kafka_broker_cordoned_log_dirs", nil); len(s) != cluster.Nodes() {
		t.Errorf("kafka_broker_cordoned_log_dirs on Kafka %s: %d series, want one per broker", cluster.Version(), len(s))
	}
	// Before Kafka 4.4 no broker knows the copy lags: absent, not 0 (which
	// would say "copied at once").
	if !copyLagSupported(cluster.Version()) {
		if s := exporter.Scrape(t).Series("kafka_topic_remote_copy_lag_seconds", nil); len(s) != 0 {
			t.Errorf("kafka_topic_remote_copy_lag_seconds on Kafka %s, which lacks KIP-1241: %v", cluster.Version(), s)
		}
	}
	// Topics without tiered storage (the internal ones here) have no such
	// series.
	for _, s := range exporter.Scrape(t).Series("kafka_topic_untiered_records", nil) {
		if s.Labels["topic"] != topic {
			t.Errorf("kafka_topic_untiered_records served for %s, which has no tiered storage", s.Labels["topic"])
		}
	}
}

// copyLagSupported reports whether a lab version ("4.4") knows KIP-1241's
// copy lags (Kafka 4.4+).
func copyLagSupported(version string) bool {
	var major, minor int
	if _, err := fmt.Sscanf(version, "%d.%d", &major, &minor); err != nil {
		return false
	}
	return major > 4 || major == 4 && minor >= 4
}

// holdCopyQuota holds back every broker's copy to tiered storage with a
// quota of 1 byte/s (KIP-956).
func holdCopyQuota(t *testing.T, cluster *lab.KafkaCluster, _ string, _ *exportertest.Exporter) {
	cluster.Configs(t, "--entity-type", "brokers", "--entity-default", "--alter", "--add-config", "remote.log.manager.copy.max.bytes.per.second=1")
}

func letCopyQuota(t *testing.T, cluster *lab.KafkaCluster, _ string) {
	cluster.Configs(t, "--entity-type", "brokers", "--entity-default", "--alter", "--delete-config", "remote.log.manager.copy.max.bytes.per.second")
}

// holdCopyLag holds back the topic's copy with its own copy lags (KIP-1241,
// Kafka 4.4): an hour, or 1 GiB of newer data, whichever comes first (the
// bytes default, -1, derives its check from the local retention, so it is
// set too), and checks that the exporter serves them as kafka-configs.sh
// describes them.
func holdCopyLag(t *testing.T, cluster *lab.KafkaCluster, topic string, exporter *exportertest.Exporter) {
	cluster.Configs(t, "--entity-type", "topics", "--entity-name", topic, "--alter", "--add-config", "remote.copy.lag.ms=3600000,remote.copy.lag.bytes=1073741824")
	described := cluster.Configs(t, "--entity-type", "topics", "--entity-name", topic, "--describe")
	if !strings.Contains(described, "remote.copy.lag.ms=3600000") || !strings.Contains(described, "remote.copy.lag.bytes=1073741824") {
		t.Fatalf("kafka-configs.sh does not describe the copy lags set:\n%s", described)
	}
	labels := map[string]string{"topic": topic}
	waitProm(t, 30*time.Second, "the copy lags served", func() (bool, string) {
		scrape := exporter.Scrape(t)
		lag, okLag := scrape.Value("kafka_topic_remote_copy_lag_seconds", labels)
		lagBytes, okBytes := scrape.Value("kafka_topic_remote_copy_lag_bytes", labels)
		return okLag && okBytes && lag == 3600 && lagBytes == 1<<30, fmt.Sprintf("seconds %v (%v), bytes %v (%v)", lag, okLag, lagBytes, okBytes)
	})
}

func letCopyLag(t *testing.T, cluster *lab.KafkaCluster, topic string) {
	cluster.Configs(t, "--entity-type", "topics", "--entity-name", topic, "--alter", "--delete-config", "remote.copy.lag.ms,remote.copy.lag.bytes")
}

// checkDefaultCopyLags checks that, with its own copy lags deleted, the
// topic's series say what kafka-configs.sh --all describes: the broker's
// defaults.
func checkDefaultCopyLags(t *testing.T, cluster *lab.KafkaCluster, topic string, exporter *exportertest.Exporter) {
	described := cluster.Configs(t, "--entity-type", "topics", "--entity-name", topic, "--describe", "--all")
	want := map[string]float64{}
	for _, name := range []string{"remote.copy.lag.ms", "remote.copy.lag.bytes"} {
		m := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(name) + `=(-?\d+) `).FindStringSubmatch(described)
		if m == nil {
			t.Fatalf("kafka-configs.sh --describe --all does not list %s:\n%s", name, described)
		}
		v, _ := strconv.ParseFloat(m[1], 64)
		want[name] = v
	}
	wantSeconds := want["remote.copy.lag.ms"] / 1000
	if want["remote.copy.lag.ms"] < 0 {
		wantSeconds = -1
	}
	labels := map[string]string{"topic": topic}
	waitProm(t, 30*time.Second, "the default copy lags served", func() (bool, string) {
		scrape := exporter.Scrape(t)
		lag, okLag := scrape.Value("kafka_topic_remote_copy_lag_seconds", labels)
		lagBytes, okBytes := scrape.Value("kafka_topic_remote_copy_lag_bytes", labels)
		return okLag && okBytes && lag == wantSeconds && lagBytes == want["remote.copy.lag.bytes"],
			fmt.Sprintf("seconds %v (%v), bytes %v (%v); kafka-configs.sh: %v", lag, okLag, lagBytes, okBytes, want)
	})
	t.Logf("kafka tiered storage: the copy lags back to the defaults kafka-configs.sh describes, %v", want)
}

func strPtr(s string) *string { return &s }
