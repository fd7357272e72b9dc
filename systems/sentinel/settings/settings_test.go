package settings

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/config"
	"github.com/failover-exporter/failover_exporter/internal/certs"
)

func TestParseAppliesDefaults(t *testing.T) {
	cfg, err := config.Parse([]byte("sentinel:\n  - sentinels: [127.0.0.1:26379]\n"))
	if err != nil {
		t.Fatal(err)
	}
	s := Entries(cfg)[0]
	want := Set{
		Name:            DefaultName,
		Sentinels:       []string{"127.0.0.1:26379"},
		RefreshInterval: config.DefaultRefreshInterval,
		RefreshTimeout:  config.RefreshTimeoutFor(config.DefaultRefreshInterval),
		DialTimeout:     config.DefaultDialTimeout,
		CommandTimeout:  2 * time.Second,
		BackdateLimit:   config.DefaultBackdateLimit,
		// The canary is off, its keys completed as Redis Cluster's are.
		Canary: Canary{Interval: config.DefaultRefreshInterval, KeyPrefix: "__failover_exporter_canary:", KeyTTL: time.Hour},
	}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("defaults:\n got %+v\nwant %+v", s, want)
	}
	if s.FailureBudget.CaughtUpBound() != DefaultCaughtUpBytes || DefaultCaughtUpBytes != 1048576 {
		t.Errorf("caught-up bound %d, want 1 MiB", s.FailureBudget.CaughtUpBound())
	}
	if interval, timeout := s.Timing(); interval != want.RefreshInterval || timeout != want.RefreshTimeout || s.ClusterName() != "sentinel" {
		t.Errorf("Timing %s/%s, ClusterName %q", interval, timeout, s.ClusterName())
	}
}

