package e2e

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/collector/canary"
	"github.com/failover-exporter/failover_exporter/internal/exportertest"
	"github.com/failover-exporter/failover_exporter/internal/lab"
)

// canaryRedisACL is the Redis canary's ACL as docs/canary.md and
// docs/security.md list it: the exporter's minimal ACL plus SET, GET and
// WAIT on the canary's keys only, and EVAL with the PEXPIRE and DEL its
// lease scripts call.
const canaryRedisACL = secRedisMinimalACL + " +set +get +wait +eval +pexpire +del ~__failover_exporter_canary:*"

const (
	canaryRedisPassword   = "Redis-canary-pw-1123"
	canaryNoWritePassword = "Redis-nowrite-pw-5813"
)

// commandCalls reads INFO commandstats of one node: calls by command.
func commandCalls(t *testing.T, c *lab.RedisCluster, port int) map[string]int {
	t.Helper()
	out := c.CLI(t, port, "info", "commandstats")
	calls := map[string]int{}
	re := regexp.MustCompile(`^cmdstat_([^:]+):calls=(\d+)`)
	for _, line := range strings.Split(out, "\n") {
		if m := re.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
			n, _ := strconv.Atoi(m[2])
			calls[m[1]] = n
		}
	}
	return calls
}

// logLineWith reports whether one line of logs contains every part.
func logLineWith(logs string, parts ...string) bool {
	for _, line := range strings.Split(logs, "\n") {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			return true
		}
	}
	return false
}

