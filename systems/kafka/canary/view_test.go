package kafkacanary

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/collector/watch"
)

func TestViews(t *testing.T) {
	degraded := &TopicHealth{Partitions: 2, ReplicationFactor: 2, WantReplicationFactor: 3, WantMinInsyncReplicas: 2,
		Reassigning: true, Managed: true, Healing: "waiting for the reassignment to finish"}
	states := []watch.Named[Snapshot]{
		{Name: "main", State: &watch.State[Snapshot]{Up: true, Snapshot: &Snapshot{Topic: degraded}}},
		{Name: "failed", State: &watch.State[Snapshot]{LastError: errors.New("timeout"), Snapshot: &Snapshot{Topic: degraded}}},
		{Name: "starting", State: &watch.State[Snapshot]{Up: true, Snapshot: &Snapshot{}}},
	}
	views := Views(states, time.Now())
	if len(views) != 3 {
		t.Fatalf("%d parts, want 3", len(views))
	}
	for _, v := range views {
		// A part of its Kafka cluster's section, with no head of its own.
		if v.System != "kafka" || v.Head != nil || len(v.Tables) != 0 || len(v.Stats) != 1 || v.Stats[0].Name != "canary-topic" {
			t.Errorf("%s: part %+v, want a kafka part with only the canary", v.Name, v)
		}
	}
	// The topic each part shows.
	topic := func(i int) topicView { return *view(states[i].State) }
	want := topicView{Up: true, Known: true, Degraded: true, RF: "2 / 3", MinISR: "? / 2",
		Reasons: degraded.Reasons(), Managed: true, Healing: "waiting for the reassignment to finish"}
	if got := topic(0); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("degraded topic: %+v, want %+v", got, want)
	}
	// As in the metrics, a failed round's topic shape is not current.
	if got := topic(1); got.Known || got.LastError != "timeout" || got.Up {
		t.Errorf("failed round: %+v", got)
	}
	if got := topic(2); got.Known || !got.Up {
		t.Errorf("topic not read yet: %+v", got)
	}
}
