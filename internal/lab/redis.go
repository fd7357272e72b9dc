package lab

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// RedisOptions shapes a lab Redis Cluster.
type RedisOptions struct {
	// Masters is the number of masters (default 3, the minimum).
	Masters int
	// Replicas is the number of replicas per master (0 for none).
	Replicas int
	// NodeTimeout is cluster-node-timeout (default 1s).
	NodeTimeout time.Duration
	// TLSDir, if set, makes the nodes speak TLS only, with the certificates
	// in this directory (internal/certs.WriteSet); CLI and TryCLI then use
	// its client certificate. See REDIS_LAB_TLS_DIR in
	// scripts/redis/cluster.sh.
	TLSDir string
	// ACLFile, if set, is loaded by every node (aclfile).
	ACLFile string
	// Hosts are the loopback addresses the nodes bind to, in turn (default
	// 127.0.0.1); two make two "hosts" for failure-domain tests. See
	// REDIS_LAB_HOSTS in scripts/redis/cluster.sh.
	Hosts []string
	// Server is the server to run: "redis", "valkey" (8.1) or "valkey9"
	// (9.1); empty for RedisServer's choice (REDIS_LAB_SERVER). A test that
	// needs one server whatever the environment says names it here; it fails
	// (never skips) when that server is not installed.
	Server string
}

// RedisCluster is a Redis Cluster of local redis-server processes (or
// valkey-server, with REDIS_LAB_SERVER=valkey or valkey9, or
// RedisOptions.Server; see RedisServer) started by scripts/redis/cluster.sh
// in a fresh temporary directory.
type RedisCluster struct {
	redisLab
	server      string
	dir         string
	cliPath     string
	basePort    int
	ports       []int
	nodeTimeout time.Duration
	tlsDir      string
	aclFile     string
	hosts       []string
}

// RedisNode is one line of CLUSTER NODES, as the lab reads it.
type RedisNode struct {
	ID       string
	Addr     string
	Port     int
	MasterID string
	Master   bool
	Failed   bool // fail or fail? in the reading node's view
	Slots    int
	// SlotRanges are the node's inclusive slot ranges.
	SlotRanges [][2]int
}

// OwnsSlot reports whether slot is in one of the node's ranges.
func (n RedisNode) OwnsSlot(slot int) bool {
	for _, r := range n.SlotRanges {
		if slot >= r[0] && slot <= r[1] {
			return true
		}
	}
	return false
}

// StartRedisCluster starts a cluster and stops it when the test ends. The
// ports are chosen free (client ports and their cluster bus ports, +10000).
func StartRedisCluster(t testing.TB, opts RedisOptions) *RedisCluster {
	t.Helper()
	script := filepath.Join(RepoRoot(t), "scripts", "redis", "cluster.sh")
	if opts.Server == "" {
		opts.Server = RedisServer()
	}
	serverPath, cliPath := RedisBinariesOf(t, opts.Server)
	if opts.Masters == 0 {
		opts.Masters = 3
	}
	if opts.NodeTimeout == 0 {
		opts.NodeTimeout = time.Second
	}
	total := opts.Masters * (opts.Replicas + 1)
	c := &RedisCluster{
		server:      opts.Server,
		dir:         t.TempDir(),
		cliPath:     cliPath,
		basePort:    redisBasePort(t, total),
		nodeTimeout: opts.NodeTimeout,
		tlsDir:      opts.TLSDir,
		aclFile:     opts.ACLFile,
		hosts:       opts.Hosts,
	}
	c.redisLab = redisLab{script: script, env: c.scriptEnv}
	if len(c.hosts) == 0 {
		c.hosts = []string{"127.0.0.1"}
	}
	for i := range total {
		c.ports = append(c.ports, c.basePort+i)
	}
	t.Cleanup(func() {
		if out, err := c.run("stop"); err != nil {
			t.Errorf("stop redis lab: %v\n%s", err, out)
		}
	})
	start := time.Now()
	if out, err := c.run("start", "--masters", strconv.Itoa(opts.Masters), "--replicas", strconv.Itoa(opts.Replicas)); err != nil {
		t.Fatalf("start redis lab: %v\n%s%s", err, out, c.logs())
	}
	t.Logf("redis lab: %d masters x %d replicas of %s on ports %d-%d, started in %s",
		opts.Masters, opts.Replicas, serverPath, c.ports[0], c.ports[len(c.ports)-1], time.Since(start).Round(time.Millisecond))
	return c
}

