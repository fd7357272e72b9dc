package redis

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/collector/budget"
	"github.com/failover-exporter/failover_exporter/internal/lab"
	"github.com/failover-exporter/failover_exporter/systems/redis/proto"
)

// labBudget asks the failure budget of a lab exporter's latest snapshot.
type labBudget struct {
	t *testing.T
	e *exporter
}

// answer is the answer from the latest snapshot, or, as the endpoint's 503,
// an error when the latest refresh failed.
func (lb labBudget) answer(scope budget.Scope, id string) (budget.Answer, error) {
	lb.t.Helper()
	st := lb.e.w.Current()
	if !st.Up {
		return budget.Answer{}, fmt.Errorf("no answer: the latest refresh failed: %v", st.LastError)
	}
	a, err := answerBudget(st.Snapshot, budget.Question{Scope: scope, ID: id})
	if err != nil {
		lb.t.Fatalf("%s %s: %v", scope, id, err)
	}
	return a, nil
}

func (lb labBudget) ask(scope budget.Scope, id string) budget.Answer {
	lb.t.Helper()
	a, err := lb.answer(scope, id)
	if err != nil {
		lb.t.Fatalf("%s %s: %v", scope, id, err)
	}
	return a
}

// expect waits until the answer about a node has the reasons given
// (comma-separated, in order; "" for safe).
func (lb labBudget) expect(id, what, wantReasons string) budget.Answer {
	lb.t.Helper()
	var a budget.Answer
	lab.RedisWaitFor(lb.t, 20*time.Second, what, func() error {
		var err error
		if a, err = lb.answer(ScopeNode, id); err != nil {
			return err
		}
		if got := reasons(a); got != wantReasons || a.Safe != (wantReasons == "") {
			return fmt.Errorf("node %s: safe %v, reasons %q, want %q: %+v", id, a.Safe, got, wantReasons, a.Findings)
		}
		return nil
	})
	return a
}

