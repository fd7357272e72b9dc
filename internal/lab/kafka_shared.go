package lab

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// Shared clusters: most Kafka tests kill a broker or two and watch the
// exporter follow, but need nothing a cluster keeps once the brokers are
// back. Starting a cluster for each of them cost about 10 s of JVM start and
// format apiece, 20 times a run. SharedKafka lends a cluster of the test
// binary's pool instead and takes it back restored, or stops it when it
// cannot be.

// sharedKafka is the test binary's pool: idle clusters by the options they
// were started with, and every cluster it started, for StopSharedKafka.
var sharedKafka = struct {
	sync.Mutex
	idle map[string][]*KafkaCluster
	all  []*KafkaCluster
}{idle: map[string][]*KafkaCluster{}}

// sharedRestoreTimeout bounds giving a cluster back: restarting the nodes
// the test stopped, deleting its topics and waiting for every replica to
// be in sync again.
const sharedRestoreTimeout = 2 * time.Minute

// SharedKafka lends the test a running cluster started with opts, from the
// test binary's pool, or starts one. The test may kill, stop and restart
// nodes, create topics and change their configs; when it ends the cluster
// is restored to what the test was given, nodes restarted, topics the
// test created deleted, every replica in sync, and goes back to the pool. A
// cluster that cannot be restored so (the test failed, left a node
// SIGSTOPped, changed a broker's dynamic config, created a topic that
// cannot be deleted) is stopped instead, and the next test gets a new one.
// A test that needs state no other test may see (a ZooKeeper cluster,
// security, ACLs, a Kafka of another version) calls StartKafka.
//
// The test binary's TestMain calls StopSharedKafka after its tests.
func SharedKafka(t testing.TB, opts KafkaOptions) *KafkaCluster {
	t.Helper()
	if opts.Security != "" || opts.ZooKeeper || opts.BasePort != 0 {
		t.Fatalf("lab: SharedKafka lends plain KRaft clusters on free ports; start a cluster with security, ZooKeeper or fixed ports with StartKafka")
	}
	// The key is the cluster the options make: {} and {Nodes: 3} are one.
	if opts.Nodes <= 0 {
		opts.Nodes = 3
	}
	if opts.Version == "" {
		opts.Version = defaultVersion()
	}
	key := fmt.Sprintf("%+v", opts)
	c := takeIdleKafka(key)
	if c == nil {
		dir, err := os.MkdirTemp("", "failover-lab-kafka-")
		if err != nil {
			t.Fatalf("lab: state directory for a shared cluster: %v", err)
		}
		c = newKafka(t, opts, dir)
		c.lent = 1
		sharedKafka.Lock()
		sharedKafka.all = append(sharedKafka.all, c)
		sharedKafka.Unlock()
		c.start(t)
	} else {
		c.lent++
		t.Logf("lab: kafka %s %d nodes at %s, shared: its test number %d", c.version, c.nodes, strings.Join(c.Bootstrap(), ","), c.lent)
	}
	before, err := c.state()
	if err != nil {
		c.discard(t, fmt.Sprintf("its state could not be read: %v", err))
		t.Fatalf("lab: shared kafka in %s: %v", c.dir, err)
	}
	t.Cleanup(func() { c.giveBack(t, key, before) })
	return c
}

// StopSharedKafka stops every cluster SharedKafka started that is still
// running, and returns what failed.
func StopSharedKafka() error {
	sharedKafka.Lock()
	all := sharedKafka.all
	sharedKafka.all, sharedKafka.idle = nil, map[string][]*KafkaCluster{}
	sharedKafka.Unlock()
	var errs []error
	for _, c := range all {
		if c.stopped {
			continue
		}
		errs = append(errs, c.stopAll())
		os.RemoveAll(c.dir)
	}
	return errors.Join(errs...)
}

func takeIdleKafka(key string) *KafkaCluster {
	sharedKafka.Lock()
	defer sharedKafka.Unlock()
	idle := sharedKafka.idle[key]
	if len(idle) == 0 {
		return nil
	}
	c := idle[len(idle)-1]
	sharedKafka.idle[key] = idle[:len(idle)-1]
	return c
}

