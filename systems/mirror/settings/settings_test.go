package settings

import (
	"strings"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/config"
)

const twoClusters = `
kafka:
  - name: eu
    bootstrap_servers: [127.0.0.1:9092]
    client_id: eu-reader
  - name: us
    bootstrap_servers: [127.0.0.1:9192]
`

func TestMirrorDefaults(t *testing.T) {
	cfg, err := config.Parse([]byte(twoClusters + `
mirrors:
  - name: eu-us
    source: eu
    target: us
`))
	if err != nil {
		t.Fatal(err)
	}
	m := Flows(cfg)[0]
	if m.SourceAlias != "eu" || m.TargetAlias != "us" || m.ReplicationPolicy != ReplicationPolicyDefault ||
		m.OffsetSyncsTopic != "mm2-offset-syncs.us.internal" || m.OffsetSyncsTopicLocation != OffsetSyncsOnSource ||
		m.CheckpointsTopic != "eu.checkpoints.internal" || m.HeartbeatsTopic != "heartbeats" ||
		m.RefreshInterval != config.DefaultRefreshInterval || m.RefreshTimeout != 4*time.Second || m.StallAfter != 30*time.Second ||
		m.PartitionMetrics || !m.Topics.MatchString("anything") || m.MaxGroups != 1000 {
		t.Errorf("defaults not applied: %+v", m)
	}
	if m.SourceCluster.ClientID != "eu-reader" || m.TargetCluster.Name != "us" {
		t.Errorf("clusters not resolved: %+v %+v", m.SourceCluster, m.TargetCluster)
	}
	fp, err := m.Fingerprint()
	if err != nil || fp == "" {
		t.Fatalf("fingerprint: %q %v", fp, err)
	}
	m.TargetCluster.BootstrapServers = []string{"127.0.0.1:9999"}
	if other, _ := m.Fingerprint(); other == fp {
		t.Error("fingerprint ignores the target cluster's settings")
	}
}

func TestMirrorAliasesAndLocation(t *testing.T) {
	cfg, err := config.Parse([]byte(twoClusters + `
mirrors:
  - name: eu-us
    source: eu
    target: us
    source_alias: primary
    target_alias: backup
    offset_syncs_topic_location: target
    replication_policy: identity
    topics: "orders.*"
    stall_after: 1m
`))
	if err != nil {
		t.Fatal(err)
	}
	m := Flows(cfg)[0]
	if m.OffsetSyncsTopic != "mm2-offset-syncs.primary.internal" || m.CheckpointsTopic != "primary.checkpoints.internal" ||
		m.Topics.MatchString("payments") || m.StallAfter != time.Minute {
		t.Errorf("%+v", m)
	}
}

// TestMirrorSeparator: a flow with MM2's replication.policy.separator
// takes it into the internal topics' default names, unless
// internal_topic_separator_enabled is false, as MM2 4.x does.
func TestMirrorSeparator(t *testing.T) {
	for _, tc := range []struct{ extra, syncs, checkpoints string }{
		{"", "mm2-offset-syncs.us.internal", "eu.checkpoints.internal"},
		{"replication_policy_separator: _", "mm2-offset-syncs_us_internal", "eu_checkpoints_internal"},
		{"replication_policy_separator: _\n    internal_topic_separator_enabled: false", "mm2-offset-syncs.us.internal", "eu.checkpoints.internal"},
		{"replication_policy_separator: \"--\"\n    internal_topic_separator_enabled: true", "mm2-offset-syncs--us--internal", "eu--checkpoints--internal"},
	} {
		cfg, err := config.Parse([]byte(twoClusters + "mirrors:\n  - name: m\n    source: eu\n    target: us\n    " + tc.extra + "\n"))
		if err != nil {
			t.Fatalf("%q: %v", tc.extra, err)
		}
		m := Flows(cfg)[0]
		if m.OffsetSyncsTopic != tc.syncs || m.CheckpointsTopic != tc.checkpoints {
			t.Errorf("%q: offset syncs %q, checkpoints %q; want %q, %q", tc.extra, m.OffsetSyncsTopic, m.CheckpointsTopic, tc.syncs, tc.checkpoints)
		}
	}
}

