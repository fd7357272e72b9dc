package kafkacanary

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/IBM/sarama"
	"github.com/go-kit/log/level"
)

// assignment spreads partitions over brokers so that partition i's
// preferred leader (its first replica) is the i-th broker by id, and its
// followers the next ones: with as many partitions as brokers, every
// broker leads exactly one.
func assignment(brokers []int32, first, partitions, replicationFactor int) [][]int32 {
	ids := slices.Clone(brokers)
	slices.Sort(ids)
	rf := min(replicationFactor, len(ids))
	out := make([][]int32, 0, partitions-first)
	for p := first; p < partitions; p++ {
		out = append(out, ledBy(ids[p%len(ids)], ids, rf))
	}
	return out
}

func brokerIDs(client sarama.Client) []int32 {
	var ids []int32
	for _, b := range client.Brokers() {
		ids = append(ids, b.ID())
	}
	slices.Sort(ids)
	return ids
}

// ensureTopic makes sure the canary topic exists, creating it when
// allowed, brings it towards its configured shape and keeps its
// leadership spread. It touches no other topic. It fails only when the
// topic cannot be read or created: a healing step that fails is logged and
// tried again next round.
func (s *source) ensureTopic() (*TopicHealth, error) {
	topic := s.cfg.Canary.Topic
	err := s.client.RefreshMetadata(topic)
	if err != nil && !errors.Is(err, sarama.ErrUnknownTopicOrPartition) {
		return nil, fmt.Errorf("metadata of %s: %w", topic, err)
	}
	brokers := brokerIDs(s.client)
	if len(brokers) == 0 {
		return nil, errors.New("no broker known")
	}
	partitions, perr := s.client.Partitions(topic)
	if errors.Is(err, sarama.ErrUnknownTopicOrPartition) || errors.Is(perr, sarama.ErrUnknownTopicOrPartition) || (perr == nil && len(partitions) == 0) {
		if err := s.createTopic(brokers); err != nil {
			return nil, err
		}
		if partitions, perr = s.client.Partitions(topic); perr == nil && len(partitions) == 0 {
			perr = fmt.Errorf("no partitions after creating it")
		}
	}
	if perr != nil {
		return nil, fmt.Errorf("partitions of %s: %w", topic, perr)
	}
	health := s.healTopic(s.readTopic(partitions))
	s.respread(partitions)
	return health, nil
}

// createTopic creates the canary topic with a partition led by each live
// broker. With fewer live brokers than the configured replication factor
// it is created smaller and healTopic completes it when brokers return.
func (s *source) createTopic(brokers []int32) error {
	topic := s.cfg.Canary.Topic
	if !s.cfg.Canary.CreateTopicEnabled() {
		return fmt.Errorf("canary topic %s does not exist and canary.create_topic is false", topic)
	}
	rf := min(s.cfg.Canary.ReplicationFactor, len(brokers))
	minISR := min(s.cfg.Canary.MinInsyncReplicas, rf)
	detail := &sarama.TopicDetail{
		NumPartitions:     -1,
		ReplicationFactor: -1,
		ReplicaAssignment: map[int32][]int32{},
		ConfigEntries: map[string]*string{
			minISRConfig: ptr(strconv.Itoa(minISR)),
			// The canary reads back records of the last few rounds only:
			// an hour bounds the topic's disk use (segments roll hourly
			// so that retention can delete them).
			"retention.ms": ptr(strconv.Itoa(int(canaryRetention.Milliseconds()))),
			"segment.ms":   ptr(strconv.Itoa(int(canaryRetention.Milliseconds()))),
		},
	}
	for p, replicas := range assignment(brokers, 0, len(brokers), rf) {
		detail.ReplicaAssignment[int32(p)] = replicas
	}
	if err := s.admin.CreateTopic(topic, detail, false); err != nil && !errors.Is(err, sarama.ErrTopicAlreadyExists) {
		return fmt.Errorf("create canary topic %s: %w", topic, err)
	}
	if rf < s.cfg.Canary.ReplicationFactor || minISR < s.cfg.Canary.MinInsyncReplicas {
		level.Warn(s.logger).Log("msg", "created the canary topic with fewer replicas than configured, as only these brokers are live; it is completed when brokers return",
			"topic", topic, "brokers", fmt.Sprint(brokers), "partitions", len(brokers), "replication_factor", rf, "min_insync_replicas", minISR,
			"configured_replication_factor", s.cfg.Canary.ReplicationFactor, "configured_min_insync_replicas", s.cfg.Canary.MinInsyncReplicas)
	} else {
		level.Info(s.logger).Log("msg", "created the canary topic", "topic", topic, "partitions", len(brokers),
			"replication_factor", rf, "min_insync_replicas", minISR)
	}
	s.minISR, s.minISRReadAt = minISR, time.Now()
	if err := s.client.RefreshMetadata(topic); err != nil {
		return fmt.Errorf("metadata of the new canary topic %s: %w", topic, err)
	}
	return nil
}

