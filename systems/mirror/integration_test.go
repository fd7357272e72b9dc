package mirror

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/failover-exporter/failover_exporter/config"
	"github.com/failover-exporter/failover_exporter/internal/lab"
	kafkasettings "github.com/failover-exporter/failover_exporter/systems/kafka/settings"
	mirrorsettings "github.com/failover-exporter/failover_exporter/systems/mirror/settings"
)

// TestIntegrationRefresh reads a flow whose MM2 records are written by
// the test, on one real broker that plays both clusters (two kafka
// entries, one address): the requests (Metadata, ListOffsets, Fetch by
// topic ID, OffsetFetch) and the arithmetic against real answers. The
// lab's real MirrorMaker 2 tests the rest.
func TestIntegrationRefresh(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Kafka cluster")
	}
	kc := lab.StartKafka(t, lab.KafkaOptions{Nodes: 1})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client, err := kgo.NewClient(kgo.SeedBrokers(kc.Bootstrap()...))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	create := kmsg.NewPtrCreateTopicsRequest()
	for _, name := range []string{"orders", "eu.orders", "mm2-offset-syncs.us.internal", "eu.heartbeats", "eu.checkpoints.internal"} {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 1, 1
		create.Topics = append(create.Topics, rt)
	}
	create.TimeoutMillis = 10_000
	resp, err := create.RequestWith(ctx, client)
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range resp.Topics {
		if err := kerr.ErrorForCode(rt.ErrorCode); err != nil {
			t.Fatalf("create %s: %v", rt.Topic, err)
		}
	}
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	var records []*kgo.Record
	for i := range 100 {
		records = append(records, &kgo.Record{Topic: "orders", Value: []byte("x"), Timestamp: base.Add(time.Duration(i) * time.Second)})
		if i < 60 {
			records = append(records, &kgo.Record{Topic: "eu.orders", Value: []byte("x"), Timestamp: base.Add(time.Duration(i) * time.Second)})
		}
	}
	sync := OffsetSync{Topic: "orders", Partition: 0, Upstream: 10, Downstream: 10}
	heartbeat := Heartbeat{SourceAlias: "us", TargetAlias: "eu", Timestamp: time.Now().Add(-2 * time.Second).UnixMilli()}
	checkpoint := Checkpoint{Group: "billing", Topic: "eu.orders", Partition: 0, Upstream: 30, Downstream: 30}
	records = append(records,
		&kgo.Record{Topic: "mm2-offset-syncs.us.internal", Key: sync.Key(), Value: sync.Value()},
		&kgo.Record{Topic: "eu.heartbeats", Key: heartbeat.Key(), Value: heartbeat.Value()},
		&kgo.Record{Topic: "eu.checkpoints.internal", Key: checkpoint.Key(), Value: checkpoint.Value()})
	if err := client.ProduceSync(ctx, records...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group, commit.Generation = "billing", -1
	ct := kmsg.NewOffsetCommitRequestTopic()
	ct.Topic = "orders"
	cp := kmsg.NewOffsetCommitRequestTopicPartition()
	cp.Partition, cp.Offset = 0, 45
	ct.Partitions = append(ct.Partitions, cp)
	commit.Topics = append(commit.Topics, ct)
	if _, err := client.Request(ctx, commit); err != nil {
		t.Fatal(err)
	}

	cfg := config.Config{}
	kafkasettings.SetClusters(&cfg, []kafkasettings.Cluster{{Name: "eu", BootstrapServers: kc.Bootstrap()}, {Name: "us", BootstrapServers: kc.Bootstrap()}})
	// With the default policy, "us.*" topics would be the target's own.
	mirrorsettings.SetFlows(&cfg, []mirrorsettings.Flow{{Name: "eu-us", Source: "eu", Target: "us", RefreshInterval: 5 * time.Second}})
	if err := cfg.Complete(); err != nil {
		t.Fatal(err)
	}
	src, err := NewSource(mirrorsettings.Flows(&cfg)[0], log.NewLogfmtLogger(log.NewSyncWriter(os.Stderr)))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	snap, err := src.Refresh(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !snap.SourceUp || !snap.TargetUp || !snap.Syncs.CaughtUp || snap.Syncs.Partitions != 1 {
		t.Fatalf("snapshot %+v", snap)
	}
	var orders *Topic
	for i := range snap.Topics {
		if snap.Topics[i].Name == "orders" {
			orders = &snap.Topics[i]
		}
	}
	// U + L - D = 10 + 60 - 10: records 60..99 are not replicated, 40
	// seconds of them.
	if orders == nil || orders.Missing || orders.NotReplicated != 40 || !orders.RPOKnown || orders.RPO != 40*time.Second {
		t.Errorf("orders: %+v", orders)
	}
	if !snap.Heartbeat.Known || snap.Heartbeat.Age < time.Second || snap.Heartbeat.Age > time.Minute || snap.Stalled {
		t.Errorf("heartbeat %+v stalled %v", snap.Heartbeat, snap.Stalled)
	}
	if len(snap.Groups) != 1 || snap.Groups[0].Topic != "orders" || snap.Groups[0].Reread != 15 || snap.Groups[0].Partitions[0].Resume != 30 {
		t.Errorf("groups %+v", snap.Groups)
	}
	// A second refresh reads only what is new, and keeps the syncs.
	more := OffsetSync{Topic: "orders", Partition: 0, Upstream: 90, Downstream: 50}
	if err := client.ProduceSync(ctx, &kgo.Record{Topic: "mm2-offset-syncs.us.internal", Key: more.Key(), Value: more.Value()}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	next, err := src.Refresh(ctx, snap)
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range next.Topics {
		// 90 + 60 - 50 = 100: caught up.
		if tp.Name == "orders" && (tp.NotReplicated != 0 || tp.RPO != 0) {
			t.Errorf("after the second sync: %+v", tp)
		}
	}
}
