package redis

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/internal/lab"
)

// syncStats are a master's own counts of the resyncs it served (INFO
// stats): the oracle of what a replica's reconnect did.
func syncStats(t *testing.T, c *lab.RedisCluster, port int) (full, partialOK int) {
	t.Helper()
	out := c.CLI(t, port, "INFO", "stats")
	get := func(key string) int {
		for _, line := range strings.Split(out, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), key+":"); ok {
				n, err := strconv.Atoi(v)
				if err != nil {
					t.Fatalf("INFO stats %s: %q", key, v)
				}
				return n
			}
		}
		t.Fatalf("INFO stats has no %s:\n%s", key, out)
		return 0
	}
	return get("sync_full"), get("sync_partial_ok")
}

// TestIntegrationResyncPrediction pauses a replica (SIGSTOP) behind a master
// whose backlog is 16 KiB, writes a little, then 32 MiB, and asks the
// exporter each time whether the replica could resume from the backlog
// should its link break; then breaks it (CLIENT KILL TYPE replica) and
// resumes the replica. The master's own sync_partial_ok and sync_full
// counters say what the reconnect did: a partial resync after the short
// pause, a full one after the long. 32 MiB and not 1: on loopback the
// kernel's socket buffers carry a few MiB to the stopped replica, which
// reads them when resumed and then resumes partially (seen on Valkey 8.1
// and 9.1 with 1 MiB): the master's last acknowledged offset, which the
// prediction reads, is a lower bound of where the replica is.
func TestIntegrationResyncPrediction(t *testing.T) {
	skipIfShort(t)
	c := lab.StartRedisCluster(t, lab.RedisOptions{Masters: 3, Replicas: 1})
	e := startExporter(t, c.Addrs())
	e.waitHealthy(c, 1)
	master := c.Masters(t)[0]
	replica := replicaOf(t, c, master)
	c.CLI(t, master.Port, "CONFIG", "SET", "repl-backlog-size", "16384")
	key := keyInSlotsOf(t, master, "resync")

	for _, step := range []struct {
		name    string
		write   int // bytes written while the replica is paused
		partial bool
	}{{"short pause", 200, true}, {"long pause", 32 << 20, false}} {
		c.Pause(t, replica.Port)
		writer := dialNaive(t, master.Addr)
		for written := 0; written < step.write; written += 64 << 10 {
			if reply := writer.do(t, "SET", key, strings.Repeat("x", min(64<<10, step.write))); reply != "+OK" {
				t.Fatalf("SET: %s", reply)
			}
		}
		want := map[bool]float64{true: 1, false: 0}[step.partial]
		lab.RedisWaitFor(t, 10*time.Second, step.name+": the prediction", func() error {
			return e.gather().expect(want, "redis_cluster_node_partial_resync_possible", addrLabel(replica.Port)...)
		})
		full, partial := syncStats(t, c, master.Port)
		c.CLI(t, master.Port, "CLIENT", "KILL", "TYPE", "replica")
		c.Resume(t, replica.Port)
		lab.RedisWaitFor(t, 30*time.Second, step.name+": the replica resynced", func() error {
			f, p := syncStats(t, c, master.Port)
			if f+p == full+partial {
				return fmt.Errorf("no resync yet (sync_full %d, sync_partial_ok %d)", f, p)
			}
			if got := p > partial; got != step.partial {
				return fmt.Errorf("the exporter predicted partial=%v; the master counts sync_full %d -> %d, sync_partial_ok %d -> %d", step.partial, full, f, partial, p)
			}
			return nil
		})
		f, p := syncStats(t, c, master.Port)
		t.Logf("%s (%d bytes written behind the paused replica, backlog 16 KiB): predicted partial=%v; the master counted sync_full +%d, sync_partial_ok +%d",
			step.name, step.write, step.partial, f-full, p-partial)
		lab.RedisWaitFor(t, 30*time.Second, "the link up again", func() error {
			return e.gather().expect(1, "redis_cluster_node_master_link_up", addrLabel(replica.Port)...)
		})
	}
}