// TestLabBudgetReshard checks the slot_migration rule against a real
// classic reshard (issue 42, item 1). An empty master E (a replica turned
// master with CLUSTER RESET SOFT and CLUSTER MEET) imports one slot of
// master M1, which has 60 keys in it; 50 of them are MIGRATEd. Then:
//
//   - E and M1 answer not safe with slot_migration naming the slot (before
//     the fix, E, serving no slot, was safe);
//   - E is killed by its PID: the 50 migrated keys are unreachable (M1
//     answers ASK towards E, which does not answer) while the 10 others
//     are still served, and after E's restart (the lab persists nothing)
//     they are gone: the prediction was right;
//   - the move is finished with CLUSTER SETSLOT NODE: no slot_migration
//     remains, M1 answers as before the move, and E, now serving the slot
//     without a replica, as such a master; moved back the same way, E is
//     an empty master again and answers safe, as at the start.
func TestLabBudgetReshard(t *testing.T) {
	skipIfShort(t)
	c := lab.StartRedisCluster(t, lab.RedisOptions{Masters: 3, Replicas: 1})
	masters := c.Masters(t)
	slices.SortFunc(masters, func(a, b lab.RedisNode) int { return a.Port - b.Port })
	m1, m3 := masters[0], masters[2]
	r1 := replicaOf(t, c, m1)
	empty := replicaOf(t, c, m3)
	e := startExporter(t, c.Addrs()[:1])
	e.waitHealthy(c, 1)
	lb := labBudget{t, e}

	// E: a replica made an empty master of the same cluster.
	c.CLI(t, empty.Port, "CLUSTER", "RESET", "SOFT")
	c.CLI(t, empty.Port, "CLUSTER", "MEET", c.Host(m1.Port), strconv.Itoa(m1.Port))
	lab.RedisWaitFor(t, 30*time.Second, "E an empty master known to all, in the exporter too", func() error {
		for _, n := range c.Nodes(t) {
			if n.ID == empty.ID && (!n.Master || n.Slots != 0) {
				return fmt.Errorf("E is still %+v in %s's view", n, c.Addrs()[0])
			}
		}
		for _, p := range []int{m1.Port, empty.Port} {
			if nodes := c.CLI(t, p, "CLUSTER", "NODES"); !strings.Contains(nodes, m1.ID) || !strings.Contains(nodes, empty.ID) {
				return fmt.Errorf("port %d does not know both M1 and E yet", p)
			}
		}
		// A reset node says cluster_state:fail until it has heard from
		// the masters; MIGRATE to it is refused until then.
		if info := c.CLI(t, empty.Port, "CLUSTER", "INFO"); !strings.Contains(info, "cluster_state:ok") {
			return fmt.Errorf("E does not say cluster_state:ok yet")
		}
		n := e.w.Current().Snapshot.findNode(empty.ID)
		if n == nil || n.Role != RoleMaster || !n.Reachable || n.Slots != 0 {
			return fmt.Errorf("the exporter has E as %+v", n)
		}
		return nil
	})
	// The answers before the move.
	baseM1 := lb.expect(m1.ID, "M1 before the move", "serves_slots")
	lb.expect(empty.ID, "empty master E before the move", "")

	// 60 keys in M1's first slot, 50 of them moved.
	slot := m1.SlotRanges[0][0]
	tag := ""
	for i := 0; tag == ""; i++ {
		if candidate := "{t" + strconv.Itoa(i) + "}"; redisproto.KeySlot(candidate) == slot {
			tag = candidate
		}
	}
	var keys []string
	mset := []string{"MSET"}
	for i := range 60 {
		key := tag + ":" + strconv.Itoa(i)
		keys = append(keys, key)
		mset = append(mset, key, "v"+strconv.Itoa(i))
	}
	c.CLI(t, m1.Port, mset...)
	moved, left := keys[:50], keys[50:]
	slotText := strconv.Itoa(slot)
	c.CLI(t, empty.Port, "CLUSTER", "SETSLOT", slotText, "IMPORTING", m1.ID)
	c.CLI(t, m1.Port, "CLUSTER", "SETSLOT", slotText, "MIGRATING", empty.ID)
	c.CLI(t, m1.Port, append([]string{"MIGRATE", c.Host(empty.Port), strconv.Itoa(empty.Port), "", "0", "5000", "KEYS"}, moved...)...)

	// The prediction: both ends are unsafe, naming the slot.
	wantAtRisk := slotText + "-" + slotText
	a := lb.expect(empty.ID, "importing E unsafe", "slot_migration")
	if strings.Join(a.AtRisk, ",") != wantAtRisk || a.Findings[0].Count != 1 || !strings.Contains(a.Findings[0].Message, "slot "+slotText+" from "+m1.Addr+" to "+empty.Addr) {
		t.Errorf("E: at risk %v, findings %+v; want slot %d from M1 to E", a.AtRisk, a.Findings, slot)
	}
	a = lb.expect(m1.ID, "migrating M1 unsafe", "serves_slots,slot_migration")
	if a.FailoverTo != "" || !strings.HasPrefix(a.Advice, "finish the slot migration first") {
		t.Errorf("M1 mid-move: failover_to %q, advice %q; want none before the move ends", a.FailoverTo, a.Advice)
	}
	lb.expect(r1.ID, "M1's replica still safe", "")
	s := e.gather()
	if err := firstError(
		s.expect(0, "redis_cluster_node_safe_to_stop", addrLabel(empty.Port)...),
		s.expect(1, "redis_cluster_node_stop_unsafe", nodeLabels3(empty.Port, "reason", "slot_migration")...),
		s.expect(1, "redis_cluster_node_stop_unsafe", nodeLabels3(m1.Port, "reason", "slot_migration")...),
		s.expect(0, "redis_cluster_node_stop_unsafe", nodeLabels3(r1.Port, "reason", "slot_migration")...),
	); err != nil {
		t.Error(err)
	}

	if n := c.CLI(t, empty.Port, "DBSIZE"); n != "50" {
		t.Fatalf("E holds %s keys after the MIGRATE, want the 50 moved", n)
	}

	// The outcome: E killed by its PID; the moved keys are out of reach,
	// the others still served by M1.
	pid := c.PID(t, empty.Port)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill E: %v", err)
	}
	lab.RedisWaitFor(t, 10*time.Second, "E's process gone", func() error {
		if err := syscall.Kill(pid, 0); err != syscall.ESRCH {
			return fmt.Errorf("pid %d still there (%v)", pid, err)
		}
		return nil
	})
	for _, key := range moved[:3] {
		reply, err := c.TryCLI(m1.Port, "GET", key)
		if err != nil || !strings.HasPrefix(reply, "ASK "+slotText+" ") || !strings.HasSuffix(reply, strconv.Itoa(empty.Port)) {
			t.Errorf("GET %s at M1 after E's kill: %q %v, want ASK to E", key, reply, err)
		}
		if reply, err := c.TryCLI(empty.Port, "GET", key); err == nil {
			t.Errorf("GET %s at E, killed: %q, want no answer", key, reply)
		}
	}
	if reply := c.CLI(t, m1.Port, "GET", left[0]); reply != "v50" {
		t.Errorf("GET %s, not moved, at M1: %q", left[0], reply)
	}
	// Restarted, E has lost them: nothing was persisted.
	c.Restart(t, empty.Port)
	lab.RedisWaitFor(t, 20*time.Second, "E back, saying cluster_state:ok", func() error {
		info, err := c.TryCLI(empty.Port, "CLUSTER", "INFO")
		if err == nil && !strings.Contains(info, "cluster_state:ok") {
			err = fmt.Errorf("E does not say cluster_state:ok yet")
		}
		return err
	})
	// E holds no key but those of the slot it imports.
	found, err := strconv.Atoi(c.CLI(t, empty.Port, "DBSIZE"))
	if err != nil || found != 0 {
		t.Errorf("after E's restart it holds %d keys (%v); the lab persists nothing, so the 50 moved are gone", found, err)
	}
	t.Logf("E killed mid-move: the %d moved keys were unreachable, and %d of them survived its restart", len(moved), found)

	// E still imports after its restart (nodes.conf keeps the state): still
	// unsafe. The move is finished: the rest of the keys, then SETSLOT NODE.
	lb.expect(empty.ID, "restarted E still importing", "slot_migration")
	c.CLI(t, m1.Port, append([]string{"MIGRATE", c.Host(empty.Port), strconv.Itoa(empty.Port), "", "0", "5000", "KEYS"}, left...)...)
	finish := func(slot int, to lab.RedisNode, ports ...int) {
		t.Helper()
		for _, p := range ports {
			c.CLI(t, p, "CLUSTER", "SETSLOT", strconv.Itoa(slot), "NODE", to.ID)
		}
	}
	finish(slot, empty, empty.Port, m1.Port, masters[1].Port, m3.Port)
	a = lb.expect(m1.ID, "M1 once the move is over", "serves_slots")
	if a.FailoverTo != baseM1.FailoverTo || a.FailoverTo == "" {
		t.Errorf("M1 after the move: failover_to %q, before it %q", a.FailoverTo, baseM1.FailoverTo)
	}
	lb.expect(empty.ID, "E serving the slot, with no replica", "serves_slots,no_healthy_replica")

	// Moved back: E is an empty master again, safe, as before the reshard.
	c.CLI(t, m1.Port, "CLUSTER", "SETSLOT", slotText, "IMPORTING", empty.ID)
	c.CLI(t, empty.Port, "CLUSTER", "SETSLOT", slotText, "MIGRATING", m1.ID)
	lb.expect(empty.ID, "E migrating the slot back", "serves_slots,no_healthy_replica,slot_migration")
	c.CLI(t, empty.Port, append([]string{"MIGRATE", c.Host(m1.Port), strconv.Itoa(m1.Port), "", "0", "5000", "KEYS"}, left...)...)
	finish(slot, m1, m1.Port, empty.Port, masters[1].Port, m3.Port)
	lb.expect(empty.ID, "E empty again", "")
	lb.expect(m1.ID, "M1 as before", "serves_slots")
	lab.RedisWaitFor(t, 10*time.Second, "no slot_migration series left", func() error {
		s := e.gather()
		for _, p := range c.Ports() {
			if err := s.expect(0, "redis_cluster_node_stop_unsafe", nodeLabels3(p, "reason", "slot_migration")...); err != nil {
				return err
			}
		}
		return nil
	})
}

