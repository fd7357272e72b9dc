package lab

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// PartitionDescription is one partition line of Kafka's own
// `kafka-topics.sh --describe` (org.apache.kafka.tools.TopicCommand): what
// Kafka's tooling says about the partition, for tests that compare the
// exporter with it.
type PartitionDescription struct {
	Topic     string
	Partition int32
	// Leader is -1 when TopicCommand prints "none".
	Leader   int32
	Replicas []int32
	ISR      []int32
	// Reassigning is true when TopicCommand printed the Adding and Removing
	// Replicas fields, which it does only for a partition with a
	// reassignment in progress.
	Reassigning      bool
	AddingReplicas   []int32
	RemovingReplicas []int32
	// ELRKnown is false when TopicCommand printed "Elr: N/A" (the broker
	// did not report eligible leader replicas).
	ELRKnown     bool
	ELR          []int32
	LastKnownELR []int32
}

// Key is "topic/partition".
func (p PartitionDescription) Key() string { return fmt.Sprintf("%s/%d", p.Topic, p.Partition) }

// DescribeTopics runs TopicCommand --describe with the given extra
// arguments (e.g. "--topic", "orders", "--under-replicated-partitions")
// and parses the partition lines it prints.
func (c *KafkaCluster) DescribeTopics(t testing.TB, args ...string) []PartitionDescription {
	t.Helper()
	r := c.run(2*time.Minute, append([]string{"topics", "--describe"}, args...)...)
	if r.Err != nil {
		t.Fatalf("lab: kafka-topics.sh --describe %s: %v\n%s", strings.Join(args, " "), r.Err, r.Output())
	}
	parts, err := ParseTopicDescribe(r.Stdout)
	if err != nil {
		t.Fatalf("lab: kafka-topics.sh --describe %s: %v\n%s", strings.Join(args, " "), err, r.Stdout)
	}
	return parts
}

// DescribeTopicsBatch runs TopicCommand --describe once for each argument
// list, all in one JVM (scripts/kafka/TopicsBatch.java), and returns what
// each printed, parsed, in order. One JVM instead of one per run: the JVM's
// start-up is most of a run's cost. The runs follow each other within a
// second or so; each still goes through TopicCommand's own options, admin
// client and printing.
func (c *KafkaCluster) DescribeTopicsBatch(t testing.TB, runs ...[]string) [][]PartitionDescription {
	t.Helper()
	args := []string{"topics-batch"}
	for i, run := range runs {
		if i > 0 {
			args = append(args, ";;")
		}
		args = append(append(args, "--describe"), run...)
	}
	r := c.run(2*time.Minute, args...)
	if r.Err != nil {
		t.Fatalf("lab: kafka-topics.sh batch %q: %v\n%s", runs, r.Err, r.Output())
	}
	outs, err := splitTopicsBatch(r.Stdout, len(runs))
	if err != nil {
		t.Fatalf("lab: kafka-topics.sh batch %q: %v\n%s", runs, err, r.Output())
	}
	parsed := make([][]PartitionDescription, len(runs))
	for i, out := range outs {
		if parsed[i], err = ParseTopicDescribe(out); err != nil {
			t.Fatalf("lab: kafka-topics.sh --describe %s: %v\n%s", strings.Join(runs[i], " "), err, out)
		}
	}
	return parsed
}

// splitTopicsBatch cuts TopicsBatch's output into each run's, checking that
// every run is there and said status 0.
func splitTopicsBatch(out string, runs int) ([]string, error) {
	outs := make([]string, 0, runs)
	var cur strings.Builder
	inRun := false
	for _, line := range strings.SplitAfter(out, "\n") {
		trimmed := strings.TrimRight(line, "\n")
		switch {
		case trimmed == fmt.Sprintf("=== run %d", len(outs)) && !inRun:
			inRun = true
			cur.Reset()
		case strings.HasPrefix(trimmed, fmt.Sprintf("=== status %d ", len(outs))) && inRun:
			if status := strings.TrimPrefix(trimmed, fmt.Sprintf("=== status %d ", len(outs))); status != "0" {
				return nil, fmt.Errorf("run %d exited with status %s:\n%s", len(outs), status, cur.String())
			}
			outs = append(outs, cur.String())
			inRun = false
		case inRun:
			cur.WriteString(line)
		case trimmed != "":
			return nil, fmt.Errorf("unexpected line outside a run: %q", trimmed)
		}
	}
	if len(outs) != runs {
		return nil, fmt.Errorf("%d of %d runs finished", len(outs), runs)
	}
	return outs, nil
}

