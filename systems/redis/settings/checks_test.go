package settings

import (
	"strings"
	"testing"

	"github.com/failover-exporter/failover_exporter/config"
	"github.com/failover-exporter/failover_exporter/internal/configtest"
)

// TestBadInputGetsOneClearMessage: each bad setting is refused with one
// message that names the key and says what to write instead, and no
// message talks about a setting the user did not write.
func TestBadInputGetsOneClearMessage(t *testing.T) {
	redis := func(addr string) string { return "redis:\n  - addrs: [\"" + addr + "\"]\n" }
	configtest.Refuses(t, []configtest.Refusal{
		configtest.R("timeout without unit", "redis:\n  - addrs: [a:1]\n    command_timeout: 2\n", []string{"line 3: redis[0].command_timeout: 2 is not a duration; write it with a unit, such as 2s"}, nil),
		configtest.R("url scheme", redis("http://host:9092"), []string{`addr "http://host:9092": give HOST:PORT without a scheme (http://)`}, nil),
		configtest.R("port too large", redis("host:99999"), []string{`addr "host:99999": port 99999 is outside 1-65535`}, nil),
		configtest.R("port zero", redis("host:0"), []string{`addr "host:0": port 0 is outside 1-65535`}, nil),
		configtest.R("redis url with password", redis("redis://:hunter2@host:6379"), []string{`addr "redis://REDACTED@host:6379": give HOST:PORT without a scheme (redis://)`}, []string{"hunter2"}),
		configtest.R("credentials without scheme", redis("user:hunter2@host:6379"), []string{`addr "REDACTED@host:6379": give HOST:PORT without credentials`}, []string{"hunter2"}),
		configtest.R("empty host", redis(":6379"), []string{`addr ":6379": the host is empty`}, nil),
		configtest.R("ipv4 that does not parse", redis("256.1.1.1:6379"), []string{`addr "256.1.1.1:6379": "256.1.1.1" is not an IP address`}, nil),
		configtest.R("name not utf-8", "redis:\n  - addrs: [a:1]\n  - name: caf\xe9\n    addrs: [b:1]\n", []string{"line 3 is not valid UTF-8"}, nil),
	})
}

// TestCompleteRefusesNamesThatAreNotUTF8 covers names given by flags,
// which do not pass through the YAML parser.
func TestCompleteRefusesNamesThatAreNotUTF8(t *testing.T) {
	cfg := &config.Config{}
	SetClusters(cfg, []Cluster{{Name: "\xff", Addrs: []string{"a:1"}}})
	err := cfg.Complete()
	for _, want := range []string{`redis cluster 1: name "\xff" is not valid UTF-8`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error = %v, want %q", err, want)
		}
	}
}

func TestGoodInputStillAccepted(t *testing.T) {
	if _, err := config.Parse([]byte("redis:\n  - name: café\n    addrs: [127.0.0.1:65535]\n    refresh_interval: 100ms\n")); err != nil {
		t.Fatal(err)
	}
}
