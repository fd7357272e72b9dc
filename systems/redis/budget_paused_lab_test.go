package redis

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/failover-exporter/failover_exporter/internal/lab"
	"github.com/failover-exporter/failover_exporter/systems/redis/settings"
)

// TestLabBudgetPausedReplica checks that a replica the exporter cannot read
// does not count as healthy while the cluster still calls it ok (issue 42,
// item 5). Master M1 has replicas Ra and Rb (Ra the one with the lower
// address, which the budget names first when both are caught up);
// healthy_replica_headroom is on. Ra is paused with SIGSTOP; the node
// timeout (15 s) keeps the cluster from flagging it while the answers are
// read. Then:
//
//   - M1's failover_to is Rb, never the paused Ra (before the fix: Ra);
//   - Rb is M1's last healthy replica: not safe, last_healthy_replica,
//     naming Ra as not read (before the fix: safe);
//   - the cluster's own CLUSTER NODES still has Ra without pfail or fail
//     when the answers are read: the exporter knew before the cluster.
//
// The stop is then done: Rb and M1 are killed. Ra, paused, is not promoted
// once the cluster flags M1 failing: M1's slots are unserved, as the
// headroom answer said they would be with no healthy replica. Ra is resumed
// (SIGCONT) and takes over.
func TestLabBudgetPausedReplica(t *testing.T) {
	skipIfShort(t)
	const nodeTimeout = 15 * time.Second
	c := lab.StartRedisCluster(t, lab.RedisOptions{Masters: 3, Replicas: 2, NodeTimeout: nodeTimeout})
	masters := c.Masters(t)
	slices.SortFunc(masters, func(a, b lab.RedisNode) int { return a.Port - b.Port })
	m1 := masters[0]
	var replicas []lab.RedisNode
	for _, n := range c.Nodes(t) {
		if n.MasterID == m1.ID {
			replicas = append(replicas, n)
		}
	}
	if len(replicas) != 2 {
		t.Fatalf("M1 %s has %d replicas in the lab, want 2", m1.Addr, len(replicas))
	}
	slices.SortFunc(replicas, func(a, b lab.RedisNode) int { return strings.Compare(a.Addr, b.Addr) })
	ra, rb := replicas[0], replicas[1]
	e := startExporter(t, c.Addrs()[:1], func(rc *settings.Cluster, _ *log.Logger) { rc.FailureBudget.HealthyReplicaHeadroom = true })
	e.waitHealthy(c, 2)
	lb := labBudget{t, e}

	// Before: both replicas count; M1's failover_to is Ra; Rb is safe.
	a := lb.expect(m1.ID, "M1 before the pause", "serves_slots")
	if a.FailoverTo != ra.Addr {
		t.Fatalf("M1 before the pause: failover_to %q, want Ra %s (the test pauses the replica the budget names)", a.FailoverTo, ra.Addr)
	}
	lb.expect(rb.ID, "Rb safe before the pause", "")

	c.Pause(t, ra.Port)
	resumed := false
	resume := func() {
		if !resumed {
			c.Resume(t, ra.Port)
			resumed = true
		}
	}
	t.Cleanup(resume)
	paused := time.Now()
	lab.RedisWaitFor(t, 10*time.Second, "the exporter no longer reads Ra", func() error {
		return e.gather().expect(0, "redis_cluster_node_up", addrLabel(ra.Port)...)
	})
	seen := time.Since(paused)

	a = lb.expect(m1.ID, "M1 with Ra paused", "serves_slots")
	if a.FailoverTo != rb.Addr || strings.Contains(a.Advice, ra.Addr) {
		t.Errorf("M1 with Ra paused: failover_to %q, advice %q; want Rb %s, and Ra named nowhere", a.FailoverTo, a.Advice, rb.Addr)
	}
	a = lb.expect(rb.ID, "Rb the last healthy replica", "last_healthy_replica")
	if !strings.Contains(a.Findings[0].Message, "not judged: the exporter did not read "+ra.Addr) {
		t.Errorf("Rb: %q, want it to name Ra as not read", a.Findings[0].Message)
	}
	lb.expect(ra.ID, "Ra itself: stopping it takes nothing counted", "")
	s := e.gather()
	if err := firstError(
		s.expect(0, "redis_cluster_node_safe_to_stop", addrLabel(rb.Port)...),
		s.expect(1, "redis_cluster_node_stop_unsafe", nodeLabels3(rb.Port, "reason", "last_healthy_replica")...),
	); err != nil {
		t.Error(err)
	}
	// The answers were read while the cluster still called Ra ok.
	for _, n := range c.Nodes(t) {
		if n.ID == ra.ID && n.Failed {
			t.Fatalf("the cluster flagged Ra %s after the pause, before the answers were checked: raise the node timeout", time.Since(paused))
		}
	}
	if flags := nodeFlags(c.CLI(t, m1.Port, "CLUSTER", "NODES"), ra.ID); strings.Contains(flags, "fail") {
		t.Fatalf("M1 flags Ra %q %s after the pause, before the answers were checked", flags, time.Since(paused))
	}
	t.Logf("Ra unread in the exporter %s after SIGSTOP; the answers checked %s after it, the cluster not flagging it yet", seen.Round(time.Millisecond), time.Since(paused).Round(time.Millisecond))

	// The stop Rb's answer refused, and M1's loss: with Ra paused, no
	// replica takes M1's slots over.
	c.Kill(t, rb.Port)
	c.Kill(t, m1.Port)
	lab.RedisWaitFor(t, 4*nodeTimeout, "M1 flagged failing by a survivor", func() error {
		for _, n := range c.Nodes(t) {
			if n.ID == m1.ID && n.Failed {
				return nil
			}
		}
		return fmt.Errorf("%s not flagged fail", m1.Addr)
	})
	time.Sleep(3 * time.Second) // a replica able to run would have been elected by now
	if unserved, slots := unservedByCluster(t, c); unserved != labRanges(m1) || slots != m1.Slots {
		t.Errorf("with Rb and M1 stopped and Ra paused, the cluster has %s unserved (%d slots), want M1's %s", unserved, slots, labRanges(m1))
	}
	resume()
	lab.RedisWaitFor(t, 4*nodeTimeout, "Ra, resumed, takes M1's slots over", func() error {
		if role, err := c.TryCLI(ra.Port, "ROLE"); err != nil || !strings.HasPrefix(role, "master") {
			return fmt.Errorf("Ra ROLE %q %v", role, err)
		}
		return nil
	})
}

