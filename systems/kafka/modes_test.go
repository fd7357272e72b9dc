package kafka

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/collector/exposition"
	"github.com/failover-exporter/failover_exporter/systems/kafka/settings"
)

// seriesSink records every series as "name{labels}" → value.
type seriesSink map[string]float64

func (s seriesSink) Add(d *exposition.Desc, value float64, labelValues ...string) {
	var labels []string
	for i, name := range d.Labels {
		labels = append(labels, fmt.Sprintf("%s=%q", name, labelValues[i]))
	}
	slices.Sort(labels)
	s[d.Name+"{"+strings.Join(labels, ",")+"}"] = value
}

func (s seriesSink) AddHistogram(d *exposition.Desc, count uint64, sum float64, cumulative []uint64, labelValues ...string) {
	s.Add(d, float64(count), labelValues...)
}

// render emits snap in mode as cluster "k".
func render(snap *Snapshot, mode settings.PartitionMetrics) seriesSink {
	sink := seriesSink{}
	emitSnapshot(sink, "k", snap, mode)
	return sink
}

// perPartition counts the series of each partition ("topic/partition").
func (s seriesSink) perPartition() map[string]int {
	counts := map[string]int{}
	for key := range s {
		if !strings.HasPrefix(key, "kafka_partition_") || !strings.Contains(key, `partition="`) {
			continue
		}
		part := key[strings.Index(key, `partition="`)+len(`partition="`):]
		part = part[:strings.IndexByte(part, '"')]
		topic := key[strings.Index(key, `topic="`)+len(`topic="`):]
		topic = topic[:strings.IndexByte(topic, '"')]
		counts[topic+"/"+part]++
	}
	return counts
}

