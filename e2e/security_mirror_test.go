package e2e

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/failover-exporter/failover_exporter/internal/certs"
	"github.com/failover-exporter/failover_exporter/internal/exportertest"
	"github.com/failover-exporter/failover_exporter/internal/lab"
)

// Mirror lab users, SCRAM users on both clusters. secMirrorUser holds
// exactly the ACLs docs/mirror.md#minimal-acls documents, on each cluster;
// the other two lack one grant each.
const (
	secMirrorUser = "mirror-reader"
	// secMirrorNoGroupUser lacks Describe on the groups on the source.
	secMirrorNoGroupUser = "mirror-no-group"
	// secMirrorNoCheckpointsUser lacks Read on the checkpoints topic on
	// the target.
	secMirrorNoCheckpointsUser = "mirror-no-checkpoints"
	// secMirrorNoHeartbeatsUser lacks Describe (and Read) on the replicated
	// heartbeats topic on the target.
	secMirrorNoHeartbeatsUser = "mirror-no-heartbeats"
)

// TestSecurityMirror reads a MirrorMaker 2 flow between two clusters whose
// client listeners are SASL_SSL with ACLs enforced, as a user holding
// exactly the documented ACLs on each cluster: every mirror series is
// served and agrees with the clusters. Three more flows read the same
// clusters as users missing one grant each (Describe on the group on the
// source; Read on the checkpoints topic, Describe on the heartbeats topic
// on the target): the rest of the flow is served, the part that needs the
// grant is absent and counted in kafka_mirror_read_errors_total, and the
// log names the authorization failure and the grant. One exporter reads
// the four flows.
func TestSecurityMirror(t *testing.T) {
	const (
		topic      = "orders"
		group      = "billing"
		srcAlias   = "east"
		dstAlias   = "west"
		partitions = 2
	)
	start := time.Now()
	tlsFiles := secWriteCerts(t)
	dir := t.TempDir()
	var users strings.Builder
	for _, u := range []string{secMirrorUser, secMirrorNoGroupUser, secMirrorNoCheckpointsUser, secMirrorNoHeartbeatsUser} {
		users.WriteString(u + " " + secKafkaPassword + "\n")
	}
	usersFile := secWriteFile(t, filepath.Join(dir, "users"), users.String())
	secured := lab.KafkaOptions{
		Nodes: 1, Security: "sasl_ssl", TLSDir: tlsFiles.Dir, UsersFile: usersFile, ClientAuth: "required", Authorizer: true,
	}
	src := lab.StartKafka(t, secured)
	dst := lab.StartKafka(t, secured)
	clustersUp := time.Since(start)
	src.CreateTopic(t, topic, partitions)
	// MM2 connects to the PLAINTEXT super-user listeners.
	mm := lab.StartMirror(t, lab.MirrorOptions{Source: src, Target: dst, SourceAlias: srcAlias, TargetAlias: dstAlias, Topics: topic})
	mirrorUp := time.Since(start)
	remote := mm.RemoteTopic(topic)

	secGrantMirrorACLs(t, src.InternalBootstrap(), dst.InternalBootstrap(), mm, topic)

	// Something to read: 30 and 20 records, a group that committed 20 and 15.
	for p, n := range map[int32]int{0: 30, 1: 20} {
		records := make([]lab.Record, n)
		for i := range records {
			records[i] = lab.Record{Value: []byte(strconv.Itoa(i))}
		}
		src.Produce(t, topic, p, records...)
	}
	committed := map[lab.TopicPartition]int64{{Topic: topic, Partition: 0}: 20, {Topic: topic, Partition: 1}: 15}
	src.CommitOffsets(t, group, committed)

	passwordFile := secWriteSecretFile(t, dir, "kafka-password", secKafkaPassword)
	cfg := secMirrorConfig(src.Bootstrap(), dst.Bootstrap(), tlsFiles, passwordFile, srcAlias, dstAlias)
	e := exportertest.Start(t, "--config.file="+secWriteFile(t, filepath.Join(dir, "config.yaml"), cfg), "--log.level=debug")
	e.WaitReady(t, 60*time.Second)

	flowLabels := func(flow, source, target string, kv ...string) map[string]string {
		l := map[string]string{"mirror": flow, "source_cluster": source, "target_cluster": target}
		for i := 0; i+1 < len(kv); i += 2 {
			l[kv[i]] = kv[i+1]
		}
		return l
	}
	full := func(kv ...string) map[string]string { return flowLabels("full", "east", "west", kv...) }
	noGroup := func(kv ...string) map[string]string { return flowLabels("no-group", "east-no-group", "west", kv...) }
	noCheckpoints := func(kv ...string) map[string]string {
		return flowLabels("no-checkpoints", "east", "west-no-checkpoints", kv...)
	}
	noHeartbeats := func(kv ...string) map[string]string {
		return flowLabels("no-heartbeats", "east", "west-no-heartbeats", kv...)
	}
	readErrors := func(m exportertest.Metrics, labels map[string]string, read string) float64 {
		l := map[string]string{"read": read}
		for k, v := range labels {
			l[k] = v
		}
		v, _ := m.Value("kafka_mirror_read_errors_total", l)
		return v
	}

	// The full flow: caught up, the group checkpointed with nothing to
	// re-read; the others read as far as their grants go, their failing
	// read counted at least twice (so it is retried, not given up).
	m, took := waitMetrics(t, e, 120*time.Second, "the four flows read", func(m exportertest.Metrics) (bool, string) {
		var waiting []string
		lag, okLag := m.Value("kafka_mirror_topic_records_not_replicated", full("topic", topic))
		caughtUp, _ := m.Value("kafka_mirror_offset_syncs_caught_up", full())
		if !okLag || lag != 0 || caughtUp != 1 {
			waiting = append(waiting, "full: caught up")
		}
		if n, ok := m.Value("kafka_mirror_group_records_to_reread", full("group", group, "topic", topic)); !ok || n != 0 {
			waiting = append(waiting, "full: group checkpointed")
		}
		if _, ok := m.Value("kafka_mirror_group_checkpointed_partitions", noGroup("group", group, "topic", topic)); !ok ||
			readErrors(m, noGroup(), "group_offsets") < 2 {
			waiting = append(waiting, "no-group: checkpoints read, group offsets refused")
		}
		if lag, ok := m.Value("kafka_mirror_topic_records_not_replicated", noCheckpoints("topic", topic)); !ok || lag != 0 ||
			readErrors(m, noCheckpoints(), "checkpoints") < 2 {
			waiting = append(waiting, "no-checkpoints: caught up, checkpoints refused")
		}
		if _, ok := m.Value("kafka_mirror_group_checkpointed_partitions", noHeartbeats("group", group, "topic", topic)); !ok ||
			readErrors(m, noHeartbeats(), "heartbeats") < 2 {
			waiting = append(waiting, "no-heartbeats: checkpoints read, heartbeats refused")
		}
		return len(waiting) == 0, fmt.Sprintf("waiting for %v\n%s%s%s", waiting,
			m.Describe("kafka_mirror_topic_records_not_replicated", nil), m.Describe("kafka_mirror_group_records_to_reread", nil),
			m.Describe("kafka_mirror_read_errors_total", nil))
	})
	t.Logf("timings: two secured clusters up in %s, MirrorMaker replicating %s after the start; the exporter read the four flows %s after ready",
		clustersUp.Round(time.Millisecond), mirrorUp.Round(time.Millisecond), took.Round(time.Millisecond))

	t.Run("documented ACLs", func(t *testing.T) {
		// Every series of the flow, partition ones included.
		for _, name := range []string{
			"kafka_mirror_up", "kafka_mirror_source_up", "kafka_mirror_target_up",
			"kafka_mirror_heartbeat_age_seconds", "kafka_mirror_heartbeat_timestamp_seconds", "kafka_mirror_stalled",
			"kafka_mirror_offset_syncs_newest_timestamp_seconds", "kafka_mirror_offset_syncs_caught_up", "kafka_mirror_offset_syncs_partitions",
			"kafka_mirror_topics", "kafka_mirror_topics_missing_on_target",
		} {
			if len(m.Series(name, full())) == 0 {
				t.Errorf("%s not served", name)
			}
		}
		for _, name := range []string{
			"kafka_mirror_topic_missing_on_target", "kafka_mirror_topic_partition_mismatch", "kafka_mirror_topic_records_not_replicated",
			"kafka_mirror_topic_rpo_seconds", "kafka_mirror_topic_partitions_unknown",
		} {
			if len(m.Series(name, full("topic", topic))) != 1 {
				t.Errorf("%s not served for %s", name, topic)
			}
		}
		for _, name := range []string{"kafka_mirror_partition_records_not_replicated", "kafka_mirror_partition_rpo_seconds"} {
			if n := len(m.Series(name, full("topic", topic))); n != partitions {
				t.Errorf("%s: %d partition series, want %d", name, n, partitions)
			}
		}
		for _, name := range []string{"kafka_mirror_group_records_to_reread", "kafka_mirror_group_checkpoint_age_seconds", "kafka_mirror_group_checkpointed_partitions"} {
			if len(m.Series(name, full("group", group, "topic", topic))) != 1 {
				t.Errorf("%s not served for group %s", name, group)
			}
		}
		// The figures against the clusters'.
		for name, want := range map[string]float64{
			"kafka_mirror_up": 1, "kafka_mirror_source_up": 1, "kafka_mirror_target_up": 1, "kafka_mirror_stalled": 0,
			"kafka_mirror_topics": 1, "kafka_mirror_topics_missing_on_target": 0,
			// MM2 syncs the offsets of the heartbeats topic it replicates too.
			"kafka_mirror_offset_syncs_partitions": partitions + 1,
		} {
			if v := value(t, m, name, full()); v != want {
				t.Errorf("%s = %v, want %v", name, v, want)
			}
		}
		if v := value(t, m, "kafka_mirror_topic_rpo_seconds", full("topic", topic)); v != 0 {
			t.Errorf("RPO of %s = %v, want 0 (caught up)", topic, v)
		}
		if age := value(t, m, "kafka_mirror_heartbeat_age_seconds", full()); age > 30 {
			t.Errorf("heartbeat age %vs, want a few seconds", age)
		}
		if diff := src.EndOffsetSum(t, topic) - dst.EndOffsetSum(t, remote); diff != 0 {
			t.Errorf("the exporter says caught up, the clusters' end offsets differ by %d", diff)
		}
		if v := value(t, m, "kafka_mirror_group_checkpointed_partitions", full("group", group, "topic", topic)); v != partitions {
			t.Errorf("group %s: %v partitions checkpointed, want %d", group, v, partitions)
		}
		// The resume offsets are MM2's own translation of the commits.
		translated, err := mm.TranslateOffsets(group)
		if err != nil {
			t.Fatal(err)
		}
		for p := int32(0); p < partitions; p++ {
			want, ok := translated[lab.TopicPartition{Topic: remote, Partition: p}]
			got, served := m.Value("kafka_mirror_group_resume_offset", full("group", group, "topic", topic, "partition", strconv.Itoa(int(p))))
			if !ok || !served || int64(got) != want {
				t.Errorf("%s/%d: resume offset %v (served %v), RemoteClusterUtils.translateOffsets %d (%v)", topic, p, got, served, want, ok)
			}
		}
		// No read was refused. Others may have timed out while the machine
		// was loaded: counted, and said.
		logs := secMirrorLog(e.Logs(), "full")
		if refused := secMirrorRefusals(logs, ""); refused != "" {
			t.Errorf("a read was refused with the documented ACLs:\n%s", refused)
		}
		if n := strings.Count(logs, `msg="mirror read failed"`) + strings.Count(logs, `msg="mirror read still failing"`); n > 0 {
			t.Logf("%d reads of the flow failed otherwise (timeouts on a loaded machine):\n%s", n, m.Describe("kafka_mirror_read_errors_total", full()))
		}
	})

	t.Run("no Describe on the group on the source", func(t *testing.T) {
		gt := noGroup("group", group, "topic", topic)
		if v := value(t, m, "kafka_mirror_up", noGroup()); v != 1 {
			t.Errorf("kafka_mirror_up = %v, want 1", v)
		}
		if v := value(t, m, "kafka_mirror_topic_records_not_replicated", noGroup("topic", topic)); v != 0 {
			t.Errorf("records not replicated = %v, want 0", v)
		}
		if v := value(t, m, "kafka_mirror_group_checkpointed_partitions", gt); v != partitions {
			t.Errorf("checkpointed partitions = %v, want %d (the checkpoints are on the target)", v, partitions)
		}
		if n := len(m.Series("kafka_mirror_group_records_to_reread", gt)); n != 0 {
			t.Errorf("records to re-read served without the group's committed offsets: %s", m.Describe("kafka_mirror_group_records_to_reread", gt))
		}
		secMirrorCheckRefusal(t, e, "no-group", "group_offsets", "GROUP_AUTHORIZATION_FAILED", "Describe on group "+group+" on cluster east-no-group")
	})

	t.Run("no Read on the checkpoints topic on the target", func(t *testing.T) {
		if v := value(t, m, "kafka_mirror_up", noCheckpoints()); v != 1 {
			t.Errorf("kafka_mirror_up = %v, want 1", v)
		}
		if v := value(t, m, "kafka_mirror_stalled", noCheckpoints()); v != 0 {
			t.Errorf("stalled = %v, want 0 (the heartbeats are readable)", v)
		}
		if v := value(t, m, "kafka_mirror_topic_rpo_seconds", noCheckpoints("topic", topic)); v != 0 {
			t.Errorf("RPO = %v, want 0", v)
		}
		for _, name := range []string{"kafka_mirror_group_records_to_reread", "kafka_mirror_group_checkpoint_age_seconds", "kafka_mirror_group_checkpointed_partitions"} {
			if n := len(m.Series(name, noCheckpoints())); n != 0 {
				t.Errorf("%s served without the checkpoints: %s", name, m.Describe(name, noCheckpoints()))
			}
		}
		secMirrorCheckRefusal(t, e, "no-checkpoints", "checkpoints", "TOPIC_AUTHORIZATION_FAILED",
			"Read on topic "+mm.CheckpointsTopic()+" on cluster west-no-checkpoints")
	})

	// Kafka leaves the topic out of the user's Metadata: the exporter asks
	// for it by name to tell a missing grant from a missing topic.
	t.Run("no Describe on the heartbeats topic on the target", func(t *testing.T) {
		if v := value(t, m, "kafka_mirror_target_up", noHeartbeats()); v != 1 {
			t.Errorf("kafka_mirror_target_up = %v, want 1", v)
		}
		if v := value(t, m, "kafka_mirror_topic_records_not_replicated", noHeartbeats("topic", topic)); v != 0 {
			t.Errorf("records not replicated = %v, want 0", v)
		}
		if v := value(t, m, "kafka_mirror_group_records_to_reread", noHeartbeats("group", group, "topic", topic)); v != 0 {
			t.Errorf("records to re-read = %v, want 0", v)
		}
		if n := len(m.Series("kafka_mirror_heartbeat_age_seconds", noHeartbeats())); n != 0 {
			t.Errorf("heartbeat age served without the heartbeats: %s", m.Describe("kafka_mirror_heartbeat_age_seconds", noHeartbeats()))
		}
		// A target that answers without a heartbeat counts as stalled
		// (docs/mirror.md); the log says why.
		if v := value(t, m, "kafka_mirror_stalled", noHeartbeats()); v != 1 {
			t.Errorf("stalled = %v, want 1 (no heartbeat read on a target that answers)", v)
		}
		secMirrorCheckRefusal(t, e, "no-heartbeats", "heartbeats", "TOPIC_AUTHORIZATION_FAILED",
			"Describe on topic "+mm.HeartbeatsTopic()+" on cluster west-no-heartbeats")
	})

	t.Run("no password leaks", func(t *testing.T) {
		secAssertNoLeaks(t, e, secKafkaPassword)
	})
	t.Logf("timings: the whole test %s", time.Since(start).Round(time.Millisecond))
}

