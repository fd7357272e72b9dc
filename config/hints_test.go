package config

import (
	"strings"
	"testing"
)

// The type walk's hints come from the fields' tags, wherever the field is.
func TestTypeHintsFromFieldTags(t *testing.T) {
	for _, tc := range []struct{ file, want string }{
		{"kafka:\n  - bootstrap_servers: host:9092\n", "kafka[0].bootstrap_servers: \"host:9092\" is not a list; write it as a list, such as [host:9092]"},
		{"redis:\n  - addrs: host:6379\n", "such as [host:6379]"},
		{"mirrors:\n  - partition_metrics: lean\n", "the modes lean, unhealthy, full and none are a kafka cluster's"},
		{"kafka:\n  - canary: {enabled: maybe}\n", "kafka[0].canary.enabled: \"maybe\" is not true or false; write true or false"},
		{"redis:\n  - addrs: [\"127.0.0.1:1\"]\n    canary: {interval: 0s}\n", "redis[0].canary.interval: "},
	} {
		_, err := Parse([]byte(tc.file))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want an error containing %q", tc.file, err, tc.want)
		}
	}
	// canary.wait: 0s means no WAIT, and is accepted as written.
	if _, err := Parse([]byte("redis:\n  - addrs: [\"127.0.0.1:1\"]\n    canary: {wait: 0s}\n")); err != nil {
		t.Errorf("canary.wait: 0s refused: %v", err)
	}
}
