package kafkacanary

import (
	"context"
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
// topic cannot be read or created, or ctx ends: a healing step that fails
// is logged and tried again next round. Every call to the cluster is
// bounded by ctx (call).
func (s *source) ensureTopic(ctx context.Context) (*TopicHealth, error) {
	c, topic := s.c, s.cfg.Canary.Topic
	err := callErr(ctx, s, "metadata", func() error { return c.client.RefreshMetadata(topic) })
	if err != nil && !errors.Is(err, sarama.ErrUnknownTopicOrPartition) {
		return nil, fmt.Errorf("metadata of %s: %w", topic, err)
	}
	brokers := brokerIDs(c.client)
	if len(brokers) == 0 {
		return nil, errors.New("no broker known")
	}
	partitionsOf := func() ([]int32, error) { return c.client.Partitions(topic) }
	partitions, perr := call(ctx, s, "partitions", partitionsOf, nil)
	if errors.Is(err, sarama.ErrUnknownTopicOrPartition) || errors.Is(perr, sarama.ErrUnknownTopicOrPartition) || (perr == nil && len(partitions) == 0) {
		if err := s.createTopic(ctx, brokers); err != nil {
			return nil, err
		}
		s.created = true
		if partitions, perr = call(ctx, s, "partitions", partitionsOf, nil); perr == nil && len(partitions) == 0 {
			perr = fmt.Errorf("no partitions after creating it")
		}
	}
	if perr != nil {
		return nil, fmt.Errorf("partitions of %s: %w", topic, perr)
	}
	st, err := s.readTopic(ctx, partitions)
	if err != nil {
		return nil, err
	}
	health := s.healTopic(ctx, st)
	s.respread(ctx, partitions)
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("canary topic %s: %w", topic, err)
	}
	return health, nil
}

