package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/internal/exportertest"
	"github.com/failover-exporter/failover_exporter/internal/lab"
)

// TestBadInputWrongServiceAndPassword points each collector at the wrong
// port of real lab processes (a Redis node, a Kafka broker, a KRaft
// controller listener, a Redis cluster bus port) and checks that the first
// failure logged says what answered there. Then the Redis nodes start to
// require a password: without one the log names NOAUTH and how to give a
// password; with --redis.password-file the cluster is read.
func TestBadInputWrongServiceAndPassword(t *testing.T) {
	k := lab.StartKafka(t, lab.KafkaOptions{Nodes: 1})
	r := lab.StartRedisCluster(t, lab.RedisOptions{})
	redisPort := r.Ports()[0]
	// A topic, so that the exporter sends DescribeConfigs, the request
	// Kafka 4 refuses at protocol versions older than 2.1.
	faultKafkaTopics(t, k.BrokerAddr(1), true, []string{"bad-input-orders"})
	cfg := "kafka:\n" +
		// A short request timeout, so that the Redis node's silence (it waits
		// for the end of a line) fails the attempt before the refresh ends.
		"  - name: k-at-redis\n    bootstrap_servers: [" + r.Addrs()[0] + "]\n    request_timeout: 300ms\n" +
		"  - name: k-at-controller\n    bootstrap_servers: [" + k.ControllerAddr(1) + "]\n" +
		// The oldest accepted protocol version still reads a Kafka 4 cluster.
		"  - name: k-oldest-version\n    bootstrap_servers: [" + k.BrokerAddr(1) + "]\n    version: 2.1.0\n" +
		"redis:\n" +
		"  - name: r-at-kafka\n    addrs: [" + k.BrokerAddr(1) + "]\n" +
		"  - name: r-at-bus\n    addrs: [" + r.BusAddr(redisPort) + "]\n"
	e := exportertest.Start(t, "--config.file="+faultConfig(t, cfg))
	e.WaitReady(t, 30*time.Second)
	want := map[string]string{
		"k-at-redis":      "the server at " + r.Addrs()[0] + " does not speak the Kafka protocol; it answers as a Redis server",
		"k-at-controller": k.ControllerAddr(1) + " is a KRaft controller listener, not a broker listener",
		"r-at-kafka":      "the server at " + k.BrokerAddr(1) + " does not speak the Redis protocol; it answers as a Kafka broker",
		"r-at-bus":        r.BusAddr(redisPort) + " is the cluster bus port of the Redis node at " + r.Addrs()[0] + ", not its client port",
	}
	for name, msg := range want {
		// The first failure is the one logged at warn level.
		var first string
		for _, line := range strings.Split(secClusterLog(e.Logs(), name), "\n") {
			if strings.Contains(line, "refresh failed") {
				first = line
				break
			}
		}
		if !strings.Contains(first, msg) {
			t.Errorf("%s: first failure logged as\n%s\nwant it to say %q", name, first, msg)
		}
	}
	oldest := map[string]string{"kafka_cluster": "k-oldest-version", "topic": "bad-input-orders"}
	waitMetrics(t, e, 30*time.Second, "min.insync.replicas read with version 2.1.0", func(m exportertest.Metrics) (bool, string) {
		v, ok := m.Value("kafka_topic_min_insync_replicas", oldest)
		return ok && v == 1, m.Describe("kafka_topic_min_insync_replicas", oldest)
	})
	e.Stop()

	const password = "Lab-requirepass-5772"
	for _, port := range r.Ports() {
		r.CLI(t, port, "CONFIG", "SET", "requirepass", password)
	}
	noPassword := exportertest.Start(t, "--redis.addr="+r.Addrs()[0], "--redis.cluster-name=locked")
	noPassword.WaitReady(t, 30*time.Second)
	wantNoAuth := regexp.MustCompile(`cluster=locked msg="refresh failed" err=".*NOAUTH.*the server wants a password: give --redis.password-file=FILE, or password: \{file: FILE\} or \{env: VARIABLE\} in the config file`)
	if logs := noPassword.Logs(); !wantNoAuth.MatchString(logs) {
		t.Errorf("no NOAUTH advice in the log:\n%s", logs)
	}
	if v, ok := noPassword.Scrape(t).Value("redis_cluster_up", map[string]string{"redis_cluster": "locked"}); !ok || v != 0 {
		t.Errorf("redis_cluster_up without a password = %v (present %v), want 0", v, ok)
	}

	pwFile := filepath.Join(t.TempDir(), "redis-password")
	if err := os.WriteFile(pwFile, []byte(password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	withPassword := exportertest.Start(t, "--redis.addr="+r.Addrs()[0], "--redis.cluster-name=unlocked", "--redis.password-file="+pwFile)
	withPassword.WaitReady(t, 30*time.Second)
	m, _ := waitMetrics(t, withPassword, 30*time.Second, "cluster read with --redis.password-file", func(m exportertest.Metrics) (bool, string) {
		v, ok := m.Value("redis_cluster_up", map[string]string{"redis_cluster": "unlocked"})
		return ok && v == 1, m.Describe("redis_cluster_up", nil)
	})
	if n := len(m.Series("redis_cluster_node_slots", map[string]string{"redis_cluster": "unlocked"})); n != len(r.Ports()) {
		t.Errorf("redis_cluster_node_slots series with --redis.password-file: %d, want %d", n, len(r.Ports()))
	}
	cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", withPassword.PID()))
	for where, text := range map[string]string{"log": withPassword.Logs() + noPassword.Logs(), "command line": string(cmdline)} {
		if strings.Contains(text, password) {
			t.Errorf("the password appears in the %s", where)
		}
	}
}
