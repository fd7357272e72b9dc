package kafkacanary

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/go-kit/log"
)

// parts builds partitions 0..n-1 from replica lists, each led by its
// preferred leader.
func parts(replicas ...[]int32) []partitionState {
	out := make([]partitionState, len(replicas))
	for i, r := range replicas {
		out[i] = partitionState{id: int32(i), replicas: r, leader: r[0]}
	}
	return out
}

func TestPlanHealing(t *testing.T) {
	cases := []struct {
		name              string
		st                topicState
		wantRF, wantMinIS int
		plan              healPlan
		degraded          bool
	}{
		{
			name: "configured shape: nothing to do",
			st:   topicState{live: []int32{1, 2, 3}, partitions: parts([]int32{1, 2, 3}, []int32{2, 3, 1}, []int32{3, 1, 2}), minISR: 2},
			// RF 3 / min ISR 2, every broker leads one.
			wantRF: 3, wantMinIS: 2,
		},
		{
			// The topic: created while broker 3 was down.
			name:   "created with broker 3 down, broker 3 still down",
			st:     topicState{live: []int32{1, 2}, partitions: parts([]int32{1, 2}, []int32{2, 1}), minISR: 2},
			wantRF: 3, wantMinIS: 2,
			degraded: true,
		},
		{
			name:   "broker 3 back: raise RF by reassigning, keeping the preferred leaders",
			st:     topicState{live: []int32{1, 2, 3}, partitions: parts([]int32{1, 2}, []int32{2, 1}), minISR: 2},
			wantRF: 3, wantMinIS: 2,
			plan:     healPlan{reassign: map[int32][]int32{0: {1, 2, 3}, 1: {2, 1, 3}}},
			degraded: true,
		},
		{
			name: "reassignment in progress: wait",
			st: topicState{live: []int32{1, 2, 3}, partitions: parts([]int32{1, 2, 3}, []int32{2, 1, 3}), minISR: 2,
				adding: map[int32][]int32{0: {3}, 1: {3}}, reassigning: true},
			wantRF: 3, wantMinIS: 2,
			plan:     healPlan{wait: true},
			degraded: true,
		},
		{
			name:   "reassigned: add a partition led by broker 3, RF as partition 0's",
			st:     topicState{live: []int32{1, 2, 3}, partitions: parts([]int32{1, 2, 3}, []int32{2, 1, 3}), minISR: 2},
			wantRF: 3, wantMinIS: 2,
			plan:     healPlan{add: [][]int32{{3, 1, 2}}},
			degraded: true,
		},
		{
			name:   "min ISR capped at creation (one broker live) and RF raised since: raise min ISR and add partitions together",
			st:     topicState{live: []int32{1, 2, 3}, partitions: parts([]int32{1, 2, 3}), minISR: 1},
			wantRF: 3, wantMinIS: 2,
			plan:     healPlan{minISR: 2, add: [][]int32{{2, 3, 1}, {3, 1, 2}}},
			degraded: true,
		},
		{
			name:   "one broker back of two: RF raised to the live brokers only, min ISR waits",
			st:     topicState{live: []int32{1, 2}, partitions: parts([]int32{1}), minISR: 1},
			wantRF: 3, wantMinIS: 2,
			plan:     healPlan{reassign: map[int32][]int32{0: {1, 2}}},
			degraded: true,
		},
		{
			name:   "RF 2 of 3 with two live brokers: min ISR raised to 2, not beyond the RF",
			st:     topicState{live: []int32{1, 2}, partitions: parts([]int32{1, 2}, []int32{2, 1}), minISR: 1},
			wantRF: 3, wantMinIS: 2,
			plan:     healPlan{minISR: 2},
			degraded: true,
		},
		{
			name:   "min ISR unknown (DescribeConfigs denied): left alone",
			st:     topicState{live: []int32{1, 2, 3}, partitions: parts([]int32{1, 2, 3}, []int32{2, 3, 1}, []int32{3, 1, 2})},
			wantRF: 3, wantMinIS: 2,
		},
		{
			name:   "min ISR above the configured one is the user's: not lowered",
			st:     topicState{live: []int32{1, 2, 3}, partitions: parts([]int32{1, 2, 3}, []int32{2, 3, 1}, []int32{3, 1, 2}), minISR: 3},
			wantRF: 3, wantMinIS: 2,
		},
		{
			// Dead brokers keep their replicas; the cluster's failure is
			// not the topic's weakness (KafkaCanaryWritesFailing pages).
			name:   "two of three brokers down: not degraded, nothing moved, RF never lowered",
			st:     topicState{live: []int32{2}, partitions: parts([]int32{1, 2, 3}, []int32{2, 3, 1}, []int32{3, 1, 2}), minISR: 2},
			wantRF: 3, wantMinIS: 2,
		},
		{
			name:   "a fourth broker joins: a partition for it",
			st:     topicState{live: []int32{1, 2, 3, 4}, partitions: parts([]int32{1, 2, 3}, []int32{2, 3, 1}, []int32{3, 1, 2}), minISR: 2},
			wantRF: 3, wantMinIS: 2,
			plan:     healPlan{add: [][]int32{{4, 1, 2}}},
			degraded: true,
		},
		{
			name:   "broker 3 gone for good, broker 4 new: a partition for 4 on live brokers; 3 keeps its replicas",
			st:     topicState{live: []int32{1, 2, 4}, partitions: parts([]int32{1, 2, 3}, []int32{2, 3, 1}, []int32{3, 1, 2}), minISR: 2},
			wantRF: 3, wantMinIS: 2,
			plan:     healPlan{add: [][]int32{{4, 1, 2}}},
			degraded: true,
		},
		{
			name:   "broker without a partition but too few live brokers for partition 0's RF: nothing to add",
			st:     topicState{live: []int32{3, 4}, partitions: parts([]int32{1, 2, 3}, []int32{2, 3, 1}, []int32{3, 1, 2}), minISR: 2},
			wantRF: 3, wantMinIS: 2,
			degraded: true,
		},
		{
			name:   "a partition's replicas unknown: the others are still planned",
			st:     topicState{live: []int32{1, 2, 3}, partitions: []partitionState{{id: 0, replicas: []int32{1, 2}, leader: 1}, {id: 1, leader: -1}}, minISR: 2},
			wantRF: 3, wantMinIS: 2,
			plan:     healPlan{reassign: map[int32][]int32{0: {1, 2, 3}}},
			degraded: true,
		},
		{
			name:   "one broker and RF 3 configured: created RF 1, degraded for good",
			st:     topicState{live: []int32{1}, partitions: parts([]int32{1}), minISR: 1},
			wantRF: 3, wantMinIS: 2,
			degraded: true,
		},
		{
			name:   "RF 1 configured on one broker: the configured shape",
			st:     topicState{live: []int32{1}, partitions: parts([]int32{1}), minISR: 1},
			wantRF: 1, wantMinIS: 1,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := planHealing(c.st, c.wantRF, c.wantMinIS)
			if !reflect.DeepEqual(got, c.plan) {
				t.Errorf("plan = %+v, want %+v", got, c.plan)
			}
			h := assess(c.st, c.wantRF, c.wantMinIS)
			if h.Degraded() != c.degraded {
				t.Errorf("degraded = %v (%v), want %v", h.Degraded(), h.Reasons(), c.degraded)
			}
		})
	}
}