// families lists the distinct families of the per-partition series.
func (s seriesSink) partitionFamilies() []string {
	var names []string
	for key := range s {
		if name := key[:strings.IndexByte(key, '{')]; strings.Contains(key, `partition="`) && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// refreshes carries transitions through snaps, read hold apart as given
// by their ReadAt, and returns the last.
func refreshes(hold time.Duration, snaps ...*Snapshot) *Snapshot {
	var prev *Snapshot
	for _, s := range snaps {
		s.detailHold = hold
		carryTransitions(prev, s)
		prev = s
	}
	return prev
}

// at returns s read at t0 plus offset.
func at(s *Snapshot, t0 time.Time, offset time.Duration) *Snapshot {
	s.ReadAt = t0.Add(offset)
	return s
}

func TestLeanServesFiveSeriesPerHealthyPartition(t *testing.T) {
	rs := []int32{1, 2, 3}
	healthy := refreshes(time.Minute, snapshotOf([]int32{1, 2, 3}, part{1, rs, rs}, part{2, []int32{2, 3, 1}, rs}, part{3, []int32{3, 1, 2}, rs}))
	got := render(healthy, settings.PartitionMetricsLean)
	for p, n := range got.perPartition() {
		if n != 5 {
			t.Errorf("lean: %d series for healthy partition %s, want 5", n, p)
		}
	}
	if want := []string{"kafka_partition_in_sync_replicas", "kafka_partition_leader", "kafka_partition_replicas", "kafka_partition_under_min_isr", "kafka_partition_under_replicated"}; !slices.Equal(got.partitionFamilies(), want) {
		t.Errorf("lean families of a healthy cluster = %v, want %v", got.partitionFamilies(), want)
	}
	if n := len(render(healthy, settings.PartitionMetricsUnhealthy).perPartition()); n != 0 {
		t.Errorf("unhealthy mode: %d healthy partitions with series, want none", n)
	}
	if n := len(render(healthy, settings.PartitionMetricsNone).perPartition()); n != 0 {
		t.Errorf("none: %d partitions with series, want none", n)
	}
	full := render(healthy, settings.PartitionMetricsFull).perPartition()
	for p, n := range full {
		// leader, replicas, ISR, offline replicas, under-replicated, offline,
		// preferred, under and at min ISR, four counters, reassigning.
		if n != 14 {
			t.Errorf("full: %d series for healthy partition %s, want 14", n, p)
		}
	}
	if got["kafka_detailed_partitions{kafka_cluster=\"k\"}"] != 0 {
		t.Errorf("kafka_detailed_partitions = %v in a healthy cluster, want 0", got["kafka_detailed_partitions{kafka_cluster=\"k\"}"])
	}
}

// A failover: broker 1, leader of partition 0, dies. The partition's
// detail appears in lean and unhealthy modes, the counters move to the
// topic and the brokers, and a healthy partition keeps its five series.
func TestModesAfterFailover(t *testing.T) {
	rs := []int32{1, 2, 3}
	t0 := time.Now()
	before := at(snapshotOf([]int32{1, 2, 3}, part{1, rs, rs}, part{2, []int32{2, 3}, []int32{2, 3}}), t0, 0)
	// Partition 1 has no replica on broker 1: it stays healthy, with
	// min.insync.replicas 1 so that an ISR of 2 is above it.
	after := at(snapshotOf([]int32{2, 3}, part{2, rs, []int32{2, 3}}, part{2, []int32{2, 3}, []int32{2, 3}}), t0, time.Second)
	before.Topics[0].MinISR, after.Topics[0].MinISR = 1, 1
	last := refreshes(time.Minute, before, after)

	lean := render(last, settings.PartitionMetricsLean)
	counts := lean.perPartition()
	if counts["t/1"] != 5 {
		t.Errorf("lean: healthy partition t/1 has %d series, want 5", counts["t/1"])
	}
	for _, key := range []string{
		`kafka_partition_offline{kafka_cluster="k",partition="0",topic="t"}`,
		`kafka_partition_offline_replicas{kafka_cluster="k",partition="0",topic="t"}`,
		`kafka_partition_at_min_isr{kafka_cluster="k",partition="0",topic="t"}`,
		`kafka_partition_leader_is_preferred{kafka_cluster="k",partition="0",topic="t"}`,
		`kafka_partition_reassigning{kafka_cluster="k",partition="0",topic="t"}`,
	} {
		if _, ok := lean[key]; !ok {
			t.Errorf("lean: unhealthy partition lacks %s", key)
		}
	}
	for _, counter := range []string{"kafka_partition_leader_changes_total", "kafka_partition_isr_shrinks_total"} {
		if _, ok := lean[counter+`{kafka_cluster="k",partition="0",topic="t"}`]; ok {
			t.Errorf("lean serves the per-partition counter %s", counter)
		}
	}
	want := map[string]float64{
		`kafka_topic_leader_changes_total{kafka_cluster="k",topic="t"}`:            1,
		`kafka_topic_isr_shrinks_total{kafka_cluster="k",topic="t"}`:               1,
		`kafka_topic_isr_expands_total{kafka_cluster="k",topic="t"}`:               0,
		`kafka_topic_unclean_leader_elections_total{kafka_cluster="k",topic="t"}`:  0,
		`kafka_topic_non_preferred_leader_partitions{kafka_cluster="k",topic="t"}`: 1,
		`kafka_topic_offline_replicas{kafka_cluster="k",topic="t"}`:                1,
		`kafka_broker_leaderships_lost_total{broker="1",kafka_cluster="k"}`:        1,
		`kafka_broker_leaderships_gained_total{broker="2",kafka_cluster="k"}`:      1,
		`kafka_broker_leaderships_gained_total{broker="1",kafka_cluster="k"}`:      0,
		`kafka_broker_isr_shrinks_total{broker="1",kafka_cluster="k"}`:             1,
		`kafka_broker_isr_shrinks_total{broker="2",kafka_cluster="k"}`:             0,
		`kafka_detailed_partitions{kafka_cluster="k"}`:                             1,
	}
	for _, mode := range settings.PartitionMetricsModes {
		got := render(last, mode)
		for key, v := range want {
			if got[key] != v {
				t.Errorf("%s: %s = %v, want %v", mode, key, got[key], v)
			}
			if _, ok := got[key]; !ok {
				t.Errorf("%s: %s not served", mode, key)
			}
		}
	}
	sparse := render(last, settings.PartitionMetricsUnhealthy).perPartition()
	if _, ok := sparse["t/1"]; ok || sparse["t/0"] == 0 {
		t.Errorf("unhealthy mode: per-partition series %v, want t/0 only", sparse)
	}
	if sparse["t/0"] != counts["t/0"] {
		t.Errorf("unhealthy mode serves %d series of t/0, lean %d: want the same detail", sparse["t/0"], counts["t/0"])
	}
}

// A partition keeps its detail for the hold after it recovers, so the
// recovery shows, and a partition flapping faster than the hold keeps its
// series throughout: they appear once per episode of trouble.
func TestDetailHold(t *testing.T) {
	rs := []int32{1, 2, 3}
	t0 := time.Now()
	healthy := func() *Snapshot { return snapshotOf([]int32{1, 2, 3}, part{1, rs, rs}) }
	shrunk := func() *Snapshot { return snapshotOf([]int32{1, 2, 3}, part{1, rs, []int32{1, 2}}) }
	hold := time.Minute
	var prev *Snapshot
	step := func(s *Snapshot, offset time.Duration) (present bool, sink seriesSink) {
		s.ReadAt = t0.Add(offset)
		s.detailHold = hold
		carryTransitions(prev, s)
		prev = s
		sink = render(s, settings.PartitionMetricsUnhealthy)
		_, present = sink[`kafka_partition_leader{kafka_cluster="k",partition="0",topic="t"}`]
		return present, sink
	}
	timeline := []struct {
		snap    *Snapshot
		offset  time.Duration
		present bool
	}{
		{healthy(), 0, false},
		{shrunk(), 5 * time.Second, true},
		{healthy(), 10 * time.Second, true}, // recovered: held
		{shrunk(), 15 * time.Second, true},  // flaps: still the same series
		{healthy(), 20 * time.Second, true},
		{healthy(), 15*time.Second + hold - time.Second, true},
		{healthy(), 15*time.Second + hold, false}, // a hold after it was last unhealthy
		{healthy(), 30*time.Second + hold, false},
	}
	appearances := 0
	wasPresent := false
	for _, step0 := range timeline {
		present, sink := step(step0.snap, step0.offset)
		if present != step0.present {
			t.Errorf("at +%s: partition series present = %v, want %v", step0.offset, present, step0.present)
		}
		if present && !wasPresent {
			appearances++
		}
		if present && step0.snap.Topics[0].Partitions[0].UnderReplicated() == false {
			if v := sink[`kafka_partition_under_replicated{kafka_cluster="k",partition="0",topic="t"}`]; v != 0 {
				t.Errorf("at +%s: held partition reads under_replicated %v, want the healthy 0", step0.offset, v)
			}
		}
		wasPresent = present
	}
	if appearances != 1 {
		t.Errorf("series appeared %d times over one flapping episode, want once", appearances)
	}
}

// Lean serves a rarely-off gauge of a partition that is otherwise healthy
// where it is off its healthy value: a leader that is not the preferred
// replica, an ISR at min ISR (replication factor = min ISR).
func TestLeanServesGaugesOffTheirHealthyValue(t *testing.T) {
	last := refreshes(time.Minute, snapshotOf([]int32{1, 2, 3}, part{2, []int32{1, 2, 3}, []int32{1, 2, 3}}, part{1, []int32{1, 2}, []int32{1, 2}}))
	got := render(last, settings.PartitionMetricsLean)
	if v, ok := got[`kafka_partition_leader_is_preferred{kafka_cluster="k",partition="0",topic="t"}`]; !ok || v != 0 {
		t.Errorf("lean: leader_is_preferred of a partition led by its second replica = %v (served %v), want 0", v, ok)
	}
	if v, ok := got[`kafka_partition_at_min_isr{kafka_cluster="k",partition="1",topic="t"}`]; !ok || v != 1 {
		t.Errorf("lean: at_min_isr of a partition with RF = min ISR = 2 = %v (served %v), want 1", v, ok)
	}
	// At min ISR is one loss from refused writes: the partition is detailed.
	if got[`kafka_detailed_partitions{kafka_cluster="k"}`] != 1 {
		t.Errorf("kafka_detailed_partitions = %v, want 1 (the partition at min ISR)", got[`kafka_detailed_partitions{kafka_cluster="k"}`])
	}
}

// ServedFamilies, which the contract tests read, says what each mode
// serves: a family a mode emits must be marked served in it.
func TestServedFamiliesMatchWhatEachModeEmits(t *testing.T) {
	rs := []int32{1, 2, 3}
	t0 := time.Now()
	before := at(snapshotOf([]int32{1, 2, 3}, part{1, rs, rs}, part{1, rs, rs}), t0, 0)
	after := at(snapshotOf([]int32{2, 3}, part{2, rs, []int32{2, 3}}, part{-1, rs, nil}), t0, time.Second)
	after.Topics[0].Partitions[0].setReassignment(nil, []int32{1})
	for i := range after.Brokers {
		after.Brokers[i].Rack = "rack-" + brokerLabel(after.Brokers[i].ID%2)
	}
	last := refreshes(time.Minute, before, after)
	last.countNoCleanLeader()
	last.countRacks()
	for _, mode := range settings.PartitionMetricsModes {
		served := ServedFamilies(mode)
		for key := range render(last, mode) {
			if name := key[:strings.IndexByte(key, '{')]; !served[name] {
				t.Errorf("%s emits %s, which ServedFamilies(%s) says it does not serve", mode, name, mode)
			}
		}
	}
	if ServedFamilies(settings.PartitionMetricsLean)["kafka_partition_leader_changes_total"] || !ServedFamilies(settings.PartitionMetricsFull)["kafka_partition_leader_changes_total"] {
		t.Error("per-partition counters: want served in full only")
	}
	if ServedFamilies(settings.PartitionMetricsNone)["kafka_partition_leader"] || !ServedFamilies(settings.PartitionMetricsNone)["kafka_topic_leader_changes_total"] {
		t.Error("none: want no partition family and every topic family")
	}
}

// PartitionSeriesModes, which METRICS.md shows, names every per-partition
// family once, and lean serves exactly the families it says it serves for
// every partition.
func TestPartitionSeriesModesCoverEveryFamily(t *testing.T) {
	listed := map[string]int{}
	for _, s := range PartitionSeriesModes {
		listed[s.Family]++
	}
	for _, d := range metrics.partitionFamilies() {
		if listed[d.Name] != 1 {
			t.Errorf("%s is listed %d times in PartitionSeriesModes, want once", d.Name, listed[d.Name])
		}
		delete(listed, d.Name)
	}
	for name := range listed {
		t.Errorf("PartitionSeriesModes lists %s, which is no per-partition family", name)
	}
	var always []string
	for _, s := range PartitionSeriesModes {
		if strings.HasPrefix(s.Lean, leanAlways) {
			always = append(always, s.Family)
		}
	}
	var lean []string
	for _, d := range metrics.leanFamilies() {
		lean = append(lean, d.Name)
	}
	slices.Sort(always)
	slices.Sort(lean)
	if !slices.Equal(always, lean) {
		t.Errorf("PartitionSeriesModes says lean serves %v for every partition, the collector %v", always, lean)
	}
}
