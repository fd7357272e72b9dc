package e2e

import (
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/failover-exporter/failover_exporter/collector/events"
	"github.com/failover-exporter/failover_exporter/internal/exportertest"
	"github.com/failover-exporter/failover_exporter/internal/lab"
	"github.com/failover-exporter/failover_exporter/internal/promtest"
	"github.com/failover-exporter/failover_exporter/systems/mirror"
)

// The mirror tests run a real MirrorMaker 2 (dedicated mode) between two
// one-node Kafka clusters, and check the exporter's failover view against
// what the clusters themselves hold: end offsets on both sides, the records
// on the target, MM2's own offset translation, and the wall clock of the
// test's stall.

// mirrorRefresh is the flows' refresh interval in these tests: the bounds
// below are in refreshes.
const mirrorRefresh = time.Second

// mirrorLagMax is MirrorMaker's offset.lag.max (its default): how far an
// offset sync may lag, the bound docs/mirror.md gives on
// kafka_mirror_topic_records_not_replicated.
const mirrorLagMax = 100

// steadyProducer writes one record every interval, round robin over a
// topic's partitions, each record's value its sequence number, and counts
// what the cluster acknowledged.
type steadyProducer struct {
	mu       sync.Mutex
	acked    map[int32][]int64 // sequence numbers acknowledged, by partition
	lastAck  time.Time
	failures int
	stop     chan struct{}
	done     chan struct{}
}

func startSteadyProducer(t *testing.T, bootstrap []string, topic string, partitions int32, interval time.Duration) *steadyProducer {
	t.Helper()
	conf := lab.ClientConfig()
	// Each write is tried once, within seconds: the producer counts what
	// was acknowledged when, and a retried write would blur that.
	conf.Producer.Retry.Max = 0
	conf.Producer.Timeout = 2 * time.Second
	conf.Net.DialTimeout = time.Second
	conf.Net.ReadTimeout = 3 * time.Second
	conf.Metadata.Retry.Max = 0
	producer, err := sarama.NewSyncProducer(bootstrap, conf)
	if err != nil {
		t.Fatalf("producer: %v", err)
	}
	p := &steadyProducer{acked: map[int32][]int64{}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		defer producer.Close()
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for seq := int64(0); ; seq++ {
			select {
			case <-p.stop:
				return
			case <-tick.C:
			}
			partition := int32(seq % int64(partitions))
			msg := &sarama.ProducerMessage{Topic: topic, Partition: partition, Timestamp: time.Now(), Value: sarama.StringEncoder(strconv.FormatInt(seq, 10))}
			_, _, err := producer.SendMessage(msg)
			p.mu.Lock()
			if err != nil {
				p.failures++
			} else {
				p.acked[partition] = append(p.acked[partition], seq)
				p.lastAck = msg.Timestamp
			}
			p.mu.Unlock()
		}
	}()
	t.Cleanup(p.Stop)
	return p
}

// Stop stops producing and waits for the last send to end.
func (p *steadyProducer) Stop() {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	<-p.done
}

// Acked is how many records the cluster acknowledged.
func (p *steadyProducer) Acked() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	var n int64
	for _, seqs := range p.acked {
		n += int64(len(seqs))
	}
	return n
}

// labelsWith is base with the label pairs kv added: a flow's labels and a
// topic's or a group's.
func labelsWith(base map[string]string, kv ...string) map[string]string {
	l := maps.Clone(base)
	for i := 0; i+1 < len(kv); i += 2 {
		l[kv[i]] = kv[i+1]
	}
	return l
}

// startMirrorPrometheus starts a Prometheus that scrapes the exporter
// with the alert rules loaded (for: rewritten to 0s), for the mirror tests'
// alerts and dashboard panels.
func startMirrorPrometheus(t *testing.T, e *exportertest.Exporter) *liveLab {
	t.Helper()
	root := lab.RepoRoot(t)
	return &liveLab{root: root, prom: promtest.StartPrometheus(t, promtest.PrometheusOptions{
		ScrapeTargets: []string{e.Addr},
		RulesFile:     promtest.RewriteRules(t, filepath.Join(root, "prometheus", "alerts.yml"), 0),
	})}
}

