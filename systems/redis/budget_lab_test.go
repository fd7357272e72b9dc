package redis

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/failover-exporter/failover_exporter/collector/budget"
	"github.com/failover-exporter/failover_exporter/internal/lab"
	"github.com/failover-exporter/failover_exporter/systems/redis/settings"
)

// TestLabFailureBudget checks the failure budget's predictions against what
// a real cluster then does (issue 28): the cluster's own CLUSTER NODES,
// read from a surviving node once cluster-node-timeout and a replica's
// election delay have passed, is the oracle. One cluster of 3 masters with
// a replica each goes through four stops in turn:
//
//  1. M2, a master with a healthy replica R2: unsafe (serves_slots), the
//     answer names R2; after CLUSTER FAILOVER on R2, M2 (now a replica) is
//     safe, and killing it leaves every slot served.
//  2. M1 after its replica R1 was killed: unsafe (no_healthy_replica), and
//     its kill leaves exactly the predicted slots unserved; the configured
//     zone holding M1 and R1 predicted the same before anything was killed.
//  3. M3 once M1 is down: 2 of 3 slot-serving masters can vote, the
//     majority; stopping M3 leaves too few to authorise R3's promotion
//     (masters_majority), and R3 indeed is not promoted.
//
// It is not named Integration: the Valkey reruns of the integration tests
// need not repeat it (about 30 s).
func TestLabFailureBudget(t *testing.T) {
	skipIfShort(t)
	c := lab.StartRedisCluster(t, lab.RedisOptions{Masters: 3, Replicas: 1})
	masters := c.Masters(t)
	slices.SortFunc(masters, func(a, b lab.RedisNode) int { return a.Port - b.Port })
	m1, m2, m3 := masters[0], masters[1], masters[2]
	r1, r2, r3 := replicaOf(t, c, m1), replicaOf(t, c, m2), replicaOf(t, c, m3)
	zones := map[string]string{}
	for _, n := range c.Nodes(t) {
		zones[n.Addr] = "zone-b"
	}
	zones[m1.Addr], zones[r1.Addr] = "zone-a", "zone-a"
	e := startExporter(t, c.Addrs()[:1], func(rc *settings.Cluster, _ *log.Logger) { rc.FailureBudget.Zones = zones })
	e.waitHealthy(c, 1)

	ask := func(scope budget.Scope, id string) budget.Answer {
		t.Helper()
		a, err := answerBudget(e.w.Current().Snapshot, budget.Question{Scope: scope, ID: id})
		if err != nil {
			t.Fatalf("%s %s: %v", scope, id, err)
		}
		return a
	}
	// expectAnswer waits until the answer about a node or zone has the
	// reasons given (comma-separated, in order; "" for safe).
	expectAnswer := func(scope budget.Scope, id, what, wantReasons string) budget.Answer {
		t.Helper()
		var a budget.Answer
		lab.RedisWaitFor(t, 20*time.Second, what, func() error {
			a = ask(scope, id)
			if got := reasons(a); got != wantReasons || a.Safe != (wantReasons == "") {
				return fmt.Errorf("%s %s: safe %v, reasons %q, want %q", scope, id, a.Safe, got, wantReasons)
			}
			return nil
		})
		return a
	}

	// The replicas are safe to stop; the masters are not, and the answer
	// for M2 names R2 and what to run on it.
	expectAnswer(ScopeNode, r3.Addr, "replica R3 safe", "")
	if err := e.gather().expect(1, "redis_cluster_node_safe_to_stop", "address", r3.Addr); err != nil {
		t.Error(err)
	}
	a := expectAnswer(ScopeNode, m2.ID, "master M2 unsafe: serves slots", "serves_slots")
	wantAdvice := fmt.Sprintf("fail over to replica %s (%s) first: redis-cli -h %s -p %d CLUSTER FAILOVER", r2.ID, r2.Addr, c.Host(r2.Port), r2.Port)
	if a.Advice != wantAdvice {
		t.Errorf("advice for M2: %q, want %q", a.Advice, wantAdvice)
	}
	if got, want := strings.Join(a.AtRisk, ","), labRanges(m2); got != want || a.Facts["unserved_slots_failover"] != float64(m2.Slots) {
		t.Errorf("M2 at risk %s (%v until failover), want %s (%d) as CLUSTER NODES says", got, a.Facts["unserved_slots_failover"], want, m2.Slots)
	}
	// The cluster-node-timeout read from the nodes (the lab's 1 s).
	if got := a.Facts["cluster_node_timeout_seconds"]; got != c.NodeTimeout().Seconds() {
		t.Errorf("cluster_node_timeout_seconds %v, want the lab's %v", got, c.NodeTimeout().Seconds())
	}
	// Zone A holds M1 and its only replica: its loss would leave M1's
	// slots unserved for good (checked against the cluster in step 2).
	zoneA := expectAnswer(ScopeZone, "zone-a", "zone A unsafe", "serves_slots,no_healthy_replica")
	if got, want := strings.Join(zoneA.AtRisk, ","), labRanges(m1); got != want || zoneA.Facts["unserved_slots_never"] != float64(m1.Slots) {
		t.Errorf("zone A at risk %s (%v never), want %s (%d)", got, zoneA.Facts["unserved_slots_never"], want, m1.Slots)
	}

	// 1. Fail over to R2 first, as advised: then M2 is a replica and safe,
	// and its stop leaves every slot served.
	c.ManualFailover(t, r2.Port)
	expectAnswer(ScopeNode, m2.ID, "old master M2 safe once a replica", "")
	c.Kill(t, m2.Port)
	waitFailed(t, c, m2)
	time.Sleep(2 * c.NodeTimeout())
	if unserved, _ := unservedByCluster(t, c); unserved != "" {
		t.Errorf("after stopping M2, a safe replica, the cluster has slots unserved: %s", unserved)
	}
	if info := c.CLI(t, r2.Port, "CLUSTER", "INFO"); !strings.Contains(info, "cluster_state:ok") {
		t.Errorf("after stopping M2: CLUSTER INFO of R2 is not ok:\n%s", info)
	}

	// 2. R1 dies: M1 has no healthy replica; its stop leaves its slots
	// unserved for good, exactly those.
	c.Kill(t, r1.Port)
	a = expectAnswer(ScopeNode, m1.ID, "M1 without a replica", "serves_slots,no_healthy_replica")
	predicted := strings.Join(a.AtRisk, ",")
	if a.Facts["unserved_slots_never"] != float64(m1.Slots) || !strings.Contains(a.Advice, "no healthy replica") {
		t.Errorf("M1: %v slots unserved for good, advice %q; want %d and no replica", a.Facts["unserved_slots_never"], a.Advice, m1.Slots)
	}
	if err := e.gather().expect(1, "redis_cluster_node_stop_unsafe", "address", m1.Addr, "reason", "no_healthy_replica"); err != nil {
		t.Error(err)
	}
	c.Kill(t, m1.Port)
	waitFailed(t, c, m1)
	time.Sleep(3 * c.NodeTimeout()) // a replica, had there been one, would have been promoted
	unserved, slots := unservedByCluster(t, c)
	if unserved != predicted || slots != m1.Slots {
		t.Errorf("CLUSTER NODES of a survivor: slots %s unserved (%d), the budget predicted %s", unserved, slots, predicted)
	}
	if zonePredicted := strings.Join(zoneA.AtRisk, ","); unserved != zonePredicted {
		t.Errorf("zone A's loss (M1 and R1): slots %s unserved, the zone's budget predicted %s", unserved, zonePredicted)
	}

	// 3. With M1 down, 2 of the 3 slot-serving masters vote, the majority:
	// none more may be lost. Stopping M3 leaves R3 without the votes.
	a = expectAnswer(ScopeNode, m3.ID, "M3's stop breaks the majority", "cluster_degraded,masters_majority,serves_slots")
	if a.Facts["unserved_slots_never"] != float64(m3.Slots) || a.Facts["master_losses_tolerated"] != 0 {
		t.Errorf("M3: %v slots unserved for good, %v losses tolerated; want %d, 0", a.Facts["unserved_slots_never"], a.Facts["master_losses_tolerated"], m3.Slots)
	}
	if err := e.gather().expect(0, "redis_cluster_master_losses_tolerated"); err != nil {
		t.Error(err)
	}
	predicted = strings.Join(slices.Sorted(slices.Values(append(strings.Split(predicted, ","), a.AtRisk...))), ",")
	c.Kill(t, m3.Port)
	waitFailed(t, c, m3)
	time.Sleep(5 * c.NodeTimeout()) // R3 would have been elected by now, with the votes
	if unserved, _ := unservedByCluster(t, c); unserved != predicted {
		t.Errorf("after stopping M3: slots %s unserved, the budget predicted %s", unserved, predicted)
	}
	if role := c.CLI(t, r3.Port, "ROLE"); !strings.HasPrefix(role, "slave") && !strings.HasPrefix(role, "replica") {
		t.Errorf("R3 was promoted without a majority of masters: ROLE %q", role)
	}
}

