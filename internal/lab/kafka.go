package lab

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// KafkaVersions are the Kafka versions the lab runs (KafkaOptions.Version),
// oldest first; DefaultKafkaVersion is the one a zero KafkaOptions starts.
// scripts/install-deps.sh installs them all.
var KafkaVersions = []string{"3.9", "4.1", "4.3", "4.4"}

// DefaultKafkaVersion is the Kafka the tests run unless they ask for another.
const DefaultKafkaVersion = "4.1"

// defaultVersionEnv names the Kafka a test that asks for none runs
// instead of DefaultKafkaVersion, to run a test on another version by hand:
// FAILOVER_LAB_KAFKA_VERSION=4.4 go test -run TestKafkaCoordinatorFailover ./e2e/.
// make test unsets it (scripts/test.sh).
const defaultVersionEnv = "FAILOVER_LAB_KAFKA_VERSION"

// defaultVersion is the Kafka a test that asks for none runs.
func defaultVersion() string {
	if v := os.Getenv(defaultVersionEnv); v != "" {
		return v
	}
	return DefaultKafkaVersion
}

// KafkaOptions configures StartKafka. The zero value is a 3-node Kafka 4.1
// cluster in KRaft mode on a free block of ports.
type KafkaOptions struct {
	// Version is the Kafka to run, one of KafkaVersions ("" is
	// DefaultKafkaVersion): KAFKA_LAB_VERSION in scripts/kafka/cluster.sh.
	Version string
	// ZooKeeper runs Kafka in ZooKeeper mode (Version "3.9" only): the
	// nodes are brokers only, with one ZooKeeper server on node 1's
	// controller port; there is no controller quorum.
	ZooKeeper bool
	// Nodes is the number of broker+controller nodes (default 3). One
	// node works: replication factors (topics, offsets and transaction
	// state) and min ISR shrink to fit, to 1. Clusters of one test get
	// their own ports and state directories, so several run at once (the
	// MirrorMaker lab runs two).
	Nodes int
	// BasePort is node 1's broker port; node i uses BasePort+i-1 for its
	// broker and BasePort+100+i-1 for its controller. 0 picks a free block.
	BasePort int
	// Env adds environment variables for scripts/kafka/cluster.sh, e.g.
	// "KAFKA_LAB_ELR=0".
	Env []string
	// Security is "" (PLAINTEXT everywhere) or "sasl_ssl": the broker
	// ports then speak SASL_SSL and a PLAINTEXT listener on
	// BasePort+200+i-1 (InternalBootstrap) carries broker-to-broker traffic.
	// See KAFKA_LAB_SECURITY in scripts/kafka/cluster.sh.
	Security string
	// TLSDir holds server-keystore.pem and ca.pem (internal/certs.WriteSet);
	// required with Security "sasl_ssl".
	TLSDir string
	// UsersFile has "NAME PASSWORD" lines: SCRAM users created at format
	// time, and PLAIN users of the SASL_SSL listener.
	UsersFile string
	// ClientAuth is the SASL_SSL listener's ssl.client.auth: "" (none),
	// "requested" or "required".
	ClientAuth string
	// Authorizer turns ACLs on (with Security "sasl_ssl"): SASL users may
	// do only what ACLs allow; the INTERNAL listener is a super user.
	Authorizer bool
	// Proxied gives a plaintext KRaft cluster a second client listener,
	// PROXIED, advertised at the port of a proxy the test runs
	// (ProxiedListener), to cut one client alone off the cluster.
	Proxied bool
	// TieredStorage turns tiered storage on (Version "4.3" or "4.4"):
	// topics with remote.storage.enable=true copy their rolled segments to
	// the lab's RemoteStorageManager (scripts/kafka/LabRemoteStorage.java),
	// a directory of the lab. See KAFKA_LAB_TIERED in
	// scripts/kafka/cluster.sh.
	TieredStorage bool
	// SpareControllers reserves the controller ports of that many
	// controller-only nodes, ids Nodes+1 and up, for StartController.
	SpareControllers int
	// InternalTopics, for SharedKafka: the test may make the cluster
	// create its internal topics (a consumer group's commit, a
	// transactional producer's coordinator lookup), which cannot be
	// deleted. Such a cluster is given back with them, to tests that ask
	// for the same options; one lent without InternalTopics that gained one
	// is stopped, so that no test sees another's internal topics unasked.
	InternalTopics bool
}