// ParseTopicDescribe parses TopicCommand --describe output. Partition lines
// start with a tab and hold tab-separated "Key: value" fields; topic header
// lines (no leading tab) are skipped. Anything else is an error, so a
// format change in a new Kafka fails loudly instead of comparing nothing.
func ParseTopicDescribe(out string) ([]PartitionDescription, error) {
	var parts []PartitionDescription
	for n, line := range strings.Split(out, "\n") {
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "Topic: ") {
			continue
		}
		if !strings.HasPrefix(line, "\tTopic: ") {
			return nil, fmt.Errorf("line %d: not a partition line: %q", n+1, line)
		}
		p := PartitionDescription{Leader: -1}
		seen := map[string]bool{}
		for _, field := range strings.Split(strings.TrimPrefix(line, "\t"), "\t") {
			key, value, ok := strings.Cut(field, ":")
			if !ok {
				return nil, fmt.Errorf("line %d: field %q is not Key: value", n+1, field)
			}
			value = strings.TrimSpace(value)
			seen[key] = true
			var err error
			switch key {
			case "Topic":
				p.Topic = value
			case "Partition":
				var id int64
				id, err = strconv.ParseInt(value, 10, 32)
				p.Partition = int32(id)
			case "Leader":
				if value != "none" {
					var id int64
					id, err = strconv.ParseInt(value, 10, 32)
					p.Leader = int32(id)
				}
			case "Replicas":
				p.Replicas, err = brokerList(value)
			case "Isr":
				p.ISR, err = brokerList(value)
			case "Adding Replicas":
				p.Reassigning = true
				p.AddingReplicas, err = brokerList(value)
			case "Removing Replicas":
				p.RemovingReplicas, err = brokerList(value)
			case "Elr":
				if value != "N/A" {
					p.ELRKnown = true
					p.ELR, err = brokerList(value)
				}
			case "LastKnownElr":
				if value != "N/A" {
					p.LastKnownELR, err = brokerList(value)
				}
			}
			if err != nil {
				return nil, fmt.Errorf("line %d: field %s: %w", n+1, key, err)
			}
		}
		for _, key := range []string{"Topic", "Partition", "Leader", "Replicas", "Isr"} {
			if !seen[key] {
				return nil, fmt.Errorf("line %d: no %s field: %q", n+1, key, line)
			}
		}
		parts = append(parts, p)
	}
	return parts, nil
}

// brokerList parses "1,2,3" (empty for none).
func brokerList(s string) ([]int32, error) {
	if s == "" {
		return nil, nil
	}
	var ids []int32
	for _, f := range strings.Split(s, ",") {
		id, err := strconv.ParseInt(strings.TrimSpace(f), 10, 32)
		if err != nil {
			return nil, fmt.Errorf("broker list %q: %w", s, err)
		}
		ids = append(ids, int32(id))
	}
	return ids, nil
}

// QuorumStatus runs Kafka's MetadataQuorumCommand `describe --status`
// against the controllers and returns its "Key: value" lines (LeaderId,
// LeaderEpoch, HighWatermark, MaxFollowerLag, ...).
func (c *KafkaCluster) QuorumStatus(t testing.TB) map[string]string {
	t.Helper()
	r := c.describeQuorum(t, "--status")
	status := map[string]string{}
	for _, line := range strings.Split(r.Stdout, "\n") {
		if key, value, ok := strings.Cut(line, ":"); ok {
			status[strings.TrimSpace(key)] = strings.TrimSpace(value)
		}
	}
	if status["LeaderId"] == "" {
		t.Fatalf("lab: kafka-metadata-quorum.sh describe --status printed no LeaderId:\n%s", r.Stdout)
	}
	return status
}

// describeQuorum runs MetadataQuorumCommand `describe what` against the
// controllers. A cluster just started on a busy machine may have no
// controller answering yet: the tool waits for one, then gives up ("Timed
// out waiting for a node assignment"); it is asked again, twice at most.
func (c *KafkaCluster) describeQuorum(t testing.TB, what string) RunResult {
	t.Helper()
	for attempt := 1; ; attempt++ {
		r := c.run(2*time.Minute, "quorum", "describe", what)
		if r.Err == nil {
			return r
		}
		if attempt == 3 || !strings.Contains(r.Output(), "Timed out waiting for a node assignment") {
			t.Fatalf("lab: kafka-metadata-quorum.sh describe %s: %v\n%s", what, r.Err, r.Output())
		}
		t.Logf("lab: kafka-metadata-quorum.sh describe %s found no controller (attempt %d); asking again", what, attempt)
	}
}