// createTopic creates the canary topic with a partition led by each live
// broker. With fewer live brokers than the configured replication factor
// it is created smaller and healTopic completes it when brokers return.
func (s *source) createTopic(ctx context.Context, brokers []int32) error {
	c, topic := s.c, s.cfg.Canary.Topic
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
	err := callErr(ctx, s, "create topic", func() error { return c.admin.CreateTopic(topic, detail, false) })
	if err != nil && !errors.Is(err, sarama.ErrTopicAlreadyExists) {
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
	if err := callErr(ctx, s, "metadata", func() error { return c.client.RefreshMetadata(topic) }); err != nil {
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
// progress, the reassignments of its partitions. It fails only when ctx
// ends.
func (s *source) readTopic(ctx context.Context, partitions []int32) (topicState, error) {
	c, topic := s.c, s.cfg.Canary.Topic
	// The client asks the cluster for a partition whose leader or replicas
	// it does not know.
	read := func() ([]partitionState, error) {
		var out []partitionState
		for _, p := range partitions {
			// Replicas still lists them when some are offline.
			replicas, err := c.client.Replicas(topic, p)
			if err != nil && !errors.Is(err, sarama.ErrReplicaNotAvailable) {
				replicas = nil
			}
			out = append(out, partitionState{id: p, replicas: replicas, leader: leaderID(c.client, topic, p)})
		}
		return out, nil
	}
	st := topicState{live: brokerIDs(c.client)}
	var err error
	if st.partitions, err = call(ctx, s, "replicas", read, nil); err != nil {
		return st, fmt.Errorf("canary topic %s: %w", topic, err)
	}
	st.minISR = s.topicMinISR(ctx)
	st.adding, st.reassigning = s.reassignments(ctx, partitions)
	return st, nil
}

func (s *source) topicMinISR(ctx context.Context) int {
	if !s.minISRReadAt.IsZero() && time.Since(s.minISRReadAt) < topicConfigEvery {
		return s.minISR
	}
	c, resource := s.c, sarama.ConfigResource{Type: sarama.TopicResource, Name: s.cfg.Canary.Topic, ConfigNames: []string{minISRConfig}}
	entries, err := call(ctx, s, "describe config", func() ([]sarama.ConfigEntry, error) { return c.admin.DescribeConfig(resource) }, nil)
	if errors.Is(err, errAbandoned) {
		return s.minISR // read again next round
	}
	s.minISRReadAt = time.Now()
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
func (s *source) reassignments(ctx context.Context, partitions []int32) (map[int32][]int32, bool) {
	if !s.checkReassignments {
		return nil, false
	}
	c, topic := s.c, s.cfg.Canary.Topic
	status, err := call(ctx, s, "list reassignments", func() (map[string]map[int32]*sarama.PartitionReplicaReassignmentsStatus, error) {
		return c.admin.ListPartitionReassignments(topic, partitions)
	}, nil)
	if errors.Is(err, errAbandoned) {
		return nil, s.reassignStarted // asked again next round
	}
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
func (s *source) healTopic(ctx context.Context, st topicState) *TopicHealth {
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
	health.Healing, health.HealError = s.heal(ctx, st, planHealing(st, c.ReplicationFactor, c.MinInsyncReplicas))
	return health
}

// heal takes the plan's steps and says which and how they failed.
func (s *source) heal(ctx context.Context, st topicState, plan healPlan) (step, failure string) {
	c, topic := s.c, s.cfg.Canary.Topic
	var steps, failures []string
	do := func(name string, err error, done ...any) {
		steps = append(steps, name)
		if errors.Is(err, errAbandoned) {
			// Not the step's failure: the round ran out of time or stopped.
			failures = append(failures, name+": "+err.Error())
			return
		}
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
			err = callErr(ctx, s, "alter partition reassignments", func() error { return c.admin.AlterPartitionReassignments(topic, assignment) })
		}
		if err == nil {
			s.checkReassignments, s.reassignStarted = true, true
		} else if errors.Is(err, errAbandoned) {
			// It may have been sent: the next round asks before planning.
			s.checkReassignments = true
		}
		do("raise the replication factor", err, "replicas", fmt.Sprint(plan.reassign))
	default:
		if plan.minISR > 0 {
			value := strconv.Itoa(plan.minISR)
			err := callErr(ctx, s, "alter config", func() error {
				return c.admin.IncrementalAlterConfig(sarama.TopicResource, topic, map[string]sarama.IncrementalAlterConfigsEntry{
					minISRConfig: {Operation: sarama.IncrementalAlterConfigsOperationSet, Value: &value},
				}, false)
			})
			if err == nil {
				s.minISR, s.minISRReadAt = plan.minISR, time.Now()
			}
			do("raise "+minISRConfig, err, minISRConfig, plan.minISR)
		}
		if len(plan.add) > 0 {
			count := len(st.partitions) + len(plan.add)
			err := callErr(ctx, s, "create partitions", func() error {
				if err := c.admin.CreatePartitions(topic, int32(count), plan.add, false); err != nil {
					return err
				}
				_ = c.client.RefreshMetadata(topic)
				return nil
			})
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
func (s *source) respread(ctx context.Context, partitions []int32) {
	if time.Since(s.lastRespread) < respreadEvery {
		return
	}
	c, topic := s.c, s.cfg.Canary.Topic
	// The client asks the cluster for a partition it knows no leader of.
	move, err := call(ctx, s, "preferred leaders", func() ([]int32, error) {
		var move []int32
		for _, p := range partitions {
			replicas, err := c.client.Replicas(topic, p)
			if err != nil || len(replicas) == 0 {
				continue
			}
			isr, err := c.client.InSyncReplicas(topic, p)
			if err != nil || !slices.Contains(isr, replicas[0]) {
				continue
			}
			if leader, err := c.client.Leader(topic, p); err == nil && leader.ID() != replicas[0] {
				move = append(move, p)
			}
		}
		return move, nil
	}, nil)
	if err != nil || len(move) == 0 {
		return
	}
	s.lastRespread = time.Now()
	err = callErr(ctx, s, "elect leaders", func() error {
		_, err := c.admin.ElectLeaders(sarama.PreferredElection, map[string][]int32{topic: move})
		return err
	})
	if errors.Is(err, errAbandoned) {
		return
	}
	if err != nil {
		level.Warn(s.logger).Log("msg", "could not move canary leadership back to the preferred leaders", "topic", topic, "partitions", fmt.Sprint(move), "err", err)
		return
	}
	level.Info(s.logger).Log("msg", "moved canary leadership back to the preferred leaders", "topic", topic, "partitions", fmt.Sprint(move))
	_ = callErr(ctx, s, "metadata", func() error { return c.client.RefreshMetadata(topic) })
}

func ptr[T any](v T) *T { return &v }
