package e2e

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/failover-exporter/failover_exporter/collector/canary"
	"github.com/failover-exporter/failover_exporter/collector/events"
	"github.com/failover-exporter/failover_exporter/internal/exportertest"
	"github.com/failover-exporter/failover_exporter/internal/lab"
	kafkasettings "github.com/failover-exporter/failover_exporter/systems/kafka/settings"
)

const (
	// canaryElsewhereUser may write to another topic, not the canary's.
	canaryElsewhereUser = "elsewhere"
	canaryKafkaUser     = "canary"
	canaryKafkaTopic    = "__failover_exporter_canary"
	canaryNoWriteTopic  = "canary-nowrite"
)

// canaryKafkaAdmin is an admin client on the lab's internal listener, whose
// principal is a super user.
func canaryKafkaAdmin(t *testing.T, c *lab.KafkaCluster) sarama.ClusterAdmin {
	t.Helper()
	conf := lab.ClientConfig()
	admin, err := sarama.NewClusterAdmin(c.InternalBootstrap(), conf)
	if err != nil {
		t.Fatalf("admin client: %v", err)
	}
	t.Cleanup(func() { admin.Close() })
	return admin
}

// canaryLeaseGroup is the ACL resource of the canary lease's group of the
// topic (kafkasettings.Canary.LeaseGroup).
func canaryLeaseGroup(topic string) sarama.Resource {
	return sarama.Resource{ResourceType: sarama.AclResourceGroup, ResourceName: kafkasettings.Canary{Topic: topic}.LeaseGroup(), ResourcePatternType: sarama.AclPatternLiteral}
}

// logEndOffsets reads every partition's log end offset of the topics, with
// a client of the test's own: the cluster's own count of records written.
func logEndOffsets(t *testing.T, c *lab.KafkaCluster, topics ...string) map[string]int64 {
	t.Helper()
	conf := lab.ClientConfig()
	client, err := sarama.NewClient(c.InternalBootstrap(), conf)
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	defer client.Close()
	out := map[string]int64{}
	for _, topic := range topics {
		parts, err := client.Partitions(topic)
		if err != nil {
			t.Fatalf("partitions of %s: %v", topic, err)
		}
		for _, p := range parts {
			end, err := client.GetOffset(topic, p, sarama.OffsetNewest)
			// A leader that moved since the client read metadata (a broker
			// killed and back, the canary moving leadership back to the
			// preferred replicas) answers NOT_LEADER: read metadata again.
			for try := 0; try < 10 && (errors.Is(err, sarama.ErrNotLeaderForPartition) || errors.Is(err, sarama.ErrLeaderNotAvailable)); try++ {
				time.Sleep(200 * time.Millisecond)
				if err = client.RefreshMetadata(topic); err == nil {
					end, err = client.GetOffset(topic, p, sarama.OffsetNewest)
				}
			}
			if err != nil {
				t.Fatalf("offset of %s/%d: %v", topic, p, err)
			}
			out[fmt.Sprintf("%s/%d", topic, p)] = end
		}
	}
	return out
}

