package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/failover-exporter/failover_exporter/internal/exportertest"
	"github.com/failover-exporter/failover_exporter/internal/lab"
	"github.com/failover-exporter/failover_exporter/systems/kafka"
)

// TestKafkaShareCoordinatorFailover runs a real share group (KIP-932) on
// a 3-broker Kafka 4.4 cluster: a member joins it by ShareGroupHeartbeat
// and is assigned the topic's partition, which makes the cluster create
// __share_group_state and the share-partition's state. Kafka's tools are
// the oracle for what the exporter reads: every __share_group_state
// partition answering, each with the coordinator kafka-topics.sh names as
// its leader, and the share groups kafka-share-groups.sh lists counted
// under protocol share. Then the broker that coordinates the group's
// share-partition is killed by PID while a client asks that coordinator
// for the partition's state every 100 ms, as a leader's persister does
// (FindCoordinator, then ReadShareGroupStateSummary): the exporter's
// episode of the coordinator partition is the client's own outage within
// a refresh and a second.
func TestKafkaShareCoordinatorFailover(t *testing.T) {
	c := lab.StartKafka(t, lab.KafkaOptions{Version: "4.4"})
	const topic, group = "share-coordinator", "share-coordinator-group"
	c.CreateTopic(t, topic, 1)
	topicID := joinShareGroup(t, c, group, topic)
	key := group + ":" + topicID + ":0" // the share-partition's coordinator key
	const refresh = time.Second
	e := startLabExporter(t, c, refresh, "partition_metrics: full")

	states := c.DescribeTopics(t, "--topic", "__share_group_state")
	n := len(states)
	leaders := map[int32]int32{}
	for _, p := range states {
		leaders[p.Partition] = p.Leader
	}
	shareGroups := len(c.ShareGroups(t))
	waitMetrics(t, e, 90*time.Second, "every share coordinator answering, at the leaders kafka-topics.sh names, and the share groups counted", func(m exportertest.Metrics) (bool, string) {
		answering, _ := m.Value("kafka_coordinator_partitions", map[string]string{"kind": "share", "state": "answering"})
		if int(answering) != n {
			return false, m.Describe("kafka_coordinator_partitions", map[string]string{"kind": "share"}) + fmt.Sprintf("; want %d answering", n)
		}
		for p, leader := range leaders {
			if got, _ := m.Value("kafka_coordinator_partition_coordinator", map[string]string{"kind": "share", "partition": strconv.Itoa(int(p))}); int32(got) != leader {
				return false, fmt.Sprintf("__share_group_state/%d: coordinator %v, kafka-topics.sh names leader %d", p, got, leader)
			}
		}
		counted := 0.0
		for b := range int32(c.Nodes()) {
			v, _ := m.Value("kafka_broker_coordinated_groups", map[string]string{"broker": strconv.Itoa(int(b + 1)), "protocol": "share"})
			counted += v
		}
		return int(counted) == shareGroups, fmt.Sprintf("%v share groups counted, kafka-share-groups.sh lists %d", counted, shareGroups)
	})

	partition := kafka.CoordinatorPartitionOf(key, n)
	m := startShareStateReader(t, c, group, topicID)
	lab.WaitFor(t, 30*time.Second, 100*time.Millisecond, m.succeeded)
	coordinator := leaders[partition]
	killedAt := killBrokers(t, c, coordinator)
	t.Logf("killed broker %d, share coordinator of %s (__share_group_state/%d), at %s", coordinator, key, partition, killedAt.Format("15:04:05.000"))
	o := waitCoordinatorOutage(t, e, m, "__share_group_state", partition, killedAt)
	t.Logf("FIGURE kafka share coordinator failover: the client's state reads failed for %s (first failed %s after the kill, first success %s after it); "+
		"the exporter's episode of __share_group_state/%d lasted %s (began %s after the kill), refresh %s",
		o.client.Round(10*time.Millisecond), o.failed.Sub(killedAt).Round(10*time.Millisecond), o.recovered.Sub(killedAt).Round(10*time.Millisecond),
		partition, o.exporter.Round(10*time.Millisecond), o.began.Sub(killedAt).Round(10*time.Millisecond), refresh)
	if diff := (o.exporter - o.client).Abs(); diff > refresh+time.Second {
		t.Errorf("the exporter's episode (%s) and the client's outage (%s) differ by %s, more than a refresh and a second", o.exporter, o.client, diff)
	}
	after := c.DescribeTopics(t, "--topic", "__share_group_state")
	for _, p := range after {
		if p.Partition == partition && !strings.HasPrefix(o.up.After, fmt.Sprintf("answering at broker %d", p.Leader)) {
			t.Errorf("coordinator_available says %q; kafka-topics.sh names leader %d after the kill", o.up.After, p.Leader)
		}
	}
	waitMetrics(t, e, 60*time.Second, "every share coordinator answering again", func(m exportertest.Metrics) (bool, string) {
		answering, _ := m.Value("kafka_coordinator_partitions", map[string]string{"kind": "share", "state": "answering"})
		count, _ := m.Value("kafka_coordinator_unavailable_episode_seconds_count", map[string]string{"kind": "share"})
		return int(answering) == n && count >= 1, m.Describe("kafka_coordinator_partitions", map[string]string{"kind": "share"})
	})
}

