package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/internal/exportertest"
	"github.com/failover-exporter/failover_exporter/internal/lab"
)

// kafkaTopicsReports are kafka-topics.sh's partition filters and, for each,
// which exporter series say the same thing. TopicCommand counts a partition
// without a leader as under min ISR, and a partition whose leader is not a
// live broker as unavailable; the exporter keeps those apart, so the
// comparison names the combination. A partition without a leader is read
// from kafka_partition_leader == -1, which every partition has in the lean
// mode (the default) as in full: kafka_partition_offline and
// kafka_partition_at_min_isr are served in lean only for detailed
// partitions (unhealthy, or within partition_metrics_hold of it) and where
// off their healthy value, so an absent one reads as the healthy value;
// compareWithKafkaTopics checks they are there where Kafka shows trouble.
var kafkaTopicsReports = []struct {
	flag     string
	exporter string
	lists    func(m exportertest.Metrics, p lab.PartitionDescription) (bool, error)
}{
	{"--under-replicated-partitions", "kafka_partition_under_replicated == 1",
		func(m exportertest.Metrics, p lab.PartitionDescription) (bool, error) {
			return partitionFlag(m, "kafka_partition_under_replicated", p)
		}},
	{"--under-min-isr-partitions", "kafka_partition_under_min_isr == 1 or kafka_partition_leader == -1",
		func(m exportertest.Metrics, p lab.PartitionDescription) (bool, error) {
			under, err := partitionFlag(m, "kafka_partition_under_min_isr", p)
			if err != nil {
				return false, err
			}
			leader, err := partitionValue(m, "kafka_partition_leader", p)
			return under || leader == -1, err
		}},
	{"--at-min-isr-partitions", "kafka_partition_at_min_isr == 1 (absent: 0)",
		func(m exportertest.Metrics, p lab.PartitionDescription) (bool, error) {
			v, _ := m.Value("kafka_partition_at_min_isr", partitionLabels(p.Topic, int(p.Partition)))
			return v == 1, nil
		}},
	{"--unavailable-partitions", "kafka_partition_leader == -1 or the leader's kafka_broker_up == 0",
		func(m exportertest.Metrics, p lab.PartitionDescription) (bool, error) {
			leader, err := partitionValue(m, "kafka_partition_leader", p)
			if err != nil || leader == -1 {
				return leader == -1, err
			}
			up, ok := m.Value("kafka_broker_up", map[string]string{"kafka_cluster": "lab", "broker": fmt.Sprint(leader)})
			return !ok || up == 0, nil
		}},
}

// assertAgreesWithKafkaTopics runs kafka-topics.sh --describe (Kafka's own
// TopicCommand) for the topics matching topicRegex, plainly and with each
// of its partition filters, and checks that the exporter (cluster label
// "lab") shows every partition the same way: leader, replication factor
// (KIP-352), ISR size, reassignment, adding and removing replicas, ELR and
// last known ELR sizes, the no-clean-leader flag, and the same partitions
// under each filter; and that a partition some filter lists, or that is
// reassigning, has its detailed series (offline, leader_is_preferred,
// at_min_isr, offline_replicas, reassigning), which the lean mode serves
// only for such partitions. Both read a cluster that may still be
// settling, at slightly different moments, so it retries until they agree
// or timeout passes. It returns the plain describe they agreed on.
func assertAgreesWithKafkaTopics(t *testing.T, cluster *lab.KafkaCluster, exporter *exportertest.Exporter, topicRegex, state string, timeout time.Duration) []lab.PartitionDescription {
	t.Helper()
	start := time.Now()
	for attempt := 1; ; attempt++ {
		// The plain describe and each filter, in one JVM.
		runs := [][]string{{"--topic", topicRegex}}
		for _, r := range kafkaTopicsReports {
			runs = append(runs, []string{"--topic", topicRegex, r.flag})
		}
		described := cluster.DescribeTopicsBatch(t, runs...)
		full, reports := described[0], described[1:]
		m := exporter.Scrape(t)
		diffs := compareWithKafkaTopics(m, full, reports)
		if len(full) == 0 {
			diffs = append(diffs, "kafka-topics.sh listed no partition of "+topicRegex)
		}
		if len(diffs) == 0 {
			t.Logf("%s: exporter and kafka-topics.sh agree on %d partitions of %s (attempt %d, %s)",
				state, len(full), topicRegex, attempt, time.Since(start).Round(time.Second))
			return full
		}
		if time.Since(start) > timeout {
			var described []string
			for _, p := range full {
				described = append(described, fmt.Sprintf("%+v", p))
			}
			t.Fatalf("%s: after %s the exporter and kafka-topics.sh still disagree:\n  %s\nkafka-topics.sh --describe:\n  %s",
				state, timeout, strings.Join(diffs, "\n  "), strings.Join(described, "\n  "))
		}
		time.Sleep(time.Second)
	}
}