func mirrorConfig(src, dst *lab.KafkaCluster, flow string) string {
	return "kafka:\n" +
		"  - name: east\n    bootstrap_servers: [" + strings.Join(src.Bootstrap(), ", ") + "]\n    refresh_interval: 1s\n" +
		"  - name: west\n    bootstrap_servers: [" + strings.Join(dst.Bootstrap(), ", ") + "]\n    refresh_interval: 1s\n" +
		"mirrors:\n" + flow
}

// TestMirrorFailoverView runs MirrorMaker 2 (default replication policy)
// under steady production and stalls it with SIGSTOP for 20 s:
//   - steady: records not replicated stay small, the RPO near the
//     heartbeat interval;
//   - stalled: the heartbeat's age and the topic's RPO grow with the wall
//     clock since the SIGSTOP (within one refresh and a second), the
//     records not replicated match the two clusters' end offsets (within
//     MM2's offset.lag.max), mirror_stalled is logged; a consumer group
//     that commits on the source meanwhile would re-read exactly what it
//     committed since its last checkpoint; a topic created on the source is
//     missing on the target; a topic given a second partition on the source
//     has another partition count on the target (KafkaMirrorTopicPartitionMismatch
//     fires), and the records in that partition count as not replicated;
//   - resumed: all of it falls back (MM2 adds the partition to the remote
//     topic at its topic refresh), mirror_resumed and
//     mirror_topic_appeared are logged, and the offset the exporter says
//     the group would resume from on the target is what MM2's own
//     RemoteClusterUtils.translateOffsets returns.
func TestMirrorFailoverView(t *testing.T) {
	src := lab.StartKafka(t, lab.KafkaOptions{Nodes: 1})
	dst := lab.StartKafka(t, lab.KafkaOptions{Nodes: 1})
	src.CreateTopic(t, "orders", 2)
	src.CreateTopic(t, "refunds", 1)
	mm := lab.StartMirror(t, lab.MirrorOptions{Source: src, Target: dst, SourceAlias: "east", TargetAlias: "west", Topics: "orders|payments|refunds"})
	remote := mm.RemoteTopic("orders")

	// The aliases are the clusters' names, so the flow needs no alias.
	cfg := mirrorConfig(src, dst, "  - name: east-west\n    source: east\n    target: west\n    topics: 'orders|payments|refunds'\n"+
		"    refresh_interval: 1s\n    stall_after: 8s\n    partition_metrics: true\n")
	e := exportertest.Start(t, "--config.file="+faultConfig(t, cfg))
	e.WaitReady(t, 30*time.Second)
	live := startMirrorPrometheus(t, e)
	windowStart := time.Now()
	flow := map[string]string{"mirror": "east-west", "source_cluster": "east", "target_cluster": "west"}
	with := func(kv ...string) map[string]string { return labelsWith(flow, kv...) }
	orders := with("topic", "orders")
	refunds := with("topic", "refunds")

	producer := startSteadyProducer(t, src.Bootstrap(), "orders", 2, 50*time.Millisecond)

	// Steady production: caught up but for what is in flight.
	m, _ := waitMetrics(t, e, 90*time.Second, "the flow read and caught up", func(m exportertest.Metrics) (bool, string) {
		up, _ := m.Value("kafka_mirror_up", flow)
		age, okAge := m.Value("kafka_mirror_heartbeat_age_seconds", flow)
		rpo, okRPO := m.Value("kafka_mirror_topic_rpo_seconds", orders)
		lag, okLag := m.Value("kafka_mirror_topic_records_not_replicated", orders)
		// refunds is on the target with its one partition.
		mismatch, okMismatch := m.Value("kafka_mirror_topic_partition_mismatch", refunds)
		missing, _ := m.Value("kafka_mirror_topic_missing_on_target", refunds)
		return up == 1 && okAge && age < 5 && okRPO && rpo < 5 && okLag && lag < 50 && okMismatch && mismatch == 0 && missing == 0,
			m.Describe("kafka_mirror_up", flow) + m.Describe("kafka_mirror_heartbeat_age_seconds", flow) +
				m.Describe("kafka_mirror_topic_rpo_seconds", orders) + m.Describe("kafka_mirror_topic_records_not_replicated", orders) +
				m.Describe("kafka_mirror_topic_partition_mismatch", refunds) + m.Describe("kafka_mirror_topic_missing_on_target", refunds)
	})
	steadyRPO, _ := m.Value("kafka_mirror_topic_rpo_seconds", orders)
	steadyLag, _ := m.Value("kafka_mirror_topic_records_not_replicated", orders)
	steadyAge, _ := m.Value("kafka_mirror_heartbeat_age_seconds", flow)
	t.Logf("FIGURE mirror steady (20 records/s): records not replicated %v, RPO %.2fs, heartbeat age %.2fs", steadyLag, steadyRPO, steadyAge)
	for i := 0; i < 5; i++ {
		m = faultNextRefresh(t, e, "kafka_mirror_refreshes_total", m, 1, 10*time.Second)
		if rpo, ok := m.Value("kafka_mirror_topic_rpo_seconds", orders); !ok || rpo > 5 {
			t.Errorf("steady production: RPO %v (served %v), want under 5 s", rpo, ok)
		}
	}

	// A consumer group on the source, checkpointed before the stall.
	src.CommitOffsets(t, "billing", map[lab.TopicPartition]int64{{Topic: "orders", Partition: 0}: 10, {Topic: "orders", Partition: 1}: 10})
	billing := with("group", "billing", "topic", "orders")
	waitMetrics(t, e, 60*time.Second, "billing checkpointed, nothing to re-read", func(m exportertest.Metrics) (bool, string) {
		n, ok := m.Value("kafka_mirror_group_records_to_reread", billing)
		parts, _ := m.Value("kafka_mirror_group_checkpointed_partitions", billing)
		return ok && n == 0 && parts == 2, m.Describe("kafka_mirror_group_records_to_reread", billing) + m.Describe("kafka_mirror_group_checkpointed_partitions", billing)
	})

	// The stall: SIGSTOP MirrorMaker for 20 s while production goes on.
	pausedAt := time.Now()
	mm.Pause(t)
	src.CommitOffsets(t, "billing", map[lab.TopicPartition]int64{{Topic: "orders", Partition: 0}: 35, {Topic: "orders", Partition: 1}: 25})
	src.CreateTopic(t, "payments", 1)
	src.AddPartitions(t, "refunds", 2)
	src.Produce(t, "refunds", 1, lab.Record{Value: []byte("r1")}, lab.Record{Value: []byte("r2")}, lab.Record{Value: []byte("r3")})
	waitMetrics(t, e, 15*time.Second, "refunds has 2 partitions on the source and 1 on the target, its 3 new records not replicated", func(m exportertest.Metrics) (bool, string) {
		mismatch, _ := m.Value("kafka_mirror_topic_partition_mismatch", refunds)
		lag, ok := m.Value("kafka_mirror_topic_records_not_replicated", refunds)
		return mismatch == 1 && ok && lag == 3, m.Describe("kafka_mirror_topic_partition_mismatch", refunds) + m.Describe("kafka_mirror_topic_records_not_replicated", refunds)
	})
	live.waitQuery(t, 15*time.Second, "KafkaMirrorTopicPartitionMismatch firing in Prometheus", func(q func(string) []promtest.Series) (bool, string) {
		res := q(`ALERTS{alertname="KafkaMirrorTopicPartitionMismatch", alertstate="firing", mirror="east-west", topic="refunds"}`)
		return len(res) == 1, describeSeries(res)
	})
	waitMetrics(t, e, 15*time.Second, "billing would re-read the 40 records committed since its checkpoint", func(m exportertest.Metrics) (bool, string) {
		n, ok := m.Value("kafka_mirror_group_records_to_reread", billing)
		return ok && n == 40, m.Describe("kafka_mirror_group_records_to_reread", billing)
	})
	waitMetrics(t, e, 15*time.Second, "payments missing on the target", func(m exportertest.Metrics) (bool, string) {
		v, ok := m.Value("kafka_mirror_topic_missing_on_target", with("topic", "payments"))
		return ok && v == 1, m.Describe("kafka_mirror_topic_missing_on_target", with("topic", "payments"))
	})
	m, _ = waitMetrics(t, e, 20*time.Second, "stalled after stall_after (8s)", func(m exportertest.Metrics) (bool, string) {
		v, _ := m.Value("kafka_mirror_stalled", flow)
		return v == 1, m.Describe("kafka_mirror_stalled", flow) + m.Describe("kafka_mirror_heartbeat_age_seconds", flow)
	})
	live.waitQuery(t, 15*time.Second, "KafkaMirrorStalled firing in Prometheus", func(q func(string) []promtest.Series) (bool, string) {
		res := q(`ALERTS{alertname="KafkaMirrorStalled", alertstate="firing", mirror="east-west"}`)
		return len(res) == 1, describeSeries(res)
	})
	// The RPO and the heartbeat's age follow the wall clock since the
	// SIGSTOP: each read is checked against the time since the pause at
	// the exporter's own read (its last refresh) within one refresh and a
	// second, plus what the flow lagged before it.
	var worstRPO, worstAge float64
	for time.Since(pausedAt) < 20*time.Second {
		m = faultNextRefresh(t, e, "kafka_mirror_refreshes_total", m, 1, 10*time.Second)
		readAt := time.Now()
		if last, ok := m.Value("kafka_mirror_last_refresh_success_timestamp_seconds", flow); ok {
			readAt = time.Unix(0, int64(last*1e9))
		}
		elapsed := readAt.Sub(pausedAt).Seconds()
		slack := (mirrorRefresh + time.Second).Seconds()
		if rpo, ok := m.Value("kafka_mirror_topic_rpo_seconds", orders); !ok {
			t.Errorf("%.1fs into the stall: no RPO for orders", elapsed)
		} else {
			worstRPO = math.Max(worstRPO, math.Abs(rpo-elapsed))
			if rpo < elapsed-slack || rpo > elapsed+slack+steadyRPO {
				t.Errorf("%.1fs into the stall: RPO %.2fs, want %.1fs within %.0fs (+%.1fs lag before it)", elapsed, rpo, elapsed, slack, steadyRPO)
			}
		}
		if age, ok := m.Value("kafka_mirror_heartbeat_age_seconds", flow); !ok {
			t.Errorf("%.1fs into the stall: no heartbeat age", elapsed)
		} else {
			worstAge = math.Max(worstAge, math.Abs(age-elapsed))
			if age < elapsed-slack || age > elapsed+slack+steadyAge {
				t.Errorf("%.1fs into the stall: heartbeat age %.2fs, want %.1fs within %.0fs (+%.1fs before it)", elapsed, age, elapsed, slack, steadyAge)
			}
		}
	}
	t.Logf("FIGURE mirror stall: RPO off the wall clock by at most %.2fs, heartbeat age by at most %.2fs (bound: one refresh + 1 s)", worstRPO, worstAge)

	// Production stops: the exporter's count of records not replicated is
	// compared with the clusters' own end offsets (the remote topic has
	// only what MM2 wrote, from offset 0, so the difference is what is
	// missing, record for record).
	producer.Stop()
	m = faultNextRefresh(t, e, "kafka_mirror_refreshes_total", m, 2, 10*time.Second)
	truth := src.EndOffsetSum(t, "orders") - dst.EndOffsetSum(t, remote)
	got, ok := m.Value("kafka_mirror_topic_records_not_replicated", orders)
	produced := producer.Acked()
	t.Logf("FIGURE mirror stall: records not replicated %v, end offsets say %d (%d records acknowledged in all)", got, truth, produced)
	if !ok || math.Abs(got-float64(truth)) > mirrorLagMax {
		t.Errorf("records not replicated = %v (served %v), the clusters' end offsets say %d: want within offset.lag.max (%d)", got, ok, truth, mirrorLagMax)
	}
	if stalledFor := time.Since(pausedAt).Seconds(); float64(truth) < 0.5*stalledFor*20 {
		t.Errorf("only %d records missing after a %.0fs stall at 20 records/s: the stall did not hold replication back", truth, stalledFor)
	}
	evs := fetchEvents(t, e, "?system=mirror")
	if len(mirrorEvents(evs, mirror.EventStalled, "")) == 0 {
		t.Errorf("no mirror_stalled event:\n%s", describeEvents(evs))
	}
	if len(mirrorEvents(evs, mirror.EventTopicMissing, "payments")) == 0 {
		t.Errorf("no mirror_topic_missing event for payments:\n%s", describeEvents(evs))
	}

	// Resume: everything falls back.
	resumedAt := time.Now()
	mm.Resume(t)
	_, took := waitMetrics(t, e, 60*time.Second, "caught up after the resume", func(m exportertest.Metrics) (bool, string) {
		lag, okLag := m.Value("kafka_mirror_topic_records_not_replicated", orders)
		rpo, okRPO := m.Value("kafka_mirror_topic_rpo_seconds", orders)
		stalled, _ := m.Value("kafka_mirror_stalled", flow)
		missing, _ := m.Value("kafka_mirror_topic_missing_on_target", with("topic", "payments"))
		mismatch, okMismatch := m.Value("kafka_mirror_topic_partition_mismatch", refunds)
		refundsLag, okRefunds := m.Value("kafka_mirror_topic_records_not_replicated", refunds)
		return okLag && lag == 0 && okRPO && rpo == 0 && stalled == 0 && missing == 0 && okMismatch && mismatch == 0 && okRefunds && refundsLag == 0,
			m.Describe("kafka_mirror_topic_records_not_replicated", orders) + m.Describe("kafka_mirror_topic_rpo_seconds", orders) +
				m.Describe("kafka_mirror_stalled", flow) + m.Describe("kafka_mirror_topic_missing_on_target", with("topic", "payments")) +
				m.Describe("kafka_mirror_topic_partition_mismatch", refunds) + m.Describe("kafka_mirror_topic_records_not_replicated", refunds)
	})
	t.Logf("FIGURE mirror resume: caught up, payments mirrored and refunds' partition added %s after SIGCONT", took.Round(100*time.Millisecond))
	if truth := src.EndOffsetSum(t, "orders") - dst.EndOffsetSum(t, remote); truth != 0 {
		t.Errorf("the exporter says caught up, the end offsets differ by %d", truth)
	}
	live.waitQuery(t, 15*time.Second, "KafkaMirrorStalled resolved in Prometheus", func(q func(string) []promtest.Series) (bool, string) {
		res := q(`ALERTS{alertname="KafkaMirrorStalled", mirror="east-west"}`)
		return len(res) == 0, describeSeries(res)
	})
	// Every panel of the flow's dashboard has data over the stall.
	live.evaluateDashboard(t, "kafka-mirror.json", "east-west",
		map[string]string{"mirror": "east-west", "source_cluster": "east", "target_cluster": "west"}, windowStart, time.Now())
	evs = fetchEvents(t, e, "?system=mirror")
	resumed := mirrorEvents(evs, mirror.EventResumed, "")
	if len(resumed) == 0 || resumed[len(resumed)-1].Time.Before(resumedAt) {
		t.Errorf("no mirror_resumed event after the resume:\n%s", describeEvents(evs))
	}
	if len(mirrorEvents(evs, mirror.EventTopicAppeared, "payments")) == 0 {
		t.Errorf("no mirror_topic_appeared event for payments:\n%s", describeEvents(evs))
	}

	// Where billing would resume on the target: the exporter's offsets
	// against MM2's own translation, once MM2 checkpointed the commits made
	// during the stall (one checkpoint interval, 1 s, after the resume).
	var last string
	lab.WaitFor(t, 30*time.Second, 500*time.Millisecond, func() (bool, string) {
		translated, err := mm.TranslateOffsets("billing")
		if err != nil {
			return false, err.Error()
		}
		m := e.Scrape(t)
		var diffs []string
		for p := int32(0); p < 2; p++ {
			want, ok := translated[lab.TopicPartition{Topic: remote, Partition: p}]
			got, served := m.Value("kafka_mirror_group_resume_offset", with("group", "billing", "topic", "orders", "partition", strconv.Itoa(int(p))))
			if !ok || !served || int64(got) != want {
				diffs = append(diffs, fmt.Sprintf("orders/%d: exporter %v (served %v), translateOffsets %d (%v)", p, got, served, want, ok))
			}
		}
		last = strings.Join(diffs, "; ")
		return len(diffs) == 0, last
	})
	t.Logf("exporter's resume offsets for billing equal RemoteClusterUtils.translateOffsets")
}

