package e2e

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/failover-exporter/failover_exporter/collector/budget"
	"github.com/failover-exporter/failover_exporter/internal/certs"
	"github.com/failover-exporter/failover_exporter/internal/exportertest"
	"github.com/failover-exporter/failover_exporter/internal/lab"
)

// Kafka lab users (created at storage-format time for SCRAM, and in the
// listener's JAAS config for PLAIN). secKafkaUser has exactly the ACLs
// docs/security.md documents; the others have less.
const (
	secKafkaUser     = "exporter"
	secKafkaPassword = "Kafka-exporter-pw-4711"
	// secKafkaDescribeOnlyUser may Describe topics but not DescribeConfigs.
	secKafkaDescribeOnlyUser = "describe-only"
	// secKafkaNoACLUser has no ACLs at all.
	secKafkaNoACLUser = "no-acls"
	// secKafkaWrongPassword is what the misconfigured exporter sends.
	secKafkaWrongPassword = "Wrong-kafka-pw-0815"
)

// TestSecurityKafka runs the exporter against a real broker whose client
// listener is SASL_SSL with client certificates required, and checks each
// supported way in (SCRAM-SHA-512, SCRAM-SHA-256, PLAIN; CA file, client
// certificate, server name, insecure_skip_verify) and each way of getting
// it wrong (password, CA, server name, no client certificate). All clusters
// are watched by one exporter process at once, so the broker is started
// once and the whole test takes seconds after it is up.
func TestSecurityKafka(t *testing.T) {
	const topic, belowMinTopic = "secured", "secured-below-min-isr"
	start := time.Now()
	tlsFiles := secWriteCerts(t)
	dir := t.TempDir()
	users := secWriteFile(t, filepath.Join(dir, "users"), secKafkaUser+" "+secKafkaPassword+"\n"+
		secKafkaDescribeOnlyUser+" "+secKafkaPassword+"\n"+secKafkaNoACLUser+" "+secKafkaPassword+"\n")
	// One node: the test is about the client listener, and three JVMs would
	// cost the shared CI machine more than they prove here.
	cluster := lab.StartKafka(t, lab.KafkaOptions{
		Nodes: 1, Security: "sasl_ssl", TLSDir: tlsFiles.Dir, UsersFile: users, ClientAuth: "required",
		Authorizer: true,
	})
	clusterUp := time.Since(start)
	secCreateTopic(t, cluster.InternalBootstrap(), topic, 3, nil)
	// RF 1 with min.insync.replicas 2 is always below min ISR, so every
	// refresh asks for its eligible leader replicas with franz-go: the
	// second client goes through the same TLS and SASL as sarama.
	minISR2 := "2"
	secCreateTopic(t, cluster.InternalBootstrap(), belowMinTopic, 1, map[string]*string{"min.insync.replicas": &minISR2})
	secGrantKafkaACLs(t, cluster.InternalBootstrap())
	// A group's commit makes the cluster create __consumer_offsets, whose
	// coordinators the exporter then asks about.
	cluster.CommitOffsets(t, "secured-group", nil)

	passwordFile := secWriteSecretFile(t, dir, "kafka-password", secKafkaPassword)
	wrongFile := secWriteSecretFile(t, dir, "kafka-wrong-password", secKafkaWrongPassword)
	t.Setenv("FAILOVER_E2E_KAFKA_PASSWORD", secKafkaPassword)

	configPath := secWriteFile(t, filepath.Join(dir, "config.yaml"), secKafkaConfig(cluster.Bootstrap(), tlsFiles, passwordFile, wrongFile))
	e := exportertest.Start(t, "--config.file="+configPath, "--log.level=debug")
	e.WaitReady(t, 60*time.Second)

	good := []string{"scram-sha-512", "scram-sha-256", "plain", "server-name", "skip-verify"}
	bad := map[string]string{
		"wrong-password":    "SASL Authentication failed: Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512",
		"unknown-ca":        "tls: failed to verify certificate: x509: certificate signed by unknown authority",
		"wrong-server-name": "tls: failed to verify certificate: x509: certificate is valid for localhost, not wrong.example",
		// The broker requires a client certificate and rejects the
		// handshake; Java's alert is "bad certificate".
		"no-client-cert": "remote error: tls: bad certificate",
	}
	m, took := waitMetrics(t, e, 60*time.Second, "every secured Kafka cluster read or failed", func(m exportertest.Metrics) (bool, string) {
		var missing []string
		// A good cluster is read whole: partitions, reassignments and the
		// ELR (franz-go), which a loaded machine's first refreshes can
		// leave out when they run out of time.
		for _, name := range good {
			_, reassignments := m.Value("kafka_topic_reassigning_partitions", map[string]string{"kafka_cluster": name, "topic": topic})
			_, elr := m.Value("kafka_partition_eligible_leader_replicas", map[string]string{"kafka_cluster": name, "topic": belowMinTopic, "partition": "0"})
			coordinators, _ := m.Value("kafka_coordinator_partitions", map[string]string{"kafka_cluster": name, "kind": "group", "state": "answering"})
			if v, ok := m.Value("kafka_topic_partitions", map[string]string{"kafka_cluster": name, "topic": topic}); !ok || v != 3 || !reassignments || !elr || coordinators == 0 {
				missing = append(missing, name)
			}
		}
		for name := range bad {
			if v, ok := m.Value("kafka_exporter_refresh_failures_total", map[string]string{"kafka_cluster": name}); !ok || v < 2 {
				missing = append(missing, name)
			}
		}
		unknown, _ := m.Value("kafka_coordinator_partitions", map[string]string{"kafka_cluster": "describe-only", "kind": "group", "state": "unknown"})
		if v, ok := m.Value("kafka_topic_partitions", map[string]string{"kafka_cluster": "describe-only", "topic": topic}); !ok || v != 3 || unknown == 0 {
			missing = append(missing, "describe-only")
		}
		if v, ok := m.Value("kafka_exporter_refreshes_total", map[string]string{"kafka_cluster": "no-acls"}); !ok || v < 2 {
			missing = append(missing, "no-acls")
		}
		return len(missing) == 0, fmt.Sprintf("waiting for %v:\n%s", missing, m.Describe("kafka_up", nil))
	})
	t.Logf("timings: secured kafka up in %s; exporter read or failed every cluster %s after ready",
		clusterUp.Round(time.Millisecond), took.Round(time.Millisecond))

	for _, name := range good {
		t.Run(name, func(t *testing.T) {
			labels := map[string]string{"kafka_cluster": name}
			if v := value(t, m, "kafka_up", labels); v != 1 {
				t.Errorf("kafka_up = %v, want 1\n%s", v, secClusterLog(e.Logs(), name))
			}
			if v := value(t, m, "kafka_cluster_brokers", labels); v != 1 {
				t.Errorf("kafka_cluster_brokers = %v, want 1", v)
			}
			// DescribeConfigs went through too (it is the second request).
			if v := value(t, m, "kafka_topic_min_insync_replicas", map[string]string{"kafka_cluster": name, "topic": topic}); v != 1 {
				t.Errorf("kafka_topic_min_insync_replicas = %v, want 1", v)
			}
			// And ListPartitionReassignments (Describe on the Cluster).
			if v := value(t, m, "kafka_topic_reassigning_partitions", map[string]string{"kafka_cluster": name, "topic": topic}); v != 0 {
				t.Errorf("kafka_topic_reassigning_partitions = %v, want 0", v)
			}
			// And franz-go's ApiVersions and DescribeTopicPartitions, with
			// the TLS and SASL settings sarama got from the same function.
			below := map[string]string{"kafka_cluster": name, "topic": belowMinTopic, "partition": "0"}
			if v := value(t, m, "kafka_partition_under_min_isr", below); v != 1 {
				t.Errorf("%s: under min ISR = %v, want 1 (RF 1, min ISR 2)", belowMinTopic, v)
			}
			if v := value(t, m, "kafka_partition_eligible_leader_replicas", below); v != 0 {
				t.Errorf("%s: eligible leader replicas = %v, want 0", belowMinTopic, v)
			}
			// And the coordinators, with Describe on the probe ids' prefix.
			offsets := value(t, m, "kafka_internal_topic_partitions", map[string]string{"kafka_cluster": name, "topic": "__consumer_offsets"})
			if v := value(t, m, "kafka_coordinator_partitions", map[string]string{"kafka_cluster": name, "kind": "group", "state": "answering"}); v != offsets {
				t.Errorf("group coordinators answering = %v, want every one of the %v offsets partitions", v, offsets)
			}
			// The read_committed gaps need only Describe on topics; whether
			// transactions hang needs the brokers' timeout (DescribeConfigs
			// on the Cluster, not granted): not known, so not served.
			if v := value(t, m, "kafka_read_committed_gap_partitions", map[string]string{"kafka_cluster": name}); v != 0 {
				t.Errorf("kafka_read_committed_gap_partitions = %v, want 0: no transaction runs", v)
			}
			if n := len(m.Series("kafka_hanging_transactions", map[string]string{"kafka_cluster": name})); n != 0 {
				t.Errorf("kafka_hanging_transactions served without DescribeConfigs on the Cluster (the timeout unread): %s",
					m.Describe("kafka_hanging_transactions", map[string]string{"kafka_cluster": name}))
			}
			// A failure other than a refresh running out of time (the first
			// ones, on a loaded machine) is the client's.
			for _, line := range strings.Split(secClusterLog(e.Logs(), name), "\n") {
				if strings.Contains(line, "eligible leader replicas failed") && !strings.Contains(line, "deadline exceeded") {
					t.Errorf("the franz-go client failed:\n%s", line)
				}
			}
		})
	}
	for name, want := range bad {
		t.Run(name, func(t *testing.T) {
			labels := map[string]string{"kafka_cluster": name}
			if v := value(t, m, "kafka_up", labels); v != 0 {
				t.Errorf("kafka_up = %v, want 0", v)
			}
			if n := len(m.Series("kafka_partition_leader", labels)); n != 0 {
				t.Errorf("%d partition series served for a cluster that cannot be read", n)
			}
			logs := secClusterLog(e.Logs(), name)
			if !strings.Contains(logs, `msg="refresh failed"`) || !strings.Contains(logs, want) {
				t.Errorf("log does not say %q:\n%s", want, logs)
			}
			t.Logf("first log line: %s", strings.SplitN(logs, "\n", 2)[0])
		})
	}

	// Describe on topics without DescribeConfigs: partitions are served,
	// min.insync.replicas is not, and the log says why.
	t.Run("describe-only", func(t *testing.T) {
		labels := map[string]string{"kafka_cluster": "describe-only", "topic": topic}
		if v := value(t, m, "kafka_up", map[string]string{"kafka_cluster": "describe-only"}); v != 1 {
			t.Errorf("kafka_up = %v, want 1", v)
		}
		if n := len(m.Series("kafka_topic_min_insync_replicas", labels)); n != 0 {
			t.Errorf("min ISR served without DescribeConfigs: %s", m.Describe("kafka_topic_min_insync_replicas", labels))
		}
		if n := len(m.Series("kafka_topic_reassigning_partitions", labels)); n != 0 {
			t.Errorf("reassignments served without Describe on the Cluster: %s", m.Describe("kafka_topic_reassigning_partitions", labels))
		}
		logs := secClusterLog(e.Logs(), "describe-only")
		const want = "reading topic configs failed"
		if !strings.Contains(logs, want) || !strings.Contains(logs, "not authorized to access this topic") {
			t.Errorf("log does not say %q with the authorization error:\n%s", want, logs)
		}
		// A lasting refusal is a warning once, then debug lines (a first
		// refresh that ran out of time on a loaded machine warns of that
		// apart).
		const refused = "listing partition reassignments failed"
		warned := 0
		for _, line := range strings.Split(logs, "\n") {
			if strings.Contains(line, refused) && strings.Contains(line, "level=warn") && strings.Contains(line, "not authorized") {
				warned++
			}
		}
		if warned != 1 || !strings.Contains(logs, "not authorized to send this request type") {
			t.Errorf("log warns %q %d times, want once, with the authorization error:\n%s", refused, warned, logs)
		}
		t.Logf("first log line: %s", strings.SplitN(logs, "\n", 2)[0])

		// Without Describe on the probe ids, the coordinators are unknown,
		// neither answering nor unavailable, and the log says why.
		offsets := value(t, m, "kafka_internal_topic_partitions", map[string]string{"kafka_cluster": "describe-only", "topic": "__consumer_offsets"})
		for state, want := range map[string]float64{"unknown": offsets, "answering": 0, "unavailable": 0} {
			if v := value(t, m, "kafka_coordinator_partitions", map[string]string{"kafka_cluster": "describe-only", "kind": "group", "state": state}); v != want {
				t.Errorf("group coordinators %s = %v, want %v", state, v, want)
			}
		}
		if !strings.Contains(logs, "cannot tell whether some coordinators answer") || !strings.Contains(logs, "GROUP_AUTHORIZATION_FAILED") {
			t.Errorf("log does not say the coordinators are unknown, with the authorization error:\n%s", logs)
		}

		// DescribeQuorum is refused too (it needs Describe on the
		// Cluster): the failure budget judges no stop, and says why,
		// where the fully granted user's answer judges the quorum.
		for cluster, wantUnread := range map[string]bool{"describe-only": true, "scram-sha-512": false} {
			status, a, _ := queryBudget(t, e, budget.SafeToStopPath, url.Values{"system": {"kafka"}, "cluster": {cluster}, "broker": {"1"}})
			unread := false
			for _, f := range a.Findings {
				unread = unread || (f.Reason == "not_judged" && strings.Contains(f.Message, "KRaft quorum could not be read"))
			}
			if status != 409 || a.Safe || unread != wantUnread {
				t.Errorf("safe-to-stop broker 1 of %s: %d, findings %+v; want 409 with the unread quorum said: %v", cluster, status, a.Findings, wantUnread)
			}
		}
	})
	// No ACL at all: Kafka leaves unauthorized topics out of Metadata, so
	// the cluster looks empty but reachable. Documented in docs/security.md.
	t.Run("no-acls", func(t *testing.T) {
		labels := map[string]string{"kafka_cluster": "no-acls"}
		if v := value(t, m, "kafka_up", labels); v != 1 {
			t.Errorf("kafka_up = %v, want 1 (Metadata itself needs no ACL)", v)
		}
		if n := len(m.Series("kafka_topic_partitions", labels)); n != 0 {
			t.Errorf("%d topics visible without Describe", n)
		}
		if v := value(t, m, "kafka_cluster_brokers", labels); v != 1 {
			t.Errorf("kafka_cluster_brokers = %v, want 1 (brokers are listed without ACLs)", v)
		}
	})

	t.Run("no crash loop", func(t *testing.T) {
		// The failing clusters are retried every refresh interval by the same
		// process, which keeps serving the healthy ones.
		before := value(t, m, "kafka_exporter_refresh_failures_total", map[string]string{"kafka_cluster": "wrong-password"})
		after := secWaitFailures(t, e, "kafka_exporter_refresh_failures_total", "kafka_cluster", "wrong-password", before+2)
		if v := value(t, after, "kafka_up", map[string]string{"kafka_cluster": "scram-sha-512"}); v != 1 {
			t.Errorf("healthy cluster kafka_up = %v next to a failing one", v)
		}
		if body := secHTTPGet(t, e.URL+"/-/healthy"); body == "" {
			t.Error("/-/healthy answered nothing")
		}
		if strings.Count(e.Logs(), `msg="starting failover_exporter"`) != 1 {
			t.Errorf("the exporter restarted:\n%s", e.Logs())
		}
	})

	t.Run("no password leaks", func(t *testing.T) {
		secAssertNoLeaks(t, e, secKafkaPassword, secKafkaWrongPassword)
	})
}