// labRanges formats a node's slot ranges as AtRisk does.
func labRanges(n lab.RedisNode) string {
	var out []string
	for _, r := range n.SlotRanges {
		out = append(out, strconv.Itoa(r[0])+"-"+strconv.Itoa(r[1]))
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}

// unservedByCluster reads CLUSTER NODES from a surviving node: the slot
// ranges of the masters it flags failing (sorted as text, as AtRisk
// compares), and how many slots they hold.
func unservedByCluster(t *testing.T, c *lab.RedisCluster) (string, int) {
	t.Helper()
	var ranges []string
	slots := 0
	for _, n := range c.Nodes(t) {
		if n.Master && n.Failed {
			for _, r := range n.SlotRanges {
				ranges = append(ranges, strconv.Itoa(r[0])+"-"+strconv.Itoa(r[1]))
			}
			slots += n.Slots
		}
	}
	slices.Sort(ranges)
	return strings.Join(ranges, ","), slots
}

// waitFailed waits until a surviving node flags n as failing.
func waitFailed(t *testing.T, c *lab.RedisCluster, n lab.RedisNode) {
	t.Helper()
	lab.RedisWaitFor(t, 20*time.Second, n.Addr+" flagged failing by a survivor", func() error {
		for _, seen := range c.Nodes(t) {
			if seen.ID == n.ID && seen.Failed {
				return nil
			}
		}
		return fmt.Errorf("%s not flagged fail", n.Addr)
	})
}
