package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/failover-exporter/failover_exporter/internal/exportertest"
	"github.com/failover-exporter/failover_exporter/internal/lab"
)

// What a Kafka version tells a client about eligible leader replicas (ELR,
// KIP-966).
type elrSupport int

const (
	// elrAbsent: no DescribeTopicPartitions (ZooKeeper mode);
	// kafka-topics.sh prints "Elr: N/A" and the ELR series are absent.
	elrAbsent elrSupport = iota
	// elrEmpty: the API but not the feature (3.9 in KRaft mode): every
	// ELR is empty, as that version's kafka-topics.sh prints it ("Elr: "),
	// and an offline partition keeps its last ISR member, so no partition
	// is without a clean leader.
	elrEmpty
	// elrOn: ELR on (4.x default): the ISR of an offline partition empties
	// into the ELR.
	elrOn
)

// kafkaMatrix is every Kafka the lab runs, with what each can tell a client:
// a KRaft controller quorum (DescribeQuorum) and its ELR. The
// Kafka versions table of docs/kafka.md says the same.
var kafkaMatrix = []struct {
	name   string
	opts   lab.KafkaOptions
	quorum bool
	elr    elrSupport
}{
	{"3.9-zookeeper", lab.KafkaOptions{Version: "3.9", ZooKeeper: true}, false, elrAbsent},
	{"3.9-kraft", lab.KafkaOptions{Version: "3.9"}, true, elrEmpty},
	{"4.1", lab.KafkaOptions{Version: "4.1"}, true, elrOn},
	// 4.3 and 4.4 run with tiered storage on (the lab's LabRemoteStorage):
	// they get the tiered scenario too, 4.4 with its copy lags (KIP-1241).
	{"4.3", lab.KafkaOptions{Version: "4.3", TieredStorage: true}, true, elrOn},
	{"4.4", lab.KafkaOptions{Version: "4.4", TieredStorage: true}, true, elrOn},
}

// TestKafkaVersions runs the core Kafka scenarios on every version in
// kafkaMatrix, one 3-broker cluster per version shared by its subtests (a
// cluster start and stop cost more than a scenario): a leader killed, ISRs
// shrinking, partitions under min ISR (a topic with min.insync.replicas 3,
// and a partition whose only replica died, which has no leader), the ISRs
// healing, and a throttled reassignment. In each state the exporter must
// agree with that version's own kafka-topics.sh (--describe and its
// --under-replicated-partitions, --under-min-isr-partitions,
// --at-min-isr-partitions and --unavailable-partitions filters); and a
// series the version cannot provide (the quorum in ZooKeeper mode, the ELR
// before 4.0) must be absent, never wrong. The full suite runs on the
// default version (4.1) only.
func TestKafkaVersions(t *testing.T) {
	for _, v := range kafkaMatrix {
		t.Run(v.name, func(t *testing.T) {
			start := time.Now()
			cluster := lab.StartKafka(t, v.opts)
			t.Logf("FIGURE kafka %s: cluster start %s", v.name, time.Since(start).Round(100*time.Millisecond))
			scenarios := time.Now()
			t.Cleanup(func() {
				// Cleanups run last registered first: this one before the
				// lab's stop, which StartKafka registered.
				t.Logf("FIGURE kafka %s: scenarios %s", v.name, time.Since(scenarios).Round(100*time.Millisecond))
			})
			if v.opts.TieredStorage {
				runTieredScenario(t, cluster)
			}
			runKafkaCoreScenarios(t, cluster, v.quorum, v.elr)
		})
	}
}

// The topics of the core scenarios, and the partition regex that picks
// them in kafka-topics.sh.
const (
	coreOrders  = "orders" // RF 3, the cluster's min ISR 2
	coreStrict  = "strict" // RF 3, min.insync.replicas 3
	coreSingle  = "single" // one partition, RF 1 on the victim, min ISR 1
	coreMoving  = "moving" // one partition, RF 2 on brokers 1 and 2
	coreTopics  = "orders|strict|single|moving"
	coreCompare = 60 * time.Second
)