// secKafkaConfig is one config file with a cluster entry per case, all
// pointing at the same broker. The refresh timeout is generous: a TLS
// handshake plus a failed SCRAM exchange (which the broker delays by
// connection.failed.authentication.delay.ms) on a busy machine must end
// with the broker's answer, not with the refresh deadline.
func secKafkaConfig(bootstrap []string, tlsFiles certs.Files, passwordFile, wrongFile string) string {
	servers := "[" + strings.Join(bootstrap, ", ") + "]"
	mtls := fmt.Sprintf("enabled: true, ca_file: %s, cert_file: %s, key_file: %s", tlsFiles.CA, tlsFiles.ClientCert, tlsFiles.ClientKey)
	entryAs := func(name, user, tlsFields, mechanism, password string) string {
		return fmt.Sprintf(`  - name: %s
    bootstrap_servers: %s
    refresh_interval: 2s
    refresh_timeout: 2s
    dial_timeout: 2s
    request_timeout: 2s
    tls: {%s}
    sasl: {mechanism: %s, username: %s, password: %s}
`, name, servers, tlsFields, mechanism, user, password)
	}
	entry := func(name, tlsFields, mechanism, password string) string {
		return entryAs(name, secKafkaUser, tlsFields, mechanism, password)
	}
	fromFile := func(path string) string { return "{file: " + path + "}" }
	fromEnv := "{env: FAILOVER_E2E_KAFKA_PASSWORD}"
	otherCA := fmt.Sprintf("enabled: true, ca_file: %s, cert_file: %s, key_file: %s", tlsFiles.OtherCA, tlsFiles.ClientCert, tlsFiles.ClientKey)
	return "kafka:\n" +
		entry("scram-sha-512", mtls, "SCRAM-SHA-512", fromFile(passwordFile)) +
		entryAs("describe-only", secKafkaDescribeOnlyUser, mtls, "SCRAM-SHA-512", fromFile(passwordFile)) +
		entryAs("no-acls", secKafkaNoACLUser, mtls, "SCRAM-SHA-512", fromFile(passwordFile)) +
		entry("scram-sha-256", mtls, "SCRAM-SHA-256", fromEnv) +
		entry("plain", mtls, "PLAIN", fromFile(passwordFile)) +
		entry("server-name", mtls+", server_name: localhost", "SCRAM-SHA-512", fromEnv) +
		entry("skip-verify", otherCA+", insecure_skip_verify: true", "SCRAM-SHA-512", fromEnv) +
		entry("wrong-password", mtls, "SCRAM-SHA-512", fromFile(wrongFile)) +
		entry("unknown-ca", otherCA, "SCRAM-SHA-512", fromEnv) +
		entry("wrong-server-name", mtls+", server_name: wrong.example", "SCRAM-SHA-512", fromEnv) +
		entry("no-client-cert", "enabled: true, ca_file: "+tlsFiles.CA, "SCRAM-SHA-512", fromEnv)
}

