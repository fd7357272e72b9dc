package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBadInputGetsOneClearMessage: each bad setting is refused with one
// message that names the key and says what to write instead, and no
// message talks about a setting the user did not write.
func TestBadInputGetsOneClearMessage(t *testing.T) {
	kafka := func(lines string) string {
		return "kafka:\n  - bootstrap_servers: [127.0.0.1:9092]\n" + lines
	}
	redis := func(addr string) string { return "redis:\n  - addrs: [\"" + addr + "\"]\n" }
	cases := []struct {
		name, yaml string
		want       []string
		// notWant must not appear: settings the user never gave, secrets.
		notWant []string
	}{
		{"interval without unit", kafka("    refresh_interval: 0\n"), []string{"line 3: kafka[0].refresh_interval: 0 is not a duration; write it with a unit, such as 5s"}, []string{"!!int"}},
		{"timeout without unit", "redis:\n  - addrs: [a:1]\n    command_timeout: 2\n", []string{"line 3: redis[0].command_timeout: 2 is not a duration; write it with a unit, such as 2s"}, nil},
		{"explicit zero interval", kafka("    refresh_interval: 0s\n"), []string{"line 3: kafka[0].refresh_interval: 0s must be positive; leave the key out for the default"}, []string{"refresh_timeout"}},
		{"negative interval", kafka("    refresh_interval: -5s\n"), []string{"line 3: kafka[0].refresh_interval: -5s must be positive"}, []string{"refresh_timeout"}},
		{"huge interval", kafka("    refresh_interval: 1000000h\n"), []string{"refresh_interval 1000000h0m0s is longer than 1h0m0s"}, []string{"refresh_timeout", "-"}},
		{"two bad durations, two messages", kafka("    refresh_interval: 5\n    dial_timeout: -1s\n"), []string{"line 3: kafka[0].refresh_interval: 5 is not a duration; write it with a unit, such as 5s", "line 4: kafka[0].dial_timeout: -1s must be positive"}, nil},
		{"ipv6 without brackets", kafka("")[:len("kafka:\n")] + "  - bootstrap_servers: [\"::1:9092\"]\n", []string{`bootstrap server "::1:9092": an IPv6 address needs brackets, as in [::1]:9092`}, nil},
		{"url scheme", redis("http://host:9092"), []string{`addr "http://host:9092": give HOST:PORT without a scheme (http://)`}, nil},
		{"port too large", redis("host:99999"), []string{`addr "host:99999": port 99999 is outside 1-65535`}, nil},
		{"port zero", redis("host:0"), []string{`addr "host:0": port 0 is outside 1-65535`}, nil},
		{"redis url with password", redis("redis://:hunter2@host:6379"), []string{`addr "redis://REDACTED@host:6379": give HOST:PORT without a scheme (redis://)`}, []string{"hunter2"}},
		{"credentials without scheme", redis("user:hunter2@host:6379"), []string{`addr "REDACTED@host:6379": give HOST:PORT without credentials`}, []string{"hunter2"}},
		{"empty host", redis(":6379"), []string{`addr ":6379": the host is empty`}, nil},
		{"ipv4 that does not parse", redis("256.1.1.1:6379"), []string{`addr "256.1.1.1:6379": "256.1.1.1" is not an IP address`}, nil},
		{"kafka version not a version", kafka("    version: abc\n"), []string{`version "abc" is not a Kafka version; give one such as 3.0.0`}, nil},
		{"kafka version too old", kafka("    version: 1.0.0\n"), []string{"version 1.0.0 is older than 2.1.0, the oldest protocol version Kafka 4 brokers accept"}, nil},
		{"canary replication factor beyond Kafka's", kafka("    canary:\n      enabled: true\n      replication_factor: 40000\n"), []string{"canary.replication_factor 40000 is more than 32767, the most Kafka allows"}, []string{"min_insync_replicas"}},
		{"name not utf-8", "redis:\n  - addrs: [a:1]\n  - name: caf\xe9\n    addrs: [b:1]\n", []string{"line 3 is not valid UTF-8"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.yaml))
			if err == nil {
				t.Fatalf("accepted:\n%s", c.yaml)
			}
			msg := err.Error()
			for _, w := range c.want {
				if strings.Count(msg, w) != 1 {
					t.Errorf("error %q: want exactly one %q", msg, w)
				}
			}
			if lines := strings.Count(msg, "\n") + 1; lines != len(c.want) {
				t.Errorf("error has %d messages, want %d:\n%s", lines, len(c.want), msg)
			}
			for _, nw := range c.notWant {
				if strings.Contains(msg, nw) {
					t.Errorf("error %q mentions %q", msg, nw)
				}
			}
		})
	}
}