func runKafkaCoreScenarios(t *testing.T, cluster *lab.KafkaCluster, quorum bool, elr elrSupport) {
	bootstrap := cluster.Bootstrap()
	admin, err := sarama.NewClusterAdmin(bootstrap, lab.ClientConfig())
	if err != nil {
		t.Fatalf("admin client: %v", err)
	}
	defer admin.Close()

	three, one := "3", "1"
	createTopic(t, bootstrap, coreOrders, nil)
	createTopic(t, bootstrap, coreStrict, map[string]*string{"min.insync.replicas": &three})
	// In ZooKeeper mode only the active controller answers
	// ListPartitionReassignments (a KRaft broker forwards it): the exporter
	// is given every broker, as users do, and must find the controller
	// itself for the reassignment scenario to pass.
	// Both coordinators' topics, whose coordinators the exporter asks about.
	ensureOffsetsTopic(t, cluster)
	ensureTransactionTopic(t, cluster)
	exporter := exportertest.Start(t, "--kafka.server="+strings.Join(bootstrap, ","), "--kafka.cluster-name=lab", "--refresh.interval=500ms")
	exporter.WaitReady(t, 30*time.Second)

	// The victim leads orders/0; it alone holds single/0. In ZooKeeper mode
	// it may be the controller, which then moves too.
	m, _ := waitMetrics(t, exporter, 60*time.Second, "orders and strict in sync", func(m exportertest.Metrics) (bool, string) {
		for _, topic := range []string{coreOrders, coreStrict} {
			for p := range 3 {
				if isr, ok := m.Value("kafka_partition_in_sync_replicas", partitionLabels(topic, p)); !ok || isr != 3 {
					return false, m.Describe("kafka_partition_in_sync_replicas", nil)
				}
			}
		}
		return true, ""
	})
	victimPartition := 0
	victim := int32(value(t, m, "kafka_partition_leader", partitionLabels(coreOrders, victimPartition)))
	if victim < 1 {
		t.Fatalf("orders/0 has no leader:\n%s", m.Describe("kafka_partition_leader", nil))
	}
	for topic, replicas := range map[string][]int32{coreSingle: {victim}, coreMoving: {1, 2}} {
		configs := map[string]*string{}
		if topic == coreSingle {
			configs["min.insync.replicas"] = &one
		}
		err := admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: -1, ReplicationFactor: -1,
			ReplicaAssignment: map[int32][]int32{0: replicas}, ConfigEntries: configs}, false)
		if err != nil {
			t.Fatalf("create topic %s on %v: %v", topic, replicas, err)
		}
	}
	produceBytes(t, bootstrap, coreMoving, 4<<20)
	waitMetrics(t, exporter, 60*time.Second, "single and moving in sync", func(m exportertest.Metrics) (bool, string) {
		s, ok1 := m.Value("kafka_partition_in_sync_replicas", partitionLabels(coreSingle, 0))
		mv, ok2 := m.Value("kafka_partition_in_sync_replicas", partitionLabels(coreMoving, 0))
		return ok1 && ok2 && s == 1 && mv == 2, m.Describe("kafka_partition_in_sync_replicas", nil)
	})
	assertAgreesWithKafkaTopics(t, cluster, exporter, coreTopics, "healthy", coreCompare)
	assertVersionSeries(t, exporter.Scrape(t), cluster, quorum, elr, false)
	assertReplicaLogEnds(t, cluster, bootstrap)
	// Every group and transaction coordinator answers the exporter's
	// questions (FindCoordinator, OffsetFetch v8, DescribeTransactions).
	waitMetrics(t, exporter, 30*time.Second, "every coordinator answering", func(m exportertest.Metrics) (bool, string) {
		for kind, topic := range map[string]string{"group": "__consumer_offsets", "transaction": "__transaction_state"} {
			n, _ := m.Value("kafka_internal_topic_partitions", map[string]string{"topic": topic})
			answering, _ := m.Value("kafka_coordinator_partitions", map[string]string{"kind": kind, "state": "answering"})
			if n == 0 || answering != n {
				return false, m.Describe("kafka_coordinator_partitions", nil) + m.Describe("kafka_internal_topic_partitions", nil)
			}
		}
		return true, ""
	})
	// The transaction read (ListOffsets at both isolation levels,
	// DescribeConfigs of a broker) answers on every version: no gap, no
	// hanging transaction, Kafka's default timeout.
	waitMetrics(t, exporter, 30*time.Second, "the transaction read", func(m exportertest.Metrics) (bool, string) {
		gaps, ok1 := m.Value("kafka_read_committed_gap_partitions", nil)
		hanging, ok2 := m.Value("kafka_hanging_transactions", nil)
		timeout, _ := m.Value("kafka_transaction_max_timeout_seconds", nil)
		return ok1 && ok2 && gaps == 0 && hanging == 0 && timeout == 900, m.Describe("kafka_read_committed_gap_partitions", nil) +
			m.Describe("kafka_hanging_transactions", nil) + m.Describe("kafka_transaction_max_timeout_seconds", nil)
	})
	// The failure budget's prediction for the victim, checked against
	// kafka-topics.sh once it is killed (kafka_budget_test.go has the rest).
	m, _ = waitMetrics(t, exporter, 30*time.Second, "the victim's stop predicted", func(m exportertest.Metrics) (bool, string) {
		_, ok := predictionOf(m, "broker", fmt.Sprint(victim))
		return ok, m.Describe("kafka_broker_stop_affected_partitions", nil)
	})
	predicted, _ := predictionOf(m, "broker", fmt.Sprint(victim))

	t.Run("leader-kill", func(t *testing.T) {
		cluster.Kill(t, victim)
		_, took := waitMetrics(t, exporter, 60*time.Second, "the victim's orders partition led by another broker, the victim down", func(m exportertest.Metrics) (bool, string) {
			leader, ok := m.Value("kafka_partition_leader", partitionLabels(coreOrders, victimPartition))
			up, _ := m.Value("kafka_broker_up", map[string]string{"broker": fmt.Sprint(victim)})
			return ok && leader >= 1 && int32(leader) != victim && up == 0, m.Describe("kafka_partition_leader", nil)
		})
		t.Logf("FIGURE kafka %s: kill -9 of leader %d to a new leader in the exporter: %s", cluster.Version(), victim, took.Round(10*time.Millisecond))
		// ISRs shrink one refresh or so after the leader moves.
		waitMetrics(t, exporter, 30*time.Second, "orders and strict ISRs at 2", func(m exportertest.Metrics) (bool, string) {
			n, _ := m.Value("kafka_topic_under_replicated_partitions", map[string]string{"topic": coreOrders})
			s, _ := m.Value("kafka_topic_under_min_isr_partitions", map[string]string{"topic": coreStrict})
			return n == 3 && s == 3, m.Describe("kafka_partition_in_sync_replicas", nil)
		})
		assertAgreesWithKafkaTopics(t, cluster, exporter, coreTopics, "leader killed", coreCompare)
		refused := cluster.DescribeTopicsBatch(t, []string{"--topic", coreTopics, "--under-min-isr-partitions"}, []string{"--topic", coreTopics, "--unavailable-partitions"})
		if predicted.safe != 0 || float64(len(refused[0])) != predicted.offline+predicted.underMinISR || float64(len(refused[1])) != predicted.offline {
			t.Errorf("broker %d's stop was predicted %s; kafka-topics.sh lists %d partitions under min ISR and %d unavailable after it: %v %v",
				victim, predicted, len(refused[0]), len(refused[1]), refused[0], refused[1])
		}
		if err := produceAll(bootstrap, coreOrders, 10); err != nil {
			t.Errorf("acks=all produce to orders with ISR 2 = min ISR: %v", err)
		}
	})

	t.Run("under-min-isr", func(t *testing.T) {
		// strict: ISR 2 < 3 with a live leader, so acks=all is refused.
		if err := produceAll(bootstrap, coreStrict, 0); !errors.Is(err, sarama.ErrNotEnoughReplicas) {
			t.Errorf("acks=all produce to strict under min ISR: err = %v, want NOT_ENOUGH_REPLICAS", err)
		}
		// single: its only replica died. Without ELR the ISR keeps that
		// replica, so ISR 1 = min ISR 1; with no leader to take acks=all
		// writes it is under min ISR all the same, as kafka-topics.sh says.
		labels := partitionLabels(coreSingle, 0)
		m, _ := waitMetrics(t, exporter, 30*time.Second, "single/0 without a leader", func(m exportertest.Metrics) (bool, string) {
			leader, ok := m.Value("kafka_partition_leader", labels)
			return ok && leader == -1, m.Describe("kafka_partition_leader", labels)
		})
		for name, want := range map[string]float64{
			"kafka_partition_leader":        -1,
			"kafka_partition_offline":       1,
			"kafka_partition_under_min_isr": 1,
		} {
			if got := value(t, m, name, labels); got != want {
				t.Errorf("%s/0, its only replica dead: %s = %v, want %v", coreSingle, name, got, want)
			}
		}
		if got, want := value(t, m, "kafka_topic_under_min_isr_partitions", map[string]string{"topic": coreSingle}), 1.0; got != want {
			t.Errorf("kafka_topic_under_min_isr_partitions{%s} = %v, want %v", coreSingle, got, want)
		}
		if got := value(t, m, "kafka_topic_offline_partitions", map[string]string{"topic": coreSingle}); got != 1 {
			t.Errorf("kafka_topic_offline_partitions{%s} = %v, want 1", coreSingle, got)
		}
		isr := value(t, m, "kafka_partition_in_sync_replicas", labels)
		if want := map[bool]float64{false: 1, true: 0}[elr == elrOn]; isr != want {
			t.Errorf("%s/0 ISR size = %v, want %v (ELR on: %v)", coreSingle, isr, want, elr == elrOn)
		}
		under := cluster.DescribeTopics(t, "--topic", coreSingle, "--under-min-isr-partitions")
		if len(under) != 1 {
			t.Errorf("kafka-topics.sh --under-min-isr-partitions lists %d partitions of %s, want 1: %+v", len(under), coreSingle, under)
		}
		assertVersionSeries(t, m, cluster, quorum, elr, true)
	})

	t.Run("heal", func(t *testing.T) {
		cluster.Restart(t, victim)
		_, took := waitMetrics(t, exporter, 90*time.Second, "every ISR full again, single back", func(m exportertest.Metrics) (bool, string) {
			for _, topic := range []string{coreOrders, coreStrict, coreSingle, coreMoving} {
				n, ok := m.Value("kafka_topic_under_replicated_partitions", map[string]string{"topic": topic})
				off, _ := m.Value("kafka_topic_offline_partitions", map[string]string{"topic": topic})
				if !ok || n != 0 || off != 0 {
					return false, m.Describe("kafka_partition_in_sync_replicas", nil)
				}
			}
			return true, ""
		})
		t.Logf("FIGURE kafka %s: restart of broker %d to every ISR full in the exporter: %s", cluster.Version(), victim, took.Round(10*time.Millisecond))
		assertAgreesWithKafkaTopics(t, cluster, exporter, coreTopics, "healed", coreCompare)
		if err := produceAll(bootstrap, coreStrict, 10); err != nil {
			t.Errorf("acks=all produce to strict after the ISR healed: %v", err)
		}
	})

	t.Run("reassignment", func(t *testing.T) {
		// 4 MiB at 100 KB/s: the new replica on broker 3 takes about 40 s,
		// long enough to compare while it copies.
		// A new admin client: the first may still hold a connection to
		// the broker that was killed.
		admin, err := sarama.NewClusterAdmin(bootstrap, lab.ClientConfig())
		if err != nil {
			t.Fatalf("admin client: %v", err)
		}
		defer admin.Close()
		topics := map[string][]int32{coreMoving: {1, 2}}
		throttle(t, admin, "100000", topics)
		if err := admin.AlterPartitionReassignments(coreMoving, [][]int32{{1, 2, 3}}); err != nil {
			t.Fatalf("reassign %s/0 to [1 2 3]: %v", coreMoving, err)
		}
		waitMetrics(t, exporter, 30*time.Second, "moving/0 reassigning, adding broker 3", func(m exportertest.Metrics) (bool, string) {
			r, _ := m.Value("kafka_partition_reassigning", partitionLabels(coreMoving, 0))
			a, _ := m.Value("kafka_partition_adding_replicas", partitionLabels(coreMoving, 0))
			return r == 1 && a == 1, m.Describe("kafka_partition_reassigning", nil)
		})
		during := assertAgreesWithKafkaTopics(t, cluster, exporter, coreMoving, "reassigning", coreCompare)
		for _, p := range during {
			if !p.Reassigning || fmt.Sprint(p.AddingReplicas) != "[3]" {
				t.Errorf("kafka-topics.sh shows %s without Adding Replicas: 3 (%+v): the reassignment was not in progress during the comparison", p.Key(), p)
			}
		}
		throttle(t, admin, "", topics)
		waitMetrics(t, exporter, 60*time.Second, "moving/0 on [1 2 3], in sync", func(m exportertest.Metrics) (bool, string) {
			r, _ := m.Value("kafka_topic_reassigning_partitions", map[string]string{"topic": coreMoving})
			isr, _ := m.Value("kafka_partition_in_sync_replicas", partitionLabels(coreMoving, 0))
			rf, _ := m.Value("kafka_partition_replicas", partitionLabels(coreMoving, 0))
			return r == 0 && isr == 3 && rf == 3, m.Describe("kafka_partition_replicas", map[string]string{"topic": coreMoving})
		})
		assertAgreesWithKafkaTopics(t, cluster, exporter, coreTopics, "reassigned", coreCompare)
	})
}

