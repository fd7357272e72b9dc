package settings

import (
	"strings"
	"testing"

	"github.com/failover-exporter/failover_exporter/config"
)

func TestRedisFailureBudget(t *testing.T) {
	base := "redis:\n  - name: r\n    addrs: [\"127.0.0.1:7000\"]\n"
	cases := []struct {
		name, yaml string
		wantErr    string // empty: valid
		check      func(t *testing.T, b Budget)
	}{
		{name: "absent: defaults", yaml: "", check: func(t *testing.T, b Budget) {
			if b.HealthyReplicaHeadroom || b.CaughtUpBound() != DefaultCaughtUpBytes || b.Zones != nil {
				t.Errorf("defaults: %+v, bound %d", b, b.CaughtUpBound())
			}
		}},
		{name: "all set", yaml: "    failure_budget:\n      healthy_replica_headroom: true\n      caught_up_bytes: 0\n      zones: {\"10.0.0.1:7000\": eu-1a, \"[::1]:7001\": eu-1b}\n",
			check: func(t *testing.T, b Budget) {
				if !b.HealthyReplicaHeadroom || b.CaughtUpBound() != 0 || b.Zones["10.0.0.1:7000"] != "eu-1a" || b.Zones["[::1]:7001"] != "eu-1b" {
					t.Errorf("decoded %+v, bound %d", b, b.CaughtUpBound())
				}
			}},
		{name: "unknown key", yaml: "    failure_budget:\n      headroom: true\n", wantErr: "field headroom not found in failure_budget"},
		{name: "negative bound", yaml: "    failure_budget:\n      caught_up_bytes: -1\n", wantErr: "caught_up_bytes -1 must not be negative"},
		{name: "host name", yaml: "    failure_budget:\n      zones: {\"redis-0:7000\": a}\n", wantErr: "not a host name"},
		{name: "no port", yaml: "    failure_budget:\n      zones: {\"10.0.0.1\": a}\n", wantErr: "want HOST:PORT"},
		{name: "empty zone", yaml: "    failure_budget:\n      zones: {\"10.0.0.1:7000\": \" \"}\n", wantErr: "zone name is empty"},
		{name: "not a mapping", yaml: "    failure_budget: yes\n", wantErr: "failure_budget must be a mapping"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.Parse([]byte(base + tc.yaml))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, Clusters(cfg)[0].FailureBudget)
		})
	}
}

func TestRedisFailureBudgetFingerprint(t *testing.T) {
	a := Cluster{Name: "r", Addrs: []string{"127.0.0.1:7000"}}
	b := a
	b.FailureBudget.Zones = map[string]string{"127.0.0.1:7000": "z1"}
	fa, err := a.Fingerprint()
	if err != nil {
		t.Fatal(err)
	}
	fb, err := b.Fingerprint()
	if err != nil {
		t.Fatal(err)
	}
	if fa == fb {
		t.Error("a zone map does not change the fingerprint: a reload would not apply it")
	}
}

// A config built in code (flags, tests, tools) is checked by Complete as a
// file is at load: a bad failure budget never reaches a watcher. (The
// Kafka budget's case is systems/kafka/settings's.)
func TestFailureBudgetCheckedByComplete(t *testing.T) {
	negative := int64(-1)
	for _, tc := range []struct {
		clusters []Cluster
		want     string
	}{
		{[]Cluster{{Addrs: []string{"127.0.0.1:7000"}, FailureBudget: Budget{CaughtUpBytes: &negative}}},
			"failure_budget.caught_up_bytes -1 must not be negative"},
		{[]Cluster{{Addrs: []string{"127.0.0.1:7000"}, FailureBudget: Budget{Zones: map[string]string{"127.0.0.1:7000": ""}}}},
			"failure_budget.zones"},
	} {
		cfg := &config.Config{}
		SetClusters(cfg, tc.clusters)
		err := cfg.Complete()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Complete: %v, want an error saying %q", err, tc.want)
		}
	}
}
