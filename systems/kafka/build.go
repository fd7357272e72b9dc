package kafka

import (
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/IBM/sarama"
)

// buildSnapshot turns one Metadata response into a Snapshot; it consumes
// md.Topics, leaving nil in their place (md.Brokers stay). keepTopic
// decides which topics get topic and partition series; broker counts cover
// every partition, because a broker's load does not depend on what the
// exporter is asked to show. configs supplies min.insync.replicas.
// reassignments is the ListPartitionReassignments answer by topic and
// partition, nil when it is unknown (see Snapshot.ReassignmentsKnown).
// Of the topics keepTopic leaves out, the failure budget judges the
// internal ones only; buildSnapshotJudging chooses.
func buildSnapshot(md *sarama.MetadataResponse, keepTopic func(string) bool, configs TopicConfigCache,
	reassignments map[string]map[int32]*sarama.PartitionReplicaReassignmentsStatus, readAt time.Time) *Snapshot {
	return buildSnapshotJudging(md, keepTopic, func(string) bool { return false }, configs, reassignments, readAt)
}

// buildSnapshotJudging is buildSnapshot where judge says which of the
// topics keepTopic leaves out the failure budget judges besides the
// internal ones (failure_budget.unwatched_topics): their partitions are
// kept for the budget alone, with no series.
func buildSnapshotJudging(md *sarama.MetadataResponse, keepTopic, judge func(string) bool, configs TopicConfigCache,
	reassignments map[string]map[int32]*sarama.PartitionReplicaReassignmentsStatus, readAt time.Time) *Snapshot {
	brokers := brokerIndex{}
	for _, b := range md.Brokers {
		brokers[b.ID()] = &Broker{ID: b.ID(), Address: b.Addr(), Rack: b.Rack(), Up: true}
	}

	snap := &Snapshot{ReadAt: readAt, TopicConfigs: configs, ReassignmentsKnown: reassignments != nil}
	if md.ClusterID != nil {
		snap.ClusterID = *md.ClusterID
	}
	ids := newIDArena(md, keepTopic)
	for i, tm := range md.Topics {
		// Nothing reads a topic's metadata once it is built: dropping it
		// lets the response (~140 MB decoded at a million partitions)
		// shrink while the snapshot grows, instead of both peaking at once.
		md.Topics[i] = nil
		if tm.Err != sarama.ErrNoError && len(tm.Partitions) == 0 {
			// A topic being deleted or not yet created has no partition data.
			continue
		}
		keep := keepTopic(tm.Name)
		snap.addTopic(tm, keep, !keep && judge(tm.Name), configs, reassignments, &ids, brokers)
	}
	sort.Slice(snap.Topics, func(i, j int) bool { return snap.Topics[i].Name < snap.Topics[j].Name })
	sort.Slice(snap.UnwatchedJudged, func(i, j int) bool { return snap.UnwatchedJudged[i].Name < snap.UnwatchedJudged[j].Name })
	sort.Strings(snap.Unwatched)
	sortInternal(snap.Internal)

	snap.Brokers = make([]Broker, 0, len(brokers))
	for _, b := range brokers {
		snap.Brokers = append(snap.Brokers, *b)
	}
	sort.Slice(snap.Brokers, func(i, j int) bool { return snap.Brokers[i].ID < snap.Brokers[j].ID })
	return snap
}

