package lab

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestMirror proves the MirrorMaker 2 lab replicates as a real deployment
// does, on two one-node clusters: records keep their values and timestamps
// on the target under the default policy (primary.orders) and the identity
// policy (same name), heartbeats arrive, offset syncs are written on the
// source, a committed consumer group is checkpointed and translated by
// MirrorMaker's own client library, and a paused MirrorMaker replicates
// nothing until it is resumed.
func TestMirror(t *testing.T) {
	start := time.Now()
	src := StartKafka(t, KafkaOptions{Nodes: 1})
	dst := StartKafka(t, KafkaOptions{Nodes: 1})
	clusters := time.Since(start)

	t.Run("default policy", func(t *testing.T) {
		const (
			topic   = "orders"
			group   = "orders-reader"
			records = 20
		)
		src.CreateTopic(t, topic, 2)
		mirrorStart := time.Now()
		m := StartMirror(t, MirrorOptions{Source: src, Target: dst})
		mirrorUp := time.Since(mirrorStart)
		remote := m.RemoteTopic(topic)
		if remote != "primary.orders" {
			t.Fatalf("RemoteTopic(%q) = %q, want primary.orders", topic, remote)
		}

		// Timestamps an hour old, a millisecond apart: a copy stamped at
		// replication time would not match.
		base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
		sent := map[int32][]Record{}
		for p := range int32(2) {
			for i := range records {
				sent[p] = append(sent[p], Record{
					Value:     fmt.Appendf(nil, "order %d-%d", p, i),
					Timestamp: base.Add(time.Duration(int(p)*records+i) * time.Millisecond),
				})
			}
			src.Produce(t, topic, p, sent[p]...)
		}
		replicated := waitEndOffsets(t, dst, remote, map[int32]int64{0: records, 1: records})
		t.Logf("%d records replicated to %s in %s", 2*records, remote, replicated.Round(time.Millisecond))
		for p := range int32(2) {
			got := dst.ReadRecords(t, remote, p, 0, records, 15*time.Second)
			for i, r := range got {
				want := sent[p][i]
				if !bytes.Equal(r.Value, want.Value) || !r.Timestamp.Equal(want.Timestamp) {
					t.Fatalf("%s-%d offset %d: %q at %s, want %q at %s", remote, p, r.Offset,
						r.Value, r.Timestamp.Format(time.RFC3339Nano), want.Value, want.Timestamp.Format(time.RFC3339Nano))
				}
			}
		}

		heartbeats := dst.EndOffsetSum(t, m.HeartbeatsTopic())
		WaitFor(t, 15*time.Second, 250*time.Millisecond, func() (bool, string) {
			n := dst.EndOffsetSum(t, m.HeartbeatsTopic())
			return n > heartbeats, fmt.Sprintf("%s stays at %d records", m.HeartbeatsTopic(), n)
		})
		if n := src.EndOffsetSum(t, m.OffsetSyncsTopic()); n == 0 {
			t.Fatalf("%s on the source has no offset sync", m.OffsetSyncsTopic())
		}

		// A group that read all of partition 0 and half of partition 1.
		committed := map[TopicPartition]int64{{topic, 0}: records, {topic, 1}: records / 2}
		src.CommitOffsets(t, group, committed)
		checkpointsBefore := dst.EndOffsetSum(t, m.CheckpointsTopic())
		checkpointed := WaitFor(t, 45*time.Second, 250*time.Millisecond, func() (bool, string) {
			n := dst.EndOffsetSum(t, m.CheckpointsTopic())
			return n > checkpointsBefore, fmt.Sprintf("%s has %d records", m.CheckpointsTopic(), n)
		})
		t.Logf("group %s checkpointed in %s after its commit", group, checkpointed.Round(time.Millisecond))
		var translated map[TopicPartition]int64
		WaitFor(t, 30*time.Second, time.Second, func() (bool, string) {
			var err error
			if translated, err = m.TranslateOffsets(group); err != nil {
				return false, err.Error()
			}
			return len(translated) == 2, fmt.Sprintf("translated %v", translated)
		})
		for tp, off := range translated {
			upstream := committed[TopicPartition{topic, tp.Partition}]
			// MirrorMaker translates conservatively: to the target offset
			// of the last offset sync at or before the committed offset,
			// plus one if past it; never beyond the committed offset.
			if tp.Topic != remote || off < 1 || off > upstream {
				t.Errorf("translated %s = %d, want a %s offset in 1..%d", tp, off, remote, upstream)
			}
		}
		t.Logf("group %s: committed %v on the source, translated %v on the target", group, committed, translated)

		// Paused, MirrorMaker replicates nothing and emits no heartbeat.
		pid := m.PID()
		m.Pause(t)
		pausedAt := time.Now()
		orders := dst.EndOffsetSum(t, remote)
		heartbeats = dst.EndOffsetSum(t, m.HeartbeatsTopic())
		src.Produce(t, topic, 0, Record{Value: []byte("while paused")})
		time.Sleep(4 * time.Second)
		if n := dst.EndOffsetSum(t, remote); n != orders {
			t.Fatalf("%s went from %d to %d records while MirrorMaker was paused", remote, orders, n)
		}
		if n := dst.EndOffsetSum(t, m.HeartbeatsTopic()); n != heartbeats {
			t.Fatalf("%s went from %d to %d records while MirrorMaker was paused", m.HeartbeatsTopic(), heartbeats, n)
		}
		m.Resume(t)
		paused := time.Since(pausedAt)
		caughtUp := waitEndOffsets(t, dst, remote, map[int32]int64{0: records + 1, 1: records})
		if got := m.PID(); got != pid {
			t.Fatalf("MirrorMaker pid %d after resume, %d before", got, pid)
		}
		t.Logf("paused %s; the record produced meanwhile replicated %s after resume",
			paused.Round(time.Millisecond), caughtUp.Round(time.Millisecond))

		m.Stop(t)
		if pid := m.PID(); pid != 0 {
			t.Fatalf("MirrorMaker still running as pid %d after Stop", pid)
		}
		t.Logf("timings: two 1-node clusters %s; MirrorMaker start to first replicated heartbeat %s",
			clusters.Round(time.Millisecond), mirrorUp.Round(time.Millisecond))
	})

	t.Run("identity policy", func(t *testing.T) {
		const topic = "payments"
		src.CreateTopic(t, topic, 1)
		// Other aliases, so that nothing of the first MirrorMaker's
		// internal topics and groups is reused.
		m := StartMirror(t, MirrorOptions{
			Source: src, Target: dst, SourceAlias: "east", TargetAlias: "west",
			Topics: topic, IdentityPolicy: true,
		})
		if got := m.RemoteTopic(topic); got != topic {
			t.Fatalf("RemoteTopic(%q) = %q under the identity policy", topic, got)
		}
		ts := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
		src.Produce(t, topic, 0, Record{Value: []byte("paid"), Timestamp: ts})
		waitEndOffsets(t, dst, topic, map[int32]int64{0: 1})
		got := dst.ReadRecords(t, topic, 0, 0, 1, 15*time.Second)
		if string(got[0].Value) != "paid" || !got[0].Timestamp.Equal(ts) {
			t.Fatalf("%s-0 offset 0 on the target: %q at %s, want \"paid\" at %s", topic, got[0].Value, got[0].Timestamp, ts)
		}
		topics, err := dst.Topics()
		if err != nil {
			t.Fatal(err)
		}
		// Heartbeats keep the source prefix under the identity policy;
		// topics outside Topics are not replicated.
		for _, want := range []string{"east.heartbeats", topic} {
			if !slices.Contains(topics, want) {
				t.Errorf("target has no topic %s: %v", want, topics)
			}
		}
		if slices.Contains(topics, "east.orders") || slices.Contains(topics, "east.payments") {
			t.Errorf("target topics %v: want only %s replicated, under its own name", topics, topic)
		}
	})
	t.Logf("TestMirror took %s", time.Since(start).Round(time.Millisecond))
}

