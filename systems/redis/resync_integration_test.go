package redis

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/collector/budget"
	"github.com/failover-exporter/failover_exporter/internal/lab"
)

// syncStats are a master's own counts of the resyncs it served (INFO
// stats): the oracle of what a replica's reconnect did.
func syncStats(t *testing.T, c *lab.RedisCluster, port int) (full, partialOK int) {
	t.Helper()
	out := c.CLI(t, port, "INFO", "stats")
	return int(infoInt(t, out, "sync_full")), int(infoInt(t, out, "sync_partial_ok"))
}

// infoInt is the integer field key of an INFO reply.
func infoInt(t *testing.T, info, key string) int64 {
	t.Helper()
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), key+":"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("INFO %s: %q", key, v)
			}
			return n
		}
	}
	t.Fatalf("INFO has no %s:\n%s", key, info)
	return 0
}

// resyncLab is a cluster of 3 masters with a replica each, an exporter
// that sees it healthy, and one master and its replica.
func resyncLab(t *testing.T) (*lab.RedisCluster, *exporter, lab.RedisNode, lab.RedisNode) {
	t.Helper()
	skipIfShort(t)
	c := lab.StartRedisCluster(t, lab.RedisOptions{Masters: 3, Replicas: 1})
	e := startExporter(t, c.Addrs())
	e.waitHealthy(c, 1)
	master := c.Masters(t)[0]
	return c, e, master, replicaOf(t, c, master)
}

