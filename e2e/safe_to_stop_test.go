package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/collector/budget"
	"github.com/failover-exporter/failover_exporter/internal/exportertest"
	"github.com/failover-exporter/failover_exporter/internal/lab"
)

// queryBudget asks the exporter's /api/v1/safe-to-stop (or recovered) with
// params, and returns the status and the answer or error message.
func queryBudget(t *testing.T, e *exportertest.Exporter, path string, params url.Values) (int, budget.Answer, string) {
	t.Helper()
	resp, err := e.Get(path + "?" + params.Encode())
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("GET %s?%s: Content-Type %q, want application/json", path, params.Encode(), ct)
	}
	var answer budget.Answer
	var failure budget.ErrorResponse
	switch resp.StatusCode {
	case http.StatusOK, http.StatusConflict:
		if err := json.Unmarshal(body, &answer); err != nil {
			t.Fatalf("GET %s: %d with no answer: %v: %s", path, resp.StatusCode, err, body)
		}
	default:
		if err := json.Unmarshal(body, &failure); err != nil {
			t.Fatalf("GET %s: %d with no error message: %v: %s", path, resp.StatusCode, err, body)
		}
	}
	return resp.StatusCode, answer, failure.Error
}

// stopCommand runs `failover_exporter safe-to-stop` against e and returns
// its exit code and output.
func stopCommand(t *testing.T, e *exportertest.Exporter, timeout time.Duration, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, exportertest.Binary(t), append([]string{"safe-to-stop", "--url", e.URL, "--poll", "250ms"}, args...)...)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, string(out)
	case errors.As(err, &exit) && ctx.Err() == nil:
		return exit.ExitCode(), string(out)
	}
	t.Fatalf("safe-to-stop %s: %v (ran past %s)\n%s", strings.Join(args, " "), err, timeout, out)
	return -1, ""
}

