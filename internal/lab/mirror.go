package lab

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The MirrorMaker 2 lab: cross-cluster replication between two lab Kafka
// clusters, for the tests of what the exporter reads about it (replicated
// topics, heartbeats, offset syncs, checkpoints). StartMirror runs
// scripts/kafka/mirror.sh, which starts one JVM (Kafka 4.1.2's
// connect-mirror) replicating Source to Target; the script's header says
// which topics it writes where. A pair of one-node clusters is enough and
// spares a 2-core machine:
//
//	src := lab.StartKafka(t, lab.KafkaOptions{Nodes: 1})
//	dst := lab.StartKafka(t, lab.KafkaOptions{Nodes: 1})
//	m := lab.StartMirror(t, lab.MirrorOptions{Source: src, Target: dst})
//	src.CreateTopic(t, "orders", 1) // dst gets m.RemoteTopic("orders"), "primary.orders"
//
// By default that JVM is MirrorMaker's dedicated mode, which has no public
// REST API. With MirrorOptions.Connect it is a Kafka Connect distributed
// worker running the flow's three Mirror connectors, as Strimzi and most
// managed offerings deploy MirrorMaker 2, and its REST API is the test's
// too (mirror_connect.go): ConnectURL, Connectors, ConnectorStatus,
// PauseConnector, ResumeConnector, SetConnectorConfig, RestartTask, and
// FailTasks and RepairTasks for a task that really fails.

// MirrorOptions configures StartMirror.
type MirrorOptions struct {
	// Source and Target are the clusters; MirrorMaker connects to their
	// InternalBootstrap (PLAINTEXT, even on a sasl_ssl cluster).
	Source, Target *KafkaCluster
	// SourceAlias and TargetAlias name the clusters to MirrorMaker (default
	// "primary" and "backup"): the source alias prefixes replicated topics
	// under the default policy, the target alias names the offset-syncs
	// topic. [A-Za-z0-9_-] only.
	SourceAlias, TargetAlias string
	// Topics is the source topics to replicate, comma-separated regexes
	// (MirrorMaker's "topics"); "" is every topic.
	Topics string
	// Groups is the consumer groups to checkpoint, comma-separated regexes;
	// "" is every group.
	Groups string
	// IdentityPolicy replicates topics under their own names
	// (IdentityReplicationPolicy) instead of <SourceAlias>.<topic>.
	IdentityPolicy bool
	// Separator is MirrorMaker's replication.policy.separator, "" for its
	// default "."; it joins the parts of the internal topics' names too.
	Separator string
	// OffsetLagMax sets offset.lag.max: how far the target's offsets may
	// drift from the last offset sync before MirrorMaker writes another.
	// 0 keeps MirrorMaker's default, 100.
	OffsetLagMax int
	// Connect runs the flow on a Kafka Connect distributed worker (its own
	// Kafka is Target) with its REST API on 127.0.0.1, instead of
	// MirrorMaker's dedicated mode; every other option means the same.
	// StartMirror then also waits until the REST API says the three
	// connectors and their tasks run.
	Connect bool
	// Env adds environment variables for scripts/kafka/mirror.sh, e.g.
	// "MIRROR_LAB_HEAP=-Xmx256m".
	Env []string
}

// Mirror is a running MirrorMaker 2 started by scripts/kafka/mirror.sh in a
// private state directory. It is stopped when the test ends, before the
// clusters it connects (they were started first, so they stop last).
type Mirror struct {
	script                   string
	dir                      string
	env                      []string
	source, target           *KafkaCluster
	sourceAlias, targetAlias string
	identity                 bool
	separator                string
	// connectURL is the Connect worker's REST API, "" in dedicated mode.
	connectURL string
	// How long the script's start took (Connect mode: the worker up and
	// the three connectors accepted), and, in Connect mode, how long from
	// then until they and their tasks all ran: for the tests' figures.
	startTook, runningTook time.Duration
}

// Time limits for the script and for replication to start. Starting
// includes fetching the jars on a fresh machine (first run only).
const (
	mirrorStartTimeout     = 5 * time.Minute
	mirrorReplicateTimeout = 2 * time.Minute
	mirrorCommandTimeout   = time.Minute
)

