package e2e

import (
	"strconv"
	"strings"
	"testing"

	"github.com/failover-exporter/failover_exporter/internal/lab"
)

// TestSlotCommand runs `failover_exporter slot` against a real cluster: each
// key's slot matches CLUSTER KEYSLOT and the owner is the node that serves
// the key (a GET through that node answers instead of redirecting).
func TestSlotCommand(t *testing.T) {
	cluster := lab.StartRedisCluster(t, lab.RedisOptions{Masters: 3})
	keys := []string{"foo", "bar", "{user1000}.following", "{user1000}.followers", "foo{}{bar}", "{}", "{{bar}}", "foo{bar}{zap}", "ключ", "a"}
	dead := deadAddr(t)
	code, out := runExporter(t, append([]string{"slot", "--redis.addr=" + dead, "--redis.addr=" + cluster.Addrs()[0]}, keys...)...)
	if code != 0 {
		t.Fatalf("slot exited %d: %s", code, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != len(keys) {
		t.Fatalf("%d lines for %d keys:\n%s", len(lines), len(keys), out)
	}
	port0 := cluster.Ports()[0]
	for i, line := range lines {
		fields := strings.Fields(line)
		if len(fields) != 3 || fields[0] != keys[i] {
			t.Errorf("line %q: want %q SLOT ADDR", line, keys[i])
			continue
		}
		want := strings.TrimSpace(cluster.CLI(t, port0, "CLUSTER", "KEYSLOT", keys[i]))
		if fields[1] != want {
			t.Errorf("%q: slot %s, CLUSTER KEYSLOT says %s", keys[i], fields[1], want)
		}
		port, err := strconv.Atoi(fields[2][strings.LastIndex(fields[2], ":")+1:])
		if err != nil {
			t.Fatalf("owner %q: %v", fields[2], err)
		}
		if reply := cluster.CLI(t, port, "GET", keys[i]); strings.Contains(reply, "MOVED") {
			t.Errorf("%q: printed owner %s redirects: %s", keys[i], fields[2], reply)
		}
	}

	// Without seeds it prints slots only; with only dead seeds it fails clearly.
	if code, out := runExporter(t, "slot", "foo"); code != 0 || strings.TrimSpace(out) != "foo 12182" {
		t.Errorf("slot without seeds: exit %d, %q", code, out)
	}
	if code, out := runExporter(t, "slot", "--redis.addr="+dead, "foo"); code != 1 || !strings.Contains(out, dead) {
		t.Errorf("slot with a dead seed: exit %d, %q; want exit 1 naming %s", code, out, dead)
	}
}
