package redis

import (
	"fmt"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/internal/lab"
)

// TestIntegrationResetReplicaVerdicts: the cluster-wide verdicts come from
// the masters that serve slots (issue 20, item 2). After CLUSTER RESET SOFT
// of a replica, Valkey 9.1 takes the node back as a member within a second
// or two, an empty master that says cluster_state:fail for about the
// rejoin delay (cluster-node-timeout, 0.5 to 5 s) while every slot-serving
// master says ok; redis_cluster_state_ok must stay 1 through it, and the
// node's own state shows in its own series only. Redis 7 and Valkey 8.1
// leave the reset node out (a foreign node); the verdict must hold there
// too. A real failure (the shard with no replica left loses its master)
// still reads 0.
func TestIntegrationResetReplicaVerdicts(t *testing.T) {
	skipIfShort(t)
	// A node timeout of 2 s makes the reset node's fail window a few
	// refreshes long.
	c := lab.StartRedisCluster(t, lab.RedisOptions{Masters: 3, Replicas: 1, NodeTimeout: 2 * time.Second})
	e := startExporter(t, c.Addrs()[:1])
	e.waitHealthy(c, 1)
	masters := c.Masters(t)
	master := masters[0]
	reset := replicaOf(t, c, master)

	mastersSayOK := func() error {
		for _, m := range masters {
			out, err := c.TryCLI(m.Port, "CLUSTER", "INFO")
			if err != nil {
				return err
			}
			if !containsLine(out, "cluster_state:ok") {
				return fmt.Errorf("master %s does not say cluster_state:ok", m.Addr)
			}
		}
		return nil
	}

	c.CLI(t, reset.Port, "CLUSTER", "RESET", "SOFT")
	resetAt := time.Now()
	var (
		nodeSaidFail     time.Duration // when the reset node first said fail, as a member, in the exporter
		nodeSaidFailLast time.Duration
		memberAgain      time.Duration // 0: never left, or never back
		wasForeign       bool
		samples          int
	)
	// Long enough for Valkey 9's rejoin and its rejoin delay (2 s here).
	for time.Since(resetAt) < 8*time.Second {
		s := e.gather()
		stateOK, _ := s.value("redis_cluster_state_ok")
		if err := mastersSayOK(); err != nil {
			t.Fatalf("%s after the reset: %v (the test assumes the cluster stays ok)", time.Since(resetAt), err)
		}
		samples++
		if stateOK != 1 {
			t.Errorf("%s after the reset: redis_cluster_state_ok = %g while every slot-serving master says ok",
				time.Since(resetAt).Round(time.Millisecond), stateOK)
		}
		_, member := s.value("redis_cluster_node_up", addrLabel(reset.Port)...)
		if !member {
			wasForeign = true
		} else if wasForeign && memberAgain == 0 {
			memberAgain = time.Since(resetAt)
		}
		if v, ok := s.value("redis_cluster_node_cluster_state_ok", addrLabel(reset.Port)...); ok && v == 0 {
			if nodeSaidFail == 0 {
				nodeSaidFail = time.Since(resetAt)
			}
			nodeSaidFailLast = time.Since(resetAt)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("%s: %d samples over 8 s after CLUSTER RESET SOFT of replica %s; foreign for a while %v, a member again after %s; its own cluster_state:fail seen from %s to %s",
		c.Server(), samples, reset.Addr, wasForeign, memberAgain.Round(time.Millisecond), nodeSaidFail.Round(time.Millisecond), nodeSaidFailLast.Round(time.Millisecond))
	if c.Server() == "valkey9" && nodeSaidFail == 0 {
		t.Errorf("valkey9: never saw the reset node's own cluster_state:fail in redis_cluster_node_cluster_state_ok (the case this test is for)")
	}

	// A real failure: the shard whose replica was reset has no replica left;
	// with its master gone, its slots are unserved and the masters say fail.
	c.Kill(t, master.Port)
	took := lab.RedisWaitFor(t, 30*time.Second, "cluster state fail after the master with no replica is killed", func() error {
		return e.gather().expect(0, "redis_cluster_state_ok")
	})
	t.Logf("redis_cluster_state_ok 0 %s after the kill", took.Round(time.Millisecond))
}