// minISRConfig is the topic config the canary reads and raises.
const minISRConfig = "min.insync.replicas"

// topicConfigEvery is how often the canary re-reads its topic's
// min.insync.replicas (it knows what it set itself).
const topicConfigEvery = time.Minute

// readTopic reads the topic's state from the client's metadata, its
// min.insync.replicas when due and, while a reassignment may be in
// progress, the reassignments of its partitions.
func (s *source) readTopic(partitions []int32) topicState {
	topic := s.cfg.Canary.Topic
	st := topicState{live: brokerIDs(s.client)}
	for _, p := range partitions {
		// Replicas still lists them when some are offline.
		replicas, err := s.client.Replicas(topic, p)
		if err != nil && !errors.Is(err, sarama.ErrReplicaNotAvailable) {
			replicas = nil
		}
		st.partitions = append(st.partitions, partitionState{id: p, replicas: replicas, leader: s.leaderID(p)})
	}
	st.minISR = s.topicMinISR()
	st.adding, st.reassigning = s.reassignments(partitions)
	return st
}

func (s *source) topicMinISR() int {
	if !s.minISRReadAt.IsZero() && time.Since(s.minISRReadAt) < topicConfigEvery {
		return s.minISR
	}
	s.minISRReadAt = time.Now()
	entries, err := s.admin.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: s.cfg.Canary.Topic, ConfigNames: []string{minISRConfig}})
	if err == nil {
		err = fmt.Errorf("no %s in the answer", minISRConfig)
		for _, e := range entries {
			if e.Name == minISRConfig {
				s.minISR, err = strconv.Atoi(e.Value)
			}
		}
	}
	s.stepDone("read "+minISRConfig, err)
	return s.minISR
}

// reassignments returns the replicas in-progress reassignments of the
// canary's partitions are adding, and whether any is in progress. It asks
// only after the canary started one, or once after it connected (one may
// be left from before a restart).
func (s *source) reassignments(partitions []int32) (map[int32][]int32, bool) {
	if !s.checkReassignments {
		return nil, false
	}
	topic := s.cfg.Canary.Topic
	status, err := s.admin.ListPartitionReassignments(topic, partitions)
	s.stepDone("list reassignments", err)
	if err != nil {
		// Wait for a reassignment of ours; otherwise assume none.
		s.checkReassignments = s.reassignStarted
		return nil, s.reassignStarted
	}
	if len(status[topic]) == 0 {
		if s.reassignStarted {
			level.Info(s.logger).Log("msg", "canary topic reassignment finished", "topic", topic)
		}
		s.checkReassignments, s.reassignStarted = false, false
		return nil, false
	}
	adding := map[int32][]int32{}
	for p, st := range status[topic] {
		adding[p] = st.AddingReplicas
	}
	return adding, true
}

// healTopic assesses the topic and, when the canary manages it, takes the
// next healing step. With create_topic false the topic is the user's: the
// canary reports its shape but never changes it.
func (s *source) healTopic(st topicState) *TopicHealth {
	c := s.cfg.Canary
	health := assess(st, c.ReplicationFactor, c.MinInsyncReplicas)
	health.Managed = c.CreateTopicEnabled()
	if !health.Managed {
		if reasons := strings.Join(health.Reasons(), ", "); reasons != s.unmanagedReasons {
			if reasons != "" {
				level.Warn(s.logger).Log("msg", "the canary topic is weaker than configured; canary.create_topic is false, so the canary leaves it as it is",
					"topic", c.Topic, "reasons", reasons)
			} else {
				level.Info(s.logger).Log("msg", "the canary topic has its configured shape", "topic", c.Topic)
			}
			s.unmanagedReasons = reasons
		}
		return health
	}
	health.Healing, health.HealError = s.heal(st, planHealing(st, c.ReplicationFactor, c.MinInsyncReplicas))
	return health
}