// TestSafeToStopRedisEndpointAndCommand asks a real Redis Cluster's
// exporter what stopping a replica and a master would do, through
// /api/v1/safe-to-stop and the safe-to-stop command, and holds each answer
// against what the cluster then does: a master is refused while it serves
// slots, with its replica named; the command waits until CLUSTER FAILOVER
// has really made it a replica (CLUSTER NODES says so when it returns);
// stopping it then leaves every slot served; after its restart the
// recovered question waits until its own INFO says its link is up; a
// cluster the exporter cannot read gets 503, never a verdict.
func TestSafeToStopRedisEndpointAndCommand(t *testing.T) {
	c := lab.StartRedisCluster(t, lab.RedisOptions{Masters: 3, Replicas: 1})
	const refresh = 300 * time.Millisecond
	e := exportertest.Start(t, "--redis.addr="+strings.Join(c.Addrs(), ","), "--redis.cluster-name=lab",
		"--refresh.interval="+refresh.String())
	waitMetrics(t, e, 30*time.Second, "every slot ok with a replica", func(m exportertest.Metrics) (bool, string) {
		ok, _ := m.Value("redis_cluster_slots", map[string]string{"state": "ok"})
		without, _ := m.Value("redis_cluster_slots_without_replica", nil)
		return ok == 16384 && without == 0, m.Describe("redis_cluster_slots", nil)
	})
	master := c.Masters(t)[0]
	var replica lab.RedisNode
	for _, n := range c.Nodes(t) {
		if n.MasterID == master.ID {
			replica = n
		}
	}
	if replica.ID == "" {
		t.Fatalf("master %s has no replica in the lab", master.Addr)
	}
	ask := func(path string, kv ...string) (int, budget.Answer, string) {
		params := url.Values{}
		for i := 0; i < len(kv); i += 2 {
			params.Set(kv[i], kv[i+1])
		}
		return queryBudget(t, e, path, params)
	}

	// A replica: safe. A master that serves slots: not, naming its replica.
	if status, a, msg := ask(budget.SafeToStopPath, "node", replica.Addr); status != http.StatusOK || !a.Safe {
		t.Errorf("replica %s: %d %+v %s, want 200 safe", replica.Addr, status, a, msg)
	}
	status, a, msg := ask(budget.SafeToStopPath, "system", "redis", "cluster", "lab", "node", master.ID)
	if status != http.StatusConflict || a.Safe || a.FailoverTo != replica.Addr || !strings.Contains(a.Advice, "CLUSTER FAILOVER") {
		t.Fatalf("master %s by id: %d %+v %s, want 409 naming replica %s to fail over to", master.Addr, status, a, msg, replica.Addr)
	}
	if !slices.ContainsFunc(a.Findings, func(f budget.Finding) bool { return f.Reason == "serves_slots" && f.Count == master.Slots }) {
		t.Errorf("master %s: findings %+v, want serves_slots counting its %d slots", master.Addr, a.Findings, master.Slots)
	}
	if a.Cluster != "lab" || a.System != "redis" || a.ReadAt.IsZero() {
		t.Errorf("answer names %s/%s read at %s", a.System, a.Cluster, a.ReadAt)
	}
	code, out := stopCommand(t, e, 30*time.Second, "--node", master.Addr, "--wait", "1s")
	if code != 1 || !strings.Contains(out, "not safe to stop after") || !strings.Contains(out, replica.Addr) {
		t.Errorf("safe-to-stop --node %s --wait 1s: exit %d, want 1 with the reason and the replica:\n%s", master.Addr, code, out)
	}

	// Bad questions: 400 naming what is wrong, and the command's exit 2.
	for _, tc := range []struct{ kv []string }{
		{[]string{"node", "127.0.0.1:1"}},
		{[]string{"broker", "1"}},
		{[]string{"zone", "eu-west-1a"}},
		{[]string{"node", master.Addr, "nodes", "x"}},
	} {
		if status, _, msg := ask(budget.SafeToStopPath, tc.kv...); status != http.StatusBadRequest || msg == "" {
			t.Errorf("%v: %d %q, want 400 with a message", tc.kv, status, msg)
		}
	}
	if code, out := stopCommand(t, e, 30*time.Second, "--node", "127.0.0.1:1", "--wait", "1m"); code != 2 || !strings.Contains(out, "127.0.0.1:1") {
		t.Errorf("safe-to-stop --node 127.0.0.1:1: exit %d, want 2 at once naming the node:\n%s", code, out)
	}

	// The command waits while the operator fails the master over; its yes
	// comes only once the cluster itself has the old master as a replica.
	type result struct {
		code int
		out  string
		at   time.Time
	}
	waited := make(chan result, 1)
	go func() {
		code, out := stopCommand(t, e, 2*time.Minute, "--node", master.Addr, "--wait", "90s")
		waited <- result{code, out, time.Now()}
	}()
	time.Sleep(time.Second) // it asks a few times first
	took := c.ManualFailover(t, replica.Port)
	r := <-waited
	if r.code != 0 || !strings.Contains(r.out, "not yet: ") || !strings.Contains(r.out, "yes: node "+master.Addr+" of redis/lab can be stopped now") {
		t.Fatalf("safe-to-stop --wait while failing over: exit %d, want 0 after some 'not yet' lines:\n%s", r.code, r.out)
	}
	// The node's own CLUSTER NODES is the oracle, as it is the exporter's
	// (a node knows its own role first; the others learn it by gossip, a
	// ping later).
	if own := myselfFlags(c.CLI(t, master.Port, "cluster", "nodes")); !strings.Contains(","+own+",", ",slave,") {
		t.Errorf("the command said yes at %s, but %s's own CLUSTER NODES still has it %q", r.at.Format(time.RFC3339Nano), master.Addr, own)
	}
	t.Logf("FIGURE safe-to-stop: CLUSTER FAILOVER took %s; the command's yes followed", took.Round(time.Millisecond))

	// Stopping it now leaves every slot served, as predicted, for longer
	// than the node timeout.
	c.Stop(t, master.Port)
	deadline := time.Now().Add(c.NodeTimeout()*3 + 2*time.Second)
	for time.Now().Before(deadline) {
		info := c.CLI(t, replica.Port, "CLUSTER", "INFO")
		if !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_slots_ok:16384") {
			t.Fatalf("after the stop the exporter called safe, the cluster says:\n%s", info)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// After the restart: recovered only once it is linked and synced, by its own word.
	c.Restart(t, master.Port)
	code, out = stopCommand(t, e, 2*time.Minute, "--node", master.Addr, "--after-restart", "--wait", "90s")
	if code != 0 || !strings.Contains(out, "is back and caught up") {
		t.Fatalf("safe-to-stop --after-restart: exit %d:\n%s", code, out)
	}
	if info := c.CLI(t, master.Port, "INFO", "replication"); !strings.Contains(info, "role:slave") || !strings.Contains(info, "master_link_status:up") {
		t.Errorf("recovered said yes, but the node's INFO replication says:\n%s", info)
	}

	// A cluster the exporter cannot read: 503, and the command gives up
	// with no answer, never a yes.
	ports := c.Ports()
	for _, p := range ports {
		c.Pause(t, p)
	}
	resumed := false
	resume := func() {
		if !resumed {
			for _, p := range ports {
				c.Resume(t, p)
			}
			resumed = true
		}
	}
	t.Cleanup(resume)
	var last string
	for start := time.Now(); ; {
		status, _, msg := ask(budget.SafeToStopPath, "node", replica.Addr)
		if status == http.StatusServiceUnavailable {
			t.Logf("503 %s after %s of a paused cluster", msg, time.Since(start).Round(time.Millisecond))
			break
		}
		last = strconv.Itoa(status) + " " + msg
		if status == http.StatusOK && time.Since(start) > 2*refresh+10*time.Second {
			t.Fatalf("still 200 %s after the whole cluster was paused", time.Since(start))
		}
		if time.Since(start) > time.Minute {
			t.Fatalf("no 503 a minute after the whole cluster was paused; last %s", last)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if code, out := stopCommand(t, e, time.Minute, "--node", replica.Addr, "--wait", "2s"); code != 1 || !strings.Contains(out, "no answer") {
		t.Errorf("safe-to-stop of a paused cluster: exit %d, want 1 with no answer:\n%s", code, out)
	}
	resume()
}

// myselfFlags are the flags of the myself line of a CLUSTER NODES reply.
func myselfFlags(clusterNodes string) string {
	for _, line := range strings.Split(clusterNodes, "\n") {
		if f := strings.Fields(line); len(f) > 2 && strings.Contains(","+f[2]+",", ",myself,") {
			return f[2]
		}
	}
	return ""
}