// TestMirrorSourceClusterLost kills the whole source cluster (kill -9)
// while MirrorMaker 2 (identity replication policy, separator "_", so that
// its heartbeats and internal topics are east_heartbeats,
// mm2-offset-syncs_west_internal and east_checkpoints_internal) lags
// behind, and
// compares the exporter's last figures before the source went away with a
// record-by-record comparison of what the producer had acknowledged and
// what the target holds: what a failover at that moment lost.
func TestMirrorSourceClusterLost(t *testing.T) {
	src := lab.StartKafka(t, lab.KafkaOptions{Nodes: 1})
	dst := lab.StartKafka(t, lab.KafkaOptions{Nodes: 1})
	src.CreateTopic(t, "ledger", 1)
	mm := lab.StartMirror(t, lab.MirrorOptions{Source: src, Target: dst, SourceAlias: "east", TargetAlias: "west", Topics: "ledger", IdentityPolicy: true, Separator: "_"})
	if mm.RemoteTopic("ledger") != "ledger" || mm.HeartbeatsTopic() != "east_heartbeats" {
		t.Fatalf("identity policy, separator _: remote topic %q, heartbeats %q", mm.RemoteTopic("ledger"), mm.HeartbeatsTopic())
	}
	cfg := mirrorConfig(src, dst, "  - name: east-west\n    source: east\n    target: west\n    topics: ledger\n    replication_policy: identity\n"+
		"    replication_policy_separator: _\n    refresh_interval: 1s\n")
	e := exportertest.Start(t, "--config.file="+faultConfig(t, cfg))
	e.WaitReady(t, 30*time.Second)
	flow := map[string]string{"mirror": "east-west", "source_cluster": "east", "target_cluster": "west"}
	ledger := map[string]string{"mirror": "east-west", "source_cluster": "east", "target_cluster": "west", "topic": "ledger"}

	const rate = 50 * time.Millisecond // 20 records/s
	producer := startSteadyProducer(t, src.Bootstrap(), "ledger", 1, rate)
	waitMetrics(t, e, 90*time.Second, "the flow read and caught up after 40 records", func(m exportertest.Metrics) (bool, string) {
		up, _ := m.Value("kafka_mirror_up", flow)
		rpo, okRPO := m.Value("kafka_mirror_topic_rpo_seconds", ledger)
		lag, okLag := m.Value("kafka_mirror_topic_records_not_replicated", ledger)
		// The heartbeats, read from east_heartbeats: the separator's name.
		age, okAge := m.Value("kafka_mirror_heartbeat_age_seconds", flow)
		return up == 1 && producer.Acked() >= 40 && okRPO && rpo < 5 && okLag && lag < 50 && okAge && age < 5,
			fmt.Sprintf("%d records acknowledged\n", producer.Acked()) + m.Describe("kafka_mirror_up", flow) +
				m.Describe("kafka_mirror_topic_rpo_seconds", ledger) + m.Describe("kafka_mirror_topic_records_not_replicated", ledger) +
				m.Describe("kafka_mirror_heartbeat_age_seconds", flow)
	})

	// MirrorMaker falls behind for 8 s, then the source dies mid-production.
	mm.Pause(t)
	time.Sleep(8 * time.Second)
	// The exporter is scraped until the source is gone; its last figures
	// with the source read are what an SRE would have seen, as of that
	// refresh (kafka_mirror_last_refresh_success_timestamp_seconds of a
	// scrape whose refresh read the source).
	type reading struct {
		lag, rpo float64
		at       time.Time
	}
	var lastSeen reading
	scrapes := make(chan struct{})
	go func() {
		defer close(scrapes)
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			m, err := e.TryScrape()
			if err == nil {
				up, _ := m.Value("kafka_mirror_source_up", flow)
				if up == 0 {
					return
				}
				lag, okLag := m.Value("kafka_mirror_topic_records_not_replicated", ledger)
				rpo, okRPO := m.Value("kafka_mirror_topic_rpo_seconds", ledger)
				readAt, okAt := m.Value("kafka_mirror_last_refresh_success_timestamp_seconds", flow)
				took, okTook := m.Value("kafka_mirror_refresh_duration_seconds", flow)
				if okLag && okRPO && okAt && okTook {
					// The offsets were read during the refresh, which the
					// timestamp dates at its end: as of its start at the
					// earliest.
					lastSeen = reading{lag, rpo, time.Unix(0, int64((readAt-took)*1e9))}
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	time.Sleep(2 * time.Second)
	killedAt := time.Now()
	src.Kill(t, 1)
	producer.Stop()
	<-scrapes
	if lastSeen.at.IsZero() {
		t.Fatal("no reading of the flow before the source died")
	}

	// Record by record: every sequence number the source acknowledged that
	// the target lacks, read while MirrorMaker is still stopped, so the
	// target holds what it held when the source died.
	ends, err := dst.EndOffsets("ledger")
	if err != nil {
		t.Fatalf("target end offsets: %v", err)
	}
	onTarget := map[string]time.Time{}
	if n := int(ends[0]); n > 0 {
		for _, r := range dst.ReadRecords(t, "ledger", 0, 0, n, 30*time.Second) {
			onTarget[string(r.Value)] = r.Timestamp
		}
	}
	mm.Resume(t)
	producer.mu.Lock()
	acked := producer.acked[0]
	producer.mu.Unlock()
	var missing int
	var newestReplicated time.Time
	for _, seq := range acked {
		if ts, ok := onTarget[strconv.FormatInt(seq, 10)]; ok {
			if ts.After(newestReplicated) {
				newestReplicated = ts
			}
		} else {
			missing++
		}
	}
	lostSeconds := producer.lastAck.Sub(newestReplicated).Seconds()
	t.Logf("FIGURE mirror source lost: exporter's last reading %.1fs before the kill: %v records not replicated, RPO %.2fs; record by record: %d of %d acknowledged records missing on the target, %.2fs of data",
		killedAt.Sub(lastSeen.at).Seconds(), lastSeen.lag, lastSeen.rpo, missing, len(acked), lostSeconds)
	// What the producer added between the exporter's last read of the
	// source (at most one refresh before the kill) and the kill, at 20
	// records/s, and the same in seconds, with 200 ms for the read itself.
	window := max(killedAt.Sub(lastSeen.at), 0) + 200*time.Millisecond
	perWindow := window.Seconds() / rate.Seconds()
	if d := float64(missing) - lastSeen.lag; d < -1 || d > perWindow+1 {
		t.Errorf("records not replicated: exporter %v, record by record %d: want the exporter short by at most %.0f records (%s of production)", lastSeen.lag, missing, perWindow, window.Round(100*time.Millisecond))
	}
	if d := lostSeconds - lastSeen.rpo; d < -1 || d > window.Seconds()+1 {
		t.Errorf("RPO: exporter %.2fs, record by record %.2fs: want within %s", lastSeen.rpo, lostSeconds, window.Round(100*time.Millisecond))
	}
}

// mirrorEvents are the events of kind, about topic when topic is set.
func mirrorEvents(evs []events.Event, kind events.Kind, topic string) []events.Event {
	var out []events.Event
	for _, e := range evs {
		if e.Kind == kind && (topic == "" || e.Subject.Topic == topic) {
			out = append(out, e)
		}
	}
	return out
}