// TestMirrorConnect: the optional Kafka Connect REST API of a flow.
func TestMirrorConnect(t *testing.T) {
	t.Setenv("CONNECT_PASSWORD", "s3cret")
	cfg, err := config.Parse([]byte(twoClusters + `
mirrors:
  - name: m
    source: eu
    target: us
    connect:
      url: https://connect.example:8083/
      username: exporter
      password: {env: CONNECT_PASSWORD}
      tls: {enabled: true, insecure_skip_verify: true}
      connectors: [eu->us.MirrorSourceConnector]
`))
	if err != nil {
		t.Fatal(err)
	}
	c := Flows(cfg)[0].Connect
	if c == nil || c.URL != "https://connect.example:8083/" || c.Username != "exporter" || len(c.Connectors) != 1 {
		t.Fatalf("connect: %+v", c)
	}
	fp, _ := Flows(cfg)[0].Fingerprint()
	t.Setenv("CONNECT_PASSWORD", "changed")
	if other, _ := Flows(cfg)[0].Fingerprint(); other == fp {
		t.Error("fingerprint ignores the Connect password")
	}
	for _, tc := range []struct{ connect, want string }{
		{"{}", "connect.url is required"},
		{"{url: ftp://connect:21}", `connect.url "ftp://connect:21": the scheme must be http or https`},
		{"{url: 'http://'}", `connect.url "http://" has no host, e.g. http://connect:8083`},
		{"{url: 'http://user:pw@connect:8083'}", "connect.url must not hold credentials"},
		{"{url: 'http://connect:8083', password: {env: CONNECT_PASSWORD}}", "connect.password is set without connect.username"},
		{"{url: 'http://connect:8083', username: u}", "connect.password: set file or env"},
		{"{url: 'http://connect:8083', password: s3cret}", "secrets are not accepted inline"},
		{"{url: 'http://connect:8083', tls: {enabled: true}}", `connect.tls is enabled but connect.url "http://connect:8083" is http`},
		{"{url: 'http://connect:8083', connectors: ['']}", "connect.connectors holds an empty name"},
	} {
		_, err := config.Parse([]byte(twoClusters + "mirrors:\n  - name: m\n    source: eu\n    target: us\n    connect: " + tc.connect + "\n"))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("connect %s: error %v, want one with %q", tc.connect, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("connect %s: the error shows the secret: %v", tc.connect, err)
		}
	}
}

func TestMirrorValidation(t *testing.T) {
	for _, tc := range []struct{ mirror, want string }{
		{"source: eu\n    target: ap", `target "ap" is not a cluster of the kafka list (known: "eu", "us")`},
		{"source: eu\n    target: eu", `source and target are both "eu"`},
		{"target: us", "source is required"},
		{"source: eu\n    target: us\n    topics: \"orders(\"", "invalid regular expression"},
		{"source: eu\n    target: us\n    replication_policy: custom", `replication_policy "custom" is not one of default, identity`},
		{"source: eu\n    target: us\n    offset_syncs_topic_location: elsewhere", "offset_syncs_topic_location"},
		{"source: eu\n    target: us\n    checkpoints_topic: \"a b\"", `checkpoints_topic "a b" is not a valid Kafka topic name`},
		{"source: eu\n    target: us\n    source_alias: x\n    target_alias: x", `source_alias and target_alias are both "x"`},
		{"source: eu\n    target: us\n    stall_after: 30", "line 12: mirrors[0].stall_after: 30 is not a duration; write it with a unit, such as 30s"},
		{"source: eu\n    target: us\n    refresh_interval: 2h", "refresh_interval 2h0m0s is longer than 1h0m0s"},
		{"source: eu\n    target: us\n    bootstrap_servers: [x:1]", "field bootstrap_servers not found"},
		{"source: eu\n    target: us\n    max_groups: -1", "max_groups -1 must be positive"},
		{"source: eu\n    target: us\n    replication_policy_separator: \"/\"", `replication_policy_separator "/" cannot be part of a Kafka topic name`},
	} {
		_, err := config.Parse([]byte(twoClusters + "mirrors:\n  - name: m\n    " + tc.mirror + "\n"))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one with %q", tc.mirror, err, tc.want)
		}
	}
	_, err := config.Parse([]byte(twoClusters + "mirrors:\n  - {source: eu, target: us}\n"))
	if err == nil || !strings.Contains(err.Error(), "name is required") {
		t.Errorf("unnamed mirror: %v", err)
	}
	_, err = config.Parse([]byte(twoClusters + "mirrors:\n  - {name: m, source: eu, target: us}\n  - {name: m, source: us, target: eu}\n"))
	if err == nil || !strings.Contains(err.Error(), `mirror "m" is defined twice`) {
		t.Errorf("duplicate mirror: %v", err)
	}
}
