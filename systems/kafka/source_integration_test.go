package kafka

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/failover-exporter/failover_exporter/config"
	"github.com/failover-exporter/failover_exporter/internal/lab"
	"github.com/failover-exporter/failover_exporter/systems/kafka/settings"
)

// TestIntegrationSource refreshes a real 3-node KRaft cluster, healthy and
// with one broker SIGSTOPped, so that every goroutine a refresh starts
// (metadata attempts, broker probes, the quorum read beside them) runs
// against real answers and real timeouts. scripts/test.sh runs it with
// -race: the quorum read once wrote the source's fields from its own
// goroutine.
func TestIntegrationSource(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Kafka cluster")
	}
	c := lab.StartKafka(t, lab.KafkaOptions{})
	cfg := config.Config{}
	settings.SetClusters(&cfg, []settings.Cluster{{
		Name:             "lab",
		BootstrapServers: c.Bootstrap(),
		RefreshInterval:  2 * time.Second,
		DialTimeout:      time.Second,
		RequestTimeout:   time.Second,
	}})
	if err := cfg.Complete(); err != nil {
		t.Fatal(err)
	}
	src, err := newSource(settings.Clusters(&cfg)[0], log.NewLogfmtLogger(log.NewSyncWriter(os.Stderr)))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var snap *Snapshot
	refresh := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), settings.Clusters(&cfg)[0].RefreshTimeout)
		defer cancel()
		next, err := src.Refresh(ctx, snap)
		if err == nil {
			snap = next
		}
		return err
	}

	lab.WaitFor(t, 60*time.Second, 200*time.Millisecond, func() (bool, string) {
		if err := refresh(); err != nil {
			return false, err.Error()
		}
		if snap.Quorum == nil || snap.Quorum.LeaderID < 0 {
			return false, "no quorum leader read yet"
		}
		reachable := 0
		for _, b := range snap.Brokers {
			if b.Reachable {
				reachable++
			}
		}
		return reachable == c.Nodes(), "not every broker reachable yet"
	})
	// Read once more to use the cached ApiVersions answer.
	if err := refresh(); err != nil {
		t.Fatal(err)
	}

	// The coordinators: once a group commits (the cluster creates
	// __consumer_offsets), the read finds every partition's coordinator
	// answering, and it is the partition's leader: the keys the read asks
	// about map to their partitions as Kafka maps them.
	c.CommitOffsets(t, "coordinator-probe-test", nil)
	lab.WaitFor(t, 60*time.Second, 200*time.Millisecond, func() (bool, string) {
		if err := refresh(); err != nil {
			return false, err.Error()
		}
		read := snap.Coordinators.Reads[CoordinatorGroup]
		if read == nil {
			return false, fmt.Sprintf("no group coordinator read yet (last read %+v)", src.coordinators.last)
		}
		return read.Count(CoordinatorAnswering) == len(read.Partitions), fmt.Sprintf("group coordinators %+v", read.Partitions)
	})
	leaders := map[int32]int32{}
	for _, t := range append(append([]Topic{}, snap.Topics...), snap.UnwatchedJudged...) {
		if t.Name == CoordinatorGroup.Topic() {
			for _, p := range t.Partitions {
				leaders[p.ID] = p.Leader
			}
		}
	}
	for i, p := range snap.Coordinators.Reads[CoordinatorGroup].Partitions {
		if leader, ok := leaders[int32(i)]; !ok || p.Coordinator != leader {
			t.Errorf("the coordinator of __consumer_offsets/%d's key is broker %d, its leader %d (known %v)", i, p.Coordinator, leader, ok)
		}
	}

	// A stopped broker: its probe and the metadata attempts to it wait for
	// their timeouts while the quorum is read.
	pid := c.PID(3)
	if pid == 0 {
		t.Fatal("broker 3 is not running")
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Kill(pid, syscall.SIGCONT) }()
	for range 3 {
		if err := refresh(); err != nil {
			t.Logf("refresh with broker 3 stopped: %v", err)
		}
	}
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	lab.WaitFor(t, 60*time.Second, 200*time.Millisecond, func() (bool, string) {
		if err := refresh(); err != nil {
			return false, err.Error()
		}
		return snap.Quorum != nil, "no quorum read after broker 3 resumed"
	})
}