// TestCompleteRefusesNamesThatAreNotUTF8 covers names given by flags,
// which do not pass through the YAML parser.
func TestCompleteRefusesNamesThatAreNotUTF8(t *testing.T) {
	cfg := &Config{
		Kafka: []KafkaCluster{{Name: "caf\xe9", BootstrapServers: []string{"a:1"}}},
		Redis: []RedisCluster{{Name: "\xff", Addrs: []string{"a:1"}}},
	}
	err := cfg.Complete()
	for _, want := range []string{`kafka cluster 1: name "caf\xe9" is not valid UTF-8`, `redis cluster 1: name "\xff" is not valid UTF-8`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error = %v, want %q", err, want)
		}
	}
}

func TestGoodInputStillAccepted(t *testing.T) {
	cfg, err := Parse([]byte("kafka:\n  - bootstrap_servers: [\"[::1]:9092\", \"kafka-0.kafka:9092\"]\n    version: 2.1.0\n    refresh_interval: 1h\n" +
		"redis:\n  - name: café\n    addrs: [127.0.0.1:65535]\n    refresh_interval: 100ms\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Kafka[0].RefreshTimeout; got != 48*time.Minute {
		t.Errorf("refresh_timeout for 1h = %s, want 48m", got)
	}
}

func TestCheckRefreshIntervalNamesTheFlag(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                   "--refresh.interval 0s must be positive (at least 100ms)",
		-time.Second:        "--refresh.interval -1s must be positive (at least 100ms)",
		time.Millisecond:    "--refresh.interval 1ms is shorter than 100ms",
		1000000 * time.Hour: "--refresh.interval 1000000h0m0s is longer than 1h0m0s",
	} {
		if err := CheckRefreshInterval("--refresh.interval", d); err == nil || err.Error() != want {
			t.Errorf("CheckRefreshInterval(%s) = %v, want %q", d, err, want)
		}
	}
	if err := CheckRefreshInterval("--refresh.interval", 5*time.Second); err != nil {
		t.Errorf("5s refused: %v", err)
	}
}

// TestCheckEventCapacityIsBounded: the event log allocates its ring at
// start, so --config.check must refuse what the start would die on.
func TestCheckEventCapacityIsBounded(t *testing.T) {
	for _, c := range []struct {
		n    int
		want string // "" when accepted
	}{
		{-1, "--events.capacity -1 must be at least 1"},
		{0, "--events.capacity 0 must be at least 1"},
		{1, ""},
		{1000, ""},
		{MaxEventCapacity, ""},
		{MaxEventCapacity + 1, "--events.capacity 100001 is more than 100000, the most the event log keeps (each event is held in memory from the start)"},
		{200_000_000, "--events.capacity 200000000 is more than 100000, the most the event log keeps (each event is held in memory from the start)"},
	} {
		err := CheckEventCapacity("--events.capacity", c.n)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("CheckEventCapacity(%d) = %v, want it accepted", c.n, err)
		case c.want != "" && (err == nil || err.Error() != c.want):
			t.Errorf("CheckEventCapacity(%d) = %v, want %q", c.n, err, c.want)
		}
	}
}

func TestLoadRefusesAHugeFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "huge.yml")
	// Valid YAML throughout, so only the size can be the reason.
	body := "kafka:\n  - bootstrap_servers: [127.0.0.1:9092]\n" + strings.Repeat("# padding padding padding padding\n", MaxConfigSize/30)
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	if want := "config file " + path + " is larger than 1024 KiB"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error = %v, want %q", err, want)
	}
	// Just under the limit is fine.
	if err := os.WriteFile(path, []byte(body[:MaxConfigSize]), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err != nil {
		t.Errorf("a file of exactly %d bytes: %v", MaxConfigSize, err)
	}
}