// joinShareGroup makes group a share group with one member subscribed to
// topic, by ShareGroupHeartbeat to its coordinator, until the member is
// assigned the topic's partitions (the group coordinator then initializes
// their share state, creating __share_group_state). It returns the topic's
// id as Kafka prints it.
func joinShareGroup(t *testing.T, c *lab.KafkaCluster, group, topic string) string {
	t.Helper()
	// The listener that needs no credentials, on a secured lab.
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.InternalBootstrap()...), kgo.DialTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.GroupID, hb.MemberID, hb.SubscribedTopicNames = group, "failover-exporter-test-member0", []string{topic}
	var topicID [16]byte
	lab.WaitFor(t, 60*time.Second, 500*time.Millisecond, func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := hb.RequestWith(ctx, cl)
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
		if err != nil {
			return false, fmt.Sprintf("share group heartbeat: %v", err)
		}
		hb.MemberEpoch = resp.MemberEpoch
		if resp.Assignment == nil || len(resp.Assignment.TopicPartitions) == 0 {
			return false, fmt.Sprintf("member of %s not assigned yet (epoch %d)", group, resp.MemberEpoch)
		}
		topicID = resp.Assignment.TopicPartitions[0].TopicID
		return true, ""
	})
	lab.WaitFor(t, 60*time.Second, 500*time.Millisecond, func() (bool, string) {
		topics, err := c.Topics()
		for _, name := range topics {
			if name == "__share_group_state" {
				return true, ""
			}
		}
		return false, fmt.Sprintf("no __share_group_state among %v (%v)", topics, err)
	})
	return base64.RawURLEncoding.EncodeToString(topicID[:])
}

// startShareStateReader asks, every 100 ms, the share coordinator of the
// group's share-partition (topic id, partition 0) for its state, as the
// partition leader's persister does: FindCoordinator, then
// ReadShareGroupStateSummary to the broker it names, each bounded by a
// second. A failed answer (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
// no answer) is a failed attempt.
func startShareStateReader(t *testing.T, c *lab.KafkaCluster, group, topicID string) *committer {
	t.Helper()
	id, err := base64.RawURLEncoding.DecodeString(topicID)
	if err != nil || len(id) != 16 {
		t.Fatalf("topic id %q: %v", topicID, err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...), kgo.DialTimeout(time.Second),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }))
	if err != nil {
		t.Fatal(err)
	}
	key := group + ":" + topicID + ":0"
	return startAttempts(t, cl, func(cl *kgo.Client) error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		find := kmsg.NewPtrFindCoordinatorRequest()
		find.CoordinatorType, find.CoordinatorKeys = 2, []string{key}
		found, err := find.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		if len(found.Coordinators) != 1 {
			return fmt.Errorf("FindCoordinator answered %d coordinators", len(found.Coordinators))
		}
		if err := kerr.ErrorForCode(found.Coordinators[0].ErrorCode); err != nil {
			return err
		}
		req := kmsg.NewPtrReadShareGroupStateSummaryRequest()
		req.GroupID = group
		rt := kmsg.NewReadShareGroupStateSummaryRequestTopic()
		copy(rt.TopicID[:], id)
		rt.Partitions = append(rt.Partitions, kmsg.NewReadShareGroupStateSummaryRequestTopicPartition())
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl.Broker(int(found.Coordinators[0].NodeID)))
		if err != nil {
			return err
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return fmt.Errorf("the coordinator's answer has %d topics, not one partition", len(resp.Topics))
		}
		return kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
	})
}