// compareWithKafkaTopics lists every difference between a scrape and
// TopicCommand's plain describe (full) and its filtered ones (reports, in
// the order of kafkaTopicsReports).
func compareWithKafkaTopics(m exportertest.Metrics, full []lab.PartitionDescription, reports [][]lab.PartitionDescription) []string {
	var diffs []string
	check := func(p lab.PartitionDescription, name string, want int) {
		got, err := partitionValue(m, name, p)
		switch {
		case err != nil:
			diffs = append(diffs, err.Error())
		case got != want:
			diffs = append(diffs, fmt.Sprintf("%s: %s = %d, kafka-topics.sh says %d", p.Key(), name, got, want))
		}
	}
	// checkOrAbsent checks a series the exporter serves only when served
	// is true; otherwise it must be absent and Kafka's value 0.
	checkOrAbsent := func(p lab.PartitionDescription, name string, want int, served bool) {
		if served {
			check(p, name, want)
			return
		}
		if n := len(m.Series(name, partitionLabels(p.Topic, int(p.Partition)))); n != 0 || want != 0 {
			diffs = append(diffs, fmt.Sprintf("%s: %d series %s where it is not served; kafka-topics.sh says %d", p.Key(), n, name, want))
		}
	}
	// checkDetail checks a gauge the lean mode serves only for a detailed
	// partition or where it is off its healthy value: where served it
	// says what Kafka says; where absent, Kafka's value is the healthy
	// one; and a partition kafka-topics.sh shows in trouble (required)
	// has it, which is what an alert on it and its dashboard read.
	checkDetail := func(p lab.PartitionDescription, name string, want, healthy int, required bool) {
		if len(m.Series(name, partitionLabels(p.Topic, int(p.Partition)))) != 0 {
			check(p, name, want)
			return
		}
		switch {
		case required:
			diffs = append(diffs, fmt.Sprintf("%s: no series %s for a partition kafka-topics.sh lists in trouble; it says %d", p.Key(), name, want))
		case want != healthy:
			diffs = append(diffs, fmt.Sprintf("%s: no series %s, read as %d; kafka-topics.sh says %d", p.Key(), name, healthy, want))
		}
	}
	// Partitions some filter of kafka-topics.sh lists: under-replicated,
	// under or at min ISR, without a (live) leader.
	troubled := map[string]bool{}
	for _, report := range reports {
		for _, p := range report {
			troubled[p.Key()] = true
		}
	}
	atMinISR := map[string]bool{}
	for i, r := range kafkaTopicsReports {
		if r.flag == "--at-min-isr-partitions" {
			for _, p := range reports[i] {
				atMinISR[p.Key()] = true
			}
		}
	}
	for _, p := range full {
		check(p, "kafka_partition_leader", int(p.Leader))
		check(p, "kafka_partition_replicas", len(p.Replicas)-len(p.AddingReplicas))
		check(p, "kafka_partition_in_sync_replicas", len(p.ISR))
		detailed := troubled[p.Key()] || p.Reassigning
		checkDetail(p, "kafka_partition_reassigning", bool01(p.Reassigning), 0, detailed)
		checkDetail(p, "kafka_partition_offline", bool01(p.Leader == -1), 0, detailed)
		checkDetail(p, "kafka_partition_leader_is_preferred", bool01(len(p.Replicas) > 0 && p.Leader == p.Replicas[0]), 1, detailed)
		// Served where the topic's min ISR is known, as under_min_isr is.
		minISRKnown := len(m.Series("kafka_partition_under_min_isr", partitionLabels(p.Topic, int(p.Partition)))) != 0
		checkDetail(p, "kafka_partition_at_min_isr", bool01(atMinISR[p.Key()]), 0, detailed && minISRKnown)
		// kafka-topics.sh does not show offline replicas: only that the
		// series is there.
		if n := len(m.Series("kafka_partition_offline_replicas", partitionLabels(p.Topic, int(p.Partition)))); detailed && n != 1 {
			diffs = append(diffs, fmt.Sprintf("%s: %d series kafka_partition_offline_replicas for a partition kafka-topics.sh lists in trouble", p.Key(), n))
		}
		// Served only while reassigning; absent otherwise, which must
		// then be what kafka-topics.sh says too.
		checkOrAbsent(p, "kafka_partition_adding_replicas", len(p.AddingReplicas), p.Reassigning)
		checkOrAbsent(p, "kafka_partition_removing_replicas", len(p.RemovingReplicas), p.Reassigning)
		if p.ELRKnown {
			// Served only below min ISR, the only partitions with an ELR.
			underMinISR, err := partitionFlag(m, "kafka_partition_under_min_isr", p)
			if err != nil {
				diffs = append(diffs, err.Error())
			}
			checkOrAbsent(p, "kafka_partition_eligible_leader_replicas", len(p.ELR), underMinISR)
			checkOrAbsent(p, "kafka_partition_last_known_elr", len(p.LastKnownELR), underMinISR)
			checkOrAbsent(p, "kafka_partition_no_clean_leader", bool01(p.Leader == -1 && len(p.ISR) == 0 && len(p.ELR) == 0), underMinISR)
		}
	}
	for i, r := range kafkaTopicsReports {
		var listed []string
		for _, p := range reports[i] {
			listed = append(listed, p.Key())
		}
		var exported []string
		for _, p := range full {
			ok, err := r.lists(m, p)
			if err != nil {
				diffs = append(diffs, err.Error())
				continue
			}
			if ok {
				exported = append(exported, p.Key())
			}
		}
		slices.Sort(listed)
		slices.Sort(exported)
		if !slices.Equal(listed, exported) {
			diffs = append(diffs, fmt.Sprintf("kafka-topics.sh %s lists %v; the exporter's %s lists %v", r.flag, listed, r.exporter, exported))
		}
	}
	return diffs
}

func partitionValue(m exportertest.Metrics, name string, p lab.PartitionDescription) (int, error) {
	v, ok := m.Value(name, partitionLabels(p.Topic, int(p.Partition)))
	if !ok {
		return 0, fmt.Errorf("%s: no single series %s", p.Key(), name)
	}
	return int(v), nil
}

func partitionFlag(m exportertest.Metrics, name string, p lab.PartitionDescription) (bool, error) {
	v, err := partitionValue(m, name, p)
	return v == 1, err
}

func bool01(b bool) int {
	if b {
		return 1
	}
	return 0
}