// giveBack restores the cluster to before and returns it to the pool, or
// stops it.
func (c *KafkaCluster) giveBack(t testing.TB, key string, before clusterState) {
	if t.Failed() {
		c.logTails(t)
		c.discard(t, "its test failed")
		return
	}
	start := time.Now()
	if err := c.restore(before); err != nil {
		c.discard(t, err.Error())
		return
	}
	t.Logf("lab: shared kafka in %s restored in %s", c.dir, time.Since(start).Round(time.Millisecond))
	sharedKafka.Lock()
	sharedKafka.idle[key] = append(sharedKafka.idle[key], c)
	sharedKafka.Unlock()
}

// discard stops a shared cluster that is not to be lent again.
func (c *KafkaCluster) discard(t testing.TB, why string) {
	t.Logf("lab: shared kafka in %s is stopped, not lent again: %s", c.dir, why)
	c.stopped = true
	if err := c.stopAll(); err != nil {
		t.Errorf("lab: %v", err)
	}
	os.RemoveAll(c.dir)
}

// clusterState is what a test is lent and must give back: the topics and
// every broker's dynamic configs.
type clusterState struct {
	topics []string
	// internal are the internal topics (__consumer_offsets, ...): a test
	// that made the cluster create one (a consumer group, a transaction)
	// cannot delete it, and the next test would see its partitions.
	internal []string
	dynamic  map[int32]map[string]string
}

// state reads the cluster's topics and brokers' dynamic configs.
func (c *KafkaCluster) state() (clusterState, error) {
	admin, err := sarama.NewClusterAdmin(c.InternalBootstrap(), ClientConfig())
	if err != nil {
		return clusterState{}, fmt.Errorf("admin client: %w", err)
	}
	defer admin.Close()
	topics, err := admin.ListTopics()
	if err != nil {
		return clusterState{}, fmt.Errorf("list topics: %w", err)
	}
	s := clusterState{topics: slices.Sorted(maps.Keys(topics)), dynamic: map[int32]map[string]string{}}
	described, err := admin.DescribeTopics(nil) // every topic, internal ones included
	if err != nil {
		return clusterState{}, fmt.Errorf("describe topics: %w", err)
	}
	for _, d := range described {
		if d.IsInternal {
			s.internal = append(s.internal, d.Name)
		}
	}
	slices.Sort(s.internal)
	for id := int32(1); id <= int32(c.nodes); id++ {
		entries, err := admin.DescribeConfig(sarama.ConfigResource{Type: sarama.BrokerResource, Name: strconv.Itoa(int(id))})
		if err != nil {
			return clusterState{}, fmt.Errorf("configs of broker %d: %w", id, err)
		}
		s.dynamic[id] = map[string]string{}
		for _, e := range entries {
			if e.Source == sarama.SourceDynamicBroker || e.Source == sarama.SourceDynamicDefaultBroker {
				s.dynamic[id][e.Name] = e.Value
			}
		}
	}
	return s, nil
}