// TestMirrorConnect proves the Connect mode: the flow's three connectors on
// a Kafka Connect distributed worker replicate, heartbeat and checkpoint as
// the dedicated mode does, and its REST API pauses, resumes, fails and
// repairs them for real.
func TestMirrorConnect(t *testing.T) {
	const (
		topic = "orders"
		group = "orders-reader"
	)
	start := time.Now()
	src := StartKafka(t, KafkaOptions{Nodes: 1})
	dst := StartKafka(t, KafkaOptions{Nodes: 1})
	src.CreateTopic(t, topic, 1)
	m := StartMirror(t, MirrorOptions{Source: src, Target: dst, Connect: true})
	t.Logf("FIGURE mirror connect mode: worker started and its 3 connectors accepted in %s; all RUNNING %s later",
		m.startTook.Round(time.Millisecond), m.runningTook.Round(time.Millisecond))
	connectors := m.Connectors()
	if want := "primary->backup.MirrorSourceConnector"; connectors[0] != want {
		t.Fatalf("Connectors() = %v, want %s first", connectors, want)
	}
	source, checkpoint := connectors[0], connectors[1]
	remote := m.RemoteTopic(topic)

	// Replication, heartbeats (emitted on the source), checkpoints.
	src.Produce(t, topic, 0, Record{Value: []byte("a")}, Record{Value: []byte("b")})
	waitEndOffsets(t, dst, remote, map[int32]int64{0: 2})
	waitGrows(t, dst, m.HeartbeatsTopic())
	src.CommitOffsets(t, group, map[TopicPartition]int64{{topic, 0}: 2})
	waitGrows(t, dst, m.CheckpointsTopic())
	m.waitConnector(t, checkpoint, "running a task", func(s ConnectorStatus) bool { return s.In(ConnectRunning, 1) })
	// MirrorMaker translates conservatively (TestMirror): 1 or 2.
	WaitFor(t, 30*time.Second, time.Second, func() (bool, string) {
		translated, err := m.TranslateOffsets(group)
		n := translated[TopicPartition{remote, 0}]
		return err == nil && n >= 1 && n <= 2, fmt.Sprintf("translated %v, %v; want %s-0 at 1 or 2", translated, err, remote)
	})

	// A paused source connector replicates nothing, not even the heartbeats
	// the heartbeat connector goes on writing on the source, a second apart.
	m.PauseConnector(t, source)
	heartbeats, remoteHeartbeats := src.EndOffsetSum(t, "heartbeats"), dst.EndOffsetSum(t, m.HeartbeatsTopic())
	src.Produce(t, topic, 0, Record{Value: []byte("while paused")})
	time.Sleep(3 * time.Second)
	if n := dst.EndOffsetSum(t, remote); n != 2 {
		t.Fatalf("%s has %d records after 3 s of a paused %s, want 2", remote, n, source)
	}
	if n, remote := src.EndOffsetSum(t, "heartbeats")-heartbeats, dst.EndOffsetSum(t, m.HeartbeatsTopic())-remoteHeartbeats; n < 2 || remote != 0 {
		t.Fatalf("3 s paused: %d heartbeats on the source (want 2 or more), %d more in %s on the target (want 0)", n, remote, m.HeartbeatsTopic())
	}
	m.ResumeConnector(t, source)
	waitEndOffsets(t, dst, remote, map[int32]int64{0: 3})

	// A task that fails for real, and its repair.
	failed := m.FailTasks(t, source)
	t.Logf("%s; task trace begins %q", failed, firstLine(failed.Tasks[0].Trace))
	if failed.Connector.State != ConnectRunning || !strings.Contains(failed.Tasks[0].Trace, "Cast") {
		t.Errorf("FailTasks(%s): %s, trace %q: want the connector RUNNING and the trace naming the Cast", source, failed, failed.Tasks[0].Trace)
	}
	m.RepairTasks(t, source)
	m.RestartTask(t, source, 0)
	src.Produce(t, topic, 0, Record{Value: []byte("after repair")})
	waitEndOffsets(t, dst, remote, map[int32]int64{0: 4})
	t.Logf("TestMirrorConnect took %s", time.Since(start).Round(time.Millisecond))
}