// heal takes the plan's steps and says which and how they failed.
func (s *source) heal(st topicState, plan healPlan) (step, failure string) {
	topic := s.cfg.Canary.Topic
	var steps, failures []string
	do := func(name string, err error, done ...any) {
		steps = append(steps, name)
		s.stepDone(name, err)
		if err != nil {
			failures = append(failures, name+": "+err.Error())
		} else {
			level.Info(s.logger).Log(append([]any{"msg", "canary topic: " + name, "topic", topic}, done...)...)
		}
	}
	switch {
	case plan.wait:
		steps = append(steps, "waiting for the reassignment to finish")
	case len(plan.reassign) > 0:
		assignment, err := reassignmentByPartition(st.partitions, plan.reassign)
		if err == nil {
			err = s.admin.AlterPartitionReassignments(topic, assignment)
		}
		if err == nil {
			s.checkReassignments, s.reassignStarted = true, true
		}
		do("raise the replication factor", err, "replicas", fmt.Sprint(plan.reassign))
	default:
		if plan.minISR > 0 {
			value := strconv.Itoa(plan.minISR)
			err := s.admin.IncrementalAlterConfig(sarama.TopicResource, topic, map[string]sarama.IncrementalAlterConfigsEntry{
				minISRConfig: {Operation: sarama.IncrementalAlterConfigsOperationSet, Value: &value},
			}, false)
			if err == nil {
				s.minISR, s.minISRReadAt = plan.minISR, time.Now()
			}
			do("raise "+minISRConfig, err, minISRConfig, plan.minISR)
		}
		if len(plan.add) > 0 {
			count := len(st.partitions) + len(plan.add)
			err := s.admin.CreatePartitions(topic, int32(count), plan.add, false)
			if err == nil {
				_ = s.client.RefreshMetadata(topic)
			}
			do("add partitions for brokers without one", err, "partitions", count, "new", fmt.Sprint(plan.add))
		}
	}
	return strings.Join(steps, "; "), strings.Join(failures, "; ")
}

// reassignmentByPartition is sarama's AlterPartitionReassignments argument:
// replicas by partition from 0 to the highest one that changes. Those that
// do not change get their own replicas, a no-op (nil would cancel a
// reassignment of theirs).
func reassignmentByPartition(partitions []partitionState, reassign map[int32][]int32) ([][]int32, error) {
	var last int32 = -1
	for p := range reassign {
		last = max(last, p)
	}
	out := make([][]int32, last+1)
	for _, p := range partitions {
		if p.id <= last {
			out[p.id] = p.replicas
		}
	}
	for p := range out {
		if r, ok := reassign[int32(p)]; ok {
			out[p] = r
		}
		if len(out[p]) == 0 {
			return nil, fmt.Errorf("replicas of partition %d unknown", p)
		}
	}
	return out, nil
}

// stepDone logs a healing step's failure once per change of error, not
// every round it is retried, and its recovery once.
func (s *source) stepDone(step string, err error) {
	prev, failed := s.stepErrors[step]
	if err == nil {
		if failed {
			delete(s.stepErrors, step)
			level.Info(s.logger).Log("msg", "canary topic: "+step+" works again", "topic", s.cfg.Canary.Topic, "previous_err", prev)
		}
		return
	}
	if failed && prev == err.Error() {
		return
	}
	s.stepErrors[step] = err.Error()
	level.Warn(s.logger).Log("msg", "canary topic: could not "+step+"; trying again every round (logged again only if the error changes)",
		"topic", s.cfg.Canary.Topic, "err", err)
}

// canaryRetention is how long the canary topic keeps records.
const canaryRetention = time.Hour

// respreadEvery bounds how often the canary asks for preferred leaders.
const respreadEvery = 30 * time.Second

// respread moves leadership of canary partitions back to their preferred
// leaders (one broker each) once those are in sync again after a failover,
// so that every broker keeps being tested as a leader. It needs Alter on
// the cluster; without it the canary still works, with leadership where
// the failovers left it.
func (s *source) respread(partitions []int32) {
	if time.Since(s.lastRespread) < respreadEvery {
		return
	}
	topic := s.cfg.Canary.Topic
	var move []int32
	for _, p := range partitions {
		replicas, err := s.client.Replicas(topic, p)
		if err != nil || len(replicas) == 0 {
			continue
		}
		isr, err := s.client.InSyncReplicas(topic, p)
		if err != nil || !slices.Contains(isr, replicas[0]) {
			continue
		}
		if leader, err := s.client.Leader(topic, p); err == nil && leader.ID() != replicas[0] {
			move = append(move, p)
		}
	}
	if len(move) == 0 {
		return
	}
	s.lastRespread = time.Now()
	if _, err := s.admin.ElectLeaders(sarama.PreferredElection, map[string][]int32{topic: move}); err != nil {
		level.Warn(s.logger).Log("msg", "could not move canary leadership back to the preferred leaders", "topic", topic, "partitions", fmt.Sprint(move), "err", err)
		return
	}
	level.Info(s.logger).Log("msg", "moved canary leadership back to the preferred leaders", "topic", topic, "partitions", fmt.Sprint(move))
	_ = s.client.RefreshMetadata(topic)
}

func ptr[T any](v T) *T { return &v }