// restore brings the cluster back to before: the nodes the test killed or
// stopped started again, the topics it created deleted, and every
// partition's replicas all in sync. It fails, and the cluster is not lent
// again, when that cannot be done within sharedRestoreTimeout.
//
// Each step is tried again until the deadline: on a busy machine a node's
// restart, or an admin request while a restarted broker rejoins, can fail
// once and succeed the next time (a fresh clone's make test once gave a
// cluster up in TestSharedKafka with other builds running beside it).
func (c *KafkaCluster) restore(before clusterState) error {
	deadline := time.Now().Add(sharedRestoreTimeout)
	if err := retryUntil(deadline, c.restartStopped); err != nil {
		return err
	}
	var now clusterState
	var err error
	for now, err = c.state(); err != nil && time.Now().Before(deadline); now, err = c.state() {
		time.Sleep(500 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("its state after the test: %w", err)
	}
	for id, configs := range now.dynamic {
		if !maps.Equal(configs, before.dynamic[id]) {
			return fmt.Errorf("broker %d's dynamic configs changed from %v to %v", id, before.dynamic[id], configs)
		}
	}
	// The topics to give back: those the test was lent, and the internal
	// ones it made, when the cluster may keep them.
	want := slices.Clone(before.topics)
	for _, topic := range now.internal {
		switch {
		case slices.Contains(before.internal, topic):
		case !c.internalTopics:
			return fmt.Errorf("the test made the cluster create its internal topic %s, which cannot be deleted", topic)
		case slices.Contains(now.topics, topic) && !slices.Contains(want, topic):
			want = append(want, topic)
		}
	}
	slices.Sort(want)
	created := slices.DeleteFunc(slices.Clone(now.topics), func(topic string) bool {
		return slices.Contains(before.topics, topic) || slices.Contains(now.internal, topic)
	})
	if err := retryUntil(deadline, func() error { return c.deleteTopics(created) }); err != nil {
		return err
	}
	var why string
	for time.Now().Before(deadline) {
		var ok bool
		if ok, why = c.restored(want); ok {
			return nil
		}
		time.Sleep(250 * time.Millisecond)
	}
	return fmt.Errorf("not restored within %s: %s", sharedRestoreTimeout, why)
}

// errLeftStopped is a node the test left SIGSTOPped: no retry helps.
var errLeftStopped = errors.New("left stopped (SIGSTOP)")

// retryUntil runs step until it succeeds, the deadline passes or it finds
// a node left stopped, and returns its last error.
func retryUntil(deadline time.Time, step func() error) error {
	for {
		err := step()
		if err == nil || errors.Is(err, errLeftStopped) || !time.Now().Add(time.Second).Before(deadline) {
			return err
		}
		time.Sleep(time.Second)
	}
}

// restartStopped starts every node that is not running; a node that runs
// but is SIGSTOPped cannot be told from one the test still means to resume.
func (c *KafkaCluster) restartStopped() error {
	for id := int32(1); id <= int32(c.nodes); id++ {
		pid := c.PID(id)
		if pid != 0 && processStopped(pid) {
			return fmt.Errorf("node %d (pid %d) was %w", id, pid, errLeftStopped)
		}
		if pid != 0 {
			continue
		}
		if r := c.run(kafkaNodeTimeout, "start-node", strconv.Itoa(int(id))); r.Err != nil {
			return fmt.Errorf("restarting node %d: %v\n%s", id, r.Err, r.Output())
		}
	}
	return nil
}

// processStopped reports whether pid is in the stopped state (T in
// /proc/PID/stat), as after SIGSTOP.
func processStopped(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses and may
	// hold spaces.
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(fields) > 0 && fields[0] == "T"
}

func (c *KafkaCluster) deleteTopics(topics []string) error {
	if len(topics) == 0 {
		return nil
	}
	admin, err := sarama.NewClusterAdmin(c.InternalBootstrap(), ClientConfig())
	if err != nil {
		return fmt.Errorf("admin client: %w", err)
	}
	defer admin.Close()
	for _, topic := range topics {
		if err := admin.DeleteTopic(topic); err != nil && !errors.Is(err, sarama.ErrUnknownTopicOrPartition) {
			return fmt.Errorf("the test's topic %s cannot be deleted: %w", topic, err)
		}
	}
	return nil
}

// restored reports whether the cluster is as it was lent: every node a
// broker of the metadata, exactly the topics it had, and every partition
// led with all its replicas in sync. Otherwise it says what is not.
func (c *KafkaCluster) restored(topics []string) (bool, string) {
	client, err := sarama.NewClient(c.InternalBootstrap(), ClientConfig())
	if err != nil {
		return false, err.Error()
	}
	defer client.Close()
	if n := len(client.Brokers()); n != c.nodes {
		return false, fmt.Sprintf("%d of %d brokers in the metadata", n, c.nodes)
	}
	have, err := client.Topics()
	if err != nil {
		return false, err.Error()
	}
	slices.Sort(have)
	if !slices.Equal(have, topics) {
		return false, fmt.Sprintf("topics %v, want %v", have, topics)
	}
	for _, topic := range topics {
		parts, err := client.Partitions(topic)
		if err != nil {
			return false, err.Error()
		}
		for _, p := range parts {
			replicas, _ := client.Replicas(topic, p)
			isr, _ := client.InSyncReplicas(topic, p)
			if leader, err := client.Leader(topic, p); err != nil || leader == nil {
				return false, fmt.Sprintf("%s-%d has no leader", topic, p)
			}
			if len(isr) != len(replicas) {
				return false, fmt.Sprintf("%s-%d has ISR %v of replicas %v", topic, p, isr, replicas)
			}
		}
	}
	return true, ""
}
