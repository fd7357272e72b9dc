package redis

import (
	"context"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/redis/rueidis"

	"github.com/failover-exporter/failover_exporter/internal/lab"
	"github.com/failover-exporter/failover_exporter/systems/redis/proto"
	"github.com/failover-exporter/failover_exporter/systems/redis/settings"
)

// TestIntegrationConsistency: a reshard is not a split brain, and a split
// brain is still one (issue 11). No replicas, so that pausing a master does
// not end in a failover that would settle the conflict on its own.
func TestIntegrationConsistency(t *testing.T) {
	c := lab.StartRedisCluster(t, lab.RedisOptions{Masters: 3})
	e := startExporter(t, c.Addrs(), func(cfg *settings.Cluster, _ *log.Logger) {
		cfg.RefreshInterval = 200 * time.Millisecond
	})
	e.waitHealthy(c, 0)

	t.Run("reshard of many slots with keys", func(t *testing.T) { testReshardConverging(t, c, e) })
	t.Run("two masters claim a slot", func(t *testing.T) { testSlotConflict(t, c, e) })
}

func testReshardConverging(t *testing.T, c *lab.RedisCluster, e *exporter) {
	const keys, moved = 30000, 1500
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: c.Addrs(), DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for first := 0; first < keys; first += 1000 {
		cmds := make(rueidis.Commands, 0, 1000)
		for i := first; i < first+1000; i++ {
			cmds = append(cmds, client.B().Set().Key("reshard:"+strconv.Itoa(i)).Value("v").Build())
		}
		for _, r := range client.DoMulti(ctx, cmds...) {
			if err := r.Error(); err != nil {
				t.Fatalf("load keys: %v", err)
			}
		}
	}

	masters := c.Masters(t)
	from, to := masters[0], masters[1]
	reshard := exec.CommandContext(ctx, c.CLIPath(), "--cluster", "reshard", from.Addr,
		"--cluster-from", from.ID, "--cluster-to", to.ID, "--cluster-slots", strconv.Itoa(moved), "--cluster-yes")
	done := make(chan error, 1)
	var output []byte
	start := time.Now()
	go func() {
		var err error
		output, err = reshard.CombinedOutput()
		done <- err
	}()

	// Sample what a Prometheus scraping every 200 ms would see.
	var samples, inconsistent, migrationSeen int
	var maxInMigration float64
	ticker := time.NewTicker(200 * time.Millisecond)
	defer ticker.Stop()
	var reshardErr error
sampling:
	for {
		select {
		case reshardErr = <-done:
			break sampling
		case <-ticker.C:
		}
		s := e.gather()
		samples++
		if v, _ := s.value("redis_cluster_views_consistent"); v != 1 {
			inconsistent++
			if conflict, _ := s.value("redis_cluster_slots_in_conflict"); inconsistent == 1 {
				t.Errorf("views_consistent 0 during the reshard (%s in, slots in conflict %g)", time.Since(start).Round(time.Millisecond), conflict)
			}
		}
		sum := 0.0
		for _, state := range []string{"ok", "pfail", "fail", "unassigned"} {
			v, _ := s.value("redis_cluster_slots", "state", state)
			sum += v
		}
		if sum != redisproto.SlotCount {
			t.Errorf("slot states sum to %g, want %d", sum, redisproto.SlotCount)
		}
		if v, _ := s.value("redis_cluster_slots_in_migration"); v > 0 {
			migrationSeen++
			maxInMigration = max(maxInMigration, v)
		}
	}
	took := time.Since(start)
	if reshardErr != nil {
		t.Fatalf("%s --cluster reshard: %v\n%s", c.CLIPath(), reshardErr, output)
	}
	t.Logf("FIGURE reshard of %d slots (%d keys in the cluster) took %s; %d samples, %d with a slot in migration (max %g), %d inconsistent",
		moved, keys, took.Round(time.Millisecond), samples, migrationSeen, maxInMigration, inconsistent)
	if migrationSeen == 0 {
		t.Errorf("no sample showed a slot in migration in %s of resharding", took.Round(time.Millisecond))
	}
	lab.RedisWaitFor(t, 10*time.Second, "reshard finished in the exporter", func() error {
		s := e.gather()
		return firstError(
			s.expect(float64(from.Slots-moved), "redis_cluster_node_slots", addrLabel(from.Port)...),
			s.expect(float64(to.Slots+moved), "redis_cluster_node_slots", addrLabel(to.Port)...),
			s.expect(0, "redis_cluster_slots_in_migration"),
			s.expect(1, "redis_cluster_views_consistent"),
		)
	})
}

// testSlotConflict makes two masters claim one slot: the owner is paused,
// and another master with a lower config epoch is told it owns the slot.
// The third master keeps the owner with the higher epoch; only the paused
// owner's own pings would correct the claimant, so the conflict lasts as
// long as the pause.
func testSlotConflict(t *testing.T, c *lab.RedisCluster, e *exporter) {
	masters := c.Masters(t)
	owner, claimant := masters[0], masters[1]
	for _, m := range masters {
		if epoch(t, e, m) > epoch(t, e, owner) {
			owner = m
		}
	}
	for _, m := range masters {
		if m.ID != owner.ID {
			claimant = m
			break
		}
	}
	slot := owner.SlotRanges[0][0]
	c.Pause(t, owner.Port)
	resumed := false
	defer func() {
		if !resumed {
			c.Resume(t, owner.Port)
		}
	}()
	c.CLI(t, claimant.Port, "CLUSTER", "SETSLOT", strconv.Itoa(slot), "NODE", claimant.ID)
	start := time.Now()
	took := lab.RedisWaitFor(t, disputeSettleTime+10*time.Second, "conflict reported", func() error {
		s := e.gather()
		return firstError(
			s.expect(0, "redis_cluster_views_consistent"),
			s.expect(1, "redis_cluster_slots_in_conflict"),
			s.expect(0, "redis_cluster_slots_in_migration"),
		)
	})
	if took < disputeSettleTime-time.Second {
		t.Errorf("conflict reported after %s, before the settling time %s", took, disputeSettleTime)
	}
	t.Logf("conflict reported %s after the SETSLOT", time.Since(start).Round(time.Millisecond))

	c.Resume(t, owner.Port)
	resumed = true
	lab.RedisWaitFor(t, 20*time.Second, "owner back, conflict gone", func() error {
		s := e.gather()
		return firstError(
			s.expect(1, "redis_cluster_views_consistent"),
			s.expect(0, "redis_cluster_slots_in_conflict"),
			s.expect(float64(owner.Slots), "redis_cluster_node_slots", addrLabel(owner.Port)...),
		)
	})
}

// epoch returns a node's config epoch as the exporter shows it.
func epoch(t *testing.T, e *exporter, n lab.RedisNode) float64 {
	t.Helper()
	v, ok := e.gather().value("redis_cluster_node_config_epoch", addrLabel(n.Port)...)
	if !ok {
		t.Fatalf("no config epoch for %s", n.Addr)
	}
	return v
}
