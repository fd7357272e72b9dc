package kafka

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/collector/episode"
	"github.com/failover-exporter/failover_exporter/collector/watch"
	"github.com/failover-exporter/failover_exporter/status/model"
)

var viewT0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// deadBroker is a cluster of topics*partitions RF 3 partitions on brokers
// 1-3 where broker 3 died 40 s ago: every partition is under-replicated,
// and partition 0 of topic t0 (RF 1 on broker 3) is offline since 45 s.
func deadBroker(topics, partitions int) *Snapshot {
	s := &Snapshot{ReadAt: viewT0.Add(40 * time.Second), Brokers: []Broker{
		{ID: 1, Address: "127.0.0.1:9091", Up: true, Reachable: true, LeaderPartitions: 5},
		{ID: 2, Address: "127.0.0.1:9092", Up: true, Reachable: true},
		{ID: 3, Address: "127.0.0.1:9093", Rack: "rack-2"},
	}}
	for c := range s.Episodes.Open {
		s.Episodes.Open[c] = map[PartitionKey]episode.Open{}
	}
	for ti := range topics {
		t := Topic{Name: fmt.Sprintf("t%d", ti), ReplicationFactor: 3, MinISR: 2}
		for pi := range partitions {
			p := Partition{ID: int32(pi), Leader: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}}
			key := PartitionKey{Topic: t.Name, Partition: p.ID}
			if ti == 0 && pi == 0 {
				p = Partition{ID: 0, Leader: NoLeader, Replicas: []int32{3}, ISR: []int32{3}}
				s.Episodes.Open[ConditionOffline][key] = episode.Open{Since: viewT0.Add(-5 * time.Second), StartSeen: true}
				s.Episodes.Open[ConditionUnderMinISR][key] = episode.Open{Since: viewT0, StartSeen: true}
				t.Offline++
				t.UnderMinISR++
			} else {
				// Later partitions went under-replicated later.
				s.Episodes.Open[ConditionUnderReplicated][key] = episode.Open{Since: viewT0.Add(time.Duration(ti*partitions+pi) * time.Millisecond), StartSeen: true}
				t.UnderReplicated++
			}
			t.Partitions = append(t.Partitions, p)
		}
		s.Topics = append(s.Topics, t)
	}
	return s
}

func viewOf(s *Snapshot, now time.Time) model.Cluster {
	return Views([]watch.Named[Snapshot]{{Name: "main", State: &watch.State[Snapshot]{Snapshot: s, Up: true, LastSuccess: s.ReadAt, Refreshes: 3}}}, now)[0]
}

func TestViews(t *testing.T) {
	c := viewOf(deadBroker(2, 3), viewT0.Add(41*time.Second))
	if c.System != "kafka" || c.Name != "main" {
		t.Errorf("part %+v, want kafka main with only its Kafka part", c)
	}
	if h := *c.Head; h != (model.Head{Up: true, HasData: true, LastOK: "1s ago", Refreshes: 3}) {
		t.Errorf("head %+v", h)
	}
	v := summarize(deadBroker(2, 3))
	if v.BrokersLive != 2 || v.BrokersExpected != 3 || v.Topics != 2 || v.Partitions != 6 || v.Offline != 1 || v.UnderMinISR != 1 || v.UnderReplicated != 5 {
		t.Errorf("counts %+v", v)
	}
	if v.OpenOffline != "45s" || v.OpenUnderMinISR != "40s" || v.OpenUnderRepl != "39s" {
		t.Errorf("oldest episodes %q %q %q, want 45s 40s 39s", v.OpenOffline, v.OpenUnderMinISR, v.OpenUnderRepl)
	}
	want := partitionRow{Topic: "t0", Partition: 0, Leader: "none", Replicas: "[3]", ISR: "[3]", Conditions: []string{"offline", "under min ISR"}, Since: "45s"}
	if len(v.Unhealthy) != 6 || fmt.Sprint(v.Unhealthy[0]) != fmt.Sprint(want) {
		t.Errorf("first unhealthy row %+v, want %+v", v.Unhealthy[0], want)
	}
	if r := v.Unhealthy[1]; r.Topic != "t0" || r.Partition != 1 || r.Leader != "1" || r.ISR != "[1 2]" || !slices.Equal(r.Conditions, []string{"under-replicated"}) {
		t.Errorf("second unhealthy row %+v", r)
	}
	if b := v.Brokers[2]; b != (brokerRow{ID: 3, Address: "127.0.0.1:9093", Rack: "rack-2", State: "down"}) || v.Brokers[0].Leaders != 5 {
		t.Errorf("brokers %+v", v.Brokers)
	}
	// Where the cluster lists fenced brokers (Kafka 4.0+), a dead broker is
	// fenced, or unregistered.
	s := deadBroker(2, 3)
	s.FencedKnown = true
	s.Brokers[2].Fenced = true
	if b := summarize(s).Brokers[2]; b.State != "fenced" {
		t.Errorf("fenced broker's state %q, want fenced", b.State)
	}
	s.Brokers[2].Fenced = false
	if b := summarize(s).Brokers[2]; b.State != "unregistered" {
		t.Errorf("a down broker the cluster does not list as fenced: state %q, want unregistered", b.State)
	}

	// Before the first snapshot: the head alone.
	empty := Views([]watch.Named[Snapshot]{{Name: "new", State: &watch.State[Snapshot]{LastError: fmt.Errorf("dial: refused"), Failures: 1}}}, viewT0)[0]
	if empty.Head.HasData || empty.Head.LastError != "dial: refused" || empty.Head.LastOK != "" || empty.Title != "Kafka cluster new" || empty.Stats != nil || empty.Tables != nil {
		t.Errorf("no snapshot yet: %+v %+v %+v", empty.Head, empty.Stats, empty.Tables)
	}
}

// TestViewsBoundTheTables: 100,000 unhealthy partitions list the oldest
// 50 and count the rest; brokers beyond 100 are counted.
func TestViewsBoundTheTables(t *testing.T) {
	s := deadBroker(1000, 100)
	for i := range maxBrokers {
		s.Brokers = append(s.Brokers, Broker{ID: int32(4 + i)})
	}
	v := summarize(s)
	if len(v.Unhealthy) != maxUnhealthyPartitions || v.UnhealthyMore != 100000-maxUnhealthyPartitions {
		t.Errorf("%d rows and %d more, want %d and %d", len(v.Unhealthy), v.UnhealthyMore, maxUnhealthyPartitions, 100000-maxUnhealthyPartitions)
	}
	for i := 1; i < len(v.Unhealthy); i++ {
		if a, b := v.Unhealthy[i-1], v.Unhealthy[i]; a.Topic == b.Topic && a.Partition >= b.Partition {
			t.Fatalf("rows not oldest first: %+v before %+v", a, b)
		}
	}
	if len(v.Brokers) != maxBrokers || v.BrokersMore != 3 {
		t.Errorf("%d brokers and %d more, want %d and 3", len(v.Brokers), v.BrokersMore, maxBrokers)
	}
}
