package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/collector/budget"
	"github.com/failover-exporter/failover_exporter/internal/exportertest"
	"github.com/failover-exporter/failover_exporter/internal/lab"
	"github.com/failover-exporter/failover_exporter/systems/redis/proto"
)

// TestSafeToStopRedisReshard asks the exporter about the empty master
// importing a slot in a classic reshard (issue 42, item 1: it was answered
// 200 and the command exited 0, and stopping it lost the keys already
// moved): /api/v1/safe-to-stop answers 409 with slot_migration naming the
// slot, the series say so, the command exits 1 saying why; the command
// waiting with --wait says yes only once the move has been undone (keys
// MIGRATEd back, CLUSTER SETSLOT STABLE on both ends). What a stop of the
// importing node then does is shown in systems/redis's
// TestLabBudgetReshard.
func TestSafeToStopRedisReshard(t *testing.T) {
	c := lab.StartRedisCluster(t, lab.RedisOptions{Masters: 3, Replicas: 1})
	e := exportertest.Start(t, "--redis.addr="+strings.Join(c.Addrs(), ","), "--redis.cluster-name=lab", "--refresh.interval=300ms")
	masters := c.Masters(t)
	slices.SortFunc(masters, func(a, b lab.RedisNode) int { return a.Port - b.Port })
	source := masters[0]
	var target lab.RedisNode
	for _, n := range c.Nodes(t) {
		if n.MasterID == masters[2].ID {
			target = n
		}
	}
	// The target: a replica made an empty master.
	c.CLI(t, target.Port, "CLUSTER", "RESET", "SOFT")
	c.CLI(t, target.Port, "CLUSTER", "MEET", c.Host(source.Port), strconv.Itoa(source.Port))
	lab.RedisWaitFor(t, 30*time.Second, "the target an empty master that knows the source, and is known", func() error {
		if info := c.CLI(t, target.Port, "CLUSTER", "INFO"); !strings.Contains(info, "cluster_state:ok") {
			return fmt.Errorf("target not ok yet")
		}
		for _, p := range []int{source.Port, target.Port} {
			if nodes := c.CLI(t, p, "CLUSTER", "NODES"); !strings.Contains(nodes, source.ID) || !strings.Contains(nodes, target.ID) {
				return fmt.Errorf("port %d does not know both ends yet", p)
			}
		}
		return nil
	})
	ask := func() (int, budget.Answer, string) {
		return queryBudget(t, e, budget.SafeToStopPath, url.Values{"node": {target.Addr}})
	}
	lab.RedisWaitFor(t, 20*time.Second, "the empty target safe before the move", func() error {
		if status, a, msg := ask(); status != http.StatusOK {
			return fmt.Errorf("%d %+v %s", status, a.Findings, msg)
		}
		return nil
	})

	slot := source.SlotRanges[0][0]
	tag := ""
	for i := 0; tag == ""; i++ {
		if candidate := "{r" + strconv.Itoa(i) + "}"; redisproto.KeySlot(candidate) == slot {
			tag = candidate
		}
	}
	mset, keys := []string{"MSET"}, []string{}
	for i := range 50 {
		keys = append(keys, tag+":"+strconv.Itoa(i))
		mset = append(mset, keys[i], "v")
	}
	c.CLI(t, source.Port, mset...)
	slotText := strconv.Itoa(slot)
	c.CLI(t, target.Port, "CLUSTER", "SETSLOT", slotText, "IMPORTING", source.ID)
	c.CLI(t, source.Port, "CLUSTER", "SETSLOT", slotText, "MIGRATING", target.ID)
	c.CLI(t, source.Port, append([]string{"MIGRATE", c.Host(target.Port), strconv.Itoa(target.Port), "", "0", "5000", "KEYS"}, keys...)...)

	// The endpoint: 409, slot_migration, the slot at risk.
	var a budget.Answer
	lab.RedisWaitFor(t, 20*time.Second, "the importing target refused with slot_migration", func() error {
		status, answer, msg := ask()
		if status != http.StatusConflict || len(answer.Findings) != 1 || answer.Findings[0].Reason != "slot_migration" {
			return fmt.Errorf("%d %+v %s", status, answer.Findings, msg)
		}
		a = answer
		return nil
	})
	if want := slotText + "-" + slotText; len(a.AtRisk) != 1 || a.AtRisk[0] != want || a.Findings[0].Count != 1 {
		t.Errorf("at risk %v, findings %+v; want slot %s", a.AtRisk, a.Findings, want)
	}
	// The series.
	waitMetrics(t, e, 10*time.Second, "slot_migration series of both ends", func(m exportertest.Metrics) (bool, string) {
		tv, _ := m.Value("redis_cluster_node_stop_unsafe", map[string]string{"address": target.Addr, "reason": "slot_migration"})
		sv, _ := m.Value("redis_cluster_node_stop_unsafe", map[string]string{"address": source.Addr, "reason": "slot_migration"})
		safe, _ := m.Value("redis_cluster_node_safe_to_stop", map[string]string{"address": target.Addr})
		return tv == 1 && sv == 1 && safe == 0, m.Describe("redis_cluster_node_stop_unsafe", map[string]string{"reason": "slot_migration"})
	})
	// The command: exit 1, in text and in JSON.
	code, out := stopCommand(t, e, 30*time.Second, "--node", target.Addr)
	if code != 1 || !strings.Contains(out, "slot migration in progress: slot "+slotText+" from "+source.Addr+" to "+target.Addr) {
		t.Errorf("safe-to-stop --node %s: exit %d, want 1 naming the move of slot %s:\n%s", target.Addr, code, slotText, out)
	}
	code, out = stopCommand(t, e, 30*time.Second, "--node", target.Addr, "--output", "json")
	var answer budget.Answer
	// The answer first, then the command's one line on stderr.
	if err := json.NewDecoder(strings.NewReader(out)).Decode(&answer); code != 1 || err != nil || len(answer.Findings) != 1 || answer.Findings[0].Reason != "slot_migration" {
		t.Errorf("safe-to-stop --output json: exit %d (%v), want 1 with slot_migration:\n%s", code, err, out)
	}

	// Waiting, the command says yes only once the move is undone: the
	// keys back at the source, neither end migrating or importing.
	type result struct {
		code int
		out  string
	}
	waited := make(chan result, 1)
	go func() {
		code, out := stopCommand(t, e, 2*time.Minute, "--node", target.Addr, "--wait", "90s")
		waited <- result{code, out}
	}()
	time.Sleep(time.Second)
	// The source first takes the keys back as an owner (while migrating it
	// would answer ASK to the target).
	c.CLI(t, source.Port, "CLUSTER", "SETSLOT", slotText, "STABLE")
	c.CLI(t, target.Port, append([]string{"MIGRATE", c.Host(source.Port), strconv.Itoa(source.Port), "", "0", "5000", "KEYS"}, keys...)...)
	undone := time.Now()
	c.CLI(t, target.Port, "CLUSTER", "SETSLOT", slotText, "STABLE")
	r := <-waited
	if r.code != 0 || !strings.Contains(r.out, "not yet: ") || !strings.Contains(r.out, "can be stopped now") {
		t.Fatalf("safe-to-stop --wait while the move is undone: exit %d, want 0 after some 'not yet':\n%s", r.code, r.out)
	}
	if n := c.CLI(t, source.Port, "CLUSTER", "COUNTKEYSINSLOT", slotText); n != "50" {
		t.Errorf("the command said yes %s after the keys went back, and the source holds %s keys of slot %s", time.Since(undone).Round(time.Millisecond), n, slotText)
	}
}