// writeSecret writes a secret file in dir and returns its path.
func writeSecret(t *testing.T, dir, name, value string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(value+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestFullExampleParses(t *testing.T) {
	dir := t.TempDir()
	files, err := certs.WriteSet(dir)
	if err != nil {
		t.Fatal(err)
	}
	nodePassword := writeSecret(t, dir, "node-password", "n0des")
	t.Setenv("SENTINEL_PASSWORD", "s3ntinel")
	cfg, err := config.Parse([]byte(`
sentinel:
  - name: main
    sentinels: [127.0.0.1:26379, "[::1]:26380", sentinel-2.internal:26379]
    masters: [mymaster, cache]
    sentinel_connection:
      username: monitor
      password: {env: SENTINEL_PASSWORD}
      tls: {enabled: true, ca_file: ` + files.CA + `}
    node_connection:
      username: exporter
      password: {file: ` + nodePassword + `}
      tls: {enabled: true, ca_file: ` + files.CA + `, cert_file: ` + files.ClientCert + `, key_file: ` + files.ClientKey + `, server_name: localhost}
    refresh_interval: 10s
    refresh_timeout: 8s
    dial_timeout: 1s
    command_timeout: 500ms
    backdate_limit: 2m
    failure_budget:
      healthy_replica_headroom: true
      caught_up_bytes: 4096
      zones: {"127.0.0.1:26379": eu-1a, "10.0.0.5:6379": eu-1b}
    canary:
      enabled: true
      interval: 2s
      key_prefix: "canary:"
      key_ttl: 2h
      wait: 500ms
      lease: false
`))
	if err != nil {
		t.Fatal(err)
	}
	caughtUp := int64(4096)
	noLease := false
	want := Set{
		Name:      "main",
		Sentinels: []string{"127.0.0.1:26379", "[::1]:26380", "sentinel-2.internal:26379"},
		Masters:   []string{"mymaster", "cache"},
		SentinelConnection: Connection{Username: "monitor", Password: config.Secret{Env: "SENTINEL_PASSWORD"},
			TLS: config.TLS{Enabled: true, CAFile: files.CA}},
		NodeConnection: Connection{Username: "exporter", Password: config.Secret{File: nodePassword},
			TLS: config.TLS{Enabled: true, CAFile: files.CA, CertFile: files.ClientCert, KeyFile: files.ClientKey, ServerName: "localhost"}},
		RefreshInterval: 10 * time.Second, RefreshTimeout: 8 * time.Second, DialTimeout: time.Second,
		CommandTimeout: 500 * time.Millisecond, BackdateLimit: 2 * time.Minute,
		FailureBudget: Budget{HealthyReplicaHeadroom: true, CaughtUpBytes: &caughtUp,
			Zones: map[string]string{"127.0.0.1:26379": "eu-1a", "10.0.0.5:6379": "eu-1b"}},
		Canary: Canary{Enabled: true, Interval: 2 * time.Second, KeyPrefix: "canary:", KeyTTL: 2 * time.Hour, Wait: 500 * time.Millisecond, Lease: &noLease},
	}
	if got := Entries(cfg); len(got) != 1 || !reflect.DeepEqual(got[0], want) {
		t.Errorf("parsed:\n got %+v\nwant %+v", got, want)
	}
}

func TestMasterWatched(t *testing.T) {
	every := Set{}
	some := Set{Masters: []string{"mymaster", "cache"}}
	for _, tc := range []struct {
		set  Set
		name string
		want bool
	}{
		{every, "mymaster", true},
		{every, "anything", true},
		{some, "mymaster", true},
		{some, "cache", true},
		{some, "other", false},
		{some, "", false},
	} {
		if got := tc.set.MasterWatched(tc.name); got != tc.want {
			t.Errorf("masters %v: MasterWatched(%q) = %v, want %v", tc.set.Masters, tc.name, got, tc.want)
		}
	}
}

// The fingerprint covers both connections' passwords and TLS files, so a
// reload restarts the deployment when one is rotated.
func TestFingerprintFollowsBothConnectionsFiles(t *testing.T) {
	dir := t.TempDir()
	s := Set{Name: "main", Sentinels: []string{"127.0.0.1:26379"}}
	s.SentinelConnection.Password.File = writeSecret(t, dir, "sentinel-password", "one")
	s.NodeConnection.Password.File = writeSecret(t, dir, "node-password", "one")
	s.SentinelConnection.TLS.CAFile = writeSecret(t, dir, "sentinel-ca.pem", "one")
	s.NodeConnection.TLS.CAFile = writeSecret(t, dir, "node-ca.pem", "one")
	fingerprint := func() string {
		t.Helper()
		fp, err := s.Fingerprint()
		if err != nil {
			t.Fatal(err)
		}
		return fp
	}
	before := fingerprint()
	if again := fingerprint(); again != before {
		t.Fatalf("fingerprint not stable: %s, then %s", before, again)
	}
	for _, file := range []string{"node-password", "sentinel-password", "node-ca.pem", "sentinel-ca.pem"} {
		writeSecret(t, dir, file, "two")
		after := fingerprint()
		if after == before {
			t.Errorf("fingerprint unchanged after %s changed", file)
		}
		before = after
	}
	s.FailureBudget.Zones = map[string]string{"127.0.0.1:26379": "z1"}
	if fingerprint() == before {
		t.Error("a zone map does not change the fingerprint: a reload would not apply it")
	}
}

// A config built in code (flags, tests, tools) is checked by Complete as a
// file is at load: a master name that cannot be a label value never
// reaches a watcher.
func TestCompleteChecksEntriesBuiltInCode(t *testing.T) {
	cfg := &config.Config{}
	SetEntries(cfg, []Set{{Sentinels: []string{"127.0.0.1:26379"}, Masters: []string{"bad\nname"}}})
	err := cfg.Complete()
	want := `sentinel cluster 1 ("sentinel"): masters[0] "bad\nname": a master name must be printable ASCII without spaces, at most 256 bytes`
	if err == nil || err.Error() != want {
		t.Errorf("Complete: %v, want %q", err, want)
	}
	SetEntries(cfg, []Set{{Sentinels: []string{"127.0.0.1:26379"}}})
	if err := cfg.Complete(); err != nil {
		t.Fatal(err)
	}
	if got := Entries(cfg)[0]; got.Name != DefaultName || got.CommandTimeout != DefaultCommandTimeout {
		t.Errorf("Complete did not apply the defaults: %+v", got)
	}
}