// KafkaCluster is a running cluster started by scripts/kafka/cluster.sh in a
// private state directory. It is stopped when the test ends.
type KafkaCluster struct {
	script   string
	dir      string
	basePort int
	nodes    int
	security string
	version  string
	zk       bool
	proxied  bool
	env      []string
	// internalTopics is KafkaOptions.InternalTopics.
	internalTopics bool
	// lent counts the tests a shared cluster was lent to (SharedKafka),
	// and stopped says it was stopped for good.
	lent    int
	stopped bool
}

// Time limits for the script. Starting includes fetching the jars on a
// fresh machine (first run only).
const (
	kafkaStartTimeout = 5 * time.Minute
	kafkaNodeTimeout  = 2 * time.Minute
)

// StartKafka starts a Kafka cluster for the test and registers its stop with
// t.Cleanup. It fails the test, never skips it, when the cluster cannot be
// started. A test that leaves the cluster as it found it (or can be made
// to) takes one from SharedKafka instead.
func StartKafka(t testing.TB, opts KafkaOptions) *KafkaCluster {
	t.Helper()
	c := newKafka(t, opts, filepath.Join(t.TempDir(), "kafka"))
	// Registered after t.TempDir, so it runs before the directory is removed.
	t.Cleanup(func() {
		if t.Failed() {
			c.logTails(t)
		}
		if err := c.stopAll(); err != nil {
			t.Errorf("lab: %v", err)
		}
	})
	c.start(t)
	return c
}

// newKafka is the cluster opts describes, with its state in dir, not yet
// started.
func newKafka(t testing.TB, opts KafkaOptions, dir string) *KafkaCluster {
	t.Helper()
	if _, err := exec.LookPath("java"); err != nil {
		t.Fatalf("lab: java not found: run scripts/install-deps.sh kafka")
	}
	nodes := opts.Nodes
	if nodes <= 0 {
		nodes = 3
	}
	c := &KafkaCluster{
		script:         filepath.Join(RepoRoot(t), "scripts", "kafka", "cluster.sh"),
		dir:            dir,
		basePort:       kafkaBasePort(t, opts, nodes),
		nodes:          nodes,
		security:       opts.Security,
		version:        kafkaVersion(t, opts),
		zk:             opts.ZooKeeper,
		proxied:        opts.Proxied,
		internalTopics: opts.InternalTopics,
	}
	c.env = kafkaEnv(c, opts, c.mode())
	return c
}

func (c *KafkaCluster) mode() string {
	if c.zk {
		return "zookeeper"
	}
	return "kraft"
}

// start starts every node and fails the test if the cluster does not come up.
func (c *KafkaCluster) start(t testing.TB) {
	t.Helper()
	start := time.Now()
	r := c.run(kafkaStartTimeout, "start")
	if r.Err != nil {
		t.Fatalf("lab: kafka cluster did not start (%v); scripts/install-deps.sh kafka installs what it needs.\n%s",
			r.Err, r.Output())
	}
	if got, want := strings.TrimSpace(r.Stdout), strings.Join(c.Bootstrap(), ","); got != want {
		t.Fatalf("lab: cluster.sh start printed bootstrap %q, want %q", got, want)
	}
	t.Logf("lab: kafka %s (%s) %d nodes up in %s at %s (state in %s)",
		c.version, c.mode(), c.nodes, time.Since(start).Round(time.Millisecond), strings.Join(c.Bootstrap(), ","), c.dir)
}

// logTails logs the end of every node's log: what a failed test needs.
func (c *KafkaCluster) logTails(t testing.TB) {
	for id := int32(1); id <= int32(c.nodes); id++ {
		t.Logf("lab: last lines of kafka node %d log (%s):\n%s", id, c.logPath(id), c.LogTail(id, 40))
	}
}

// stopAll stops every node.
func (c *KafkaCluster) stopAll() error {
	if r := c.run(kafkaNodeTimeout, "stop"); r.Err != nil {
		return fmt.Errorf("stopping kafka in %s: %v\n%s", c.dir, r.Err, r.Output())
	}
	return nil
}