// secCreateTopic creates a 3-partition topic through the PLAINTEXT
// internal listener, as an administrator would.
func secCreateTopic(t *testing.T, bootstrap []string, name string, partitions int32, configs map[string]*string) {
	t.Helper()
	conf := lab.ClientConfig()
	admin, err := sarama.NewClusterAdmin(bootstrap, conf)
	if err != nil {
		t.Fatalf("admin client on %v: %v", bootstrap, err)
	}
	defer admin.Close()
	if err := admin.CreateTopic(name, &sarama.TopicDetail{NumPartitions: partitions, ReplicationFactor: 1, ConfigEntries: configs}, false); err != nil {
		t.Fatalf("create topic %s: %v", name, err)
	}
}

// coordinatorProbePrefix starts the group and transactional ids whose
// coordinators the exporter asks about (docs/security.md).
const coordinatorProbePrefix = "failover_exporter.coordinator-probe."

// secGrantKafkaACLs gives secKafkaUser the documented minimal ACLs (Describe and
// DescribeConfigs on all topics, Describe on the cluster and on the
// coordinator probe ids' prefix) and
// secKafkaDescribeOnlyUser only Describe on topics, through the internal
// listener, whose principal is a super user.
func secGrantKafkaACLs(t *testing.T, bootstrap []string) {
	t.Helper()
	conf := lab.ClientConfig()
	admin, err := sarama.NewClusterAdmin(bootstrap, conf)
	if err != nil {
		t.Fatalf("admin client on %v: %v", bootstrap, err)
	}
	defer admin.Close()
	allTopics := sarama.Resource{ResourceType: sarama.AclResourceTopic, ResourceName: "*", ResourcePatternType: sarama.AclPatternLiteral}
	allow := func(user string, ops ...sarama.AclOperation) []*sarama.Acl {
		var acls []*sarama.Acl
		for _, op := range ops {
			acls = append(acls, &sarama.Acl{Principal: "User:" + user, Host: "*", Operation: op, PermissionType: sarama.AclPermissionAllow})
		}
		return acls
	}
	err = admin.CreateACLs([]*sarama.ResourceAcls{
		{Resource: allTopics, Acls: allow(secKafkaUser, sarama.AclOperationDescribe, sarama.AclOperationDescribeConfigs)},
		{Resource: allTopics, Acls: allow(secKafkaDescribeOnlyUser, sarama.AclOperationDescribe)},
		{Resource: sarama.Resource{ResourceType: sarama.AclResourceCluster, ResourceName: "kafka-cluster", ResourcePatternType: sarama.AclPatternLiteral},
			Acls: allow(secKafkaUser, sarama.AclOperationDescribe)},
		{Resource: sarama.Resource{ResourceType: sarama.AclResourceGroup, ResourceName: coordinatorProbePrefix, ResourcePatternType: sarama.AclPatternPrefixed},
			Acls: allow(secKafkaUser, sarama.AclOperationDescribe)},
		{Resource: sarama.Resource{ResourceType: sarama.AclResourceTransactionalID, ResourceName: coordinatorProbePrefix, ResourcePatternType: sarama.AclPatternPrefixed},
			Acls: allow(secKafkaUser, sarama.AclOperationDescribe)},
	})
	if err != nil {
		t.Fatalf("create ACLs: %v", err)
	}
}