// secMirrorCheckRefusal checks that a flow's refused read is the only one
// refused (others may time out on a loaded machine) and that a warning
// names the Kafka error and the grant the user lacks.
func secMirrorCheckRefusal(t *testing.T, e *exportertest.Exporter, flow, read, kafkaErr, grant string) {
	t.Helper()
	logs := secMirrorLog(e.Logs(), flow)
	if other := secMirrorRefusals(logs, read); other != "" {
		t.Errorf("reads other than %s refused:\n%s", read, other)
	}
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, "level=warn") && strings.Contains(line, "read="+read+" ") &&
			strings.Contains(line, kafkaErr) && strings.Contains(line, grant) {
			t.Logf("log: %s", line)
			return
		}
	}
	t.Errorf("no warning for read=%s naming %s and %q:\n%s", read, kafkaErr, grant, logs)
}

// secMirrorRefusals returns the flow's log lines of reads other than
// except that Kafka refused.
func secMirrorRefusals(logs, except string) string {
	var out []string
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, "AUTHORIZATION_FAILED") && (except == "" || !strings.Contains(line, "read="+except+" ")) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// secMirrorLog returns the log lines about the flow named flow.
func secMirrorLog(logs, flow string) string {
	var out []string
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, " mirror="+flow+" ") || strings.HasSuffix(line, " mirror="+flow) ||
			strings.Contains(line, " cluster="+flow+" ") || strings.HasSuffix(line, " cluster="+flow) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// secMirrorConfig is the exporter's config: four cluster entries over the