// kafkaBasePort is opts.BasePort, or a free base for the nodes' ports
// (broker, controller, and with security a third listener).
func kafkaBasePort(t testing.TB, opts KafkaOptions, nodes int) int {
	t.Helper()
	if opts.BasePort != 0 {
		return opts.BasePort
	}
	var offsets []int
	for i := range nodes {
		offsets = append(offsets, i, 100+i)
		if opts.Security != "" {
			offsets = append(offsets, 200+i)
		} else if opts.Proxied {
			offsets = append(offsets, 300+i, 400+i) // ProxiedListener
		}
	}
	for j := range opts.SpareControllers {
		offsets = append(offsets, 100+nodes+j) // StartController
	}
	return PickBasePort(t, offsets...)
}

// kafkaVersion is the version opts asks for, checked against what the lab
// runs.
func kafkaVersion(t testing.TB, opts KafkaOptions) string {
	t.Helper()
	version := opts.Version
	if version == "" {
		version = defaultVersion()
	}
	if !slices.Contains(KafkaVersions, version) {
		t.Fatalf("lab: Kafka version %q (%s=%q): the lab runs %v", version, defaultVersionEnv, os.Getenv(defaultVersionEnv), KafkaVersions)
	}
	if opts.ZooKeeper && version != "3.9" {
		t.Fatalf("lab: Kafka %s has no ZooKeeper mode; only 3.9 in the lab", version)
	}
	return version
}

// kafkaEnv is cluster.sh's environment for the cluster c.
func kafkaEnv(c *KafkaCluster, opts KafkaOptions, mode string) []string {
	env := append([]string{
		"KAFKA_LAB_DIR=" + c.dir,
		"KAFKA_LAB_BASE_PORT=" + strconv.Itoa(c.basePort),
		"KAFKA_LAB_NODES=" + strconv.Itoa(c.nodes),
		"KAFKA_LAB_VERSION=" + c.version,
		"KAFKA_LAB_MODE=" + mode,
		// The script's watchdog stops the cluster if this test binary dies
		// without running its cleanups (go test -timeout, SIGKILL).
		"KAFKA_LAB_OWNER_PID=" + strconv.Itoa(os.Getpid()),
	}, opts.Env...)
	for _, kv := range [][2]string{
		{"KAFKA_LAB_SECURITY", opts.Security},
		{"KAFKA_LAB_TLS_DIR", opts.TLSDir},
		{"KAFKA_LAB_USERS_FILE", opts.UsersFile},
		{"KAFKA_LAB_CLIENT_AUTH", opts.ClientAuth},
	} {
		if kv[1] != "" {
			env = append(env, kv[0]+"="+kv[1])
		}
	}
	if opts.Authorizer {
		env = append(env, "KAFKA_LAB_AUTHORIZER=1")
	}
	if opts.Proxied {
		env = append(env, "KAFKA_LAB_PROXIED=1")
	}
	if opts.TieredStorage {
		env = append(env, "KAFKA_LAB_TIERED=1")
	}
	return env
}

func (c *KafkaCluster) run(timeout time.Duration, args ...string) RunResult {
	return Run(timeout, c.env, "bash", append([]string{c.script}, args...)...)
}

func (c *KafkaCluster) checkID(t testing.TB, id int32) {
	t.Helper()
	if id < 1 || int(id) > c.nodes {
		t.Fatalf("lab: kafka node id %d out of range 1..%d", id, c.nodes)
	}
}

// Bootstrap returns every broker's address.
func (c *KafkaCluster) Bootstrap() []string {
	addrs := make([]string, c.nodes)
	for i := range addrs {
		addrs[i] = c.BrokerAddr(int32(i + 1))
	}
	return addrs
}

// BrokerAddr returns the broker listener of node id (node ids are 1..N and
// equal the Kafka broker ids).
func (c *KafkaCluster) BrokerAddr(id int32) string {
	return fmt.Sprintf("127.0.0.1:%d", c.basePort+int(id)-1)
}

