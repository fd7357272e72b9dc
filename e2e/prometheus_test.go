package e2e

import (
	"cmp"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/internal/contract"
	"github.com/failover-exporter/failover_exporter/internal/exportertest"
	"github.com/failover-exporter/failover_exporter/internal/lab"
	"github.com/failover-exporter/failover_exporter/internal/promtest"
)

// Names the live lab gives its clusters (the kafka_cluster and redis_cluster labels).
const (
	liveKafka     = "lab" // partition_metrics: full
	liveTopic     = "orders"
	liveRedisBare = "bare"     // 3 masters, no replicas
	liveRedisRepl = "replicas" // 3 masters, 1 replica each
)

// liveKafkaModes names the one live Kafka cluster once per partition_metrics
// mode: every exporter reads it four times, and the dashboard and alerts are
// checked under each name.
var liveKafkaModes = []struct{ name, mode string }{
	{liveKafka, "full"},
	{"lab-lean", "lean"},
	{"lab-unhealthy", "unhealthy"},
	{"lab-none", "none"},
}

// emptyPanels lists the dashboard panels that legitimately return no data
// in this lab, keyed by dashboard file, cluster and panel title, with the
// reason; a key that ends in "/" and a refId exempts that one query of the
// panel, when only it is empty by design. Every other panel query must return
// data over the failover window, a listed panel or query that does return
// data fails the test too, and so does a key naming no panel or query, so
// that the list does not outlive its reason. A panel must have data from at
// least one query unless the panel itself is listed.
var emptyPanels = func() map[string]string {
	empty := map[string]string{
		"redis-cluster.json/" + liveRedisBare + "/Replica link to master":                 "the cluster has no replicas; master_link_up is a replica-only series",
		"redis-cluster.json/" + liveRedisBare + "/Backlog: seconds of writes it covers/A": "the cluster has no replicas: nothing is replicated, the offsets do not move, and there is no rate to divide the backlog by (B, the write rate, reads 0)",
		"redis-cluster.json/" + liveRedisBare + "/Replication lag per replica/A":          "the cluster has no replicas; replication_lag_bytes is a replica-only series (B, the masters' backlogs, has data)",
		"redis-cluster.json/" + liveRedisBare + "/Failure domains/B":                      "the cluster has no replicas; replicas_outside_failure_domain is served for a master with healthy replicas only (A, the slots in one domain, reads 0)",
		// The table lists foreign nodes (it reads "none" without any); the
		// Foreign nodes stat beside it counts them and must read 0.
		"redis-cluster.json/" + liveRedisBare + "/Foreign nodes (answer, but not members)": "every node that answers is a member: no foreign node to list",
		"redis-cluster.json/" + liveRedisRepl + "/Foreign nodes (answer, but not members)": "every node that answers is a member: no foreign node to list",
		"redis-cluster.json/" + liveRedisBare + "/Time to recover: failover":               "the cluster has no replicas, so no failover",
		"redis-cluster.json/" + liveRedisBare + "/What stopping each node now would do/E":  "the cluster has no replicas: a failover loses nothing it could lose to a replica, so failover_data_loss_bytes is served only for masters with a healthy replica",
		"redis-cluster.json/" + liveRedisBare + "/Time to recover: slots unserved":         "the dashboard is read while the killed master is still down: the unserved-slot episode has not ended",
	}
	// Stale routing is timed only for clients still sending a demoted
	// master commands (systems/redis TestIntegrationStaleRouting).
	for _, c := range []string{liveRedisBare, liveRedisRepl} {
		empty["redis-cluster.json/"+c+"/Failover or outage under way/C"] = "no client of the lab keeps sending a demoted master commands: no stale-routing episode"
		// Full syncs are watched in systems/redis TestIntegrationFullSyncUnprotected.
		empty["redis-cluster.json/"+c+"/Full syncs in progress"] = "no replica is in a full sync while the dashboard is read: the killed master is still down"
	}
	// Zone series are served only where zones are known (TestLabFailureBudget
	// in systems/redis checks them with failure_budget.zones).
	const noZones = "no zone is known: Redis 7 has no availability_zone, and the lab sets no failure_budget.zones"
	for _, title := range []string{"Slots a zone's loss would leave unserved"} {
		for _, c := range []string{liveRedisBare, liveRedisRepl} {
			empty["redis-cluster.json/"+c+"/"+title] = noZones
		}
	}
	// The write canary is opt-in and off in this lab (its series and
	// failovers are tested in collector/canary/... and e2e/canary_*_test.go).
	const canaryOff = "the write canary is off unless enabled, as in this lab"
	for _, k := range liveKafkaModes {
		kafka := func(title, reason string) { empty["kafka-replication.json/"+k.name+"/"+title] = reason }
		// Episode percentiles exist once an episode ended.
		kafka("Time to recover: offline", "no partition goes offline: the topic has 3 replicas and one broker is killed")
		kafka("Time to recover: under min ISR", "no partition goes under min ISR: ISR 2 = min.insync.replicas 2 with one broker killed")
		kafka("Time to recover: under-replicated", "the dashboard is read while the killed broker is still down: no under-replicated episode has ended")
		// ELR series are served only for partitions below min ISR (C, their count, reads 0).
		const noELR = "no partition goes below min ISR (ISR 2 = min.insync.replicas 2 with one broker killed), the only state with an ELR"
		kafka("Eligible and last known leader replicas per partition of $topic/A", noELR)
		kafka("Eligible and last known leader replicas per partition of $topic/B", noELR)
		for _, title := range []string{"Canary write success rate per leader", "Canary write failures per minute by error", "Canary produce latency p99 per leader", "Acknowledged writes lost / unverifiable", "Canary writer",
			"Canary write stalls, by the leader that began them"} {
			kafka(title, canaryOff)
		}
		// The shared lab is lent without internal topics (lab.SharedKafka
		// does not lend one a test made create them); TestKafkaInternalTopicHealth
		// reads their series on a cluster that has __consumer_offsets.
		kafka("Internal topics: partitions not healthy, by the feature they hold", "no consumer group or transaction has used the lab cluster: it has no internal topic yet")
		// The coordinator read asks about a kind only once its topic exists
		// (TestKafkaCoordinatorFailover reads them on a cluster that has both).
		const noCoordinators = "no consumer group or transaction has used the lab cluster: it has no __consumer_offsets or __transaction_state, whose coordinators the exporter reads"
		for _, title := range []string{"Coordinator partitions not answering, by kind", "Coordinator outages: the oldest ongoing, and those that ended",
			"Consumer groups by state", "What each broker coordinates: groups, transactional ids and coordinator partitions"} {
			kafka(title, noCoordinators)
		}
		// Per-partition transaction series are served for stalled
		// partitions only (TestKafkaReadCommittedStall makes one).
		const noStall = "no transaction runs in the lab: no partition's last stable offset stalls"
		kafka("Stalled partitions: how long, and records waiting/A", noStall)
		kafka("Stalled partitions: how long, and records waiting/B", noStall)
		// Kafka 4.3+ features (TestKafkaCordonedLogDirs, the 4.3 run of
		// TestKafkaVersions) on a 4.1 lab.
		kafka("Broker up, reachable, fenced and cordoned/D", "Kafka 4.1 does not say whether a log directory is cordoned (DescribeLogDirs v5 is 4.3+)")
		kafka("Replicas being added and removed per broker/C", "Kafka 4.1 does not say whether a log directory is cordoned (TestKafkaCordonedLogDirs shows a reassignment adding to a cordoned broker)")
		// A catch-up is measured on a live broker with replicas out of the
		// ISR; the killed broker stays down while the dashboard is read.
		const noCatchUp = "the killed broker is still down while the dashboard is read: no live broker is catching up (TestKafkaCatchUp and TestKafkaVersions' heal step measure one)"
		kafka("Catch-up after a restart: records behind, ETA, leadership back too early/A", noCatchUp)
		kafka("Catch-up after a restart: records behind, ETA, leadership back too early/B", noCatchUp)
		kafka("What an unclean election would lose, per candidate", "every partition keeps a clean leader in the live lab (TestKafkaUncleanEstimate makes one without)")
		kafka("Records only on local replicas, per tiered topic", "the lab has no tiered storage (the 4.3 and 4.4 runs of TestKafkaVersions have)")
		kafka("Oldest record only on local replicas, per tiered topic", "the lab has no tiered storage (the 4.3 and 4.4 runs of TestKafkaVersions have)")
		switch k.mode {
		case "full", "lean":
			// The topic-level rows stand in only while no partition of the topic is served.
			const served = "every partition's leader and ISR are served: no topic-level stand-in"
			kafka("Leader of each partition of $topic/B", served)
			kafka("Leader of each partition of $topic/C", served)
			kafka("ISR size per partition of $topic/C", served)
		case "none":
			const none = "partition_metrics none serves no per-partition series; the panel's topic or cluster series stands in"
			for _, q := range []string{
				"Leader of each partition of $topic/A", "ISR size per partition of $topic/A", "Preferred leader per partition of $topic/A",
				"Partitions that are not healthy/A", "Partitions that are not healthy/C",
				"Racks of the replicas and of the ISR per partition of $topic/A", "Racks of the replicas and of the ISR per partition of $topic/B",
			} {
				kafka(q, none)
			}
		}
	}
	// Hot slots are opt-in too, and the lab's Redis 7.0 has no CLUSTER
	// SLOT-STATS (systems/redis TestHotSlots reads them on Valkey 8.1).
	const slotStatsOff = "slot_stats is off unless configured, as in this lab, whose Redis 7.0 has no CLUSTER SLOT-STATS"
	// Redis 7.0 has no atomic slot migration (systems/redis
	// TestValkey9AtomicSlotMigration reads it on Valkey 9.1).
	const noAtomicMigration = "this lab's Redis 7.0 has no atomic slot migration (Valkey 9.0+, Redis 8.4+)"
	for _, cluster := range []string{liveRedisBare, liveRedisRepl} {
		for _, title := range []string{"Canary write success rate per master", "Canary write failures per minute by error", "Canary write latency p99 per master", "Acknowledged writes lost / unverifiable", "Canary writer",
			"Canary write stalls, by the master that began them"} {
			empty["redis-cluster.json/"+cluster+"/"+title] = canaryOff
		}
		for _, title := range []string{"Hottest slots by keys", "Hottest slots by CPU", "Hottest slots by network"} {
			empty["redis-cluster.json/"+cluster+"/"+title] = slotStatsOff
		}
		for _, title := range []string{"Atomic slot migrations running", "Slots in atomic migration", "Atomic slot migrations finished", "Last atomic slot migration per node"} {
			empty["redis-cluster.json/"+cluster+"/"+title] = noAtomicMigration
		}
	}
	// TestMirrorFailoverView's flow runs MM2's dedicated mode, which serves
	// no Connect REST API (TestMirrorConnect's flow has one and reads it).
	empty["kafka-mirror.json/east-west/Connectors and tasks by state (Kafka Connect)"] = "MM2's dedicated mode serves no Kafka Connect REST API: the flow has no connect"
	// TestSentinelLive's deployment sets no failure_budget.zones.
	for _, title := range []string{"Safe to stop per zone", "Why a zone is unsafe to lose"} {
		empty["redis-sentinel.json/"+liveSentinel+"/"+title] = "the deployment has no failure_budget.zones: zone series exist only where zones are configured"
	}
	return empty
}()