// two brokers (the documented user on each, and a user lacking one grant on
// each) and four flows between them. Passwords come from a file.
func secMirrorConfig(srcBootstrap, dstBootstrap []string, tlsFiles certs.Files, passwordFile, srcAlias, dstAlias string) string {
	mtls := fmt.Sprintf("enabled: true, ca_file: %s, cert_file: %s, key_file: %s", tlsFiles.CA, tlsFiles.ClientCert, tlsFiles.ClientKey)
	entry := func(name string, bootstrap []string, user string) string {
		return fmt.Sprintf(`  - name: %s
    bootstrap_servers: [%s]
    refresh_interval: 2s
    refresh_timeout: 2s
    dial_timeout: 2s
    request_timeout: 2s
    tls: {%s}
    sasl: {mechanism: SCRAM-SHA-512, username: %s, password: {file: %s}}
`, name, strings.Join(bootstrap, ", "), mtls, user, passwordFile)
	}
	flow := func(name, source, target string) string {
		return fmt.Sprintf(`  - name: %s
    source: %s
    target: %s
    source_alias: %s
    target_alias: %s
    refresh_interval: 2s
    refresh_timeout: 2s
    partition_metrics: true
`, name, source, target, srcAlias, dstAlias)
	}
	return "kafka:\n" +
		entry("east", srcBootstrap, secMirrorUser) +
		entry("west", dstBootstrap, secMirrorUser) +
		entry("east-no-group", srcBootstrap, secMirrorNoGroupUser) +
		entry("west-no-checkpoints", dstBootstrap, secMirrorNoCheckpointsUser) +
		entry("west-no-heartbeats", dstBootstrap, secMirrorNoHeartbeatsUser) +
		"mirrors:\n" +
		flow("full", "east", "west") +
		flow("no-group", "east-no-group", "west") +
		flow("no-checkpoints", "east", "west-no-checkpoints") +
		flow("no-heartbeats", "east", "west-no-heartbeats")
}