// TestValkey9BudgetAtomicMigration checks the slot_migration rule against
// Valkey 9.1's atomic slot migration, whatever REDIS_LAB_SERVER says: 3,001
// slots holding 20,000 keys move from M0 to M1, slowed on the source
// (rdb-key-save-delay) so the move lasts a few seconds. While it runs both
// ends answer slot_migration with the slots in flight at risk, and M0's
// replica is still safe. The target is then killed by its PID: the job
// fails (the stop interrupts the move, as answered), the slots stay with
// M0, and once no job runs no answer carries slot_migration.
func TestValkey9BudgetAtomicMigration(t *testing.T) {
	skipIfShort(t)
	c := lab.StartRedisCluster(t, lab.RedisOptions{Masters: 3, Replicas: 1, Server: "valkey9"})
	e := startExporter(t, c.Addrs()[:1])
	e.waitHealthy(c, 1)
	lb := labBudget{t, e}
	var m0, m1 lab.RedisNode
	for _, m := range c.Masters(t) {
		switch {
		case m.OwnsSlot(0):
			m0 = m
		case m1.ID == "":
			m1 = m
		}
	}
	r0 := replicaOf(t, c, m0)
	const first, last, keys = 0, 3000, 20000
	loadKeys(t, c, m0.Port, first, last, keys)
	lb.expect(m1.ID, "M1 before the move", "serves_slots")
	c.CLI(t, m0.Port, "CONFIG", "SET", "rdb-key-save-delay", "200")
	c.CLI(t, m0.Port, "CLUSTER", "MIGRATESLOTS", "SLOTSRANGE", strconv.Itoa(first), strconv.Itoa(last), "NODE", m1.ID)

	// The answers while the job runs, and the job still running after.
	// At risk: the slots in flight, within the source's own.
	for _, end := range []struct {
		lab.RedisNode
		atRisk string
	}{{m1, "0-3000"}, {m0, labRanges(m0)}} {
		a := lb.expect(end.ID, end.Addr+" an end of the running job", "serves_slots,slot_migration")
		f := a.Findings[1]
		if f.Count != last-first+1 || !strings.Contains(f.Message, "slots 0-3000 from "+m0.Addr+" to "+m1.Addr+" (atomic slot migration job ") ||
			!slices.Contains(a.AtRisk, end.atRisk) || a.FailoverTo != "" || !strings.HasPrefix(a.Advice, "let the atomic slot migration end first") {
			t.Errorf("%s: %+v, at risk %v, failover_to %q, advice %q", end.Addr, f, a.AtRisk, a.FailoverTo, a.Advice)
		}
	}
	lb.expect(r0.ID, "M0's replica safe", "")
	// No ASK while the job runs: the source serves the slots in flight
	// until they are handed over (a classic reshard answers ASK for the
	// keys already moved: testRedirections). By a client that follows no
	// redirection, and by the source's own count.
	beforeASK := e.errorReplies(t, m0.Port)["ASK"]
	client := dialNaive(t, m0.Addr)
	for i := 0; i < 5; i++ {
		client.do(t, "GET", keyInSlotRange(t, "inflight", first, last))
	}
	if out := c.CLI(t, m0.Port, "CLUSTER", "GETSLOTMIGRATIONS"); strings.Contains(out, "success") || strings.Contains(out, "failed") {
		t.Fatalf("the job ended before the answers were checked; slow it down more:\n%s", out)
	}

	if client.errors["ASK"] != 0 {
		t.Errorf("the client got %v from the source of an atomic migration, want no ASK", client.errors)
	}

	// The outcome: the target killed by its PID, the job fails.
	pid := c.PID(t, m1.Port)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill M1: %v", err)
	}
	lab.RedisWaitFor(t, 30*time.Second, "the source says the job failed", func() error {
		if out := c.CLI(t, m0.Port, "CLUSTER", "GETSLOTMIGRATIONS"); !strings.Contains(out, "failed") {
			return fmt.Errorf("not failed yet")
		}
		return nil
	})
	time.Sleep(2 * testRefreshInterval) // a refresh that read the source after the GETs
	if got := e.errorReplies(t, m0.Port)["ASK"]; got != beforeASK {
		t.Errorf("the source's ASK replies went %v -> %v during the atomic migration, want none", beforeASK, got)
	}
	if n := c.Node(t, m0.Port); !n.OwnsSlot(first) || !n.OwnsSlot(last) {
		t.Errorf("after the failed move M0 owns %v, want 0-3000 still", n.SlotRanges)
	}
	c.CLI(t, m0.Port, "CONFIG", "SET", "rdb-key-save-delay", "0")
	lab.RedisWaitFor(t, 20*time.Second, "no slot_migration once no job runs", func() error {
		if a := lb.ask(ScopeNode, m0.ID); slices.ContainsFunc(a.Findings, func(f budget.Finding) bool { return f.Reason == "slot_migration" }) {
			return fmt.Errorf("M0 still %+v", a.Findings)
		}
		return nil
	})
}

// keyInSlotRange is the first key prefix+N whose slot is in [first, last].
func keyInSlotRange(t *testing.T, prefix string, first, last int) string {
	t.Helper()
	for i := range 1_000_000 {
		key := prefix + strconv.Itoa(i)
		if slot := int(redisproto.KeySlot(key)); slot >= first && slot <= last {
			return key
		}
	}
	t.Fatalf("no key of %s in slots %d-%d", prefix, first, last)
	return ""
}