// RedisServer is the server the Redis labs run, from REDIS_LAB_SERVER:
// "redis" (the default, Redis 7), "valkey" (Valkey 8.1) or "valkey9" (Valkey
// 9.1). The Redis integration tests run once for each (scripts/test.sh).
func RedisServer() string {
	if s := os.Getenv("REDIS_LAB_SERVER"); s != "" {
		return s
	}
	return "redis"
}

// RedisBinaries asks cluster.sh which server and CLI it will run, so the
// choice lives in one place, and fails the test saying how to install them.
func RedisBinaries(t testing.TB) (server, cli string) {
	t.Helper()
	return RedisBinariesOf(t, RedisServer())
}

// RedisBinariesOf is RedisBinaries for the named server ("redis", "valkey"
// or "valkey9"), whatever REDIS_LAB_SERVER says.
func RedisBinariesOf(t testing.TB, name string) (server, cli string) {
	t.Helper()
	script := filepath.Join(RepoRoot(t), "scripts", "redis", "cluster.sh")
	cmd := exec.Command("bash", script, "binaries")
	cmd.Env = append(os.Environ(), "REDIS_LAB_SERVER="+name)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("cluster.sh binaries: %v\n%s", err, out)
	}
	lines := strings.Fields(string(out))
	if len(lines) != 2 {
		t.Fatalf("cluster.sh binaries printed %q, want two paths", out)
	}
	hint := "scripts/install-deps.sh redis (or: apt-get install -y redis-server redis-tools)"
	if name != "redis" {
		hint = "scripts/install-deps.sh " + name
	}
	for _, bin := range lines {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("%s not found (server %s): run %s", bin, name, hint)
		}
	}
	return lines[0], lines[1]
}

// Server is the server the lab runs: "redis", "valkey" or "valkey9".
func (c *RedisCluster) Server() string { return c.server }

// CLIPath is the redis-cli (or valkey-cli) that matches the lab's server.
func (c *RedisCluster) CLIPath() string { return c.cliPath }

// scriptEnv is cluster.sh's environment for this lab.
func (c *RedisCluster) scriptEnv() []string {
	env := []string{
		"REDIS_LAB_SERVER=" + c.server,
		"REDIS_LAB_DIR=" + c.dir,
		"REDIS_LAB_BASE_PORT=" + strconv.Itoa(c.basePort),
		"REDIS_LAB_NODE_TIMEOUT=" + strconv.Itoa(int(c.nodeTimeout/time.Millisecond)),
	}
	if c.tlsDir != "" {
		env = append(env, "REDIS_LAB_TLS_DIR="+c.tlsDir)
	}
	if c.aclFile != "" {
		env = append(env, "REDIS_LAB_ACL_FILE="+c.aclFile)
	}
	return append(env, "REDIS_LAB_HOSTS="+strings.Join(c.hosts, " "))
}

// logs returns the tail of every node's log, for failure messages.
func (c *RedisCluster) logs() string {
	var b strings.Builder
	for _, p := range c.ports {
		data, err := os.ReadFile(filepath.Join(c.dir, strconv.Itoa(p), "redis.log"))
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		fmt.Fprintf(&b, "--- node %d log (tail) ---\n%s\n", p, strings.Join(lines[max(0, len(lines)-10):], "\n"))
	}
	return b.String()
}

// Addrs returns every node's address, "host:port" (127.0.0.1 unless
// RedisOptions.Hosts says otherwise).
func (c *RedisCluster) Addrs() []string {
	addrs := make([]string, len(c.ports))
	for i, p := range c.ports {
		addrs[i] = c.Host(p) + ":" + strconv.Itoa(p)
	}
	return addrs
}

