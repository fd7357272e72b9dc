package kafka

import (
	"strings"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/collector/budget"
	"github.com/failover-exporter/failover_exporter/systems/kafka/settings"
)

// coordinatorBudgetSnapshot is a healthy 3-broker cluster (every stop safe
// by the partition rules) with __consumer_offsets of two partitions read
// at readAt seconds (coordinators 1 and 2, in the given states) and each
// broker's ListGroups as groups says.
func coordinatorBudgetSnapshot(readAt float64, states [2]CoordinatorState, groups map[int32]*BrokerGroups) *Snapshot {
	all := []int32{1, 2, 3}
	s := budgetSnapshot(3, nil, nil, budgetPart{"t", 1, 1, all, all, nil})
	s.Internal = []InternalTopic{{Name: "__consumer_offsets", Partitions: 2}}
	s.Coordinators.Reads[CoordinatorGroup] = &CoordinatorRead{
		ReadAt:     s.ReadAt.Add(-time.Duration(readAt * float64(time.Second))),
		Partitions: []CoordinatorPartition{{State: states[0], Coordinator: 1}, {State: states[1], Coordinator: 2}},
	}
	s.Coordinators.Groups = groups
	s.computeBudget(0)
	return s
}

// withShare adds __share_group_state to s, read with partitions (nil: not
// read), or refused.
func withShare(s *Snapshot, partitions []CoordinatorPartition, refused bool) *Snapshot {
	s.Internal = append(s.Internal, InternalTopic{Name: "__share_group_state", Partitions: max(len(partitions), 1)})
	if partitions != nil {
		s.Coordinators.Reads[CoordinatorShare] = &CoordinatorRead{ReadAt: s.Coordinators.Reads[CoordinatorGroup].ReadAt, Partitions: partitions}
	}
	s.Coordinators.ShareRefused = refused
	s.computeBudget(0)
	return s
}

func stableGroups() map[int32]*BrokerGroups {
	g := func(n int) *BrokerGroups {
		return &BrokerGroups{Total: n, ByProtocol: map[string]int{"consumer": n}, ByState: map[string]int{"stable": n}}
	}
	return map[int32]*BrokerGroups{1: g(2), 2: g(1), 3: g(0)}
}

