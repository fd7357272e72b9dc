package kafka

import (
	"slices"
	"testing"

	"github.com/failover-exporter/failover_exporter/collector/events"
)

// A broker the controller fenced, and then unfenced, is an event each
// time, beside broker_down and broker_up; on a cluster that does not list
// fenced brokers (before Kafka 4.0) there is none.
func TestFencedBrokersAreEvents(t *testing.T) {
	rs := []int32{1, 2, 3}
	fencedAs := func(s *Snapshot, known bool, fenced ...int32) *Snapshot {
		s.FencedKnown = known
		for i := range s.Brokers {
			s.Brokers[i].Fenced = slices.Contains(fenced, s.Brokers[i].ID)
		}
		return s
	}
	kinds := func(s *Snapshot, id string) []events.Kind {
		var out []events.Kind
		for _, e := range s.Events.All() {
			if e.Subject.NodeID == id {
				out = append(out, e.Kind)
			}
		}
		return out
	}
	healthy := fencedAs(snapshotOf([]int32{1, 2, 3}, part{1, rs, rs}), true)
	down := fencedAs(snapshotOf([]int32{2, 3}, part{2, rs, []int32{2, 3}}), true, 1)
	carryTransitions(healthy, down)
	if got := kinds(down, "1"); !slices.Equal(got, []events.Kind{EventBrokerDown, EventBrokerFenced}) {
		t.Errorf("broker 1 killed and fenced: events %v, want broker_down, broker_fenced", got)
	}
	back := fencedAs(snapshotOf([]int32{1, 2, 3}, part{2, rs, rs}), true)
	carryTransitions(down, back)
	if got := kinds(back, "1"); !slices.Equal(got, []events.Kind{EventBrokerUp, EventBrokerUnfenced}) {
		t.Errorf("broker 1 back: events %v, want broker_up, broker_unfenced", got)
	}
	// Unknown before or after: nothing to compare.
	old := fencedAs(snapshotOf([]int32{2, 3}, part{2, rs, []int32{2, 3}}), false)
	carryTransitions(fencedAs(snapshotOf([]int32{1, 2, 3}, part{1, rs, rs}), false), old)
	if got := kinds(old, "1"); !slices.Equal(got, []events.Kind{EventBrokerDown}) {
		t.Errorf("broker 1 killed on a cluster that lists no fenced brokers: events %v, want broker_down only", got)
	}
}