// addTopic adds one topic of the metadata to the snapshot: its partitions
// counted for their brokers always; stored, with its series, when keep
// (the filter watches it); stored for the failure budget alone when it is
// an internal topic the filter leaves out, or judge; else only named as a
// topic the budget does not judge.
func (snap *Snapshot) addTopic(tm *sarama.TopicMetadata, keep, judge bool, configs TopicConfigCache,
	reassignments map[string]map[int32]*sarama.PartitionReplicaReassignmentsStatus, ids *idArena, brokers brokerIndex) {
	topic := Topic{Name: tm.Name, MinISR: configs.MinISR[tm.Name]}
	topic.UncleanElectionEnabled, topic.UncleanElectionKnown = configs.Unclean[tm.Name]
	topic.Tiered = configs.Tiered[tm.Name]
	var internal *InternalTopic
	feature, isInternal := InternalFeatures[tm.Name]
	if isInternal {
		snap.Internal = append(snap.Internal, InternalTopic{Name: tm.Name, Feature: feature, MinISR: configs.MinISR[tm.Name]})
		internal = &snap.Internal[len(snap.Internal)-1]
	}
	judgedOnly := !keep && (isInternal || judge)
	if !keep && !judgedOnly {
		snap.UnwatchedTopics++
		if len(snap.Unwatched) < maxUnwatchedNames {
			snap.Unwatched = append(snap.Unwatched, tm.Name)
		}
	}
	if keep || judgedOnly {
		topic.Partitions = make([]Partition, 0, len(tm.Partitions))
	}
	for _, pm := range tm.Partitions {
		p := Partition{ID: pm.ID, Leader: pm.Leader}
		if keep {
			p.Replicas, p.ISR = ids.copy(pm.Replicas), ids.copy(pm.Isr)
		} else {
			// Counted for the brokers; stored only for the budget.
			p.Replicas, p.ISR = pm.Replicas, pm.Isr
		}
		if p.Leader < 0 {
			p.Leader = NoLeader
		}
		if ra := reassignments[tm.Name][pm.ID]; ra != nil && reassignmentInProgress(p.Replicas, ra) {
			p.setReassignment(ra.AddingReplicas, ra.RemovingReplicas)
		}
		brokers.countPartition(&p, pm.OfflineReplicas)
		if internal != nil {
			internal.countPartition(&p)
		}
		if keep {
			topic.countPartition(&p)
		}
		if keep || judgedOnly {
			topic.Partitions = append(topic.Partitions, p)
		}
	}
	sort.Slice(topic.Partitions, func(i, j int) bool { return topic.Partitions[i].ID < topic.Partitions[j].ID })
	switch {
	case keep:
		snap.Topics = append(snap.Topics, topic)
	case judgedOnly:
		snap.UnwatchedJudged = append(snap.UnwatchedJudged, topic)
	}
}

// maxUnwatchedNames bounds the names of topics outside the filter a
// snapshot keeps for the failure budget's answers.
const maxUnwatchedNames = 10

// brokerIndex holds the brokers by ID while a snapshot is built.
type brokerIndex map[int32]*Broker

// broker is the broker with the ID; one assigned a replica but not
// registered and live is added, down.
func (brokers brokerIndex) broker(id int32) *Broker {
	b, ok := brokers[id]
	if !ok {
		// Assigned a replica but not registered and live: down.
		b = &Broker{ID: id}
		brokers[id] = b
	}
	return b
}

// countPartition counts the partition's replicas and leadership for its
// brokers, and sets its offline replicas: those the metadata lists as
// offline (offlineReplicas) and those on brokers that are down.
func (brokers brokerIndex) countPartition(p *Partition, offlineReplicas []int32) {
	var offline []int32
	for _, id := range p.Replicas {
		b := brokers.broker(id)
		b.ReplicaPartitions++
		if !slices.Contains(p.ISR, id) {
			b.OutOfSyncReplicas++
		}
		if !b.Up || slices.Contains(offlineReplicas, id) {
			offline = append(offline, id)
		}
		if slices.Contains(p.AddingReplicas(), id) {
			b.AddingReplicas++
		}
		if slices.Contains(p.RemovingReplicas(), id) {
			b.RemovingReplicas++
		}
	}
	p.setOfflineReplicas(offline)
	if p.Leader != NoLeader {
		brokers.broker(p.Leader).LeaderPartitions++
	}
}