// TestKafkaShareCoordinatorsRefused runs the exporter as the documented
// minimal user of a secured Kafka 4.4 (SASL_SSL, an authorizer) that has a
// share group: the share coordinators' question is an inter-broker request
// (ClusterAction), which the user is not granted, and the broker refuses
// it. The share kind is then not served at all (never counted unknown,
// which would page as coordinators the exporter cannot tell), the refusal
// is logged once with the broker's error and what allows it, and the group
// and transaction kinds are read as before.
func TestKafkaShareCoordinatorsRefused(t *testing.T) {
	tlsFiles := secWriteCerts(t)
	dir := t.TempDir()
	users := secWriteFile(t, filepath.Join(dir, "users"), secKafkaUser+" "+secKafkaPassword+"\n")
	c := lab.StartKafka(t, lab.KafkaOptions{Version: "4.4", Nodes: 1, Security: "sasl_ssl", TLSDir: tlsFiles.Dir, UsersFile: users, ClientAuth: "required", Authorizer: true})
	const topic = "share-refused"
	secCreateTopic(t, c.InternalBootstrap(), topic, 1, nil)
	secGrantKafkaACLs(t, c.InternalBootstrap())
	joinShareGroup(t, c, "share-refused-group", topic)
	c.CommitOffsets(t, "share-refused-offsets", nil) // __consumer_offsets, for the group kind

	passwordFile := secWriteSecretFile(t, dir, "kafka-password", secKafkaPassword)
	config := secWriteFile(t, filepath.Join(dir, "config.yaml"), fmt.Sprintf(`kafka:
  - name: lab
    bootstrap_servers: [%s]
    refresh_interval: 1s
    tls: {enabled: true, ca_file: %s, cert_file: %s, key_file: %s}
    sasl: {mechanism: SCRAM-SHA-512, username: %s, password: {file: %s}}
`, strings.Join(c.Bootstrap(), ", "), tlsFiles.CA, tlsFiles.ClientCert, tlsFiles.ClientKey, secKafkaUser, passwordFile))
	e := exportertest.Start(t, "--config.file="+config)
	const refused = "the share coordinators refused the exporter's question"
	var reads float64
	waitMetrics(t, e, 60*time.Second, "the group coordinators answering and the share question refused", func(m exportertest.Metrics) (bool, string) {
		group, _ := m.Value("kafka_coordinator_partitions", map[string]string{"kind": "group", "state": "answering"})
		at, _ := m.Value("kafka_coordinator_last_read_timestamp_seconds", map[string]string{"kind": "group"})
		if reads == 0 && strings.Contains(e.Logs(), refused) {
			reads = at // the first read after the refusal was logged
		}
		// Three more reads: refused once, logged once, never served.
		return group > 0 && reads > 0 && at >= reads+3, fmt.Sprintf("%s; refusal logged: %v", m.Describe("kafka_coordinator_partitions", map[string]string{"kind": "group"}), reads > 0)
	})
	m := e.Scrape(t)
	if s := m.Series("kafka_coordinator_partitions", map[string]string{"kind": "share"}); len(s) > 0 {
		t.Errorf("share coordinators served while the broker refuses the question: %s", m.Describe("kafka_coordinator_partitions", map[string]string{"kind": "share"}))
	}
	logs := e.Logs()
	if n := strings.Count(logs, refused); n != 1 || !strings.Contains(logs, "CLUSTER_AUTHORIZATION_FAILED") || !strings.Contains(logs, "ClusterAction") {
		t.Errorf("want the refusal logged once, with the broker's CLUSTER_AUTHORIZATION_FAILED and ClusterAction; logged %d times:\n%s", n, logs)
	}
	if strings.Contains(logs, "cannot tell whether some coordinators answer") {
		t.Errorf("the refused share question was logged as coordinators unknown:\n%s", logs)
	}
}