// nodeFlags are the flags of the node with id in a CLUSTER NODES reply.
func nodeFlags(clusterNodes, id string) string {
	for _, line := range strings.Split(clusterNodes, "\n") {
		if f := strings.Fields(line); len(f) > 2 && f[0] == id {
			return f[2]
		}
	}
	return ""
}

// TestLabBudgetPausedMaster: a master the exporter cannot read, paused
// with SIGSTOP before the cluster flags it (node timeout 15 s), makes its
// only replica's stop not judged (master_not_read); before, the replica
// was safe. The stop is then done: the cluster flags the master failing
// and, its replica gone, its slots stay unserved until it is resumed.
func TestLabBudgetPausedMaster(t *testing.T) {
	skipIfShort(t)
	const nodeTimeout = 15 * time.Second
	c := lab.StartRedisCluster(t, lab.RedisOptions{Masters: 3, Replicas: 1, NodeTimeout: nodeTimeout})
	masters := c.Masters(t)
	slices.SortFunc(masters, func(a, b lab.RedisNode) int { return a.Port - b.Port })
	m1 := masters[0]
	r1 := replicaOf(t, c, m1)
	// Seeded at another master: the paused one is not the exporter's way in.
	e := startExporter(t, []string{masters[1].Addr})
	e.waitHealthy(c, 1)
	lb := labBudget{t, e}
	lb.expect(r1.ID, "R1 safe while M1 is read", "")

	c.Pause(t, m1.Port)
	resumed := false
	resume := func() {
		if !resumed {
			c.Resume(t, m1.Port)
			resumed = true
		}
	}
	t.Cleanup(resume)
	paused := time.Now()
	a := lb.expect(r1.ID, "R1 not judged with M1 unread", "master_not_read")
	if !strings.Contains(a.Findings[0].Message, "did not read "+m1.Addr) || strings.Join(a.AtRisk, ",") != labRanges(m1) {
		t.Errorf("R1: %+v, at risk %v; want M1 named and its slots %s", a.Findings, a.AtRisk, labRanges(m1))
	}
	if err := e.gather().expect(1, "redis_cluster_node_stop_unsafe", nodeLabels3(r1.Port, "reason", "master_not_read")...); err != nil {
		t.Error(err)
	}
	// The cluster's view, from a survivor (c.Nodes would ask the paused M1
	// first).
	survivor := masters[1]
	if flags := nodeFlags(c.CLI(t, survivor.Port, "CLUSTER", "NODES"), m1.ID); strings.Contains(flags, "fail") {
		t.Fatalf("the cluster flagged M1 %q %s after the pause, before the answer was checked", flags, time.Since(paused))
	}
	t.Logf("R1's stop not judged %s after M1's pause, the cluster not flagging M1 yet", time.Since(paused).Round(time.Millisecond))

	// The stop: R1 killed; M1's slots are then unserved once the cluster
	// gives up on M1, with no replica to promote.
	c.Kill(t, r1.Port)
	lab.RedisWaitFor(t, 4*nodeTimeout, "M1 flagged failing by a survivor", func() error {
		if flags := nodeFlags(c.CLI(t, survivor.Port, "CLUSTER", "NODES"), m1.ID); !strings.Contains(flags, "fail") || strings.Contains(flags, "fail?") {
			return fmt.Errorf("%s flags %q", m1.Addr, flags)
		}
		return nil
	})
	time.Sleep(3 * time.Second) // a replica able to run would have been elected by now
	info := c.CLI(t, survivor.Port, "CLUSTER", "INFO")
	if !strings.Contains(info, "cluster_state:fail") || !strings.Contains(info, "cluster_slots_fail:"+strconv.Itoa(m1.Slots)) {
		t.Errorf("with R1 stopped and M1 paused, want M1's %d slots failing; a survivor's CLUSTER INFO:\n%s", m1.Slots, info)
	}
	resume()
	lab.RedisWaitFor(t, 4*nodeTimeout, "M1, resumed, serves again", func() error {
		if info, err := c.TryCLI(masters[1].Port, "CLUSTER", "INFO"); err != nil || !strings.Contains(info, "cluster_state:ok") {
			return fmt.Errorf("cluster not ok: %v", err)
		}
		return nil
	})
}