// StartMirror starts MirrorMaker 2 replicating o.Source to o.Target, waits
// until it replicates (heartbeats from the source arrive on the target in
// HeartbeatsTopic) and registers its stop with t.Cleanup. It fails the
// test, never skips it, when MirrorMaker cannot be started.
func StartMirror(t testing.TB, o MirrorOptions) *Mirror {
	t.Helper()
	if o.Source == nil || o.Target == nil {
		t.Fatalf("lab: StartMirror needs a Source and a Target cluster")
	}
	m := &Mirror{
		script:      filepath.Join(RepoRoot(t), "scripts", "kafka", "mirror.sh"),
		dir:         filepath.Join(t.TempDir(), "mirror"),
		source:      o.Source,
		target:      o.Target,
		sourceAlias: o.SourceAlias,
		targetAlias: o.TargetAlias,
		identity:    o.IdentityPolicy,
		separator:   o.Separator,
	}
	if m.sourceAlias == "" {
		m.sourceAlias = "primary"
	}
	if m.targetAlias == "" {
		m.targetAlias = "backup"
	}
	if m.separator == "" {
		m.separator = "."
	}
	policy := "default"
	if o.IdentityPolicy {
		policy = "identity"
	}
	m.env = mirrorEnv(m, o, policy)
	if o.Connect {
		port := PickBasePort(t, 0)
		m.connectURL = "http://127.0.0.1:" + strconv.Itoa(port)
		m.env = append(m.env, "MIRROR_LAB_MODE=connect", "MIRROR_LAB_CONNECT_PORT="+strconv.Itoa(port))
	}
	m.env = append(m.env, o.Env...)

	// Registered after t.TempDir, so it runs before the directory is removed.
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("lab: last lines of the MirrorMaker log (%s):\n%s", m.logPath(), m.LogTail(60))
		}
		if r := m.run(mirrorCommandTimeout, "stop"); r.Err != nil {
			t.Errorf("lab: stopping MirrorMaker: %v\n%s", r.Err, r.Output())
		}
	})

	start := time.Now()
	r := m.run(mirrorStartTimeout, "start")
	if r.Err != nil {
		t.Fatalf("lab: MirrorMaker did not start (%v); scripts/install-deps.sh kafka installs what it needs.\n%s", r.Err, r.Output())
	}
	m.startTook = time.Since(start)
	if m.connectURL != "" {
		m.runningTook = m.waitConnectorsRunning(t)
	}
	heartbeats := m.HeartbeatsTopic()
	WaitFor(t, mirrorReplicateTimeout, 250*time.Millisecond, func() (bool, string) {
		if m.PID() == 0 {
			t.Fatalf("lab: MirrorMaker exited; last lines of %s:\n%s", m.logPath(), m.LogTail(40))
		}
		ends, err := o.Target.EndOffsets(heartbeats)
		if err != nil {
			return false, err.Error()
		}
		return sumOffsets(ends) > 0, fmt.Sprintf("%s has no record yet", heartbeats)
	})
	t.Logf("lab: MirrorMaker %s->%s (%s policy, %s) started in %s, replicating (%s on the target) after %s (state in %s)",
		m.sourceAlias, m.targetAlias, policy, m.mode(), m.startTook.Round(time.Millisecond), heartbeats,
		time.Since(start).Round(time.Millisecond), m.dir)
	return m
}

// mirrorEnv is mirror.sh's environment for m, but for the Connect mode's
// and o.Env.
func mirrorEnv(m *Mirror, o MirrorOptions, policy string) []string {
	env := []string{
		"MIRROR_LAB_DIR=" + m.dir,
		"MIRROR_LAB_SOURCE_BOOTSTRAP=" + strings.Join(o.Source.InternalBootstrap(), ","),
		"MIRROR_LAB_TARGET_BOOTSTRAP=" + strings.Join(o.Target.InternalBootstrap(), ","),
		"MIRROR_LAB_SOURCE_ALIAS=" + m.sourceAlias,
		"MIRROR_LAB_TARGET_ALIAS=" + m.targetAlias,
		"MIRROR_LAB_POLICY=" + policy,
		// The script's watchdog stops MirrorMaker if this test binary dies
		// without running its cleanups.
		"MIRROR_LAB_OWNER_PID=" + strconv.Itoa(os.Getpid()),
	}
	if o.Topics != "" {
		env = append(env, "MIRROR_LAB_TOPICS="+o.Topics)
	}
	if o.Groups != "" {
		env = append(env, "MIRROR_LAB_GROUPS="+o.Groups)
	}
	if o.Separator != "" {
		env = append(env, "MIRROR_LAB_SEPARATOR="+o.Separator)
	}
	if o.OffsetLagMax > 0 {
		env = append(env, "MIRROR_LAB_OFFSET_LAG_MAX="+strconv.Itoa(o.OffsetLagMax))
	}
	return env
}

func (m *Mirror) mode() string {
	if m.connectURL != "" {
		return "Kafka Connect worker at " + m.connectURL
	}
	return "dedicated mode"
}

func sumOffsets(offsets map[int32]int64) int64 {
	var sum int64
	for _, o := range offsets {
		sum += o
	}
	return sum
}

func (m *Mirror) run(timeout time.Duration, args ...string) RunResult {
	return Run(timeout, m.env, "bash", append([]string{m.script}, args...)...)
}

// SourceAlias is the source cluster's name in MirrorMaker's configuration.
func (m *Mirror) SourceAlias() string { return m.sourceAlias }

// TargetAlias is the target cluster's name in MirrorMaker's configuration.
func (m *Mirror) TargetAlias() string { return m.targetAlias }

// Source returns the cluster replicated from.
func (m *Mirror) Source() *KafkaCluster { return m.source }