// replOffset is a master's master_repl_offset, by its own INFO.
func replOffset(t *testing.T, c *lab.RedisCluster, port int) int64 {
	t.Helper()
	return infoInt(t, c.CLI(t, port, "INFO", "replication"), "master_repl_offset")
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
	c, e, master, replica := resyncLab(t)
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
		// The master's replication offset, between its own INFO read before
		// and after the exporter's sample.
		lab.RedisWaitFor(t, 10*time.Second, step.name+": the master's offset", func() error {
			before := replOffset(t, c, master.Port)
			got, ok := e.gather().value("redis_cluster_node_replication_offset_bytes", addrLabel(master.Port)...)
			after := replOffset(t, c, master.Port)
			if !ok || got < float64(before) || got > float64(after) {
				return fmt.Errorf("the exporter says %v (served %v); the master's INFO said %d, then %d", got, ok, before, after)
			}
			return nil
		})
		// The failure budget: a stop of the replica now would bring it back
		// to a full sync exactly when the prediction says so.
		lab.RedisWaitFor(t, 10*time.Second, step.name+": the budget", func() error {
			a, err := answerBudget(e.w.Current().Snapshot, budget.Question{Scope: ScopeNode, ID: replica.Addr})
			if err != nil {
				return err
			}
			if got := strings.Contains(reasons(a), string(ReasonFullSyncOnReturn)); got == step.partial {
				return fmt.Errorf("stopping the replica: reasons %q, want %s: %v", reasons(a), ReasonFullSyncOnReturn, !step.partial)
			}
			return nil
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

// TestIntegrationFullSyncUnprotected kills a master holding 20,000 keys; its
// replica is promoted, and the old master comes back with its data gone (a
// replaced disk), so it must take a full sync of the whole data set from
// the new master, slowed on purpose: the new master writes each key of its
// RDB 200 µs late and the returning node loads each 200 µs late (the
// servers' own rdb-key-save-delay and key-load-delay), and answering
// LOADING meanwhile, as a large data set's load does. The oracle is the
// returning node's own INFO replication: until it says
// master_link_status:up the exporter must count the shard unprotected
// (redis_cluster_slots_without_replica, checked on every sample against an
// INFO read after it), must have shown the sync in progress, and must say it
// is protected within a few refreshes of the link coming up; the full sync it
// counts is the one the new master's sync_full counts.
func TestIntegrationFullSyncUnprotected(t *testing.T) {
	c, e, master, replica := resyncLab(t)
	fill(t, c, master, 20000)

	c.Kill(t, master.Port)
	killed := time.Now()
	c.RemoveData(t, master.Port)
	lab.RedisWaitFor(t, 30*time.Second, "the replica promoted", func() error {
		s := e.gather()
		return firstError(s.expect(1, "redis_cluster_node_master", addrLabel(replica.Port)...),
			s.expect(float64(master.Slots), "redis_cluster_slots_without_replica"))
	})
	promoted := time.Since(killed)
	c.CLI(t, replica.Port, "CONFIG", "SET", "rdb-key-save-delay", "200")
	full, _ := syncStats(t, c, replica.Port)
	c.Restart(t, master.Port)
	c.CLI(t, master.Port, "CONFIG", "SET", "key-load-delay", "200")
	// Answer between every KiB loaded, as a large data set's load does
	// between its 2 MiB steps: LOADING to all but INFO.
	c.CLI(t, master.Port, "CONFIG", "SET", "loading-process-events-interval-bytes", "1024")
	restarted := time.Now()

	var samples, inSync, withBytes, unread, loading, withLoad, advised, syncingStopRefused int
	// When the load ETA served at half the load said it would end.
	var halfETA time.Time
	for linkUp := false; !linkUp; time.Sleep(50 * time.Millisecond) {
		if time.Since(restarted) > time.Minute {
			t.Fatalf("the returning node's link is not up a minute after its restart:\n%s", c.CLI(t, master.Port, "INFO", "replication"))
		}
		// The budget's answer, then the series, then the oracle: neither
		// of the first two may be newer than the third.
		snap := e.w.Current().Snapshot
		a, err := answerBudget(snap, budget.Question{Scope: ScopeNode, ID: replica.Addr})
		if err != nil {
			t.Fatal(err)
		}
		// Stopping the returning node itself while its sync runs throws
		// the sync away: unsafe by default (failure_budget.allow_resync_stops).
		if n := snap.findNode(master.Addr); n != nil && (n.Sync.InProgress || n.Loading) {
			own, err := answerBudget(snap, budget.Question{Scope: ScopeNode, ID: master.Addr})
			if err != nil {
				t.Fatal(err)
			}
			if own.Safe || !strings.Contains(reasons(own), string(ReasonShardSyncing)) {
				t.Fatalf("stopping %s in its full sync: safe %v, reasons %q; want %s", master.Addr, own.Safe, reasons(own), ReasonShardSyncing)
			}
			syncingStopRefused++
		}
		s := e.gather()
		unprotected, _ := s.value("redis_cluster_slots_without_replica")
		info, err := c.TryCLI(master.Port, "INFO", "replication")
		linkUp = err == nil && strings.Contains(info, "master_link_status:up")
		if unprotected == 0 && !linkUp {
			t.Fatalf("the exporter counts every slot protected while the returning node's own INFO, read after it, says its link is down (%v):\n%s", err, info)
		}
		samples++
		// Stopping the new master leaves its slots unserved for good, and
		// the advice names the sync to wait for.
		if !linkUp && !strings.Contains(reasons(a), string(ReasonNoHealthyReplica)) {
			t.Fatalf("stopping the new master while its only replica syncs: reasons %q, want %s", reasons(a), ReasonNoHealthyReplica)
		}
		if strings.Contains(a.Advice, "its replica "+master.Addr+" is ") {
			advised++
		}
		if v, _ := s.value("redis_cluster_node_sync_in_progress", addrLabel(master.Port)...); v == 1 {
			inSync++
			if _, ok := s.value("redis_cluster_node_sync_read_bytes", addrLabel(master.Port)...); ok {
				withBytes++
			}
		}
		if v, ok := s.value("redis_cluster_node_up", addrLabel(master.Port)...); !ok || v == 0 {
			unread++
		}
		if v, _ := s.value("redis_cluster_node_loading", addrLabel(master.Port)...); v == 1 {
			loading++
			if checkLoadProgress(t, c, s, master.Port) {
				withLoad++
				eta, _ := s.value("redis_cluster_node_loading_eta_seconds", addrLabel(master.Port)...)
				loaded, _ := s.value("redis_cluster_node_loading_loaded_bytes", addrLabel(master.Port)...)
				total, _ := s.value("redis_cluster_node_loading_total_bytes", addrLabel(master.Port)...)
				if halfETA.IsZero() && total > 0 && loaded >= total/2 {
					halfETA = time.Now().Add(time.Duration(eta) * time.Second)
				}
			}
		}
	}
	linkUpAfter := time.Since(restarted)
	if loading == 0 {
		t.Errorf("the exporter never saw the returning node loading its RDB in %d samples over %v", samples, linkUpAfter.Round(time.Millisecond))
	}
	if syncingStopRefused == 0 {
		t.Errorf("the failure budget never judged a stop of %s during its sync in %d samples", master.Addr, samples)
	}
	if advised == 0 {
		t.Errorf("the failure budget's advice never named the sync of %s in %d samples", master.Addr, samples)
	}
	if withLoad == 0 {
		t.Errorf("the exporter never showed the load's progress in %d samples, %d of them loading", samples, loading)
	} else {
		t.Logf("FIGURE redis full sync load: at half the load, loading_eta_seconds said it would end %v before the link came up (%d samples with the load's progress)", time.Since(halfETA).Round(time.Millisecond), withLoad)
	}
	if inSync == 0 {
		t.Errorf("the exporter never showed the sync in progress in %d samples over %v", samples, linkUpAfter.Round(time.Millisecond))
	}
	protected := lab.RedisWaitFor(t, 10*time.Second, "the shard protected again", func() error {
		return e.gather().expect(0, "redis_cluster_slots_without_replica")
	})
	lab.RedisWaitFor(t, 10*time.Second, "the synced node safe to stop", func() error {
		a, err := answerBudget(e.w.Current().Snapshot, budget.Question{Scope: ScopeNode, ID: master.Addr})
		if err == nil && !a.Safe {
			err = fmt.Errorf("stopping %s: reasons %q", master.Addr, reasons(a))
		}
		return err
	})
	t.Logf("promotion %v after the kill; the returning node's link up %v after its restart (%d samples: %d with the sync in progress, %d of them with its bytes, %d with the node unread, %d of them loading, %d with the budget's advice naming the sync, %d with its own stop unsafe: shard_syncing); the exporter said protected %v after the link came up",
		promoted.Round(time.Millisecond), linkUpAfter.Round(time.Millisecond), samples, inSync, withBytes, unread, loading, advised, syncingStopRefused, protected.Round(time.Millisecond))
	lab.RedisWaitFor(t, 10*time.Second, "the full sync counted", func() error {
		f, _ := syncStats(t, c, replica.Port)
		if f != full+1 {
			return fmt.Errorf("the new master's sync_full went %d -> %d, want one more", full, f)
		}
		return e.gather().expect(float64(f), "redis_cluster_node_syncs_total", nodeLabels3(replica.Port, "result", "full")...)
	})
}

// checkLoadProgress checks the load progress s serves for the node on
// port against the node's own INFO persistence, read after: within one
// load the bytes loaded only grow, and the total is the same. It reports
// whether s served the progress.
func checkLoadProgress(t *testing.T, c *lab.RedisCluster, s sample, port int) bool {
	t.Helper()
	loaded, ok := s.value("redis_cluster_node_loading_loaded_bytes", addrLabel(port)...)
	if !ok {
		return false
	}
	total, _ := s.value("redis_cluster_node_loading_total_bytes", addrLabel(port)...)
	info, err := c.TryCLI(port, "INFO", "persistence")
	if err != nil || !strings.Contains(info, "loading:1") {
		return true // done since: nothing to compare
	}
	own := infoInt(t, info, "loading_loaded_bytes")
	if ownTotal := infoInt(t, info, "loading_total_bytes"); ownTotal == int64(total) && own < int64(loaded) {
		t.Errorf("the exporter served %v bytes loaded of %v; the node's own INFO, read after, says %d", loaded, total, own)
	}
	return true
}

// TestIntegrationFullResyncLoop makes the loop of redis #11534 and #4819: a
// replica's full sync needs more output buffer on its master than
// client-output-buffer-limit replica allows (256 KiB here, while a write
// load adds 16 KiB values during the RDB's slowed transfer), so the master
// drops the replica mid-sync and it starts over, again and again. The
// oracles are the master's own sync_full and the replica's own INFO
// replication: the exporter counts the full syncs the master counts while
// the replica's link stays down; with the limit lifted the next sync
// completes, the link comes up by the replica's INFO, and the exporter's
// count stops where the master's does. The alert on these series
// (RedisClusterFullResyncLoop) is tested with promtool.
func TestIntegrationFullResyncLoop(t *testing.T) {
	c, e, master, replica := resyncLab(t)
	fill(t, c, master, 20000)
	for _, kv := range [][2]string{{"repl-diskless-sync-delay", "0"}, {"rdb-key-save-delay", "100"}, {"client-output-buffer-limit", "replica 256kb 0 0"}} {
		c.CLI(t, master.Port, "CONFIG", "SET", kv[0], kv[1])
	}
	before, _ := syncStats(t, c, master.Port)
	stop := writeLoad(t, master.Addr, keyInSlotsOf(t, master, "load"), 16<<10)
	defer func() {
		if stop != nil {
			stop()
		}
	}()
	c.Kill(t, replica.Port)
	c.RemoveData(t, replica.Port)
	c.Restart(t, replica.Port)
	restarted := time.Now()
	replicaLinkDown := func() bool {
		info, err := c.TryCLI(replica.Port, "INFO", "replication")
		return err != nil || !strings.Contains(info, "master_link_status:up")
	}

	const loops = 5
	lab.RedisWaitFor(t, time.Minute, fmt.Sprintf("the exporter counting %d full syncs", loops), func() error {
		s := e.gather()
		full, _ := syncStats(t, c, master.Port)
		got, ok := s.value("redis_cluster_node_syncs_total", nodeLabels3(master.Port, "result", "full")...)
		switch {
		case !replicaLinkDown():
			t.Fatalf("the replica's link came up (by its own INFO) with the limit in place: no loop")
		case got > float64(full):
			t.Fatalf("the exporter counts %v full syncs; the master, read after it, %d", got, full)
		case !ok || got < float64(before+loops):
			return fmt.Errorf("the exporter counts %v full syncs (the master %d, %d before the loop)", got, full, before)
		}
		if up, _ := s.value("redis_cluster_node_master_link_up", addrLabel(replica.Port)...); up != 0 {
			t.Fatalf("the exporter shows the looping replica's link up")
		}
		return nil
	})

	looping := time.Since(restarted)
	c.CLI(t, master.Port, "CONFIG", "SET", "client-output-buffer-limit", "replica 0 0 0")
	lifted := time.Now()
	lab.RedisWaitFor(t, time.Minute, "the replica's link up by its own INFO", func() error {
		if replicaLinkDown() {
			return errors.New("down")
		}
		return nil
	})
	synced := time.Since(lifted)
	acked := stop()
	stop = nil
	full, _ := syncStats(t, c, master.Port)
	lab.RedisWaitFor(t, 10*time.Second, "the exporter showing the link up and the master's count", func() error {
		s := e.gather()
		return firstError(s.expect(1, "redis_cluster_node_master_link_up", addrLabel(replica.Port)...),
			s.expect(float64(full), "redis_cluster_node_syncs_total", nodeLabels3(master.Port, "result", "full")...))
	})
	t.Logf("the exporter counted %d full syncs, the replica's link down throughout, %v after its restart; the limit lifted, its link came up %v later; the master began %d full syncs in all (the last one completed), %d writes acknowledged meanwhile",
		loops, looping.Round(time.Millisecond), synced.Round(time.Millisecond), full-before, acked)
}

// fill writes keys keys of 100 bytes into master's slots.
func fill(t *testing.T, c *lab.RedisCluster, master lab.RedisNode, keys int) {
	t.Helper()
	tag := "{" + keyInSlotsOf(t, master, "fill") + "}"
	for i := 0; i < keys; i += 1000 {
		mset := []string{"MSET"}
		for j := i; j < min(i+1000, keys); j++ {
			mset = append(mset, tag+strconv.Itoa(j), strings.Repeat("v", 100))
		}
		c.CLI(t, master.Port, mset...)
	}
}

// writeLoad writes value-sized values to key on addr, back to back, until
// the returned stop is called; stop returns how many writes were
// acknowledged and fails the test on any other reply.
func writeLoad(t *testing.T, addr, key string, size int) (stop func() int) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	cmd := []byte(fmt.Sprintf("*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", len(key), key, size, strings.Repeat("w", size)))
	done := make(chan struct{})
	result := make(chan error, 1)
	acked := 0
	go func() {
		r := bufio.NewReader(conn)
		for {
			select {
			case <-done:
				result <- nil
				return
			default:
			}
			conn.SetDeadline(time.Now().Add(5 * time.Second))
			if _, err := conn.Write(cmd); err != nil {
				result <- err
				return
			}
			line, err := r.ReadString('\n')
			if err != nil {
				result <- err
				return
			}
			if line != "+OK\r\n" {
				result <- fmt.Errorf("SET answered %q", line)
				return
			}
			acked++
			time.Sleep(time.Millisecond)
		}
	}()
	return func() int {
		close(done)
		err := <-result
		conn.Close()
		if err != nil {
			t.Fatalf("the write load on %s: %v", addr, err)
		}
		return acked
	}
}