// BusAddr returns the cluster bus address of the node with client port
// port (Redis's default: client port + 10000), which speaks the nodes'
// binary gossip protocol, not RESP.
func (c *RedisCluster) BusAddr(port int) string {
	return c.Host(port) + ":" + strconv.Itoa(port+10000)
}

// Host returns the address the node on port binds to, as cluster.sh picks
// it: the hosts in turn, by the port's offset from the base port.
func (c *RedisCluster) Host(port int) string {
	if len(c.hosts) == 0 {
		return "127.0.0.1"
	}
	return c.hosts[(port-c.basePort)%len(c.hosts)]
}

// Ports returns every node's client port.
func (c *RedisCluster) Ports() []int { return append([]int(nil), c.ports...) }

// NodeTimeout is the cluster-node-timeout the nodes run with.
func (c *RedisCluster) NodeTimeout() time.Duration { return c.nodeTimeout }

// Kill kills a node with SIGKILL, as a crash would.
func (c *RedisCluster) Kill(t testing.TB, port int) {
	t.Helper()
	c.mustRun(t, "kill", strconv.Itoa(port))
}

// RemoveData removes a stopped node's data files (its RDB and AOF), as a
// replaced disk would: back, it starts empty, without the replication id
// and offset it could resume from, and needs a full sync. It keeps
// nodes.conf, so the node rejoins the cluster as itself.
func (c *RedisCluster) RemoveData(t testing.TB, port int) {
	t.Helper()
	dir := filepath.Join(c.dir, strconv.Itoa(port))
	for _, name := range []string{"dump.rdb", "appendonlydir", "appendonly.aof"} {
		if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
			t.Fatalf("removing node %d's %s: %v", port, name, err)
		}
	}
}

// CLI runs redis-cli against one node and returns its output; it fails the
// test if redis-cli fails or answers with an error.
func (c *RedisCluster) CLI(t testing.TB, port int, args ...string) string {
	t.Helper()
	out, err := c.TryCLI(port, args...)
	if err != nil {
		t.Fatalf("redis-cli -p %d %s: %v", port, strings.Join(args, " "), err)
	}
	return out
}

// TryCLI is CLI returning the error instead of failing the test.
func (c *RedisCluster) TryCLI(port int, args ...string) (string, error) {
	var full []string
	if c.tlsDir != "" {
		full = append(full, "--tls", "--cacert", filepath.Join(c.tlsDir, "ca.pem"),
			"--cert", filepath.Join(c.tlsDir, "client.pem"), "--key", filepath.Join(c.tlsDir, "client-key.pem"))
	}
	full = append(full, "-h", c.Host(port), "-p", strconv.Itoa(port))
	full = append(full, args...)
	out, stderr, err := runCLI(c.cliPath, 10*time.Second, full)
	if err != nil {
		return "", cliError(err, stderr)
	}
	text := strings.TrimSpace(out)
	if strings.HasPrefix(text, "ERR") || strings.HasPrefix(text, "(error)") {
		return "", fmt.Errorf("redis error: %s", text)
	}
	return text, nil
}