// assertVersionSeries checks the series a version may lack: the KRaft
// quorum's are served with a leader among the nodes where there is a
// quorum, and absent in ZooKeeper mode; the ELR ones are absent without
// DescribeTopicPartitions, served for the partitions under min ISR
// (underMinISR: some are), the only ones that have an ELR, where the
// cluster has the API, and then all empty (0) where the feature is off.
func assertVersionSeries(t *testing.T, m exportertest.Metrics, cluster *lab.KafkaCluster, quorum bool, elr elrSupport, underMinISR bool) {
	t.Helper()
	for _, name := range []string{"kafka_quorum_leader", "kafka_quorum_leader_epoch", "kafka_quorum_voters", "kafka_quorum_high_watermark", "kafka_quorum_voter_lag"} {
		n := len(m.Series(name, nil))
		switch {
		case !quorum && n != 0:
			t.Errorf("Kafka %s in ZooKeeper mode has no controller quorum, but the exporter serves %d series %s:\n%s", cluster.Version(), n, name, m.Describe(name, nil))
		case quorum && n == 0:
			t.Errorf("Kafka %s in KRaft mode: no series %s", cluster.Version(), name)
		}
	}
	if quorum {
		if leader, ok := m.Value("kafka_quorum_leader", nil); !ok || leader < 1 || int(leader) > cluster.Nodes() {
			t.Errorf("kafka_quorum_leader = %v (served %v), want a node 1..%d", leader, ok, cluster.Nodes())
		}
		if voters, ok := m.Value("kafka_quorum_voters", nil); !ok || int(voters) != cluster.Nodes() {
			t.Errorf("kafka_quorum_voters = %v (served %v), want %d", voters, ok, cluster.Nodes())
		}
	}
	for _, name := range []string{"kafka_partition_eligible_leader_replicas", "kafka_partition_last_known_elr", "kafka_partition_no_clean_leader", "kafka_topic_no_clean_leader_partitions"} {
		n := len(m.Series(name, nil))
		switch {
		case elr == elrAbsent && n != 0:
			t.Errorf("Kafka %s in ZooKeeper mode has no ELR, but the exporter serves %d series %s:\n%s", cluster.Version(), n, name, m.Describe(name, nil))
		case elr != elrAbsent && underMinISR && n == 0:
			t.Errorf("Kafka %s offers DescribeTopicPartitions, partitions are under min ISR: no series %s", cluster.Version(), name)
		}
		if elr == elrEmpty {
			for _, series := range m.Series(name, nil) {
				if series.Value != 0 {
					t.Errorf("Kafka %s has ELR off: every ELR is empty and every offline partition keeps an ISR member, but %s%v = %v", cluster.Version(), name, series.Labels, series.Value)
				}
			}
		}
	}
}