// secGrantMirrorACLs grants, through the super-user PLAINTEXT listeners,
// what docs/mirror.md#minimal-acls documents: on the source, Describe and
// Read on the replicated topic and the offset-syncs topic, Describe on the
// groups; on the target, Describe and Read on the topics named after the
// source alias (the remote topic, heartbeats, checkpoints). The other
// users get the same less one grant each.
func secGrantMirrorACLs(t *testing.T, srcBootstrap, dstBootstrap []string, mm *lab.Mirror, replicated string) {
	t.Helper()
	allow := func(user string, ops ...sarama.AclOperation) []*sarama.Acl {
		var acls []*sarama.Acl
		for _, op := range ops {
			acls = append(acls, &sarama.Acl{Principal: "User:" + user, Host: "*", Operation: op, PermissionType: sarama.AclPermissionAllow})
		}
		return acls
	}
	topic := func(name string, pattern sarama.AclResourcePatternType) sarama.Resource {
		return sarama.Resource{ResourceType: sarama.AclResourceTopic, ResourceName: name, ResourcePatternType: pattern}
	}
	describeRead := []sarama.AclOperation{sarama.AclOperationDescribe, sarama.AclOperationRead}
	var source, target []*sarama.ResourceAcls
	for _, user := range []string{secMirrorUser, secMirrorNoGroupUser, secMirrorNoCheckpointsUser, secMirrorNoHeartbeatsUser} {
		source = append(source,
			&sarama.ResourceAcls{Resource: topic(replicated, sarama.AclPatternLiteral), Acls: allow(user, describeRead...)},
			&sarama.ResourceAcls{Resource: topic(mm.OffsetSyncsTopic(), sarama.AclPatternLiteral), Acls: allow(user, describeRead...)})
		if user != secMirrorNoGroupUser {
			source = append(source, &sarama.ResourceAcls{
				Resource: sarama.Resource{ResourceType: sarama.AclResourceGroup, ResourceName: "*", ResourcePatternType: sarama.AclPatternLiteral},
				Acls:     allow(user, sarama.AclOperationDescribe)})
		}
		prefix := topic(mm.SourceAlias()+".", sarama.AclPatternPrefixed)
		switch user {
		case secMirrorNoCheckpointsUser:
			// Describe on them all, Read on all but the checkpoints topic.
			target = append(target, &sarama.ResourceAcls{Resource: prefix, Acls: allow(user, sarama.AclOperationDescribe)})
			for _, name := range []string{mm.RemoteTopic(replicated), mm.HeartbeatsTopic()} {
				target = append(target, &sarama.ResourceAcls{Resource: topic(name, sarama.AclPatternLiteral), Acls: allow(user, sarama.AclOperationRead)})
			}
		case secMirrorNoHeartbeatsUser:
			for _, name := range []string{mm.RemoteTopic(replicated), mm.CheckpointsTopic()} {
				target = append(target, &sarama.ResourceAcls{Resource: topic(name, sarama.AclPatternLiteral), Acls: allow(user, describeRead...)})
			}
		default:
			target = append(target, &sarama.ResourceAcls{Resource: prefix, Acls: allow(user, describeRead...)})
		}
	}
	for _, side := range []struct {
		bootstrap []string
		acls      []*sarama.ResourceAcls
	}{{srcBootstrap, source}, {dstBootstrap, target}} {
		conf := lab.ClientConfig()
		admin, err := sarama.NewClusterAdmin(side.bootstrap, conf)
		if err != nil {
			t.Fatalf("admin client on %v: %v", side.bootstrap, err)
		}
		err = admin.CreateACLs(side.acls)
		admin.Close()
		if err != nil {
			t.Fatalf("create ACLs on %v: %v", side.bootstrap, err)
		}
	}
}