// QuorumReplica is one row of Kafka's MetadataQuorumCommand `describe
// --replication`: a voter (Status Leader or Follower) or an observer.
type QuorumReplica struct {
	ID          int32
	DirectoryID string
	Status      string
	// LastFetch is LastFetchTimestamp, by the leader's clock; zero when
	// the tool prints -1 (the leader itself, or unknown).
	LastFetch time.Time
}

// QuorumReplication runs `describe --replication` against the controllers
// and returns its rows.
func (c *KafkaCluster) QuorumReplication(t testing.TB) []QuorumReplica {
	t.Helper()
	r := c.describeQuorum(t, "--replication")
	var rows []QuorumReplica
	for _, line := range strings.Split(r.Stdout, "\n") {
		// NodeId DirectoryId LogEndOffset Lag LastFetchTimestamp LastCaughtUpTimestamp Status
		f := strings.Fields(line)
		if len(f) != 7 || f[0] == "NodeId" {
			continue
		}
		id, err1 := strconv.ParseInt(f[0], 10, 32)
		fetched, err2 := strconv.ParseInt(f[4], 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("lab: describe --replication row %q: not NodeId ... LastFetchTimestamp numbers", line)
		}
		row := QuorumReplica{ID: int32(id), DirectoryID: f[1], Status: f[6]}
		if fetched >= 0 {
			row.LastFetch = time.UnixMilli(fetched)
		}
		rows = append(rows, row)
	}
	if len(rows) == 0 {
		t.Fatalf("lab: describe --replication printed no rows:\n%s", r.Stdout)
	}
	return rows
}

// RemoveController takes node id out of the KRaft voter set
// (`remove-controller`, KIP-853); the node keeps running, as an observer.
func (c *KafkaCluster) RemoveController(t testing.TB, id int32, directoryID string) {
	t.Helper()
	r := c.run(2*time.Minute, "quorum", "remove-controller", "--controller-id", strconv.Itoa(int(id)), "--controller-directory-id", directoryID)
	if r.Err != nil {
		t.Fatalf("lab: kafka-metadata-quorum.sh remove-controller %d: %v\n%s", id, r.Err, r.Output())
	}
}

// AddController adds node id, running, to the KRaft voter set
// (`add-controller` with the node's own config, KIP-853): a node of the
// cluster removed before, or a controller StartController started.
func (c *KafkaCluster) AddController(t testing.TB, id int32) {
	t.Helper()
	conf := filepath.Join(c.dir, fmt.Sprintf("node-%d", id), "server.properties")
	r := c.run(2*time.Minute, "quorum", "--command-config", conf, "add-controller")
	if r.Err != nil {
		t.Fatalf("lab: kafka-metadata-quorum.sh add-controller %d: %v\n%s", id, r.Err, r.Output())
	}
}

// StartController starts a controller-only node id (above the cluster's
// nodes; KafkaOptions.SpareControllers reserved its port) outside the
// voter set: an observer of the quorum until AddController. It stops with
// the cluster.
func (c *KafkaCluster) StartController(t testing.TB, id int32) {
	t.Helper()
	if int(id) <= c.nodes {
		t.Fatalf("lab: controller-only node id %d must be above the %d nodes", id, c.nodes)
	}
	if r := c.run(kafkaNodeTimeout, "start-controller", strconv.Itoa(int(id))); r.Err != nil {
		t.Fatalf("lab: start controller %d: %v\n%s", id, r.Err, r.Output())
	}
}

// Configs runs Kafka's ConfigCommand (kafka-configs.sh) with
// --bootstrap-server filled in and returns what it printed, failing the
// test when it fails.
func (c *KafkaCluster) Configs(t testing.TB, args ...string) string {
	t.Helper()
	r := c.run(2*time.Minute, append([]string{"configs"}, args...)...)
	if r.Err != nil {
		t.Fatalf("lab: kafka-configs.sh %s: %v\n%s", strings.Join(args, " "), r.Err, r.Output())
	}
	return r.Stdout
}

// TryTopics runs Kafka's TopicCommand (kafka-topics.sh) and returns its
// outcome, for a test whose point is that Kafka refuses the command.
func (c *KafkaCluster) TryTopics(args ...string) RunResult {
	return c.run(2*time.Minute, append([]string{"topics"}, args...)...)
}