// ProxiedListener returns, for node id of a cluster started with
// KafkaOptions.Proxied, the
// address of its PROXIED listener and the address it advertises for it,
// where the test runs a proxy to the listener (StartProxy): a client
// bootstrapped through the proxies of every node reaches the cluster only
// through them, and cutting the proxies cuts that client alone off.
func (c *KafkaCluster) ProxiedListener(t testing.TB, id int32) (listen, advertised string) {
	t.Helper()
	if !c.proxied {
		t.Fatalf("lab: only a cluster started with KafkaOptions.Proxied has a PROXIED listener")
	}
	c.checkID(t, id)
	return fmt.Sprintf("127.0.0.1:%d", c.basePort+300+int(id)-1), fmt.Sprintf("127.0.0.1:%d", c.basePort+400+int(id)-1)
}

// ControllerAddr returns the KRaft controller listener of node id: a port
// that speaks the Kafka protocol but serves no Metadata requests. In
// ZooKeeper mode node 1's is the ZooKeeper server's, and the others unused.
func (c *KafkaCluster) ControllerAddr(id int32) string {
	return fmt.Sprintf("127.0.0.1:%d", c.basePort+100+int(id)-1)
}

// InternalBootstrap returns every broker's PLAINTEXT listener: the broker
// ports themselves, unless the cluster was started with Security
// "sasl_ssl", where it is the INTERNAL listener that needs no credentials
// (for the test's own admin and producer clients).
func (c *KafkaCluster) InternalBootstrap() []string {
	if c.security == "" {
		return c.Bootstrap()
	}
	addrs := make([]string, c.nodes)
	for i := range addrs {
		addrs[i] = fmt.Sprintf("127.0.0.1:%d", c.basePort+200+i)
	}
	return addrs
}

// Version returns the Kafka version the cluster runs (major.minor, one of
// KafkaVersions).
func (c *KafkaCluster) Version() string { return c.version }

// ZooKeeper reports whether the cluster runs in ZooKeeper mode.
func (c *KafkaCluster) ZooKeeper() bool { return c.zk }

// Nodes returns the number of nodes.
func (c *KafkaCluster) Nodes() int { return c.nodes }

// Dir returns the cluster's state directory (configs, data, logs).
func (c *KafkaCluster) Dir() string { return c.dir }

// Kill kills node id with SIGKILL, like a crash, and waits until it is gone.
func (c *KafkaCluster) Kill(t testing.TB, id int32) {
	t.Helper()
	c.checkID(t, id)
	if r := c.run(kafkaNodeTimeout, "kill", strconv.Itoa(int(id))); r.Err != nil {
		t.Fatalf("lab: kill kafka node %d: %v\n%s", id, r.Err, r.Output())
	}
}

// Stop stops node id with SIGTERM (controlled shutdown) and waits until it
// is gone.
func (c *KafkaCluster) Stop(t testing.TB, id int32) {
	t.Helper()
	c.checkID(t, id)
	if r := c.run(kafkaNodeTimeout, "stop-node", strconv.Itoa(int(id))); r.Err != nil {
		t.Fatalf("lab: stop kafka node %d: %v\n%s", id, r.Err, r.Output())
	}
}

// Restart starts node id again on its existing storage and waits until it
// is registered with the controllers and unfenced. It does not wait for its
// replicas to rejoin the ISRs.
func (c *KafkaCluster) Restart(t testing.TB, id int32) {
	t.Helper()
	c.checkID(t, id)
	if r := c.run(kafkaNodeTimeout, "start-node", strconv.Itoa(int(id))); r.Err != nil {
		t.Fatalf("lab: restart kafka node %d: %v\n%s", id, r.Err, r.Output())
	}
}

// PID returns node id's process id, or 0 if it is not running.
func (c *KafkaCluster) PID(id int32) int {
	r := c.run(30*time.Second, "pid", strconv.Itoa(int(id)))
	if r.Err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(r.Stdout))
	if err != nil {
		return 0
	}
	return pid
}

func (c *KafkaCluster) logPath(id int32) string {
	return filepath.Join(c.dir, fmt.Sprintf("node-%d", id), "server.log")
}

// LogTail returns the last n lines of node id's log.
func (c *KafkaCluster) LogTail(id int32, n int) string {
	return tailLines(c.logPath(id), n)
}