// countPartition adds a kept partition to the topic's counts.
func (topic *Topic) countPartition(p *Partition) {
	topic.ReplicationFactor = max(topic.ReplicationFactor, p.ReplicationFactor())
	if p.Reassigning() {
		topic.ReassigningPartitions++
	}
	if p.UnderReplicated() {
		topic.UnderReplicated++
	}
	if p.UnderMinISR(topic.MinISR) {
		topic.UnderMinISR++
	}
	if p.AtMinISR(topic.MinISR) {
		topic.AtMinISR++
	}
	if p.Offline() {
		topic.Offline++
	}
	if !p.LeaderIsPreferred() {
		topic.NonPreferredLeaders++
	}
	topic.OfflineReplicas += len(p.OfflineReplicas())
}

// idArena holds the replica and ISR broker IDs of one snapshot's
// partitions in one array. Copying them there, rather than keeping the
// decoded response's slices, lets the response be collected once the
// snapshot is built: at a million partitions it holds some 170 MB, which
// aliasing kept alive for as long as the snapshot.
type idArena []int32

// newIDArena sizes the arena for the replicas and ISRs of md's kept topics.
func newIDArena(md *sarama.MetadataResponse, keepTopic func(string) bool) idArena {
	n := 0
	for _, tm := range md.Topics {
		if keepTopic(tm.Name) {
			for _, pm := range tm.Partitions {
				n += len(pm.Replicas) + len(pm.Isr)
			}
		}
	}
	return make(idArena, 0, n)
}

// copy appends ids to the arena and returns the copy. Its capacity ends
// where it ends, so an append to it allocates rather than writing over the
// next partition's IDs.
func (a *idArena) copy(ids []int32) []int32 {
	start := len(*a)
	*a = append(*a, ids...)
	return (*a)[start:len(*a):len(*a)]
}

// reassignmentInProgress applies kafka-topics.sh's rule: a reassignment
// read a moment before the metadata may have completed in between, and it
// still counts only while some listed replica is being added or removed.
func reassignmentInProgress(replicas []int32, ra *sarama.PartitionReplicaReassignmentsStatus) bool {
	for _, id := range replicas {
		if slices.Contains(ra.AddingReplicas, id) || slices.Contains(ra.RemovingReplicas, id) {
			return true
		}
	}
	return false
}

// brokerLabel formats a broker ID as a label value.
func brokerLabel(id int32) string { return strconv.FormatInt(int64(id), 10) }

// countNoCleanLeader sets each topic's NoCleanLeader count once the ELR is
// known; without it an empty ISR says nothing about clean recovery.
func (s *Snapshot) countNoCleanLeader() {
	if !s.ELRKnown {
		return
	}
	for i := range s.Topics {
		t := &s.Topics[i]
		t.NoCleanLeader = 0
		for j := range t.Partitions {
			if t.Partitions[j].NoCleanLeader() {
				t.NoCleanLeader++
			}
		}
	}
}

// countRacks fills in the rack series' counts. It runs after
// carryTransitions, which remembers the rack of brokers that went down.
func (s *Snapshot) countRacks() {
	rackOf := make(map[int32]string, len(s.Brokers))
	racks := map[string]bool{}
	for _, b := range s.Brokers {
		if b.Rack != "" {
			rackOf[b.ID] = b.Rack
			racks[b.Rack] = true
		}
	}
	s.Racks = len(racks)
	if s.Racks == 0 {
		return
	}
	distinct := func(ids []int32) int {
		seen := make(map[string]bool, len(ids))
		for _, id := range ids {
			if r := rackOf[id]; r != "" {
				seen[r] = true
			}
		}
		return len(seen)
	}
	for i := range s.Topics {
		t := &s.Topics[i]
		t.RackUnsafe = 0
		for j := range t.Partitions {
			p := &t.Partitions[j]
			// Replicas being added are not counted, as for the replication factor.
			target := p.Replicas
			if adding := p.AddingReplicas(); len(adding) > 0 {
				target = slices.DeleteFunc(slices.Clone(p.Replicas), func(id int32) bool { return slices.Contains(adding, id) })
			}
			// A partition's replicas span at most a few racks; uint16 keeps
			// Partition small.
			p.ReplicaRacks, p.ISRRacks = uint16(distinct(target)), uint16(distinct(p.ISR))
			if p.RackUnsafe(s.Racks) {
				t.RackUnsafe++
			}
		}
	}
}