// waitGrows waits until topic on c gains a record.
func waitGrows(t *testing.T, c *KafkaCluster, topic string) {
	t.Helper()
	before := c.EndOffsetSum(t, topic)
	WaitFor(t, 30*time.Second, 250*time.Millisecond, func() (bool, string) {
		n := c.EndOffsetSum(t, topic)
		return n > before, fmt.Sprintf("%s stays at %d records", topic, n)
	})
}

// waitEndOffsets waits until topic's end offsets on c are want and returns
// how long that took.
func waitEndOffsets(t *testing.T, c *KafkaCluster, topic string, want map[int32]int64) time.Duration {
	t.Helper()
	return WaitFor(t, 60*time.Second, 250*time.Millisecond, func() (bool, string) {
		ends, err := c.EndOffsets(topic)
		if err != nil {
			return false, err.Error()
		}
		for p, end := range want {
			if ends[p] != end {
				return false, fmt.Sprintf("%s end offsets %v, want %v", topic, ends, want)
			}
		}
		return true, ""
	})
}

func TestParseTranslatedOffsets(t *testing.T) {
	got, err := parseTranslatedOffsets("primary.orders\t0\t20\nprimary.orders\t1\t11\n")
	if err != nil {
		t.Fatal(err)
	}
	want := map[TopicPartition]int64{{"primary.orders", 0}: 20, {"primary.orders", 1}: 11}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if got, err := parseTranslatedOffsets(""); err != nil || len(got) != 0 {
		t.Fatalf("empty output: %v, %v", got, err)
	}
	for _, bad := range []string{"t\t0", "t\tx\t1", "t\t0\ty"} {
		if _, err := parseTranslatedOffsets(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