// Target returns the cluster replicated to.
func (m *Mirror) Target() *KafkaCluster { return m.target }

// RemoteTopic is the name a source topic is replicated to on the target:
// "<source alias><separator><topic>", or the topic itself under the
// identity policy.
func (m *Mirror) RemoteTopic(topic string) string {
	if m.identity {
		return topic
	}
	return m.sourceAlias + m.separator + topic
}

// HeartbeatsTopic is the topic on the target that MirrorMaker replicates
// the source's heartbeats to, "<source alias><separator>heartbeats" under
// either policy: a record a second while the flow works.
func (m *Mirror) HeartbeatsTopic() string { return m.sourceAlias + m.separator + "heartbeats" }

// CheckpointsTopic is the topic on the target holding the source's consumer
// group offsets translated to the target's,
// "<source alias><separator>checkpoints<separator>internal".
func (m *Mirror) CheckpointsTopic() string {
	return m.sourceAlias + m.separator + "checkpoints" + m.separator + "internal"
}

// OffsetSyncsTopic is the topic on the source where MirrorMaker records
// which source offset became which target offset,
// "mm2-offset-syncs<separator><target alias><separator>internal".
func (m *Mirror) OffsetSyncsTopic() string {
	return "mm2-offset-syncs" + m.separator + m.targetAlias + m.separator + "internal"
}

// PID returns the MirrorMaker JVM's process id (the Connect worker's in
// Connect mode), or 0 if it is not running.
func (m *Mirror) PID() int {
	r := m.run(30*time.Second, "pid")
	if r.Err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(r.Stdout))
	if err != nil {
		return 0
	}
	return pid
}

// Pause stops the MirrorMaker JVM with SIGSTOP: replication, heartbeats
// and checkpoints stop, its connections stay open. A pause longer than the
// Connect workers' session timeout (10 s) makes them rejoin their groups
// on Resume, which delays replication by a few seconds more.
func (m *Mirror) Pause(t testing.TB) {
	t.Helper()
	if r := m.run(mirrorCommandTimeout, "pause"); r.Err != nil {
		t.Fatalf("lab: pause MirrorMaker: %v\n%s", r.Err, r.Output())
	}
}

// Resume continues a paused MirrorMaker with SIGCONT.
func (m *Mirror) Resume(t testing.TB) {
	t.Helper()
	if r := m.run(mirrorCommandTimeout, "resume"); r.Err != nil {
		t.Fatalf("lab: resume MirrorMaker: %v\n%s", r.Err, r.Output())
	}
}

// Stop stops MirrorMaker (SIGTERM, SIGKILL after 15 s; paused or not) and
// waits until it is gone. The test's cleanup does it too.
func (m *Mirror) Stop(t testing.TB) {
	t.Helper()
	if r := m.run(mirrorCommandTimeout, "stop"); r.Err != nil {
		t.Fatalf("lab: stop MirrorMaker: %v\n%s", r.Err, r.Output())
	}
}

// TranslateOffsets returns where consumer group of the source would resume
// on the target, by partition of the target's topics, as MirrorMaker's own
// client library computes it (RemoteClusterUtils.translateOffsets, run by
// scripts/kafka/MirrorOffsets.java): from the latest checkpoints in
// CheckpointsTopic. An empty map means no checkpoint for the group yet.
func (m *Mirror) TranslateOffsets(group string) (map[TopicPartition]int64, error) {
	r := m.run(mirrorCommandTimeout, "translate-offsets", group, "10000")
	if r.Err != nil {
		return nil, fmt.Errorf("translate offsets of group %s: %w\n%s", group, r.Err, r.Output())
	}
	return parseTranslatedOffsets(r.Stdout)
}

// parseTranslatedOffsets reads MirrorOffsets' "TOPIC\tPARTITION\tOFFSET"
// lines.
func parseTranslatedOffsets(out string) (map[TopicPartition]int64, error) {
	offsets := map[TopicPartition]int64{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		fields := strings.Split(line, "\t")
		if len(fields) != 3 {
			return nil, fmt.Errorf("translated offset line %q: want TOPIC, PARTITION and OFFSET", line)
		}
		partition, err := strconv.ParseInt(fields[1], 10, 32)
		if err != nil {
			return nil, fmt.Errorf("translated offset line %q: partition: %w", line, err)
		}
		offset, err := strconv.ParseInt(fields[2], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("translated offset line %q: offset: %w", line, err)
		}
		offsets[TopicPartition{Topic: fields[0], Partition: int32(partition)}] = offset
	}
	return offsets, nil
}

// Dir returns MirrorMaker's state directory (mm2.properties, or
// connect.properties and connectors/*.json in Connect mode; mm2.log).
func (m *Mirror) Dir() string { return m.dir }

func (m *Mirror) logPath() string { return filepath.Join(m.dir, "mm2.log") }

// LogTail returns the last n lines of MirrorMaker's log (either mode's).
func (m *Mirror) LogTail(n int) string { return tailLines(m.logPath(), n) }