// assertReplicaLogEnds checks, on the version, what the catch-up read
// relies on: ListOffsets for the latest offset with the debugging replica
// id (-2) is answered by every replica from its own log (a follower too,
// which refuses a consumer's), with its log end offset: at rest, the
// high watermark kafka-get-offsets.sh reads from the leader.
func assertReplicaLogEnds(t *testing.T, cluster *lab.KafkaCluster, bootstrap []string) {
	t.Helper()
	produceBytes(t, bootstrap, coreOrders, 500_000)
	want := cluster.Offsets(t, coreOrders, -1)[0]
	followers := 0
	for id := int32(1); id <= 3; id++ {
		end, err := replicaLogEnd(cluster.BrokerAddr(id), coreOrders, 0, -2)
		if err != nil || end != want {
			t.Errorf("kafka %s: broker %d's log end of %s/0 (ListOffsets, replica id -2) = %d, %v; kafka-get-offsets.sh says %d",
				cluster.Version(), id, coreOrders, end, err, want)
		}
		if _, err := replicaLogEnd(cluster.BrokerAddr(id), coreOrders, 0, -1); errors.Is(err, kerr.NotLeaderForPartition) {
			followers++
		}
	}
	if followers != 2 {
		t.Errorf("kafka %s: %d brokers refused a consumer's ListOffsets of %s/0 as followers, want 2: the debugging replica id is what lets them answer",
			cluster.Version(), followers, coreOrders)
	}
}

// replicaLogEnd sends ListOffsets for the latest offset of topic's
// partition to the broker at addr alone, as replica replicaID.
func replicaLogEnd(addr, topic string, partition, replicaID int32) (int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = replicaID
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp = partition, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		return 0, err
	}
	p := resp.(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		return 0, err
	}
	return p.Offset, nil
}