// With failure_budget.coordinators: settled a stop waits for the
// coordinators to answer and the groups it would move to finish
// rebalancing, and is never safe while the read that would say is
// missing, stale or incomplete. The series and the answer agree.
func TestBudgetWaitsForCoordinatorsToSettle(t *testing.T) {
	const maxAge = 10 * time.Second
	ok := [2]CoordinatorState{CoordinatorAnswering, CoordinatorAnswering}
	rebalancing := stableGroups()
	rebalancing[2].ByState = map[string]int{"rebalancing": 1}
	noStates := stableGroups()
	noStates[1].ByState = nil
	noBroker3 := stableGroups()
	delete(noBroker3, 3)
	for _, tc := range []struct {
		name string
		snap *Snapshot
		// want is each broker's verdict: safe, or its reasons.
		want map[string]string
	}{
		{"settled", coordinatorBudgetSnapshot(2, ok, stableGroups()), map[string]string{"1": "safe", "2": "safe", "3": "safe"}},
		{"a coordinator loading", coordinatorBudgetSnapshot(2, [2]CoordinatorState{CoordinatorAnswering, CoordinatorLoading}, stableGroups()),
			map[string]string{"1": "coordinators_unsettled", "2": "coordinators_unsettled", "3": "coordinators_unsettled"}},
		{"a coordinator unavailable", coordinatorBudgetSnapshot(2, [2]CoordinatorState{CoordinatorUnavailable, CoordinatorAnswering}, stableGroups()),
			map[string]string{"1": "coordinators_unsettled", "2": "coordinators_unsettled", "3": "coordinators_unsettled"}},
		// Only the stop that moves the rebalancing group's coordinator.
		{"a group rebalancing on broker 2", coordinatorBudgetSnapshot(2, ok, rebalancing), map[string]string{"1": "safe", "2": "coordinators_unsettled", "3": "safe"}},
		{"a partition unknown", coordinatorBudgetSnapshot(2, [2]CoordinatorState{CoordinatorUnknown, CoordinatorAnswering}, stableGroups()),
			map[string]string{"1": "not_judged", "2": "not_judged", "3": "not_judged"}},
		{"the read stale", coordinatorBudgetSnapshot(11, ok, stableGroups()), map[string]string{"1": "not_judged", "2": "not_judged", "3": "not_judged"}},
		{"no group states from broker 1", coordinatorBudgetSnapshot(2, ok, noStates), map[string]string{"1": "not_judged", "2": "safe", "3": "safe"}},
		{"broker 3 did not answer ListGroups", coordinatorBudgetSnapshot(2, ok, noBroker3), map[string]string{"1": "safe", "2": "safe", "3": "not_judged"}},
		{"__share_group_state exists, its coordinators not read", withShare(coordinatorBudgetSnapshot(2, ok, stableGroups()), nil, false),
			map[string]string{"1": "not_judged", "2": "not_judged", "3": "not_judged"}},
		// The brokers refuse the share question (ClusterAction): settled
		// judges the other kinds.
		{"the share question refused", withShare(coordinatorBudgetSnapshot(2, ok, stableGroups()), nil, true),
			map[string]string{"1": "safe", "2": "safe", "3": "safe"}},
		{"a share coordinator loading", withShare(coordinatorBudgetSnapshot(2, ok, stableGroups()), []CoordinatorPartition{{State: CoordinatorLoading, Coordinator: 3}}, false),
			map[string]string{"1": "coordinators_unsettled", "2": "coordinators_unsettled", "3": "coordinators_unsettled"}},
		{"never read", func() *Snapshot {
			s := coordinatorBudgetSnapshot(2, ok, nil)
			s.Coordinators.Reads[CoordinatorGroup] = nil
			s.computeBudget(0)
			return s
		}(), map[string]string{"1": "not_judged", "2": "not_judged", "3": "not_judged"}},
	} {
		s := tc.snap
		s.budgetCoordinators(s.Budget, maxAge)
		sink := render(s, settings.PartitionMetricsLean)
		for broker, want := range tc.want {
			a, err := answerBudget(s, budget.Question{Scope: ScopeBroker, ID: broker})
			if err != nil {
				t.Fatal(err)
			}
			var reasons []string
			for _, f := range a.Findings {
				reasons = append(reasons, string(f.Reason))
			}
			got := "safe"
			if !a.Safe {
				got = strings.Join(reasons, ",")
			}
			if got != want {
				t.Errorf("%s: broker %s: %s (%v), want %s", tc.name, broker, got, a.Findings, want)
			}
			labels := `{broker="` + broker + `",kafka_cluster="k"`
			if v, ok := sink["kafka_broker_safe_to_stop"+labels+"}"]; !ok || (v == 1) != a.Safe {
				t.Errorf("%s: broker %s: kafka_broker_safe_to_stop %v (served %v), the answer safe=%v", tc.name, broker, v, ok, a.Safe)
			}
			for _, r := range StopReasons {
				v := sink["kafka_broker_stop_unsafe"+labels+`,reason="`+string(r)+`"}`]
				if (v == 1) != strings.Contains(","+got+",", ","+string(r)+",") {
					t.Errorf("%s: broker %s: kafka_broker_stop_unsafe{reason=%q} %v, the answer's reasons %s", tc.name, broker, r, v, got)
				}
			}
		}
	}
}

// Without the option (inform, the default) coordinators are facts only.
func TestBudgetInformsOfCoordinatorsByDefault(t *testing.T) {
	s := coordinatorBudgetSnapshot(60, [2]CoordinatorState{CoordinatorLoading, CoordinatorUnknown}, nil)
	for i := range s.Budget.Brokers {
		if e := &s.Budget.Brokers[i]; !e.Safe() {
			t.Errorf("broker %s: unsafe without failure_budget.coordinators: settled", e.ID)
		}
	}
}
