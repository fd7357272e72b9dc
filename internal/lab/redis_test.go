package lab

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseRedisNodes(t *testing.T) {
	text := "c096849e540e19e62780faa5bf76a837fe1752f6 127.0.0.1:17103@27103 slave 099acb3ad33355bfc624e555c95f92f2c4c98dbe 0 1 1 connected\n" +
		"099acb3ad33355bfc624e555c95f92f2c4c98dbe 127.0.0.1:17100@27100 myself,master - 0 1 1 connected 0-5460 7000 [100->-a5d1837466ddee36fb8f66a06a54c9d80ece254f]\n" +
		"a5d1837466ddee36fb8f66a06a54c9d80ece254f 127.0.0.1:17101@27101 master,fail - 0 1 2 disconnected 5461-6999\n"
	nodes, err := parseRedisNodes(text)
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 3 {
		t.Fatalf("got %d nodes", len(nodes))
	}
	replica, master, failed := nodes[0], nodes[1], nodes[2]
	if replica.Master || replica.MasterID != master.ID || replica.Port != 17103 {
		t.Errorf("replica: %+v", replica)
	}
	if !master.Master || master.Slots != 5462 || !master.OwnsSlot(7000) || master.OwnsSlot(6999) {
		t.Errorf("master: %+v", master)
	}
	if !failed.Failed || failed.Slots != 1539 {
		t.Errorf("failed master: %+v", failed)
	}
	if _, err := parseRedisNodes(""); err == nil {
		t.Error("empty reply: want an error")
	}
}

// TestRedisCluster exercises the lab itself: start, kill, restart, pause and
// resume a node of a cluster without replicas.
func TestRedisCluster(t *testing.T) {
	c := StartRedisCluster(t, RedisOptions{Masters: 3})
	if got := len(c.Addrs()); got != 3 {
		t.Fatalf("%d addresses, want 3", got)
	}
	masters := c.Masters(t)
	total := 0
	for _, m := range masters {
		total += m.Slots
	}
	if len(masters) != 3 || total != 16384 {
		t.Fatalf("masters %+v own %d slots, want 3 owning 16384", masters, total)
	}

	// The server really is the one asked for (REDIS_LAB_SERVER).
	checkRedisServer(t, c, RedisServer())

	port := c.Ports()[0]
	pid := c.PID(t, port)
	if pid <= 0 {
		t.Fatalf("pid %d", pid)
	}
	c.Pause(t, port)
	c.Resume(t, port)
	if out := c.CLI(t, port, "PING"); out != "PONG" {
		t.Errorf("PING after resume: %q", out)
	}

	// A fork (here a BGSAVE slowed to last minutes) is gone when kill
	// returns: one still running may write in the node's directory while the
	// test's TempDir is being removed.
	fork := slowBGSAVE(t, c, port, pid)
	c.Kill(t, port)
	if _, err := c.TryCLI(port, "PING"); err == nil {
		t.Error("PING answered after kill")
	}
	if alive(fork) {
		t.Errorf("the killed node's BGSAVE child (pid %d) still runs", fork)
	}
	c.Restart(t, port)
	if c.PID(t, port) == pid {
		t.Error("restarted node has the old pid")
	}
	RedisWaitFor(t, 10*time.Second, "restarted node back in the cluster", func() error {
		out, err := c.TryCLI(port, "CLUSTER", "INFO")
		if err != nil {
			return err
		}
		if !strings.Contains(out, "cluster_state:ok") {
			return fmt.Errorf("cluster not ok: %s", out)
		}
		return nil
	})
}

// slowBGSAVE starts a BGSAVE on port that would take minutes and returns the
// PID of the node's fork doing it.
func slowBGSAVE(t *testing.T, c *RedisCluster, port, pid int) int {
	t.Helper()
	mset := []string{"MSET"}
	for i := 0; i < 1000; i++ {
		mset = append(mset, fmt.Sprintf("{fork}%d", i), "x") // one slot: the node may not own others
	}
	c.CLI(t, port, mset...)
	c.CLI(t, port, "CONFIG", "SET", "rdb-key-save-delay", "100000") // 100 ms a key
	c.CLI(t, port, "BGSAVE")
	var fork int
	RedisWaitFor(t, 10*time.Second, "the node's BGSAVE child", func() error {
		paths, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil {
				continue
			}
			if f := strings.Fields(string(b)); len(f) > 0 {
				fork, _ = strconv.Atoi(f[0])
				return nil
			}
		}
		return fmt.Errorf("pid %d has no child", pid)
	})
	return fork
}

// alive says whether pid runs (a zombie does not).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndex(s, ") ")
	return i < 0 || !strings.HasPrefix(s[i+2:], "Z")
}

// The lab refuses to start on a taken port and names it.
func TestRedisClusterPortTaken(t *testing.T) {
	base := redisBasePort(t, 3)
	taken, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(base+10001)) // node 2's cluster bus port
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	c := &RedisCluster{dir: t.TempDir(), basePort: base, nodeTimeout: time.Second}
	c.redisLab = redisLab{script: filepath.Join(RepoRoot(t), "scripts", "redis", "cluster.sh"), env: c.scriptEnv}
	out, err := c.run("start", "--masters", "3", "--replicas", "0")
	defer c.run("stop")
	if err == nil {
		t.Fatalf("cluster.sh start succeeded on a taken port:\n%s", out)
	}
	if want := fmt.Sprintf("port %d is taken", base+10001); !strings.Contains(out, want) {
		t.Errorf("cluster.sh start said %q, want it to contain %q", out, want)
	}
}

// checkRedisServer checks that the lab's nodes run the server named.
func checkRedisServer(t *testing.T, c *RedisCluster, server string) {
	t.Helper()
	info := c.CLI(t, c.Ports()[0], "INFO", "server")
	want := map[string]string{"redis": "redis_version:7.", "valkey": "valkey_version:8.", "valkey9": "valkey_version:9."}[server]
	if c.Server() != server || want == "" || !strings.Contains(info, want) {
		t.Errorf("lab server %q (asked for %s) but INFO server does not say %q:\n%s", c.Server(), server, want, info)
	}
}

// TestRedisClusterValkey9: RedisOptions.Server starts Valkey 9.1 whatever
// REDIS_LAB_SERVER says (and fails, not skips, without it).
func TestRedisClusterValkey9(t *testing.T) {
	c := StartRedisCluster(t, RedisOptions{Masters: 3, Server: "valkey9"})
	checkRedisServer(t, c, "valkey9")
	if out := c.CLI(t, c.Ports()[0], "CLUSTER", "GETSLOTMIGRATIONS"); strings.Contains(out, "ERR") {
		t.Errorf("CLUSTER GETSLOTMIGRATIONS: %q", out)
	}
}
