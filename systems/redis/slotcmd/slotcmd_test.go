package slotcmd

import (
	"context"
	"strings"
	"testing"
	"time"

	redissettings "github.com/failover-exporter/failover_exporter/systems/redis/settings"
)

// The slot command against a real cluster, with owners, is tested in e2e
// (TestSlotCommand, and TestSlotCommandAgreesWithMetricsDuringFailover
// against /metrics during a failover) and systems/redis (ReadSlotOwners);
// these are the cases no server is needed for.
func TestRunWithoutSeedsPrintsSlots(t *testing.T) {
	var out strings.Builder
	// Slots as redis-server 7.0.15 gives them: CLUSTER KEYSLOT foo, bar.
	if err := Run(context.Background(), &out, []string{"foo", "bar"}, redissettings.Cluster{}); err != nil {
		t.Fatal(err)
	}
	if out.String() != "foo 12182\nbar 5061\n" {
		t.Errorf("without addresses: %q", out.String())
	}
}

func TestRunErrors(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out strings.Builder
	if err := Run(ctx, &out, nil, redissettings.Cluster{}); err == nil || err.Error() != "no keys given" {
		t.Errorf("no keys: err = %v", err)
	}
	err := Run(ctx, &out, []string{"foo"}, redissettings.Cluster{Addrs: []string{"127.0.0.1:1"}})
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") || !strings.Contains(err.Error(), "no seed answered CLUSTER NODES") {
		t.Errorf("no reachable seed: err = %v, want one naming the seed", err)
	}
	// Every seed is tried, and named.
	err = Run(ctx, &out, []string{"foo"}, redissettings.Cluster{Addrs: []string{"127.0.0.1:1", "127.0.0.1:2"}})
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") || !strings.Contains(err.Error(), "127.0.0.1:2") ||
		!strings.HasPrefix(err.Error(), "no seed answered CLUSTER NODES: ") {
		t.Errorf("no reachable seed of two: err = %v, want one naming both", err)
	}
	err = Run(ctx, &out, []string{"foo"}, redissettings.Cluster{Addrs: []string{"127.0.0.1:1"}, RefreshInterval: -time.Second})
	if err == nil {
		t.Error("invalid settings: want an error")
	}
	if out.Len() != 0 {
		t.Errorf("printed %q on errors", out.String())
	}
}
