package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/failover-exporter/failover_exporter/internal/exportertest"
)

// fakeLargeCluster serves one Metadata response with the given number of
// partitions (RF 3, 100 per topic) and their min.insync.replicas from a
// sarama MockBroker. A real cluster of 10,000 partitions does not fit on
// the 2-core test machine beside everything else, so this is the one place
// a mock stands in for Kafka: it measures the exporter's own memory, not
// Kafka's behaviour.
func fakeLargeCluster(t *testing.T, partitions int) string {
	broker := sarama.NewMockBrokerAddr(t, 1, "127.0.0.1:0")
	t.Cleanup(broker.Close)
	md := &sarama.MetadataResponse{Version: 11}
	for id := int32(1); id <= 3; id++ {
		md.AddBroker(broker.Addr(), id)
	}
	configs := &sarama.DescribeConfigsResponse{Version: 4}
	for i := 0; i < partitions; i++ {
		topic := fmt.Sprintf("topic-%05d", i/100)
		p := int32(i % 100)
		leader := p%3 + 1
		replicas := []int32{leader, leader%3 + 1, (leader+1)%3 + 1}
		md.AddTopicPartition(topic, p, leader, replicas, replicas, nil, sarama.ErrNoError)
		if p == 0 {
			configs.Resources = append(configs.Resources, &sarama.ResourceResponse{
				Type: sarama.TopicResource, Name: topic,
				Configs: []*sarama.ConfigEntry{{Name: "min.insync.replicas", Value: "2", Source: sarama.SourceStaticBroker}},
			})
		}
	}
	broker.SetHandlerByMap(map[string]sarama.MockResponse{
		"ApiVersionsRequest": sarama.NewMockApiVersionsResponse(t).SetApiKeys([]sarama.ApiVersionsResponseKey{
			{ApiKey: 3, MinVersion: 0, MaxVersion: 12}, // Metadata
			{ApiKey: 18, MinVersion: 0, MaxVersion: 3}, // ApiVersions
			{ApiKey: 32, MinVersion: 0, MaxVersion: 4}, // DescribeConfigs
		}),
		"MetadataRequest":        sarama.NewMockWrapper(md),
		"DescribeConfigsRequest": sarama.NewMockWrapper(configs),
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

// scrapeTimed fetches /metrics, gzip-compressed as Prometheus asks for it
// or plain as curl does, and returns the time to the last byte. The body is
// discarded as it arrives, so the figure is the exporter's, not the reader's.
func scrapeTimed(t *testing.T, url string, gzip bool) time.Duration {
	t.Helper()
	req, _ := http.NewRequest("GET", url+"/metrics", nil)
	if gzip {
		req.Header.Set("Accept-Encoding", "gzip")
	}
	// Transport compression off: time the bytes on the wire, not the inflate.
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}, Timeout: 30 * time.Second}
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Fatal(err)
	}
	return time.Since(start)
}

func measureLargeCluster(t *testing.T, partitions int, maxRSSMB int, maxScrape time.Duration) {
	addr := fakeLargeCluster(t, partitions)
	e := exportertest.Start(t, "--kafka.server="+addr, "--kafka.cluster-name=big", "--refresh.interval=1s")
	e.WaitReady(t, 60*time.Second)
	if n := len(e.Scrape(t).Series("kafka_partition_leader", nil)); n != partitions {
		t.Fatalf("partition series = %d, want %d", n, partitions)
	}
	// Several refreshes and scrapes, both encodings, so the peak includes
	// steady-state churn.
	var slowest, total time.Duration
	const scrapes = 10
	for i := 0; i < scrapes; i++ {
		d := scrapeTimed(t, e.URL, i%2 == 0)
		t.Logf("scrape %d gzip=%v %s", i, i%2 == 0, d)
		total += d
		slowest = max(slowest, d)
		time.Sleep(300 * time.Millisecond)
	}
	rss := procStatusKB(t, e.PID(), "VmRSS")
	peak := procStatusKB(t, e.PID(), "VmHWM")
	t.Logf("FIGURE %d partitions: /metrics mean %s, slowest %s over %d scrapes; RSS %d MB, peak RSS %d MB",
		partitions, (total / scrapes).Round(time.Millisecond), slowest.Round(time.Millisecond), scrapes, rss/1024, peak/1024)
	if maxRSSMB > 0 && peak/1024 > maxRSSMB {
		t.Errorf("peak RSS %d MB at %d partitions, requirement is at most %d MB", peak/1024, partitions, maxRSSMB)
	}
	if maxScrape > 0 && slowest > maxScrape {
		t.Errorf("slowest /metrics response %s at %d partitions, requirement is at most %s for every scrape", slowest, partitions, maxScrape)
	}
}

// TestLargeClusterBudget10k checks the requirement: for 10,000 partitions a
// full /metrics response in at most 100 ms and a process RSS of at most
// 100 MB on the 2-core machine.
func TestLargeClusterBudget10k(t *testing.T) {
	measureLargeCluster(t, 10_000, 100, 100*time.Millisecond)
}

// TestLargeCluster100k records the 100,000-partition figures (no budget).
func TestLargeCluster100k(t *testing.T) {
	measureLargeCluster(t, 100_000, 0, 0)
}