// Offsets runs Kafka's GetOffsetShell (kafka-get-offsets.sh) for topic at
// time (-1 latest, -2 earliest, -5 the newest tiered offset; Kafka 3.9+)
// and returns each partition's offset.
func (c *KafkaCluster) Offsets(t testing.TB, topic string, at int64) map[int32]int64 {
	t.Helper()
	r := c.run(2*time.Minute, "offsets", "--topic", topic, "--time", strconv.FormatInt(at, 10))
	if r.Err != nil {
		t.Fatalf("lab: kafka-get-offsets.sh --topic %s --time %d: %v\n%s", topic, at, r.Err, r.Output())
	}
	offsets := map[int32]int64{}
	for _, line := range strings.Split(r.Stdout, "\n") {
		// topic:partition:offset
		f := strings.Split(strings.TrimSpace(line), ":")
		if len(f) != 3 || f[0] != topic {
			continue
		}
		p, err1 := strconv.ParseInt(f[1], 10, 32)
		o, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("lab: kafka-get-offsets.sh line %q is not topic:partition:offset", line)
		}
		offsets[int32(p)] = o
	}
	return offsets
}

// GroupCoordinator runs Kafka's kafka-consumer-groups.sh `--describe
// --group group --state` and returns the broker ID of the coordinator it
// names ("COORDINATOR (ID)": host:port  (id)); it fails the test when the
// tool names none.
func (c *KafkaCluster) GroupCoordinator(t testing.TB, group string) int32 {
	t.Helper()
	coordinators := c.groupCoordinators(t, "--group", group)
	id, ok := coordinators[group]
	if !ok {
		t.Fatalf("lab: kafka-consumer-groups.sh names no coordinator of %s", group)
	}
	return id
}

// GroupCoordinators runs kafka-consumer-groups.sh `--describe --all-groups
// --state` and returns the coordinator it names for each group.
func (c *KafkaCluster) GroupCoordinators(t testing.TB) map[string]int32 {
	t.Helper()
	return c.groupCoordinators(t, "--all-groups")
}

func (c *KafkaCluster) groupCoordinators(t testing.TB, which ...string) map[string]int32 {
	t.Helper()
	r := c.run(2*time.Minute, append(append([]string{"groups", "--describe"}, which...), "--state")...)
	if r.Err != nil {
		t.Fatalf("lab: kafka-consumer-groups.sh --describe %v --state: %v\n%s", which, r.Err, r.Output())
	}
	coordinators := map[string]int32{}
	for _, line := range strings.Split(r.Stdout, "\n") {
		// GROUP  COORDINATOR (ID): host:port  (id)  ASSIGNMENT-STRATEGY  STATE  #MEMBERS
		f := strings.Fields(line)
		if len(f) < 3 || f[0] == "GROUP" || !strings.HasPrefix(f[2], "(") || !strings.HasSuffix(f[2], ")") {
			continue
		}
		if n, err := strconv.ParseInt(f[2][1:len(f[2])-1], 10, 32); err == nil {
			coordinators[f[0]] = int32(n)
		}
	}
	return coordinators
}

// ShareGroups runs Kafka's kafka-share-groups.sh --list (Kafka 4.1+) and
// returns the share groups it lists.
func (c *KafkaCluster) ShareGroups(t testing.TB) []string {
	t.Helper()
	r := c.run(2*time.Minute, "share-groups", "--list")
	if r.Err != nil {
		t.Fatalf("lab: kafka-share-groups.sh --list: %v\n%s", r.Err, r.Output())
	}
	return strings.Fields(r.Stdout)
}

// Transactions runs Kafka's TransactionsCommand (kafka-transactions.sh)
// with --bootstrap-server filled in and returns what it printed, failing
// the test when it fails.
func (c *KafkaCluster) Transactions(t testing.TB, args ...string) string {
	t.Helper()
	r := c.run(2*time.Minute, append([]string{"transactions"}, args...)...)
	if r.Err != nil {
		t.Fatalf("lab: kafka-transactions.sh %s: %v\n%s", strings.Join(args, " "), r.Err, r.Output())
	}
	return r.Stdout
}

// ProducerState is one line of kafka-transactions.sh describe-producers.
type ProducerState struct {
	ProducerID int64
	// CurrentTransactionStartOffset is -1 when the producer has no open
	// transaction on the partition.
	CurrentTransactionStartOffset int64
	// LastTimestamp is the producer's last write.
	LastTimestamp time.Time
}