func TestAssessReasons(t *testing.T) {
	st := topicState{live: []int32{1, 2, 3}, partitions: parts([]int32{1, 2, 3}, []int32{2, 1, 3}), minISR: 1,
		adding: map[int32][]int32{1: {3}}, reassigning: true}
	st.partitions[0].leader = 2
	h := assess(st, 3, 2)
	want := "[replication factor 2 of 3 reassignment in progress min.insync.replicas 1 of 2 no partition for brokers [3]]"
	if got := fmt.Sprint(h.Reasons()); got != want {
		t.Errorf("reasons = %s, want %s", got, want)
	}
	if h.ReplicationFactor != 2 || h.Partitions != 2 || fmt.Sprint(h.NotLeading) != "[1 3]" || fmt.Sprint(h.Unpreferred) != "[3]" {
		t.Errorf("health = %+v", h)
	}
}

func TestExtendReplicasAndLedBy(t *testing.T) {
	// Followers are the next brokers by ID after the preferred leader,
	// wrapping around, skipping those already replicas.
	for _, c := range []struct {
		replicas, live []int32
		rf             int
		want           string
	}{
		{[]int32{3}, []int32{1, 2, 3, 4}, 3, "[3 4 1]"},
		{[]int32{2, 4}, []int32{1, 2, 3, 4}, 3, "[2 4 3]"},
		{[]int32{5, 1}, []int32{1, 2, 3}, 3, "[5 1 2]"}, // leader 5 is down
		{[]int32{1, 2}, []int32{1, 2}, 3, "[1 2]"},      // no more live brokers
	} {
		if got := fmt.Sprint(extendReplicas(c.replicas, c.live, c.rf)); got != c.want {
			t.Errorf("extendReplicas(%v, %v, %d) = %s, want %s", c.replicas, c.live, c.rf, got, c.want)
		}
	}
	if got := fmt.Sprint(ledBy(3, []int32{1, 2, 3, 4}, 3)); got != "[3 4 1]" {
		t.Errorf("ledBy(3) = %s", got)
	}
}

func TestReassignmentByPartition(t *testing.T) {
	ps := parts([]int32{1, 2}, []int32{2, 1}, []int32{3, 1})
	got, err := reassignmentByPartition(ps, map[int32][]int32{1: {2, 1, 3}})
	if err != nil || fmt.Sprint(got) != "[[1 2] [2 1 3]]" {
		t.Errorf("got %v, %v; want partition 0 unchanged, 1 raised, 2 not sent", got, err)
	}
	ps[0].replicas = nil
	if got, err := reassignmentByPartition(ps, map[int32][]int32{1: {2, 1, 3}}); err == nil {
		t.Errorf("partition 0's replicas unknown: got %v, want an error, not a cancelling nil", got)
	}
	if got, err := reassignmentByPartition(ps, map[int32][]int32{0: {1, 2, 3}}); err != nil || fmt.Sprint(got) != "[[1 2 3]]" {
		t.Errorf("got %v, %v", got, err)
	}
}

// The canary logged the same failed step 57 times in 70 s: a step
// failing every round is logged once per change of error.
func TestStepDoneLogsOncePerChangeOfError(t *testing.T) {
	var buf bytes.Buffer
	s := &source{logger: log.NewLogfmtLogger(&buf), stepErrors: map[string]string{}}
	s.cfg.Canary.Topic = "__failover_exporter_canary"
	for range 57 {
		s.stepDone("add partitions", errors.New("kafka server: Replica assignment is invalid - previous partitions have 2"))
	}
	s.stepDone("add partitions", errors.New("kafka server: The client is not authorized"))
	s.stepDone("add partitions", nil)
	s.stepDone("add partitions", nil)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "previous partitions have 2") || !strings.Contains(lines[1], "not authorized") ||
		!strings.Contains(lines[2], "works again") {
		t.Errorf("want one line per error and one for the recovery, got %d:\n%s", len(lines), buf.String())
	}
}