// TestCanaryRedis checks, on a real Redis Cluster, that the canary is off
// unless enabled (the nodes' own command counters show no write), that with
// the documented ACL it writes to every master and only its own keys, and
// that a user without write permission gets a clear error and a failure
// series while the rest of the exporter works.
func TestCanaryRedis(t *testing.T) {
	dir := t.TempDir()
	aclFile := secWriteFile(t, filepath.Join(dir, "users.acl"),
		fmt.Sprintf("user canary on #%s %s\n", secSHA256Hex(canaryRedisPassword), canaryRedisACL)+
			fmt.Sprintf("user nowrite on #%s %s\n", secSHA256Hex(canaryNoWritePassword), secRedisMinimalACL))
	c := lab.StartRedisCluster(t, lab.RedisOptions{Masters: 3, Replicas: 1, ACLFile: aclFile})
	writes := []string{"set", "get", "wait", "del", "setex", "psetex", "incr", "expire", "pexpire"}

	t.Run("off by default: no write reaches the cluster", func(t *testing.T) {
		for _, p := range c.Ports() {
			c.CLI(t, p, "config", "resetstat")
		}
		// The default user may do anything: nothing but the canary switch
		// keeps the exporter from writing.
		cfg := faultConfig(t, fmt.Sprintf(`redis:
  - name: off
    addrs: [%s]
    refresh_interval: 200ms
`, strings.Join(c.Addrs(), ", ")))
		e := exportertest.Start(t, "--config.file="+cfg)
		e.WaitReady(t, 15*time.Second)
		m, _ := waitMetrics(t, e, 15*time.Second, "10 refreshes", func(m exportertest.Metrics) (bool, string) {
			v, _ := m.Value("redis_cluster_exporter_refreshes_total", nil)
			return v >= 10, fmt.Sprint(v, " refreshes")
		})
		e.Stop()
		if n := len(m.Series("redis_canary_up", nil)); n != 0 {
			t.Errorf("canary series served with the canary off: %d", n)
		}
		for _, p := range c.Ports() {
			calls := commandCalls(t, c, p)
			if calls["cluster|nodes"] == 0 {
				t.Fatalf("node %d: no CLUSTER NODES counted; is commandstats working? %v", p, calls)
			}
			for _, cmd := range writes {
				if calls[cmd] > 0 {
					t.Errorf("node %d: %d %s calls with the canary off", p, calls[cmd], cmd)
				}
			}
			if keys := c.CLI(t, p, "dbsize"); keys != "0" {
				t.Errorf("node %d holds %s keys", p, keys)
			}
		}
	})

	t.Run("documented ACL works; a user without write permission gets a clear error", func(t *testing.T) {
		passwordFile := secWriteSecretFile(t, dir, "canary-password", canaryRedisPassword)
		noWriteFile := secWriteSecretFile(t, dir, "nowrite-password", canaryNoWritePassword)
		cfg := faultConfig(t, fmt.Sprintf(`redis:
  - name: canary
    addrs: [%[1]s]
    username: canary
    password: {file: %[2]s}
    refresh_interval: 500ms
    canary: {enabled: true, interval: 200ms}
  - name: nowrite
    addrs: [%[1]s]
    username: nowrite
    password: {file: %[3]s}
    refresh_interval: 500ms
    canary: {enabled: true, interval: 200ms}
`, strings.Join(c.Addrs(), ", "), passwordFile, noWriteFile))
		e := exportertest.Start(t, "--config.file="+cfg)
		e.WaitReady(t, 15*time.Second)
		masters := c.Masters(t)
		m, took := waitMetrics(t, e, 20*time.Second, "canary writing and nowrite failing", func(m exportertest.Metrics) (bool, string) {
			var missing []string
			for _, master := range masters {
				v, _ := m.Value("redis_canary_writes_acknowledged_total", map[string]string{"redis_cluster": "canary", "node_id": master.ID})
				if v < 3 {
					missing = append(missing, fmt.Sprintf("%s acknowledged %v", master.Addr, v))
				}
			}
			// The user without write permission cannot take the lease, so
			// its canary never writes.
			if v, ok := m.Value("redis_canary_leader", map[string]string{"redis_cluster": "nowrite"}); !ok || v != 0 {
				missing = append(missing, fmt.Sprintf("redis_canary_leader{nowrite} %v (served %v), want 0", v, ok))
			}
			return len(missing) == 0, strings.Join(missing, "; ")
		})
		t.Logf("canary writing on %d masters, nowrite without the lease, after %s", len(masters), took.Round(10*time.Millisecond))
		if v, _ := m.Value("redis_canary_leader", map[string]string{"redis_cluster": "canary"}); v != 1 {
			t.Errorf("redis_canary_leader{canary} = %v, want 1", v)
		}

		// Nothing was lost, nothing else failed for the user with the ACL.
		for _, s := range m.Series("redis_canary_write_failures_total", map[string]string{"redis_cluster": "canary"}) {
			t.Errorf("canary user failures: %v", s)
		}
		// The rest of the exporter is unaffected for the user without it.
		if v, _ := m.Value("redis_cluster_up", map[string]string{"redis_cluster": "nowrite"}); v != 1 {
			t.Errorf("redis_cluster_up{nowrite} = %v, want 1", v)
		}
		if n := len(m.Series("redis_cluster_node_up", map[string]string{"redis_cluster": "nowrite"})); n != len(c.Ports()) {
			t.Errorf("%d node_up series for nowrite, want %d", n, len(c.Ports()))
		}
		if v, _ := m.Value("redis_canary_up", map[string]string{"redis_cluster": "nowrite"}); v != 1 {
			t.Errorf("redis_canary_up{nowrite} = %v, want 1 (it reads the slot owners; only the writes fail)", v)
		}
		logs := e.Logs()
		if !logLineWith(logs, "collector=redis_canary", "cluster=nowrite", `msg="canary lease attempt failing;`, "error=NOPERM", "no permissions to run the 'eval' command") {
			t.Errorf("no clear NOPERM error for nowrite's lease in the logs:\n%s", logs)
		}
		if n := strings.Count(logs, "cluster=nowrite msg=\"canary lease attempt failing;"); n != 1 {
			t.Errorf("the lease refusal logged %d times, want once (on the change)", n)
		}
		// Neither wrote a failing write: one writes, the other never tries.
		for _, cluster := range []string{"canary", "nowrite"} {
			for _, ev := range fetchEvents(t, e, "?cluster="+cluster) {
				if ev.Kind == canary.EventWriteFailing {
					t.Errorf("write_failing event for %s: %+v", cluster, ev)
				}
			}
		}
		secAssertNoLeaks(t, e, canaryRedisPassword, canaryNoWritePassword)

		// The counters of the cluster agree: the fenced writes (EVAL) arrived,
		// only on canary keys and their lease keys.
		evals := 0
		for _, master := range masters {
			evals += commandCalls(t, c, master.Port)["eval"]
			for _, key := range strings.Fields(c.CLI(t, master.Port, "--scan")) {
				if !strings.HasPrefix(key, "__failover_exporter_canary:{") && !strings.HasPrefix(key, "__failover_exporter_canary:lease{") {
					t.Errorf("key %q on %s is neither a canary key nor its lease key", key, master.Addr)
				}
			}
		}
		if evals < 9 {
			t.Errorf("the masters counted %d EVAL calls, want the canary's writes and lease", evals)
		}
	})
}
