package settings

import (
	"strings"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/config"
	"github.com/failover-exporter/failover_exporter/internal/configtest"
)

// TestBadInputGetsOneClearMessage: each bad setting is refused with one
// message that names the key and says what to write instead, and no
// message talks about a setting the user did not write.
func TestBadInputGetsOneClearMessage(t *testing.T) {
	kafka := func(lines string) string {
		return "kafka:\n  - bootstrap_servers: [127.0.0.1:9092]\n" + lines
	}
	configtest.Refuses(t, []configtest.Refusal{
		configtest.R("interval without unit", kafka("    refresh_interval: 0\n"), []string{"line 3: kafka[0].refresh_interval: 0 is not a duration; write it with a unit, such as 5s"}, []string{"!!int"}),
		configtest.R("explicit zero interval", kafka("    refresh_interval: 0s\n"), []string{"line 3: kafka[0].refresh_interval: 0s must be positive; leave the key out for the default"}, []string{"refresh_timeout"}),
		configtest.R("negative interval", kafka("    refresh_interval: -5s\n"), []string{"line 3: kafka[0].refresh_interval: -5s must be positive"}, []string{"refresh_timeout"}),
		configtest.R("huge interval", kafka("    refresh_interval: 1000000h\n"), []string{"refresh_interval 1000000h0m0s is longer than 1h0m0s"}, []string{"refresh_timeout", "-"}),
		configtest.R("two bad durations, two messages", kafka("    refresh_interval: 5\n    dial_timeout: -1s\n"), []string{"line 3: kafka[0].refresh_interval: 5 is not a duration; write it with a unit, such as 5s", "line 4: kafka[0].dial_timeout: -1s must be positive"}, nil),
		configtest.R("ipv6 without brackets", kafka("")[:len("kafka:\n")]+"  - bootstrap_servers: [\"::1:9092\"]\n", []string{`bootstrap server "::1:9092": an IPv6 address needs brackets, as in [::1]:9092`}, nil),
		configtest.R("kafka version not a version", kafka("    version: abc\n"), []string{`version "abc" is not a Kafka version; give one such as 3.0.0`}, nil),
		configtest.R("kafka version too old", kafka("    version: 1.0.0\n"), []string{"version 1.0.0 is older than 2.1.0, the oldest protocol version Kafka 4 brokers accept"}, nil),
		configtest.R("canary replication factor beyond Kafka's", kafka("    canary:\n      enabled: true\n      replication_factor: 40000\n"), []string{"canary.replication_factor 40000 is more than 32767, the most Kafka allows"}, []string{"min_insync_replicas"}),
	})
}

// TestCompleteRefusesNamesThatAreNotUTF8 covers names given by flags,
// which do not pass through the YAML parser.
func TestCompleteRefusesNamesThatAreNotUTF8(t *testing.T) {
	cfg := &config.Config{}
	SetClusters(cfg, []Cluster{{Name: "caf\xe9", BootstrapServers: []string{"a:1"}}})
	err := cfg.Complete()
	for _, want := range []string{`kafka cluster 1: name "caf\xe9" is not valid UTF-8`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error = %v, want %q", err, want)
		}
	}
}

func TestGoodInputStillAccepted(t *testing.T) {
	cfg, err := config.Parse([]byte("kafka:\n  - bootstrap_servers: [\"[::1]:9092\", \"kafka-0.kafka:9092\"]\n    version: 2.1.0\n    refresh_interval: 1h\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := Clusters(cfg)[0].RefreshTimeout; got != 48*time.Minute {
		t.Errorf("refresh_timeout for 1h = %s, want 48m", got)
	}
}

// In a file, a bad allowed_targets entry's message names the module and
// the entry.
func TestAllowedTargetsNamedInAFile(t *testing.T) {
	_, err := config.Parse([]byte("kafka_modules:\n  - name: m\n    allowed_targets: [10.0.0.0/8:9092, \"*:9092\"]\n"))
	if err == nil || !strings.Contains(err.Error(), `kafka module 1 ("m"): allowed_targets[1] "*:9092": a host of * would allow every host`) {
		t.Errorf("a bad entry in a file: %v", err)
	}
}

// Complete applies the kafka section's defaults to clusters set in code.
func TestCompleteAppliesDefaults(t *testing.T) {
	cfg := &config.Config{}
	SetClusters(cfg, []Cluster{{BootstrapServers: []string{"127.0.0.1:9092"}}})
	if err := cfg.Complete(); err != nil {
		t.Fatal(err)
	}
	if got := Clusters(cfg); got[0].Name != DefaultClusterName {
		t.Errorf("Complete left the kafka section's defaults out: %+v", got[0])
	}
}
