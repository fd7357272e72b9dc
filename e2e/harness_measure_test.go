package e2e

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/IBM/sarama"
)

// Measuring the exporter: a synthetic large cluster to point it at, its
// process's memory, medians of repeated figures, and the switch that makes
// the scale tests run.

// fakeLargeCluster serves Metadata responses with the given number of
// partitions (RF 3, 100 per topic) and their min.insync.replicas from a
// sarama MockBroker. A real cluster of 10,000 partitions does not fit on
// the 2-core test machine beside everything else, so this is the one place
// a mock stands in for Kafka: it measures the exporter's own memory, not
// Kafka's behaviour. With churn, every partition's leader moves to the next
// replica on every Metadata request, so each refresh counts a leader change
// for every partition and renders a page that differs from the last.
func fakeLargeCluster(t *testing.T, partitions int, churn bool) string {
	return fakeClusterAdvertising(t, partitions, churn, "")
}

// fakeClusterAdvertising is fakeLargeCluster whose Metadata names its
// brokers at advertised (a proxy in front of it) instead of its own
// address, unless advertised is empty. It returns its own address.
func fakeClusterAdvertising(t *testing.T, partitions int, churn bool, advertised string) string {
	broker := sarama.NewMockBrokerAddr(t, 1, "127.0.0.1:0")
	t.Cleanup(broker.Close)
	if advertised == "" {
		advertised = broker.Addr()
	}
	rotations := 1
	if churn {
		rotations = 3
	}
	mds := make([]any, rotations)
	for r := range mds {
		md := &sarama.MetadataResponse{Version: 11}
		for id := int32(1); id <= 3; id++ {
			md.AddBroker(advertised, id)
		}
		for i := 0; i < partitions; i++ {
			topic := fmt.Sprintf("topic-%05d", i/100)
			p := int32(i % 100)
			first := p%3 + 1
			replicas := []int32{first, first%3 + 1, (first+1)%3 + 1}
			md.AddTopicPartition(topic, p, replicas[r], replicas, replicas, nil, sarama.ErrNoError)
		}
		mds[r] = md
	}
	configs := &sarama.DescribeConfigsResponse{Version: 4}
	for topic := 0; topic*100 < partitions; topic++ {
		configs.Resources = append(configs.Resources, &sarama.ResourceResponse{
			Type: sarama.TopicResource, Name: fmt.Sprintf("topic-%05d", topic),
			Configs: []*sarama.ConfigEntry{{Name: "min.insync.replicas", Value: "2", Source: sarama.SourceStaticBroker}},
		})
	}
	// A MockSequence answers its responses in turn, then the last one
	// forever: enough turns for any churn run.
	sequence := make([]any, 0, 100_000)
	for len(sequence) < cap(sequence) && churn {
		sequence = append(sequence, mds...)
	}
	if !churn {
		sequence = mds
	}
	broker.SetHandlerByMap(map[string]sarama.MockResponse{
		"ApiVersionsRequest": sarama.NewMockApiVersionsResponse(t).SetApiKeys([]sarama.ApiVersionsResponseKey{
			{ApiKey: 3, MinVersion: 0, MaxVersion: 12}, // Metadata
			{ApiKey: 18, MinVersion: 0, MaxVersion: 3}, // ApiVersions
			{ApiKey: 32, MinVersion: 0, MaxVersion: 4}, // DescribeConfigs
			{ApiKey: 46, MinVersion: 0, MaxVersion: 0}, // ListPartitionReassignments
		}),
		"MetadataRequest":        sarama.NewMockSequence(sequence...),
		"DescribeConfigsRequest": sarama.NewMockWrapper(configs),
		// No reassignment in progress: the reassignment series are served
		// (all 0), as for a real cluster.
		"ListPartitionReassignmentsRequest": sarama.NewMockWrapper(&sarama.ListPartitionReassignmentsResponse{}),
	})
	return broker.Addr()
}

// procStatusKB reads a "VmRSS"-style field of /proc/PID/status in kB.
func procStatusKB(t *testing.T, pid int, field string) int {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			if err != nil {
				t.Fatal(err)
			}
			return kb
		}
	}
	t.Fatalf("%s not in /proc/%d/status", field, pid)
	return 0
}

// medianOf returns the median of xs (the upper one of an even count).
func medianOf(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	sorted := slices.Clone(xs)
	slices.Sort(sorted)
	return sorted[len(sorted)/2]
}

func requireScaleFigures(t *testing.T) {
	if os.Getenv(scaleFiguresEnv) == "" {
		t.Skipf("a long figure run; set %s=1 to run it (see BENCHMARKS.md)", scaleFiguresEnv)
	}
}
