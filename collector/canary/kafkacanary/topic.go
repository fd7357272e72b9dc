package kafkacanary

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
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
		replicas := make([]int32, rf)
		for j := range rf {
			replicas[j] = ids[(p+j)%len(ids)]
		}
		out = append(out, replicas)
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

// ensureTopic makes sure the canary topic exists with a partition per
// broker, creating it or adding partitions when allowed. It touches no
// other topic.
func (s *source) ensureTopic() error {
	topic := s.cfg.Canary.Topic
	err := s.client.RefreshMetadata(topic)
	if err != nil && !errors.Is(err, sarama.ErrUnknownTopicOrPartition) {
		return fmt.Errorf("metadata of %s: %w", topic, err)
	}
	brokers := brokerIDs(s.client)
	if len(brokers) == 0 {
		return errors.New("no broker known")
	}
	partitions, perr := s.client.Partitions(topic)
	if errors.Is(err, sarama.ErrUnknownTopicOrPartition) || errors.Is(perr, sarama.ErrUnknownTopicOrPartition) || (perr == nil && len(partitions) == 0) {
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
				"min.insync.replicas": ptr(strconv.Itoa(minISR)),
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
		level.Info(s.logger).Log("msg", "created the canary topic", "topic", topic, "partitions", len(brokers),
			"replication_factor", rf, "min_insync_replicas", minISR)
		if err := s.client.RefreshMetadata(topic); err != nil {
			return fmt.Errorf("metadata of the new canary topic %s: %w", topic, err)
		}
		return nil
	}
	if perr != nil {
		return fmt.Errorf("partitions of %s: %w", topic, perr)
	}
	if len(brokers) > len(partitions) && s.cfg.Canary.CreateTopicEnabled() {
		// A broker joined: give it a partition to lead.
		rf := min(s.cfg.Canary.ReplicationFactor, len(brokers))
		if err := s.admin.CreatePartitions(topic, int32(len(brokers)), assignment(brokers, len(partitions), len(brokers), rf), false); err != nil {
			level.Warn(s.logger).Log("msg", "could not add canary partitions for new brokers", "topic", topic, "err", err)
		} else {
			level.Info(s.logger).Log("msg", "added canary partitions for new brokers", "topic", topic, "partitions", len(brokers))
			_ = s.client.RefreshMetadata(topic)
		}
	}
	s.respread(partitions)
	return nil
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
