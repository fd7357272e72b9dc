package settings

import (
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/config"
	"github.com/failover-exporter/failover_exporter/internal/configtest"
)

func TestParseAppliesDefaults(t *testing.T) {
	cfg, err := config.Parse([]byte(`
redis:
  - name: sessions
    addrs: [127.0.0.1:7000]
    refresh_interval: 2s
`))
	if err != nil {
		t.Fatal(err)
	}
	r := Clusters(cfg)[0]
	if r.RefreshInterval != 2*time.Second || r.RefreshTimeout != 1600*time.Millisecond || r.CommandTimeout != DefaultCommandTimeout || r.BackdateLimit != time.Minute {
		t.Errorf("redis defaults not applied: %+v", r)
	}
	// The canary writes to the cluster: off unless the file says so.
	if r.Canary.Enabled || r.Canary.Interval != 2*time.Second || r.Canary.KeyPrefix != DefaultCanaryKeyPrefix || r.Canary.KeyTTL != time.Hour || r.Canary.Wait != 0 {
		t.Errorf("redis canary defaults not applied: %+v", r.Canary)
	}
	// Hot slots are opt-in.
	if r.SlotStats.Top != 0 {
		t.Errorf("slot_stats.top = %d by default, want 0 (off)", r.SlotStats.Top)
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		name, yaml, want string
	}{
		{"bad port", "redis:\n  - addrs: [\"h:port\"]\n", "port is not a number"},
		{"inline password refused", "redis:\n  - addrs: [a:1]\n    password: hunter2\n", "line 3: redis[0].password: secrets are not accepted inline"},
		{"tls settings while disabled", "redis:\n  - addrs: [a:1]\n    tls: {ca_file: /x}\n", "tls.enabled is false"},
		{"missing tls file", "redis:\n  - addrs: [a:1]\n    tls: {enabled: true, ca_file: /nonexistent/ca.pem}\n", "/nonexistent/ca.pem"},
		{"canary prefix with a hash tag", "redis:\n  - addrs: [a:1]\n    canary: {enabled: true, key_prefix: \"x{y}\"}\n", `canary.key_prefix "x{y}" must not contain { or }`},
		{"canary interval too short", "redis:\n  - addrs: [a:1]\n    canary: {enabled: true, interval: 1ms}\n", "canary.interval 1ms is shorter than 100ms"},
		{"canary negative wait", "redis:\n  - addrs: [a:1]\n    canary: {enabled: true, wait: -1s}\n", "line 3: redis[0].canary.wait: -1s is negative; write 0s for none"},
		{"negative backdate limit", "redis:\n  - addrs: [a:1]\n    backdate_limit: -1s\n", "line 3: redis[0].backdate_limit: -1s must be positive"},
		{"slot stats top above the bound", "redis:\n  - addrs: [a:1]\n    slot_stats: {top: 101}\n", "slot_stats.top 101 must be between 0 (off) and 100"},
		{"negative slot stats top", "redis:\n  - addrs: [a:1]\n    slot_stats: {top: -1}\n", "slot_stats.top -1 must be between 0 (off) and 100"},
		{"unknown slot stats key", "redis:\n  - addrs: [a:1]\n    slot_stats: {top: 5, every: 1m}\n", "field every not found"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { configtest.RefusedSaying(t, c.yaml, c.want, "hunter2") })
	}
}

func TestRedisSlotStats(t *testing.T) {
	cfg, err := config.Parse([]byte("redis:\n  - addrs: [a:1]\n    slot_stats: {top: 100}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := Clusters(cfg)[0].SlotStats.Top; got != MaxSlotStatsTop {
		t.Errorf("slot_stats.top = %d, want %d", got, MaxSlotStatsTop)
	}
	// A change of top is a change of the cluster's settings: the watcher
	// restarts with the new bound.
	off := Clusters(cfg)[0]
	off.SlotStats.Top = 0
	a, errA := Clusters(cfg)[0].Fingerprint()
	b, errB := off.Fingerprint()
	if errA != nil || errB != nil || a == b {
		t.Errorf("fingerprints with top 100 and 0: %q, %q (%v, %v): want them to differ", a, b, errA, errB)
	}
}