// DescribeProducers runs kafka-transactions.sh describe-producers for
// topic's partition and returns the producers it lists.
func (c *KafkaCluster) DescribeProducers(t testing.TB, topic string, partition int32) []ProducerState {
	t.Helper()
	out := c.Transactions(t, "describe-producers", "--topic", topic, "--partition", strconv.Itoa(int(partition)))
	table := readToolTable(t, "describe-producers", out, "ProducerId", "CurrentTransactionStartOffset", "LastTimestamp")
	var states []ProducerState
	for _, row := range table.rows {
		states = append(states, ProducerState{ProducerID: table.number(row, "ProducerId"), CurrentTransactionStartOffset: table.number(row, "CurrentTransactionStartOffset"),
			LastTimestamp: time.UnixMilli(table.number(row, "LastTimestamp"))})
	}
	return states
}

// HangingTransaction is one line of kafka-transactions.sh find-hanging.
type HangingTransaction struct {
	Topic       string
	Partition   int32
	ProducerID  int64
	StartOffset int64
	// LastTimestamp is the producer's last write to the partition.
	LastTimestamp time.Time
}

// FindHanging runs kafka-transactions.sh find-hanging for topic with
// --max-transaction-timeout maxTimeoutMinutes (the tool's only timeout:
// an open transaction idle for longer is a candidate) and returns the
// hanging transactions it lists.
func (c *KafkaCluster) FindHanging(t testing.TB, topic string, maxTimeoutMinutes int) []HangingTransaction {
	t.Helper()
	out := c.Transactions(t, "find-hanging", "--topic", topic, "--max-transaction-timeout", strconv.Itoa(maxTimeoutMinutes))
	table := readToolTable(t, "find-hanging", out, "Topic", "Partition", "ProducerId", "StartOffset", "LastTimestamp")
	table.mustHaveHeader()
	var found []HangingTransaction
	for _, row := range table.rows {
		found = append(found, HangingTransaction{Topic: table.text(row, "Topic"), Partition: int32(table.number(row, "Partition")),
			ProducerID: table.number(row, "ProducerId"), StartOffset: table.number(row, "StartOffset"), LastTimestamp: time.UnixMilli(table.number(row, "LastTimestamp"))})
	}
	return found
}

// TransactionListing is one line of kafka-transactions.sh list.
type TransactionListing struct {
	TransactionalID string
	Coordinator     int32
	State           string
}

// ListTransactions runs kafka-transactions.sh list: every transactional
// id, its coordinator and its state.
func (c *KafkaCluster) ListTransactions(t testing.TB) []TransactionListing {
	t.Helper()
	out := c.Transactions(t, "list")
	table := readToolTable(t, "list", out, "TransactionalId", "Coordinator", "TransactionState")
	table.mustHaveHeader()
	var listed []TransactionListing
	for _, row := range table.rows {
		listed = append(listed, TransactionListing{TransactionalID: table.text(row, "TransactionalId"), Coordinator: int32(table.number(row, "Coordinator")),
			State: table.text(row, "TransactionState")})
	}
	return listed
}

// toolTable is the table a kafka-transactions.sh command printed: a
// header line, whose first column names it, then rows of as many fields.
type toolTable struct {
	t            testing.TB
	command, out string
	cols         map[string]int // nil when no header was printed
	rows         [][]string
}

// readToolTable reads the table of command's output out whose header
// begins with first, failing the test when the header lacks a column of
// required.
func readToolTable(t testing.TB, command, out, first string, required ...string) *toolTable {
	t.Helper()
	table := &toolTable{t: t, command: command, out: out}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) > 0 && f[0] == first:
			table.cols = map[string]int{}
			for i, name := range f {
				table.cols[name] = i
			}
			for _, name := range required {
				if _, ok := table.cols[name]; !ok {
					t.Fatalf("lab: kafka-transactions.sh %s has no column %s:\n%s", command, name, out)
				}
			}
		case table.cols != nil && len(f) == len(table.cols):
			table.rows = append(table.rows, f)
		}
	}
	return table
}

// mustHaveHeader fails the test when the command printed no table.
func (tt *toolTable) mustHaveHeader() {
	tt.t.Helper()
	if tt.cols == nil {
		tt.t.Fatalf("lab: kafka-transactions.sh %s printed no table:\n%s", tt.command, tt.out)
	}
}

// text is row's field in column name (one of the required columns).
func (tt *toolTable) text(row []string, name string) string { return row[tt.cols[name]] }

// number is row's field in column name as an integer; "None" (an empty
// Optional, as the tool prints one) is -1.
func (tt *toolTable) number(row []string, name string) int64 {
	tt.t.Helper()
	v := tt.text(row, name)
	if v == "None" {
		return -1
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		tt.t.Fatalf("lab: kafka-transactions.sh %s column %s is %q:\n%s", tt.command, name, v, tt.out)
	}
	return n
}