// liveLab is what the subtests of TestLiveFailover share.
type liveLab struct {
	kafka                *lab.KafkaCluster
	redisBare, redisRepl *lab.RedisCluster
	// exporters both read every cluster; Prometheus scrapes both, so every
	// series exists twice and only differs by instance.
	exporters []*exportertest.Exporter
	prom      *promtest.Prometheus
	am        *promtest.Alertmanager
	// hook receives Alertmanager's notifications, one per alert firing or
	// resolved: the pages a user would get.
	hook *promtest.Webhook
	root string
}

// TestLiveFailover is the whole monitoring chain with real processes on
// 127.0.0.1: a 3-broker Kafka cluster and two Redis Clusters (one without,
// one with replicas), two exporter instances reading all three (the Kafka
// cluster under four names, one per partition_metrics mode), Prometheus
// (Debian package) scraping both every second with prometheus/alerts.yml
// loaded (for: rewritten to 0s), and a real Alertmanager. Each subtest kills
// something and checks the alert in Prometheus and in Alertmanager (once,
// although two exporters report it), every dashboard panel over the failover
// window (for Kafka under each name: every panel has data in every mode),
// and that the stat panels give the numbers one exporter gives.
func TestLiveFailover(t *testing.T) {
	root := lab.RepoRoot(t)
	rules := promtest.RewriteRules(t, filepath.Join(root, "prometheus", "alerts.yml"), 0)

	kafka := lab.SharedKafka(t, lab.KafkaOptions{})
	createTopic(t, kafka.Bootstrap(), liveTopic, nil)
	redisBare := lab.StartRedisCluster(t, lab.RedisOptions{Masters: 3, Replicas: 0})
	redisRepl := lab.StartRedisCluster(t, lab.RedisOptions{Masters: 3, Replicas: 1})

	config := "kafka:\n"
	for _, k := range liveKafkaModes {
		config += fmt.Sprintf(`  - name: %s
    bootstrap_servers: [%s]
    partition_metrics: %s
    refresh_interval: 1s
    refresh_timeout: 1s
`, k.name, strings.Join(kafka.Bootstrap(), ", "), k.mode)
	}
	config += fmt.Sprintf(`redis:
  - name: %s
    addrs: [%s]
    refresh_interval: 1s
    refresh_timeout: 1s
  - name: %s
    addrs: [%s]
    refresh_interval: 1s
    refresh_timeout: 1s
`, liveRedisBare, strings.Join(redisBare.Addrs(), ", "),
		liveRedisRepl, strings.Join(redisRepl.Addrs(), ", "))
	configPath := filepath.Join(t.TempDir(), "exporter.yml")
	if err := os.WriteFile(configPath, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	l := &liveLab{kafka: kafka, redisBare: redisBare, redisRepl: redisRepl, root: root}
	for range 2 {
		e := exportertest.Start(t, "--config.file="+configPath)
		l.exporters = append(l.exporters, e)
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

	took := l.waitQuery(t, 90*time.Second, "both exporters scraped, every cluster read, all partitions of "+liveTopic+" in sync", func(q func(string) []promtest.Series) (bool, string) {
		checks := []struct{ expr, want string }{
			{`count(up{job="failover_exporter"} == 1)`, "2"},
			{`count(kafka_up == 1)`, strconv.Itoa(2 * len(liveKafkaModes))},
			// No partition is detailed before the kill, so the sparse
			// modes' topic-level stand-ins show in the window's first part.
			{`max(kafka_detailed_partitions)`, "0"},
			{`count(redis_cluster_up == 1)`, "4"},
			{fmt.Sprintf(`count(kafka_partition_in_sync_replicas{kafka_cluster=%q,topic=%q} == 3)`, liveKafka, liveTopic), "6"},
			{fmt.Sprintf(`min(redis_cluster_state_ok{redis_cluster=~"%s|%s"})`, liveRedisBare, liveRedisRepl), "1"},
		}
		for _, c := range checks {
			res := q(c.expr)
			if len(res) != 1 || strconv.FormatFloat(res[0].Last(), 'f', -1, 64) != c.want {
				return false, fmt.Sprintf("%s = %v, want %s", c.expr, describeSeries(res), c.want)
			}
		}
		return true, ""
	})
	t.Logf("FIGURE live lab: Prometheus saw both exporters and healthy clusters %s after it started", took.Round(10*time.Millisecond))

	t.Run("KafkaLeaderKilled", l.kafkaLeaderKilled)
	t.Run("RedisMasterKilledWithoutReplicas", l.redisMasterKilledWithoutReplicas)
	t.Run("RedisMasterKilledWithReplicas", l.redisMasterKilledWithReplicas)
	// Last: it kills one of the two exporters.
	t.Run("ExporterKilledMidIncident", l.exporterKilledMidIncident)
}

func (l *liveLab) kafkaLeaderKilled(t *testing.T) {
	p0 := fmt.Sprintf(`kafka_cluster=%q,topic=%q,partition="0"`, liveKafka, liveTopic)
	res := l.prom.Query(t, fmt.Sprintf(`max(kafka_partition_leader{%s})`, p0))
	if len(res) != 1 || res[0].Last() < 1 {
		t.Fatalf("leader of %s/0 in Prometheus: %s", liveTopic, describeSeries(res))
	}
	oldLeader := int32(res[0].Last())
	if n := len(l.promAlerts(t, "KafkaPartitionUnderReplicated", nil)); n != 0 {
		t.Fatalf("%d KafkaPartitionUnderReplicated alerts before the kill", n)
	}

	notified := len(l.hook.Notifications())
	killedAt := time.Now()
	l.kafka.Kill(t, oldLeader)
	t.Logf("killed leader broker %d of %s/0 (kill took %s)", oldLeader, liveTopic, time.Since(killedAt).Round(time.Millisecond))

	alertLabels := map[string]string{"kafka_cluster": liveKafka, "topic": liveTopic, "partition": "0"}
	firing, inAM := l.waitAlert(t, 90*time.Second, "KafkaPartitionUnderReplicated", alertLabels, true)
	t.Logf("FIGURE kafka kill -9 of leader broker %d: KafkaPartitionUnderReplicated firing in Prometheus after %s, in Alertmanager after %s",
		oldLeader, firing.Sub(killedAt).Round(10*time.Millisecond), inAM.Sub(killedAt).Round(10*time.Millisecond))
	brokerLabels := map[string]string{"kafka_cluster": liveKafka, "broker": fmt.Sprint(oldLeader)}
	brokerDown := l.waitAMAlert(t, 30*time.Second, "KafkaBrokerDown", brokerLabels)
	t.Logf("FIGURE kafka kill -9 of broker %d: KafkaBrokerDown in Alertmanager after %s", oldLeader, brokerDown.Sub(killedAt).Round(10*time.Millisecond))

	// All three partitions lost a replica; wait until every one is alerted
	// on, so that the numbers compared below are settled.
	l.waitQuery(t, 60*time.Second, "all partitions of "+liveTopic+" under-replicated in both exporters", func(q func(string) []promtest.Series) (bool, string) {
		res := q(fmt.Sprintf(`count(kafka_partition_under_replicated{kafka_cluster=%q,topic=%q} == 1)`, liveKafka, liveTopic))
		return len(res) == 1 && res[0].Last() == 6, describeSeries(res)
	})
	// The ISR can shrink a refresh before the new leader shows (or after);
	// the dashboard is read once both exporters show the new leader.
	l.waitQuery(t, 60*time.Second, fmt.Sprintf("a new leader of %s/0 in both exporters", liveTopic), func(q func(string) []promtest.Series) (bool, string) {
		res := q(fmt.Sprintf(`count(kafka_partition_leader{%s} >= 0 != %d)`, p0, oldLeader))
		return len(res) == 1 && res[0].Last() == 2, describeSeries(q(fmt.Sprintf(`kafka_partition_leader{%s}`, p0)))
	})
	t.Logf("FIGURE kafka kill -9 of leader broker %d: new leader of %s/0 in Prometheus (both exporters) after %s",
		oldLeader, liveTopic, time.Since(killedAt).Round(10*time.Millisecond))
	// Every name of the cluster reads it on its own refresh: the topic-level
	// series, served in every mode, settle too (3 partitions under-replicated,
	// at least the one led by the killed broker no longer on its preferred leader).
	l.waitQuery(t, 30*time.Second, "the failover under every name of the cluster, in both exporters", func(q func(string) []promtest.Series) (bool, string) {
		for _, k := range liveKafkaModes {
			sel := fmt.Sprintf(`{kafka_cluster=%q,topic=%q}`, k.name, liveTopic)
			ur := q(`min(kafka_topic_under_replicated_partitions` + sel + `)`)
			np := q(`min(kafka_topic_non_preferred_leader_partitions` + sel + `)`)
			if len(ur) != 1 || ur[0].Last() != 3 || len(np) != 1 || np[0].Last() < 1 {
				return false, fmt.Sprintf("%s: under-replicated partitions %s, not on their preferred leader %s", k.name, describeSeries(ur), describeSeries(np))
			}
		}
		return true, ""
	})
	// Alerts fire per cluster name; the partition alerts of the full name, once each.
	l.waitAMCount(t, 30*time.Second, "KafkaPartitionUnderReplicated", map[string]string{"kafka_cluster": liveKafka, "topic": liveTopic}, 3)
	for _, k := range liveKafkaModes {
		l.waitAMAlert(t, 30*time.Second, "KafkaBrokerDown", map[string]string{"kafka_cluster": k.name, "broker": fmt.Sprint(oldLeader)})
	}
	l.checkTopicAlerted(t, 30*time.Second)
	l.checkAlertsOnce(t, "KafkaPartitionUnderReplicated", "KafkaBrokerDown", "KafkaLeadershipChanged")

	// Every panel under every name, over one window: each mode's panels have data.
	start, end := killedAt.Add(-30*time.Second), windowEnd()
	for _, k := range liveKafkaModes {
		vars := map[string]string{"kafka_cluster": k.name, "topic": liveTopic}
		panels := l.evaluateDashboard(t, "kafka-replication.json", k.name, vars, start, end)
		checkKafkaFailoverPanels(t, k.name, k.mode, panels, oldLeader)

		// Two exporters, same numbers as one: each stat panel against the same
		// query restricted to the first exporter, and against that exporter's /metrics.
		kl := map[string]string{"kafka_cluster": k.name}
		fromMetrics := func() map[string]float64 {
			m := l.exporters[0].Scrape(t)
			var underReplicated float64
			for _, s := range m.Series("kafka_topic_under_replicated_partitions", kl) {
				underReplicated += s.Value
			}
			return map[string]float64{
				"Brokers down":                value(t, m, "kafka_cluster_expected_brokers", kl) - value(t, m, "kafka_cluster_brokers", kl),
				"Under-replicated partitions": underReplicated,
			}
		}
		if want := fromMetrics(); want["Brokers down"] != 1 || want["Under-replicated partitions"] != 3 {
			t.Errorf("%s: first exporter's /metrics: brokers down %v, under-replicated partitions %v; want 1 and 3", k.name, want["Brokers down"], want["Under-replicated partitions"])
		}
		l.checkStatPanels(t, "kafka-replication.json", "kafka_cluster", vars, fromMetrics)
	}

	restartAt := time.Now()
	l.kafka.Restart(t, oldLeader)
	t.Logf("restarted broker %d (start-node took %s)", oldLeader, time.Since(restartAt).Round(time.Millisecond))
	resolvedProm, resolvedAM := l.waitAlert(t, 120*time.Second, "KafkaPartitionUnderReplicated", alertLabels, false)
	t.Logf("FIGURE kafka restart of broker %d: KafkaPartitionUnderReplicated resolved in Prometheus after %s, in Alertmanager after %s",
		oldLeader, resolvedProm.Sub(restartAt).Round(10*time.Millisecond), resolvedAM.Sub(restartAt).Round(10*time.Millisecond))
	l.waitAlert(t, 30*time.Second, "KafkaBrokerDown", brokerLabels, false)
	// Two exporters, one page: through the kill and the restart, each alert
	// notified firing once and resolved once.
	l.waitNotified(t, 30*time.Second, notified, "resolved", "KafkaPartitionUnderReplicated", alertLabels)
	l.waitNotified(t, 30*time.Second, notified, "resolved", "KafkaBrokerDown", brokerLabels)
	l.checkNotifiedOnce(t, notified, "KafkaPartitionUnderReplicated", "KafkaBrokerDown")
}

// exporterKilledMidIncident kills a Kafka broker, waits for the page, then
// kill -9 one of the two exporters: the alerts must stay firing, with the
// start they had, and no notification may follow (no resolve, no second
// page); the broker's restart then resolves them once.
func (l *liveLab) exporterKilledMidIncident(t *testing.T) {
	p0 := fmt.Sprintf(`kafka_cluster=%q,topic=%q,partition="0"`, liveKafka, liveTopic)
	res := l.prom.Query(t, fmt.Sprintf(`max(kafka_partition_leader{%s})`, p0))
	if len(res) != 1 || res[0].Last() < 1 {
		t.Fatalf("leader of %s/0 in Prometheus: %s", liveTopic, describeSeries(res))
	}
	broker := int32(res[0].Last())
	notified := len(l.hook.Notifications())
	l.kafka.Kill(t, broker)
	alertLabels := map[string]string{"kafka_cluster": liveKafka, "topic": liveTopic, "partition": "0"}
	brokerLabels := map[string]string{"kafka_cluster": liveKafka, "broker": fmt.Sprint(broker)}
	l.waitAlert(t, 90*time.Second, "KafkaPartitionUnderReplicated", alertLabels, true)
	l.waitNotified(t, 30*time.Second, notified, "firing", "KafkaPartitionUnderReplicated", alertLabels)
	l.waitNotified(t, 30*time.Second, notified, "firing", "KafkaBrokerDown", brokerLabels)
	// The same cluster is watched under other names (one per
	// partition_metrics mode), each refreshed on its own clock: their pages
	// and the resolves they bring (KafkaBrokerUnreachable once the broker is
	// fenced) may still be on their way. The kill comes once every name has
	// paged and Alertmanager has been quiet for a while, so that what
	// follows it is the kill's doing.
	for _, k := range liveKafkaModes {
		l.waitNotified(t, 30*time.Second, notified, "firing", "KafkaBrokerDown", map[string]string{"kafka_cluster": k.name, "broker": fmt.Sprint(broker)})
	}
	l.waitNotificationsQuiet(t, 60*time.Second, 5*time.Second)
	startsAt := func() map[string]time.Time {
		out := map[string]time.Time{}
		for _, a := range l.am.AMAlerts(t) {
			if n := a.Labels["alertname"]; n == "KafkaPartitionUnderReplicated" || n == "KafkaBrokerDown" {
				out[alertIdentity(a.Labels)] = a.StartsAt
			}
		}
		return out
	}
	before := startsAt()

	victim := l.exporters[1]
	killedAt := time.Now()
	if err := victim.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	l.waitQuery(t, 30*time.Second, "Prometheus sees the killed exporter down", func(q func(string) []promtest.Series) (bool, string) {
		res := q(fmt.Sprintf(`up{instance=%q}`, victim.Addr))
		return len(res) == 1 && res[0].Last() == 0, describeSeries(res)
	})
	// Ten rule evaluations and group intervals with one exporter left.
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(time.Second) {
		for _, name := range []string{"KafkaPartitionUnderReplicated", "KafkaBrokerDown"} {
			match := alertLabels
			if name == "KafkaBrokerDown" {
				match = brokerLabels
			}
			if n := len(l.promAlerts(t, name, match)); n != 1 {
				t.Errorf("%s after an exporter was killed: %d alerts in Prometheus, want it still firing once", name, n)
			}
		}
	}
	if after := startsAt(); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("Alertmanager's alerts changed when an exporter was killed mid-incident:\nbefore %v\nafter  %v", before, after)
	}
	for _, n := range l.hook.Notifications()[notified:] {
		if n.Received.After(killedAt) {
			for _, a := range n.Alerts {
				t.Errorf("notification after the exporter was killed: %s %s", a.Status, promtest.FormatLabels(a.Labels))
			}
		}
	}
	t.Logf("FIGURE live lab: kill -9 of one of two exporters mid-incident: alerts still firing 10 s later, same start, no notification")

	l.kafka.Restart(t, broker)
	l.waitAlert(t, 120*time.Second, "KafkaPartitionUnderReplicated", alertLabels, false)
	l.waitNotified(t, 30*time.Second, notified, "resolved", "KafkaPartitionUnderReplicated", alertLabels)
	l.waitNotified(t, 30*time.Second, notified, "resolved", "KafkaBrokerDown", brokerLabels)
	l.checkNotifiedOnce(t, notified, "KafkaPartitionUnderReplicated", "KafkaBrokerDown")
}

// waitNotificationsQuiet waits up to timeout until no notification has
// arrived for quiet (five of the lab's group intervals are enough for what
// Prometheus already sent to be notified).
func (l *liveLab) waitNotificationsQuiet(t *testing.T, timeout, quiet time.Duration) {
	t.Helper()
	lab.WaitFor(t, timeout, 200*time.Millisecond, func() (bool, string) {
		ns := l.hook.Notifications()
		if len(ns) == 0 {
			return true, ""
		}
		last := ns[len(ns)-1]
		return time.Since(last.Received) >= quiet, fmt.Sprintf("last notification %s ago: %v", time.Since(last.Received).Round(time.Millisecond), last.Alerts)
	})
}

// notifications counts, from the from-th notification on, those of each
// alert named one of names, by status and the alert's identity.
func (l *liveLab) notifications(from int, names ...string) map[string]map[string]int {
	counts := map[string]map[string]int{"firing": {}, "resolved": {}}
	for _, n := range l.hook.Notifications()[from:] {
		for _, a := range n.Alerts {
			if slices.Contains(names, a.Labels["alertname"]) {
				counts[a.Status][alertIdentity(a.Labels)]++
			}
		}
	}
	return counts
}

// waitNotified waits until a notification with status of the alert named
// name whose labels include match arrived after the from-th.
func (l *liveLab) waitNotified(t *testing.T, timeout time.Duration, from int, status, name string, match map[string]string) {
	t.Helper()
	lab.WaitFor(t, timeout, 200*time.Millisecond, func() (bool, string) {
		for _, n := range l.hook.Notifications()[from:] {
			for _, a := range n.Alerts {
				if a.Status == status && a.Labels["alertname"] == name && labelsInclude(a.Labels, match) {
					return true, ""
				}
			}
		}
		return false, fmt.Sprintf("no %s notification of %s%s: %v", status, name, promtest.FormatLabels(match), l.notifications(from, name))
	})
}

// checkNotifiedOnce checks that, since the from-th notification, every
// alert named one of names was notified firing once and resolved at most
// once: two exporters, one page.
func (l *liveLab) checkNotifiedOnce(t *testing.T, from int, names ...string) {
	t.Helper()
	counts := l.notifications(from, names...)
	for status, byAlert := range counts {
		for id, n := range byAlert {
			if n != 1 {
				t.Errorf("%d %s notifications of %s, want 1", n, status, id)
			}
		}
	}
	if len(counts["firing"]) == 0 {
		t.Errorf("no firing notification of %v", names)
	}
	t.Logf("notifications: %d alerts among %v notified firing once, %d resolved once", len(counts["firing"]), names, len(counts["resolved"]))
}

// checkTopicAlerted waits up to timeout until Alertmanager holds an alert
// on the live topic under every name of the Kafka cluster, whatever the
// alert's name: the shipped alerts must see the under-replicated topic in
// every partition_metrics mode. A name without one fails the test, but not
// at once, so that the dashboard is still checked; the alerts are logged.
func (l *liveLab) checkTopicAlerted(t *testing.T, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		found := map[string]map[string]int{} // alert names by cluster name
		var problems []string
		for _, k := range liveKafkaModes {
			alerts, err := l.am.TryAMAlerts(fmt.Sprintf("kafka_cluster=%q", k.name), fmt.Sprintf("topic=%q", liveTopic))
			if err != nil {
				problems = append(problems, err.Error())
				continue
			}
			if len(alerts) == 0 {
				problems = append(problems, fmt.Sprintf("no alert on %s in Alertmanager with partition_metrics %s (kafka_cluster=%q)", liveTopic, k.mode, k.name))
			}
			found[k.name] = map[string]int{}
			for _, a := range alerts {
				found[k.name][a.Labels["alertname"]]++
			}
		}
		if len(problems) == 0 || time.Now().After(deadline) {
			for _, k := range liveKafkaModes {
				t.Logf("partition_metrics %s (%s): alerts on %s in Alertmanager: %v", k.mode, k.name, liveTopic, found[k.name])
			}
			for _, p := range problems {
				t.Errorf("after %s: %s", timeout, p)
			}
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// checkKafkaFailoverPanels checks that the partition panels of one cluster
// name show the failover in its partition_metrics mode: the leader of
// partition 0 moving and its ISR shrinking where per-partition series are
// served, the topic-level stand-ins moving where they are not, and the
// transition counters (per topic, in every mode) counting.
func checkKafkaFailoverPanels(t *testing.T, cluster, mode string, panels []evaluatedPanel, oldLeader int32) {
	t.Helper()
	const leaderPanel, isrPanel = "Leader of each partition of $topic", "ISR size per partition of $topic"
	p0 := map[string]string{"partition": "0"}
	topic := map[string]string{"topic": liveTopic}
	switch mode {
	case "full", "lean":
		// partition 0's leader takes at least two values in the window, the
		// old one first; its ISR goes from 3 to 2.
		leader := panelSeries(t, panels, leaderPanel, "A", p0)
		values := distinctValues(leader.Samples)
		if len(values) < 2 || leader.Samples[0].V != float64(oldLeader) {
			t.Errorf("%s: leader panel for %s/0 over the window: values %v (first %v), want the old leader %d then another",
				cluster, liveTopic, values, leader.Samples[0].V, oldLeader)
		} else {
			t.Logf("%s: leader panel for %s/0 over the window: %v", cluster, liveTopic, values)
		}
		isr := panelSeries(t, panels, isrPanel, "A", p0)
		if first, last := isr.Samples[0].V, isr.Last(); first != 3 || last != 2 {
			t.Errorf("%s: ISR panel for %s/0: %v at the start of the window, %v at the end; want 3 then 2", cluster, liveTopic, first, last)
		}
	case "unhealthy":
		// Before the kill no partition is served and the topic's rows stand
		// in; after it, the unhealthy partitions have rows, 0 with its new leader.
		if np := panelSeries(t, panels, leaderPanel, "C", topic); np.Samples[0].V != 0 {
			t.Errorf("%s: leader panel, partitions of %s not on their preferred leader before the kill: %v, want 0", cluster, liveTopic, np.Samples[0].V)
		}
		leader := panelSeries(t, panels, leaderPanel, "A", p0)
		if last := leader.Last(); last < 0 || last == float64(oldLeader) {
			t.Errorf("%s: leader panel for %s/0 once it is unhealthy: %v, want a new leader (the old one was %d)", cluster, liveTopic, distinctValues(leader.Samples), oldLeader)
		} else {
			t.Logf("%s: leader panel for %s/0 over the window: %v", cluster, liveTopic, distinctValues(leader.Samples))
		}
		if ur := panelSeries(t, panels, isrPanel, "C", topic); ur.Samples[0].V != 0 {
			t.Errorf("%s: ISR panel, under-replicated partitions of %s before the kill: %v, want 0", cluster, liveTopic, ur.Samples[0].V)
		}
		if isr := panelSeries(t, panels, isrPanel, "A", p0); isr.Last() != 2 {
			t.Errorf("%s: ISR panel for %s/0 once it is unhealthy: %v, want 2", cluster, liveTopic, distinctValues(isr.Samples))
		}
	case "none":
		// The topic's rows: partitions not on their preferred leader and
		// under-replicated partitions rise from 0.
		np := panelSeries(t, panels, leaderPanel, "C", topic)
		if first, last := np.Samples[0].V, np.Last(); first != 0 || last < 1 {
			t.Errorf("%s: leader panel, partitions of %s not on their preferred leader: %v at the start of the window, %v at the end; want 0 then at least 1", cluster, liveTopic, first, last)
		} else {
			t.Logf("%s: leader panel, partitions of %s not on their preferred leader over the window: %v", cluster, liveTopic, distinctValues(np.Samples))
		}
		ur := panelSeries(t, panels, isrPanel, "C", topic)
		if first, last := ur.Samples[0].V, ur.Last(); first != 0 || last != 3 {
			t.Errorf("%s: ISR panel, under-replicated partitions of %s: %v at the start of the window, %v at the end; want 0 then 3", cluster, liveTopic, first, last)
		}
	default:
		t.Fatalf("unknown partition_metrics mode %q", mode)
	}
	for _, c := range []struct {
		title, refID string
		match        map[string]string
	}{
		{"Leader changes per minute by topic", "A", topic},
		{"ISR shrinks and expands per minute", "A", nil},
	} {
		s := panelSeries(t, panels, c.title, c.refID, c.match)
		if peak := slices.MaxFunc(s.Samples, func(a, b promtest.Sample) int { return cmp.Compare(a.V, b.V) }).V; peak <= 0 {
			t.Errorf("%s: panel %q %s stays at %v over the failover window, want it to count the failover", cluster, c.title, c.refID, peak)
		}
	}
}

func (l *liveLab) redisMasterKilledWithoutReplicas(t *testing.T) {
	c := l.redisBare
	victim := c.Masters(t)[0]
	killedAt := time.Now()
	c.Kill(t, victim.Port)
	t.Logf("killed master %s (%d slots) of %s", victim.Addr, victim.Slots, liveRedisBare)

	alertLabels := map[string]string{"redis_cluster": liveRedisBare, "state": "fail"}
	firing, inAM := l.waitAlert(t, 60*time.Second, "RedisClusterSlotsNotServed", alertLabels, true)
	t.Logf("FIGURE redis kill -9 of master %s (no replicas): RedisClusterSlotsNotServed{state=fail} firing in Prometheus after %s, in Alertmanager after %s",
		victim.Addr, firing.Sub(killedAt).Round(10*time.Millisecond), inAM.Sub(killedAt).Round(10*time.Millisecond))
	l.waitQuery(t, 30*time.Second, "both exporters see the slots failing", func(q func(string) []promtest.Series) (bool, string) {
		res := q(fmt.Sprintf(`count(redis_cluster_slots{redis_cluster=%q,state="fail"} == %d)`, liveRedisBare, victim.Slots))
		return len(res) == 1 && res[0].Last() == 2, describeSeries(res)
	})
	l.checkAlertsOnce(t, "RedisClusterSlotsNotServed", "RedisClusterStateNotOk", "RedisClusterNodeFailing")

	vars := map[string]string{"redis_cluster": liveRedisBare}
	l.evaluateDashboard(t, "redis-cluster.json", liveRedisBare, vars, killedAt.Add(-30*time.Second), windowEnd())
	rl := map[string]string{"redis_cluster": liveRedisBare}
	l.checkStatPanels(t, "redis-cluster.json", "redis_cluster", vars, func() map[string]float64 {
		metrics := l.exporters[0].Scrape(t)
		return map[string]float64{
			"Masters":       value(t, metrics, "redis_cluster_masters", rl),
			"Foreign nodes": value(t, metrics, "redis_cluster_foreign_nodes", rl),
		}
	})

	restartAt := time.Now()
	c.Restart(t, victim.Port)
	resolvedProm, resolvedAM := l.waitAlert(t, 60*time.Second, "RedisClusterSlotsNotServed", alertLabels, false)
	t.Logf("FIGURE redis restart of master %s: RedisClusterSlotsNotServed resolved in Prometheus after %s, in Alertmanager after %s",
		victim.Addr, resolvedProm.Sub(restartAt).Round(10*time.Millisecond), resolvedAM.Sub(restartAt).Round(10*time.Millisecond))
}

func (l *liveLab) redisMasterKilledWithReplicas(t *testing.T) {
	c := l.redisRepl
	victim := c.Masters(t)[0]
	var replica lab.RedisNode
	for _, n := range c.Nodes(t) {
		if n.MasterID == victim.ID {
			replica = n
		}
	}
	if replica.ID == "" {
		t.Fatalf("master %s of %s has no replica", victim.Addr, liveRedisRepl)
	}
	killedAt := time.Now()
	c.Kill(t, victim.Port)
	t.Logf("killed master %s (%d slots) of %s; its replica is %s", victim.Addr, victim.Slots, liveRedisRepl, replica.Addr)

	l.waitQuery(t, 60*time.Second, "the replica owning the old master's slots in both exporters", func(q func(string) []promtest.Series) (bool, string) {
		res := q(fmt.Sprintf(`count(redis_cluster_node_slots{redis_cluster=%q,node_id=%q} == %d)`, liveRedisRepl, replica.ID, victim.Slots))
		return len(res) == 1 && res[0].Last() == 2, describeSeries(res)
	})
	t.Logf("FIGURE redis kill -9 of master %s: replica %s owns its %d slots in Prometheus after %s",
		victim.Addr, replica.Addr, victim.Slots, time.Since(killedAt).Round(10*time.Millisecond))
	failover := l.waitAMAlert(t, 30*time.Second, "RedisClusterFailover", map[string]string{"redis_cluster": liveRedisRepl})
	t.Logf("FIGURE redis kill -9 of master %s: RedisClusterFailover in Alertmanager after %s", victim.Addr, failover.Sub(killedAt).Round(10*time.Millisecond))
	l.checkAlertsOnce(t, "RedisClusterFailover", "RedisClusterNodeFailing", "RedisClusterSlotsWithoutReplica")

	vars := map[string]string{"redis_cluster": liveRedisRepl}
	panels := l.evaluateDashboard(t, "redis-cluster.json", liveRedisRepl, vars, killedAt.Add(-30*time.Second), windowEnd())

	// The slots-per-node panel shows the takeover: the replica's series goes
	// from 0 to the old master's count, the old master's from that count to 0.
	promoted := panelSeries(t, panels, "Slots per node", "A", map[string]string{"node_id": replica.ID})
	if first, last := promoted.Samples[0].V, promoted.Last(); first != 0 || last != float64(victim.Slots) {
		t.Errorf("slots-per-node panel, promoted replica %s: %v at the start of the window and %v at the end, want 0 then %d",
			replica.Addr, first, last, victim.Slots)
	} else {
		t.Logf("slots-per-node panel, promoted replica %s: %v", replica.Addr, distinctValues(promoted.Samples))
	}
	old := panelSeries(t, panels, "Slots per node", "A", map[string]string{"node_id": victim.ID})
	if first := old.Samples[0].V; first != float64(victim.Slots) {
		t.Errorf("slots-per-node panel, killed master %s: %v at the start of the window, want %d", victim.Addr, first, victim.Slots)
	}
	// Once the replica shows the slots, the dead master must not (a scrape
	// of slack: the two series come from different refreshes).
	var tookOver time.Time
	for _, sample := range promoted.Samples {
		if sample.V == float64(victim.Slots) {
			tookOver = sample.T
			break
		}
	}
	for _, sample := range old.Samples {
		if sample.T.After(tookOver.Add(2*time.Second)) && sample.V != 0 {
			t.Errorf("slots-per-node panel: killed master %s still shows %v slots at %s, after replica %s took them over at %s",
				victim.Addr, sample.V, sample.T.Format(time.TimeOnly), replica.Addr, tookOver.Format(time.TimeOnly))
			break
		}
	}
	t.Logf("slots-per-node panel, killed master %s: %v", victim.Addr, distinctValues(old.Samples))

	rl := map[string]string{"redis_cluster": liveRedisRepl}
	l.checkStatPanels(t, "redis-cluster.json", "redis_cluster", vars, func() map[string]float64 {
		metrics := l.exporters[0].Scrape(t)
		return map[string]float64{
			"Masters":       value(t, metrics, "redis_cluster_masters", rl),
			"Foreign nodes": value(t, metrics, "redis_cluster_foreign_nodes", rl),
		}
	})
}

// waitQuery polls Prometheus every 250ms with cond, which runs instant
// queries through q, until cond holds.
func (l *liveLab) waitQuery(t *testing.T, timeout time.Duration, what string, cond func(q func(string) []promtest.Series) (bool, string)) time.Duration {
	t.Helper()
	return lab.WaitFor(t, timeout, 250*time.Millisecond, func() (bool, string) {
		var queryErr error
		q := func(expr string) []promtest.Series {
			res, err := l.prom.TryQuery(expr, time.Time{})
			if err != nil && queryErr == nil {
				queryErr = err
			}
			return res
		}
		ok, msg := cond(q)
		if queryErr != nil {
			return false, what + ": " + queryErr.Error()
		}
		return ok, what + ": " + msg
	})
}

// promAlerts returns Prometheus's alerts named name whose labels include match.
func (l *liveLab) promAlerts(t *testing.T, name string, match map[string]string) []promtest.Alert {
	t.Helper()
	var out []promtest.Alert
	for _, a := range l.prom.Alerts(t) {
		if a.Labels["alertname"] == name && labelsInclude(a.Labels, match) {
			out = append(out, a)
		}
	}
	return out
}

// waitAlert polls Prometheus and Alertmanager together until both hold the
// alert (firing in Prometheus), or with firing false until neither does, and
// returns when each first did, so that neither time includes waiting on the other.
func (l *liveLab) waitAlert(t *testing.T, timeout time.Duration, name string, match map[string]string, firing bool) (promAt, amAt time.Time) {
	t.Helper()
	lab.WaitFor(t, timeout, 200*time.Millisecond, func() (bool, string) {
		var msgs []string
		if promAt.IsZero() {
			alerts, err := l.prom.TryAlerts()
			if err != nil {
				return false, err.Error()
			}
			found := false
			for _, a := range alerts {
				if a.Labels["alertname"] == name && labelsInclude(a.Labels, match) && (a.State == "firing" || !firing) {
					found = true
				}
			}
			if found == firing {
				promAt = time.Now()
			} else {
				msgs = append(msgs, "Prometheus alerts: "+describePromAlerts(alerts))
			}
		}
		if amAt.IsZero() {
			alerts, err := l.am.TryAMAlerts(l.amFilter(name, match)...)
			if err != nil {
				return false, err.Error()
			}
			if (len(alerts) > 0) == firing {
				amAt = time.Now()
			} else {
				msgs = append(msgs, "Alertmanager: "+describeAMAlerts(alerts))
			}
		}
		state := "firing"
		if !firing {
			state = "resolved"
		}
		return !promAt.IsZero() && !amAt.IsZero(), fmt.Sprintf("%s%s not %s yet: %s", name, promtest.FormatLabels(match), state, strings.Join(msgs, "; "))
	})
	return promAt, amAt
}

func (l *liveLab) amFilter(name string, match map[string]string) []string {
	filter := []string{fmt.Sprintf("alertname=%q", name)}
	for k, v := range match {
		filter = append(filter, fmt.Sprintf("%s=%q", k, v))
	}
	return filter
}

// waitAMAlert waits until Alertmanager holds the alert and returns when.
func (l *liveLab) waitAMAlert(t *testing.T, timeout time.Duration, name string, match map[string]string) time.Time {
	t.Helper()
	lab.WaitFor(t, timeout, 200*time.Millisecond, func() (bool, string) {
		alerts, err := l.am.TryAMAlerts(l.amFilter(name, match)...)
		if err != nil {
			return false, err.Error()
		}
		return len(alerts) > 0, fmt.Sprintf("no %s%s in Alertmanager", name, promtest.FormatLabels(match))
	})
	return time.Now()
}

// waitAMCount waits until Alertmanager holds exactly n alerts named name
// whose labels include match.
func (l *liveLab) waitAMCount(t *testing.T, timeout time.Duration, name string, match map[string]string, n int) {
	t.Helper()
	lab.WaitFor(t, timeout, 200*time.Millisecond, func() (bool, string) {
		alerts, err := l.am.TryAMAlerts(l.amFilter(name, match)...)
		if err != nil {
			return false, err.Error()
		}
		return len(alerts) == n, fmt.Sprintf("%d %s%s alerts in Alertmanager, want %d: %s", len(alerts), name, promtest.FormatLabels(match), n, describeAMAlerts(alerts))
	})
}

// targetLabels are the labels that tell the copies of a series from two
// exporters apart; an alert must carry none of them.
var targetLabels = []string{"instance", "job", "pod"}

// alertIdentity is an alert's labels less the target labels: what tells
// one problem from another, whichever exporter reported it.
func alertIdentity(labels map[string]string) string {
	rest := map[string]string{}
	for k, v := range labels {
		if !slices.Contains(targetLabels, k) {
			rest[k] = v
		}
	}
	return promtest.FormatLabels(rest)
}

// checkAlertsOnce checks that, although two exporters report every series,
// each of the named alerts exists once per identifying label set, in
// Prometheus and in Alertmanager, and carries no target label.
func (l *liveLab) checkAlertsOnce(t *testing.T, names ...string) {
	t.Helper()
	check := func(where string, labelSets []map[string]string) {
		seen := map[string]int{}
		for _, labels := range labelSets {
			if !slices.Contains(names, labels["alertname"]) {
				continue
			}
			for _, tl := range targetLabels {
				if v, ok := labels[tl]; ok {
					t.Errorf("%s: alert %s carries target label %s=%q", where, promtest.FormatLabels(labels), tl, v)
				}
			}
			seen[alertIdentity(labels)]++
		}
		for id, n := range seen {
			if n != 1 {
				t.Errorf("%s: %d alerts %s, want one for two exporters", where, n, id)
			}
		}
		t.Logf("%s: %d distinct alerts among %v, each once", where, len(seen), names)
	}
	var promSets, amSets []map[string]string
	for _, a := range l.prom.Alerts(t) {
		promSets = append(promSets, a.Labels)
	}
	for _, a := range l.am.AMAlerts(t) {
		amSets = append(amSets, a.Labels)
	}
	check("Prometheus", promSets)
	check("Alertmanager", amSets)
}

// windowEnd returns the end of a failover window read right after an
// instant query saw the failover: two scrape intervals later, so that the
// last point of a range query's 1s grid is past the sample that query saw.
func windowEnd() time.Time {
	time.Sleep(2 * time.Second)
	return time.Now()
}

// evaluatedPanel is a dashboard panel and the result of each of its queries.
type evaluatedPanel struct {
	panel   contract.PanelQuery
	results map[string][]promtest.Series // by refId
}

// evaluateDashboard runs every query of every panel of the dashboard, with
// the variables filled in, against Prometheus: range queries over
// [start, end] with a 1s step, instant queries at end. A query that returns
// nothing fails the test unless its panel is in emptyPanels.
func (l *liveLab) evaluateDashboard(t *testing.T, file, cluster string, vars map[string]string, start, end time.Time) []evaluatedPanel {
	t.Helper()
	panels, err := contract.LoadDashboardQueries(filepath.Join(l.root, "grafana", "dashboards", file))
	if err != nil {
		t.Fatal(err)
	}
	allVars := contract.BuiltinVariables()
	for k, v := range vars {
		allVars[k] = v
	}
	var out []evaluatedPanel
	var withData, queries int
	// Keys of emptyPanels for this dashboard and cluster that name no panel
	// query are stale.
	prefix := file + "/" + cluster + "/"
	unmatched := map[string]bool{}
	for key := range emptyPanels {
		if strings.HasPrefix(key, prefix) {
			unmatched[key] = true
		}
	}
	for _, p := range panels {
		ev := evaluatedPanel{panel: p, results: map[string][]promtest.Series{}}
		panelKey := prefix + p.Title
		_, panelExempt := emptyPanels[panelKey]
		var empty []string
		panelData := false
		for _, q := range p.Queries {
			key := panelKey
			reason, exempt := emptyPanels[key]
			if !exempt {
				key = panelKey + "/" + q.RefID
				reason, exempt = emptyPanels[key]
			}
			delete(unmatched, key)
			expr := contract.SubstituteVariables(q.Expr, allVars)
			if strings.Contains(expr, "$") {
				t.Errorf("%s panel %q %s: unsubstituted variable left in %s", file, p.Title, q.RefID, expr)
				continue
			}
			var res []promtest.Series
			var err error
			if q.Instant {
				res, err = l.prom.TryQuery(expr, end)
			} else {
				res, err = l.prom.TryQueryRange(expr, start, end, time.Second)
			}
			queries++
			if err != nil {
				t.Errorf("%s panel %q %s: %v", file, p.Title, q.RefID, err)
				continue
			}
			ev.results[q.RefID] = res
			panelData = panelData || len(res) > 0
			switch {
			case len(res) == 0 && !exempt:
				empty = append(empty, q.RefID)
			case len(res) > 0 && exempt:
				withData++
				t.Errorf("%s (%s) panel %q %s is listed as empty (%s) but returns data: remove %q from emptyPanels", file, cluster, p.Title, q.RefID, reason, key)
			case exempt:
				t.Logf("%s (%s) panel %q %s empty as expected: %s", file, cluster, p.Title, q.RefID, reason)
			default:
				withData++
			}
		}
		if len(empty) > 0 {
			t.Errorf("%s (%s) panel %q: queries %v return no data over the failover window", file, cluster, p.Title, empty)
		} else if !panelData && !panelExempt {
			t.Errorf("%s (%s) panel %q: no query returns data over the failover window (each is listed in emptyPanels; list the panel, or give it a query with data)", file, cluster, p.Title)
		}
		out = append(out, ev)
	}
	for key := range unmatched {
		t.Errorf("emptyPanels key %q names no panel or query of %s: a title or refId changed", key, file)
	}
	t.Logf("%s (%s): %d panels, %d of %d queries returned data over %s..%s",
		file, cluster, len(panels), withData, queries, start.Format(time.TimeOnly), end.Format(time.TimeOnly))
	return out
}

// panelSeries returns the one series of a panel query whose labels include match.
func panelSeries(t *testing.T, panels []evaluatedPanel, title, refID string, match map[string]string) promtest.Series {
	t.Helper()
	for _, p := range panels {
		if p.panel.Title != title {
			continue
		}
		var found []promtest.Series
		for _, s := range p.results[refID] {
			if labelsInclude(s.Labels, match) {
				found = append(found, s)
			}
		}
		if len(found) != 1 || len(found[0].Samples) == 0 {
			t.Fatalf("panel %q %s: %d series with %s, want one: %s", title, refID, len(found), promtest.FormatLabels(match), describeSeries(p.results[refID]))
		}
		return found[0]
	}
	t.Fatalf("no panel titled %q", title)
	return promtest.Series{}
}

// checkStatPanels compares every stat panel's current value with two
// exporters to its value with only the first exporter (the cluster variable
// is filled with `NAME",instance="ADDR`, which adds the matcher to every
// selector of the panel), and the panels want returns to the value computed
// from the first exporter's own /metrics at that moment.
func (l *liveLab) checkStatPanels(t *testing.T, file, clusterVar string, vars map[string]string, want func() map[string]float64) {
	t.Helper()
	panels, err := contract.LoadDashboardQueries(filepath.Join(l.root, "grafana", "dashboards", file))
	if err != nil {
		t.Fatal(err)
	}
	both := contract.BuiltinVariables()
	one := contract.BuiltinVariables()
	for k, v := range vars {
		both[k], one[k] = v, v
	}
	one[clusterVar] = vars[clusterVar] + `",instance="` + l.exporters[0].Addr
	// The restriction must take effect, or the comparison below proves nothing.
	// Every exporter serves exactly one *_up series per cluster.
	upMetric := map[string]string{"kafka_cluster": "kafka_up", "redis_cluster": "redis_cluster_up", "sentinel_cluster": "redis_sentinel_up"}[clusterVar]
	canary := fmt.Sprintf(`count(%s{%s="$%s"})`, upMetric, clusterVar, clusterVar)
	perExporter := l.instant(t, contract.SubstituteVariables(canary, one))
	if all := l.instant(t, contract.SubstituteVariables(canary, both)); len(all) != 1 || len(perExporter) != 1 || firstValue(all) != 2*firstValue(perExporter) {
		t.Fatalf("%s: series of %s=%q with two exporters %v, with the first only %v; want twice as many", file, clusterVar, vars[clusterVar], all, perExporter)
	}
	checked := map[string]bool{}
	for _, p := range panels {
		if p.Type != "stat" {
			continue
		}
		if strings.Contains(strings.ToLower(p.Title), "age") {
			continue // time() minus the freshest refresh: differs by design between one and two exporters
		}
		if _, empty := emptyPanels[file+"/"+vars[clusterVar]+"/"+p.Title]; empty {
			continue // no data by design here; evaluateDashboard checked that it is empty
		}
		for _, q := range p.Queries {
			exprBoth := contract.SubstituteVariables(q.Expr, both)
			exprOne := contract.SubstituteVariables(q.Expr, one)
			if n := strings.Count(exprOne, "{"); n == 0 || strings.Count(exprOne, `instance="`) != n {
				t.Errorf("%s panel %q %s: cannot restrict every selector to one exporter through $%s: %s", file, p.Title, q.RefID, clusterVar, exprOne)
				continue
			}
			// The results come from queries and a scrape a moment apart, and
			// Prometheus lags the exporter by up to a scrape; retry briefly.
			var gotBoth, gotOne map[string]float64
			var w float64
			var haveWant, wantOK bool
			for attempt := 0; attempt < 8; attempt++ {
				gotBoth, gotOne = l.instant(t, exprBoth), l.instant(t, exprOne)
				w, haveWant = want()[p.Title]
				haveWant = haveWant && q.RefID == "A"
				wantOK = !haveWant || (len(gotBoth) == 1 && firstValue(gotBoth) == w)
				if sameValues(gotBoth, gotOne) && wantOK {
					break
				}
				time.Sleep(500 * time.Millisecond)
			}
			if !sameValues(gotBoth, gotOne) {
				t.Errorf("%s stat panel %q %s: %v with two exporters, %v with one", file, p.Title, q.RefID, gotBoth, gotOne)
			}
			if len(gotBoth) == 0 {
				t.Errorf("%s stat panel %q %s: no value", file, p.Title, q.RefID)
			}
			if haveWant {
				checked[p.Title] = true
				if !wantOK {
					t.Errorf("%s stat panel %q = %v with two exporters, want %v as the first exporter's /metrics says", file, p.Title, gotBoth, w)
				}
			}
			t.Logf("%s stat panel %q %s: %v (one exporter: %v)", file, p.Title, q.RefID, gotBoth, gotOne)
		}
	}
	for title := range want() {
		if !checked[title] {
			t.Errorf("%s: no stat panel titled %q", file, title)
		}
	}
}

// instant runs an instant query and returns each series' value by labels.
func (l *liveLab) instant(t *testing.T, expr string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, s := range l.prom.Query(t, expr) {
		out[s.String()] = s.Last()
	}
	return out
}

// sameValues reports whether a and b have the same series and values, a
// value within a thousandth of the other: two instant queries a moment
// apart extrapolate a rate or an increase over slightly different windows
// (4.12504 against 4.12525 writes lost in one run), while what the check
// catches, two exporters counted twice, is twice the value.
func sameValues(a, b map[string]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		switch {
		case !ok:
			return false
		case v == w, math.IsNaN(v) && math.IsNaN(w):
		case math.Abs(v-w) > 1e-3*max(math.Abs(v), math.Abs(w)):
			return false
		}
	}
	return true
}

func firstValue(m map[string]float64) float64 {
	for _, v := range m {
		return v
	}
	return math.NaN()
}

func labelsInclude(labels, match map[string]string) bool {
	for k, v := range match {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// distinctValues lists a series' values in the order they first appear.
func distinctValues(samples []promtest.Sample) []float64 {
	var out []float64
	for _, s := range samples {
		if !slices.Contains(out, s.V) {
			out = append(out, s.V)
		}
	}
	return out
}

func describeSeries(res []promtest.Series) string {
	if len(res) == 0 {
		return "no series"
	}
	parts := make([]string, len(res))
	for i, s := range res {
		parts[i] = fmt.Sprintf("%s %g", s, s.Last())
	}
	sort.Strings(parts)
	return strings.Join(parts, "; ")
}

func describePromAlerts(alerts []promtest.Alert) string {
	parts := make([]string, len(alerts))
	for i, a := range alerts {
		parts[i] = a.State + " " + promtest.FormatLabels(a.Labels)
	}
	sort.Strings(parts)
	return "[" + strings.Join(parts, "; ") + "]"
}

func describeAMAlerts(alerts []promtest.AMAlert) string {
	parts := make([]string, len(alerts))
	for i, a := range alerts {
		parts[i] = a.Status.State + " " + promtest.FormatLabels(a.Labels)
	}
	sort.Strings(parts)
	return "[" + strings.Join(parts, "; ") + "]"
}