// ManualFailover makes the replica on port take over its master with
// CLUSTER FAILOVER and waits until the replica itself says it is a master.
// Redis aborts a manual failover that has not finished within its own 5 s
// (CLUSTER_MF_TIMEOUT), for instance while the replica still catches up or
// while voters still remember a recent election; an operator would ask
// again, and so does this, up to three times. It returns how long Redis took.
func (c *RedisCluster) ManualFailover(t testing.TB, port int) time.Duration {
	t.Helper()
	start := time.Now()
	var last string
	for attempt := 1; attempt <= 3; attempt++ {
		c.CLI(t, port, "CLUSTER", "FAILOVER")
		deadline := time.Now().Add(7 * time.Second)
		for time.Now().Before(deadline) {
			out, err := c.TryCLI(port, "ROLE")
			if err == nil && strings.HasPrefix(out, "master") {
				if attempt > 1 {
					t.Logf("redis lab: manual failover of %d took %d attempts", port, attempt)
				}
				return time.Since(start)
			}
			last = fmt.Sprintf("ROLE: %q, err %v", firstLine(out), err)
			time.Sleep(100 * time.Millisecond)
		}
	}
	t.Fatalf("redis lab: replica %d still not a master after 3 CLUSTER FAILOVER attempts (%s)\n%s", port, last, c.logs())
	return 0
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// Nodes reads CLUSTER NODES from the first node (in port order) that answers.
func (c *RedisCluster) Nodes(t testing.TB) []RedisNode {
	t.Helper()
	var errs []string
	for _, p := range c.ports {
		out, err := c.TryCLI(p, "cluster", "nodes")
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		nodes, err := parseRedisNodes(out)
		if err != nil {
			t.Fatalf("CLUSTER NODES from %d: %v", p, err)
		}
		return nodes
	}
	t.Fatalf("no lab node answers CLUSTER NODES: %s", strings.Join(errs, "; "))
	return nil
}

// Masters returns the masters that own slots and are not failing, in one
// reachable node's view.
func (c *RedisCluster) Masters(t testing.TB) []RedisNode {
	t.Helper()
	var masters []RedisNode
	for _, n := range c.Nodes(t) {
		if n.Master && !n.Failed && n.Slots > 0 {
			masters = append(masters, n)
		}
	}
	return masters
}

// Node returns the node listening on port, in one reachable node's view.
func (c *RedisCluster) Node(t testing.TB, port int) RedisNode {
	t.Helper()
	for _, n := range c.Nodes(t) {
		if n.Port == port {
			return n
		}
	}
	t.Fatalf("no node on port %d in CLUSTER NODES", port)
	return RedisNode{}
}

// parseRedisNodes reads just enough of CLUSTER NODES for the lab; the
// exporter has its own, strict parser.
func parseRedisNodes(text string) ([]RedisNode, error) {
	var nodes []RedisNode
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		n := RedisNode{ID: f[0], Addr: strings.SplitN(f[1], "@", 2)[0]}
		if _, port, err := net.SplitHostPort(n.Addr); err == nil {
			n.Port, _ = strconv.Atoi(port)
		}
		flags := "," + f[2] + ","
		n.Master = strings.Contains(flags, ",master,")
		n.Failed = strings.Contains(flags, ",fail,") || strings.Contains(flags, ",fail?,")
		if f[3] != "-" {
			n.MasterID = f[3]
		}
		for _, r := range f[8:] {
			if strings.HasPrefix(r, "[") {
				continue
			}
			first, last, isRange := strings.Cut(r, "-")
			a, err := strconv.Atoi(first)
			if err != nil {
				return nil, fmt.Errorf("slot %q: %w", r, err)
			}
			b := a
			if isRange {
				if b, err = strconv.Atoi(last); err != nil {
					return nil, fmt.Errorf("slot %q: %w", r, err)
				}
			}
			n.Slots += b - a + 1
			n.SlotRanges = append(n.SlotRanges, [2]int{a, b})
		}
		nodes = append(nodes, n)
	}
	if len(nodes) == 0 {
		return nil, fmt.Errorf("no nodes in %q", text)
	}
	return nodes, nil
}

// RedisWaitFor is WaitFor (polling every 50ms) for conditions that explain
// themselves with an error, which reads better in the Redis tests.
func RedisWaitFor(t testing.TB, timeout time.Duration, what string, cond func() error) time.Duration {
	t.Helper()
	return WaitFor(t, timeout, 50*time.Millisecond, func() (bool, string) {
		if err := cond(); err != nil {
			return false, what + ": " + err.Error()
		}
		return true, ""
	})
}

// redisBasePort picks a base port such that the n client ports and their
// cluster bus ports (+10000) are all free.
func redisBasePort(t testing.TB, n int) int {
	t.Helper()
	offsets := make([]int, 0, 2*n)
	for i := range n {
		offsets = append(offsets, i, 10000+i)
	}
	return PickBasePort(t, offsets...)
}