// TestCanaryKafka checks on a real broker with ACLs enforced that the Kafka
// canary is off unless enabled (the broker's own log end offsets and topic
// list show no write), that the ACLs docs/security.md lists are enough to
// create the canary topic and write to it, and that a user without Write
// gets a clear error and a failure series while its cluster's other series
// stay intact.
func TestCanaryKafka(t *testing.T) {
	const topic = "secured"
	tlsFiles := secWriteCerts(t)
	dir := t.TempDir()
	users := secWriteFile(t, filepath.Join(dir, "users"), secKafkaUser+" "+secKafkaPassword+"\n"+canaryKafkaUser+" "+secKafkaPassword+"\n"+canaryElsewhereUser+" "+secKafkaPassword+"\n")
	cluster := lab.StartKafka(t, lab.KafkaOptions{
		Nodes: 1, Security: "sasl_ssl", TLSDir: tlsFiles.Dir, UsersFile: users, ClientAuth: "required", Authorizer: true,
	})
	secCreateTopic(t, cluster.InternalBootstrap(), topic, 3, nil)
	admin := canaryKafkaAdmin(t, cluster)
	// The topic of the user without Write exists, as an administrator made it.
	if err := admin.CreateTopic(canaryNoWriteTopic, &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1}, false); err != nil {
		t.Fatalf("create %s: %v", canaryNoWriteTopic, err)
	}
	allTopics := sarama.Resource{ResourceType: sarama.AclResourceTopic, ResourceName: "*", ResourcePatternType: sarama.AclPatternLiteral}
	canaryTopic := sarama.Resource{ResourceType: sarama.AclResourceTopic, ResourceName: canaryKafkaTopic, ResourcePatternType: sarama.AclPatternLiteral}
	allow := func(user string, ops ...sarama.AclOperation) []*sarama.Acl {
		var acls []*sarama.Acl
		for _, op := range ops {
			acls = append(acls, &sarama.Acl{Principal: "User:" + user, Host: "*", Operation: op, PermissionType: sarama.AclPermissionAllow})
		}
		return acls
	}
	// Both users have the exporter's minimal ACLs; canary also has exactly
	// the canary's (Write, Read, Create on its topic).
	if err := admin.CreateACLs([]*sarama.ResourceAcls{
		{Resource: allTopics, Acls: allow(secKafkaUser, sarama.AclOperationDescribe, sarama.AclOperationDescribeConfigs)},
		{Resource: allTopics, Acls: allow(canaryKafkaUser, sarama.AclOperationDescribe, sarama.AclOperationDescribeConfigs)},
		{Resource: canaryTopic, Acls: allow(canaryKafkaUser, sarama.AclOperationWrite, sarama.AclOperationRead, sarama.AclOperationCreate)},
		{Resource: canaryLeaseGroup(canaryKafkaTopic), Acls: allow(canaryKafkaUser, sarama.AclOperationRead)},
		{Resource: canaryLeaseGroup(canaryNoWriteTopic), Acls: allow(canaryElsewhereUser, sarama.AclOperationRead)},
		{Resource: allTopics, Acls: allow(canaryElsewhereUser, sarama.AclOperationDescribe, sarama.AclOperationDescribeConfigs)},
		{Resource: sarama.Resource{ResourceType: sarama.AclResourceTopic, ResourceName: topic, ResourcePatternType: sarama.AclPatternLiteral},
			Acls: allow(canaryElsewhereUser, sarama.AclOperationWrite)},
	}); err != nil {
		t.Fatalf("create ACLs: %v", err)
	}
	passwordFile := secWriteSecretFile(t, dir, "kafka-password", secKafkaPassword)
	mtls := fmt.Sprintf("enabled: true, ca_file: %s, cert_file: %s, key_file: %s", tlsFiles.CA, tlsFiles.ClientCert, tlsFiles.ClientKey)
	entry := func(name, user, canary string) string {
		return fmt.Sprintf(`  - name: %s
    bootstrap_servers: [%s]
    refresh_interval: 500ms
    dial_timeout: 2s
    request_timeout: 2s
    tls: {%s}
    sasl: {mechanism: SCRAM-SHA-512, username: %s, password: {file: %s}}
%s`, name, strings.Join(cluster.Bootstrap(), ", "), mtls, user, passwordFile, canary)
	}

	t.Run("off by default: nothing is written", func(t *testing.T) {
		before := logEndOffsets(t, cluster, topic, canaryNoWriteTopic)
		// The user with the canary's ACLs: only the switch keeps it from writing.
		cfg := secWriteFile(t, filepath.Join(dir, "off.yaml"), "kafka:\n"+entry("off", canaryKafkaUser, ""))
		e := exportertest.Start(t, "--config.file="+cfg)
		e.WaitReady(t, 60*time.Second)
		m, _ := waitMetrics(t, e, 30*time.Second, "10 refreshes", func(m exportertest.Metrics) (bool, string) {
			v, _ := m.Value("kafka_exporter_refreshes_total", nil)
			return v >= 10, fmt.Sprint(v, " refreshes")
		})
		e.Stop()
		if n := len(m.Series("kafka_canary_up", nil)); n != 0 {
			t.Errorf("canary series served with the canary off: %d", n)
		}
		topics, err := admin.ListTopics()
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := topics[canaryKafkaTopic]; ok {
			t.Errorf("the canary topic exists with the canary off")
		}
		if after := logEndOffsets(t, cluster, topic, canaryNoWriteTopic); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Errorf("log end offsets moved with the canary off: %v -> %v", before, after)
		}
	})

	t.Run("documented ACLs work; a user without Write gets a clear error", func(t *testing.T) {
		cfg := secWriteFile(t, filepath.Join(dir, "on.yaml"), "kafka:\n"+
			entry("canary", canaryKafkaUser, "    canary: {enabled: true, interval: 500ms}\n")+
			entry("nowrite", secKafkaUser, fmt.Sprintf("    canary: {enabled: true, interval: 500ms, topic: %s, create_topic: false}\n", canaryNoWriteTopic))+
			entry("elsewhere", canaryElsewhereUser, fmt.Sprintf("    canary: {enabled: true, interval: 500ms, topic: %s, create_topic: false}\n", canaryNoWriteTopic))+
			// Write on this topic but no Read on its lease group: it never
			// takes the lease, so it writes nothing, and says why.
			entry("nogroup", canaryElsewhereUser, fmt.Sprintf("    canary: {enabled: true, interval: 500ms, topic: %s, create_topic: false}\n", topic)))
		e := exportertest.Start(t, "--config.file="+cfg, "--log.level=debug")
		e.WaitReady(t, 60*time.Second)
		m, took := waitMetrics(t, e, 60*time.Second, "canary writing, nowrite refused", func(m exportertest.Metrics) (bool, string) {
			acked := 0.0
			for _, s := range m.Series("kafka_canary_produce_acknowledged_total", map[string]string{"kafka_cluster": "canary"}) {
				acked += s.Value
			}
			// The minimal ACLs allow no write at all: Kafka refuses the
			// idempotent producer's InitProducerId, so no round gets further.
			refused, _ := m.Value("kafka_canary_round_failures_total", map[string]string{"kafka_cluster": "nowrite"})
			// Write elsewhere lets the producer start; the canary topic
			// itself refuses the records, per partition.
			denied, _ := m.Value("kafka_canary_produce_failures_total", map[string]string{"kafka_cluster": "elsewhere", "error": "TOPIC_AUTHORIZATION_FAILED"})
			noLease, _ := m.Value("kafka_canary_round_failures_total", map[string]string{"kafka_cluster": "nogroup"})
			return acked >= 3 && refused >= 3 && denied >= 3 && noLease >= 3, fmt.Sprintf("canary acknowledged %v, nowrite failed rounds %v, elsewhere TOPIC_AUTHORIZATION_FAILED %v, nogroup failed rounds %v\n%s", acked, refused, denied, noLease,
				m.Describe("kafka_canary_up", nil))
		})
		t.Logf("canary writing and nowrite refused %s after ready", took.Round(10*time.Millisecond))
		// The user with the documented ACLs created the topic with a
		// partition per broker and wrote nothing else.
		topics, err := admin.DescribeTopics([]string{canaryKafkaTopic})
		if err != nil || len(topics) != 1 || len(topics[0].Partitions) != 1 {
			t.Errorf("canary topic: %v %+v", err, topics)
		}
		if n := len(m.Series("kafka_canary_produce_failures_total", map[string]string{"kafka_cluster": "canary"})); n != 0 {
			t.Errorf("failures for the user with the documented ACLs:\n%s", m.Describe("kafka_canary_produce_failures_total", map[string]string{"kafka_cluster": "canary"}))
		}
		if ends := logEndOffsets(t, cluster, topic, canaryNoWriteTopic); slices.ContainsFunc([]int64{ends[topic+"/0"], ends[topic+"/1"], ends[topic+"/2"], ends[canaryNoWriteTopic+"/0"]}, func(o int64) bool { return o != 0 }) {
			t.Errorf("records written outside the canary topic: %v", ends)
		}
		// The rest of the exporter is unaffected for the user without Write.
		if v := value(t, m, "kafka_up", map[string]string{"kafka_cluster": "nowrite"}); v != 1 {
			t.Errorf("kafka_up{nowrite} = %v, want 1", v)
		}
		if v := value(t, m, "kafka_topic_partitions", map[string]string{"kafka_cluster": "nowrite", "topic": topic}); v != 3 {
			t.Errorf("kafka_topic_partitions{nowrite,%s} = %v, want 3", topic, v)
		}
		logs := e.Logs()
		if v := value(t, m, "kafka_canary_up", map[string]string{"kafka_cluster": "nowrite"}); v != 0 {
			t.Errorf("kafka_canary_up{nowrite} = %v, want 0", v)
		}
		if !logLineWith(logs, "collector=kafka_canary", "cluster=nowrite", `msg="refresh failed"`,
			`err="idempotent producer (needs Write on the canary topic canary-nowrite): kafka server: The client is not authorized to send this request type"`) {
			t.Errorf("no clear authorization error for nowrite in the logs:\n%s", logs)
		}
		if v := value(t, m, "kafka_canary_leader", map[string]string{"kafka_cluster": "nogroup"}); v != 0 {
			t.Errorf("kafka_canary_leader{nogroup} = %v, want 0 (no Read on its lease group)", v)
		}
		if !logLineWith(logs, "collector=kafka_canary", "cluster=nogroup", `msg="refresh failed"`, "group "+topic+".lease", "GROUP_AUTHORIZATION_FAILED", "needs Read on the group") {
			t.Errorf("no clear group authorization error for nogroup in the logs:\n%s", logs)
		}
		if v := value(t, m, "kafka_canary_up", map[string]string{"kafka_cluster": "elsewhere"}); v != 1 {
			t.Errorf("kafka_canary_up{elsewhere} = %v, want 1 (only the records are refused)", v)
		}
		if !logLineWith(logs, "collector=kafka_canary", "cluster=elsewhere", `msg="canary write failing"`, "error=TOPIC_AUTHORIZATION_FAILED", "not authorized to access this topic") {
			t.Errorf("no clear topic authorization error for elsewhere in the logs:\n%s", logs)
		}
		// The event log has the refusal of the canary partition once, under
		// the cluster's name, with the error kind and the partition's leader.
		evs := fetchEvents(t, e, "?cluster=elsewhere")
		var failing []events.Event
		for _, ev := range evs {
			if ev.Kind == canary.EventWriteFailing {
				failing = append(failing, ev)
			}
		}
		if len(failing) != 1 || failing[0].System != "kafka" || failing[0].Subject.Topic != canaryNoWriteTopic ||
			failing[0].Subject.Partition == nil || *failing[0].Subject.Partition != 0 || failing[0].Subject.NodeID == "" ||
			failing[0].After != "TOPIC_AUTHORIZATION_FAILED" {
			t.Errorf("want one write_failing event for %s/0 with its leader and TOPIC_AUTHORIZATION_FAILED, got:\n%s", canaryNoWriteTopic, describeEvents(evs))
		}
		for _, ev := range fetchEvents(t, e, "?cluster=canary") {
			if ev.Kind == canary.EventWriteFailing {
				t.Errorf("write_failing event for the user with the documented ACLs: %+v", ev)
			}
		}
		secAssertNoLeaks(t, e, secKafkaPassword)
	})
}
