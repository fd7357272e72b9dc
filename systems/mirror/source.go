package mirror

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/failover-exporter/failover_exporter/systems/kafka/client"
	kafkasettings "github.com/failover-exporter/failover_exporter/systems/kafka/settings"
	mirrorsettings "github.com/failover-exporter/failover_exporter/systems/mirror/settings"
)

// What a read was of, in Snapshot.Errors and the
// kafka_mirror_read_errors_total series.
const (
	readSource       = "source"
	readTarget       = "target"
	readOffsetSyncs  = "offset_syncs"
	readCheckpoints  = "checkpoints"
	readHeartbeats   = "heartbeats"
	readTimestamps   = "timestamps"
	readGroupOffsets = "group_offsets"
	readDecode       = "decode"
	// readConnect is the Kafka Connect REST API, for flows that name one.
	readConnect = "connect"
)

// readKinds lists them, so that every series starts at 0.
var readKinds = []string{readSource, readTarget, readOffsetSyncs, readCheckpoints, readHeartbeats, readTimestamps, readGroupOffsets, readDecode}

// checkpointKey is what the checkpoints topic is compacted by.
type checkpointKey struct {
	group, topic string // topic: the remote (target) topic's name
	partition    int32
}

type storedCheckpoint struct {
	Checkpoint
	at time.Time
}

// Source reads one mirror flow: a client per cluster, and the internal
// topics followed from one refresh to the next. Its fields belong to the
// watcher's goroutine.
type Source struct {
	cfg    mirrorsettings.Flow
	policy policy
	logger log.Logger
	now    func() time.Time

	src, dst *cluster
	// connect reads the flow's connector states; nil without a REST API.
	connect *connectReader
	// syncsOn is the cluster the offset-syncs topic is on.
	syncsOn     *cluster
	syncs       *follower
	latestSync  map[partitionKey]OffsetSync
	newestSync  time.Time
	checkpoints *follower
	latestCheck map[checkpointKey]storedCheckpoint
	errors      map[string]uint64
	// groupsLeftOut is the last refresh's, to log only its changes.
	groupsLeftOut int
	// logged is the last error logged per read, so that a lasting one is
	// a warning once.
	logged map[string]string
}

// NewSource builds the reader of the flow m (defaults applied, clusters
// resolved by config.Config.Complete). It connects to nothing; Refresh
// does, and Close releases the clients.
func NewSource(m mirrorsettings.Flow, logger log.Logger) (*Source, error) {
	s := &Source{
		cfg: m, policy: newPolicy(m), logger: logger, now: time.Now,
		syncs: newFollower(m.OffsetSyncsTopic), latestSync: map[partitionKey]OffsetSync{},
		checkpoints: newFollower(m.CheckpointsTopic), latestCheck: map[checkpointKey]storedCheckpoint{},
		errors: map[string]uint64{}, logged: map[string]string{},
	}
	var err error
	if s.src, err = newCluster(m.SourceCluster); err != nil {
		return nil, fmt.Errorf("source %q: %w", m.Source, err)
	}
	if s.dst, err = newCluster(m.TargetCluster); err != nil {
		s.src.client.Close()
		return nil, fmt.Errorf("target %q: %w", m.Target, err)
	}
	if s.connect, err = newConnectReader(m); err != nil {
		s.src.client.Close()
		s.dst.client.Close()
		return nil, err
	}
	s.syncsOn = s.src
	if m.OffsetSyncsTopicLocation == mirrorsettings.OffsetSyncsOnTarget {
		s.syncsOn = s.dst
	}
	return s, nil
}

func newCluster(k kafkasettings.Cluster) (*cluster, error) {
	opts, err := kafkaclient.FranzOptions(k)
	if err != nil {
		return nil, err
	}
	client, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("kafka client config: %w", err)
	}
	return &cluster{name: k.Name, client: client}, nil
}

// Close releases the clients.
func (s *Source) Close() {
	s.src.client.Close()
	s.dst.client.Close()
	s.connect.close()
}

// failed counts and logs a failed read: a warning the first time it fails
// with this message, debug while it goes on.
func (s *Source) failed(what string, err error) {
	s.errors[what]++
	msg := err.Error()
	if s.logged[what] == msg {
		level.Debug(s.logger).Log("msg", "mirror read still failing", "read", what, "err", err)
		return
	}
	s.logged[what] = msg
	level.Warn(s.logger).Log("msg", "mirror read failed", "read", what, "err", err)
}

// succeeded forgets a read's last failure.
func (s *Source) succeeded(what string) { delete(s.logged, what) }

// both runs a and b at once and waits for them.
func both(a, b func()) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); a() }()
	b()
	wg.Wait()
}

// Refresh reads the flow once: both clusters' metadata and offsets, what
// was appended to the offset-syncs and checkpoints topics, the newest
// replicated heartbeat, the timestamps of the newest source and
// replicated records of partitions that are behind, and the committed
// offsets of the checkpointed groups. It fails only when neither cluster
// answered.
func (s *Source) Refresh(ctx context.Context, prev *Snapshot) (*Snapshot, error) {
	snap := &Snapshot{SourceCluster: s.cfg.Source, TargetCluster: s.cfg.Target, ReadAt: s.now()}
	// The connector states, meanwhile: the REST API is another server.
	connectRead := s.readConnect(ctx)
	var srcErr, dstErr error
	both(func() { srcErr = s.src.readMetadata(ctx) }, func() { dstErr = s.dst.readMetadata(ctx) })
	if srcErr != nil && dstErr != nil {
		s.errors[readSource]++
		s.errors[readTarget]++
		connectRead()
		return nil, fmt.Errorf("source %q: %w; target %q: %w", s.cfg.Source, srcErr, s.cfg.Target, dstErr)
	}

	topics, parts := s.replicatedTopics(srcErr == nil)
	remoteParts := s.remotePartitions(topics)
	var starts, ends, targetEnds map[partitionKey]int64
	both(func() {
		if srcErr != nil {
			return
		}
		if starts, srcErr = s.src.listOffsets(ctx, parts, -2); srcErr == nil {
			ends, srcErr = s.src.listOffsets(ctx, parts, -1)
		}
	}, func() {
		if dstErr != nil {
			return
		}
		targetEnds, dstErr = s.dst.listOffsets(ctx, remoteParts, -1)
	})
	snap.SourceUp, snap.TargetUp = srcErr == nil, dstErr == nil
	for what, err := range map[string]error{readSource: srcErr, readTarget: dstErr} {
		if err != nil {
			s.failed(what, err)
		} else {
			s.succeeded(what)
		}
	}

	// The internal topics, each on its own cluster, at once.
	both(func() { s.followSyncs(ctx, snap, prev) }, func() {
		if snap.TargetUp {
			s.followCheckpoints(ctx)
			snap.Heartbeat = s.readHeartbeat(ctx, snap.ReadAt)
		}
	})

	if snap.SourceUp {
		snap.Topics = s.topicLags(topics, starts, ends, targetEnds, snap.TargetUp)
		s.readTimestamps(ctx, snap)
	}
	s.readGroups(ctx, snap, topics)
	snap.Connect = connectRead()
	s.judgeStall(snap, prev)
	snap.Errors = maps.Clone(s.errors)
	findTransitions(prev, snap)
	return snap, nil
}

// readConnect starts reading the connector states and returns what waits
// for the answer and accounts for it, on the refresh's goroutine (the
// zero state when the flow names no REST API).
func (s *Source) readConnect(ctx context.Context) func() ConnectState {
	if s.connect == nil {
		return func() ConnectState { return ConnectState{} }
	}
	type answer struct {
		state ConnectState
		err   error
	}
	done := make(chan answer, 1)
	go func() {
		state, err := s.connect.read(ctx)
		done <- answer{state, err}
	}()
	return func() ConnectState {
		a := <-done
		switch {
		case a.err != nil:
			s.failed(readConnect, a.err)
		case len(a.state.Missing) > 0 && len(s.cfg.Connect.Connectors) > 0:
			s.failed(readConnect, fmt.Errorf("connect: the REST API knows no connector %s (the flow's connect.connectors)", strings.Join(a.state.Missing, ", ")))
		case len(a.state.Missing) > 0:
			s.failed(readConnect, fmt.Errorf("connect: the REST API runs no MirrorSourceConnector with source.cluster.alias %q and target.cluster.alias %q (name the flow's connectors in connect.connectors if their aliases differ)",
				s.cfg.SourceAlias, s.cfg.TargetAlias))
		default:
			s.succeeded(readConnect)
		}
		return a.state
	}
}

// replicatedTopics are the source topics the flow replicates, by name,
// and their partitions.
func (s *Source) replicatedTopics(sourceRead bool) ([]string, []partitionKey) {
	if !sourceRead {
		return nil, nil
	}
	var topics []string
	for name := range s.src.topics {
		if s.policy.replicates(name) {
			topics = append(topics, name)
		}
	}
	sort.Strings(topics)
	var parts []partitionKey
	for _, name := range topics {
		for _, p := range s.src.topics[name].partitions() {
			parts = append(parts, partitionKey{name, p})
		}
	}
	return topics, parts
}

// remotePartitions are the partitions of the remote topics the target
// has.
func (s *Source) remotePartitions(topics []string) []partitionKey {
	var parts []partitionKey
	for _, name := range topics {
		remote := s.policy.remoteTopic(name)
		if meta, ok := s.dst.topics[remote]; ok {
			for _, p := range meta.partitions() {
				parts = append(parts, partitionKey{remote, p})
			}
		}
	}
	return parts
}

// followSyncs reads what was appended to the offset-syncs topic.
func (s *Source) followSyncs(ctx context.Context, snap, prev *Snapshot) {
	if (s.syncsOn == s.src && snap.SourceUp) || (s.syncsOn == s.dst && snap.TargetUp) {
		var decodeErr error
		caughtUp, err := s.syncs.poll(ctx, s.syncsOn, func(r *kgo.Record) {
			sync, err := DecodeOffsetSync(r.Key, r.Value)
			if err != nil {
				decodeErr = fmt.Errorf("%s/%d at %d: %w", r.Topic, r.Partition, r.Offset, err)
				s.errors[readDecode]++
				return
			}
			s.latestSync[partitionKey{sync.Topic, sync.Partition}] = sync
			if r.Timestamp.After(s.newestSync) {
				s.newestSync = r.Timestamp
			}
		})
		if decodeErr != nil {
			level.Debug(s.logger).Log("msg", "skipped offset syncs that did not decode", "last_err", decodeErr)
		}
		if err != nil {
			s.failed(readOffsetSyncs, err)
		} else {
			s.succeeded(readOffsetSyncs)
		}
		snap.Syncs.CaughtUp = err == nil && caughtUp
	} else if prev != nil {
		snap.Syncs.CaughtUp = prev.Syncs.CaughtUp
	}
	snap.Syncs.Partitions = len(s.latestSync)
	snap.Syncs.Newest = s.newestSync
}

// followCheckpoints reads what was appended to the checkpoints topic,
// keeping the latest checkpoint per group and partition as compaction
// does; a tombstone removes one.
func (s *Source) followCheckpoints(ctx context.Context) {
	_, err := s.checkpoints.poll(ctx, s.dst, func(r *kgo.Record) {
		if r.Value == nil {
			if c, err := DecodeCheckpointKey(r.Key); err == nil {
				delete(s.latestCheck, checkpointKey{c.Group, c.Topic, c.Partition})
			}
			return
		}
		c, err := DecodeCheckpoint(r.Key, r.Value)
		if err != nil {
			s.errors[readDecode]++
			return
		}
		s.latestCheck[checkpointKey{c.Group, c.Topic, c.Partition}] = storedCheckpoint{c, r.Timestamp}
	})
	switch {
	case errors.Is(err, errTopicAbsent):
		// No group has a checkpoint yet, or checkpoints are off
		// (emit.checkpoints.enabled=false): nothing to report.
		s.succeeded(readCheckpoints)
	case err != nil:
		s.failed(readCheckpoints, err)
	default:
		s.succeeded(readCheckpoints)
	}
}

// readHeartbeat reads the newest heartbeat of each partition of the
// remote heartbeats topic and keeps the newest of them.
func (s *Source) readHeartbeat(ctx context.Context, now time.Time) HeartbeatState {
	topic := s.policy.remoteHeartbeats()
	meta, ok := s.dst.topics[topic]
	if !ok {
		s.failed(readHeartbeats, s.dst.absent(ctx, topic))
		return HeartbeatState{}
	}
	var parts []partitionKey
	for _, p := range meta.partitions() {
		parts = append(parts, partitionKey{topic, p})
	}
	ends, err := s.dst.listOffsets(ctx, parts, -1)
	if err != nil {
		s.failed(readHeartbeats, err)
		return HeartbeatState{}
	}
	at := map[partitionKey]int64{}
	for k, end := range ends {
		if end > 0 {
			at[k] = end - 1
		}
	}
	records, err := s.dst.recordsAt(ctx, at)
	if err != nil {
		s.failed(readHeartbeats, err)
	} else {
		s.succeeded(readHeartbeats)
	}
	var newest HeartbeatState
	for _, r := range records {
		h, err := DecodeHeartbeat(r.Key, r.Value)
		if err != nil {
			s.errors[readDecode]++
			continue
		}
		ts := time.UnixMilli(h.Timestamp)
		if !newest.Known || ts.After(newest.Timestamp) {
			newest = HeartbeatState{Known: true, Timestamp: ts, Age: max(0, now.Sub(ts))}
		}
	}
	return newest
}

// readTimestamps reads, for every partition that is behind, the newest
// source record and the newest replicated one (on the target; on the
// source, the first record not replicated, when the target has none), and
// sets the partitions' and topics' seconds behind.
func (s *Source) readTimestamps(ctx context.Context, snap *Snapshot) {
	newestAt, refAt := map[partitionKey]int64{}, map[partitionKey]int64{}
	firstMissingAt := map[partitionKey]int64{}
	for _, t := range snap.Topics {
		for _, p := range t.Parts {
			if !p.Known || p.NotReplicated == 0 {
				continue
			}
			newestAt[partitionKey{t.Name, p.ID}] = p.SourceEnd - 1
			if p.TargetEnd > 0 && snap.TargetUp {
				refAt[partitionKey{t.Remote, p.ID}] = p.TargetEnd - 1
			} else {
				firstMissingAt[partitionKey{t.Name, p.ID}] = max(p.SourceStart, p.ReplicatedEnd)
			}
		}
	}
	if len(newestAt) == 0 {
		for i := range snap.Topics {
			s.setTopicRPO(&snap.Topics[i], nil, nil, nil)
		}
		return
	}
	var newest, firstMissing, ref map[partitionKey]*kgo.Record
	var srcErr, dstErr error
	both(func() {
		newest, srcErr = s.src.recordsAt(ctx, newestAt)
		var err error
		if len(firstMissingAt) > 0 {
			firstMissing, err = s.src.recordsAt(ctx, firstMissingAt)
		}
		srcErr = errors.Join(srcErr, err)
	}, func() {
		if len(refAt) > 0 {
			ref, dstErr = s.dst.recordsAt(ctx, refAt)
		}
	})
	if err := errors.Join(srcErr, dstErr); err != nil {
		s.failed(readTimestamps, err)
	} else {
		s.succeeded(readTimestamps)
	}
	for i := range snap.Topics {
		s.setTopicRPO(&snap.Topics[i], newest, firstMissing, ref)
	}
}

// readGroups builds the groups' checkpoints for replicated topics and
// reads the groups' committed offsets on the source.
func (s *Source) readGroups(ctx context.Context, snap *Snapshot, topics []string) {
	// The checkpoints name the remote topic; map it back.
	sourceOf := map[string]string{}
	for _, name := range topics {
		sourceOf[s.policy.remoteTopic(name)] = name
	}
	if !snap.SourceUp {
		// Without the source's topic list, trust the policy's naming.
		for k := range s.latestCheck {
			if name, ok := s.policy.sourceTopic(k.topic); ok {
				sourceOf[k.topic] = name
			}
		}
	}
	byGroupTopic := map[[2]string][]storedCheckpoint{}
	for k, c := range s.latestCheck {
		if name, ok := sourceOf[k.topic]; ok {
			byGroupTopic[[2]string{k.group, name}] = append(byGroupTopic[[2]string{k.group, name}], c)
		}
	}
	groups := reportedGroups(byGroupTopic, s.cfg.MaxGroups, snap)
	s.logGroupsLeftOut(snap)
	if len(byGroupTopic) == 0 {
		return
	}
	committed := map[checkpointKey]int64{} // topic: the source topic
	if snap.SourceUp {
		var err error
		committed, err = s.committedOffsets(ctx, groups)
		if err != nil {
			s.failed(readGroupOffsets, err)
		} else {
			s.succeeded(readGroupOffsets)
		}
	}
	for key, checkpoints := range byGroupTopic {
		gt := GroupTopic{Group: key[0], Topic: key[1], RereadKnown: true}
		sort.Slice(checkpoints, func(i, j int) bool { return checkpoints[i].Partition < checkpoints[j].Partition })
		for _, c := range checkpoints {
			gp := GroupPartition{ID: c.Partition, Resume: c.Downstream, Checkpointed: c.Upstream, Committed: -1, At: c.at}
			if off, ok := committed[checkpointKey{gt.Group, gt.Topic, c.Partition}]; ok {
				gp.Committed = off
			}
			var known bool
			gp.Reread, known = reread(gp.Committed, gp.Checkpointed)
			if !known {
				gt.RereadKnown = false
			}
			gt.Reread += gp.Reread
			if gt.OldestCheckpoint.IsZero() || c.at.Before(gt.OldestCheckpoint) {
				gt.OldestCheckpoint = c.at
			}
			gt.Partitions = append(gt.Partitions, gp)
		}
		snap.Groups = append(snap.Groups, gt)
	}
	sort.Slice(snap.Groups, func(i, j int) bool {
		if snap.Groups[i].Group != snap.Groups[j].Group {
			return snap.Groups[i].Group < snap.Groups[j].Group
		}
		return snap.Groups[i].Topic < snap.Groups[j].Topic
	})
}

// reportedGroups keeps in byGroupTopic the first limit groups by name,
// the same ones every refresh, and returns them sorted. Their series are
// per group and topic; the snapshot counts the groups with checkpoints and
// those left out.
func reportedGroups(byGroupTopic map[[2]string][]storedCheckpoint, limit int, snap *Snapshot) []string {
	seen := map[string]bool{}
	for key := range byGroupTopic {
		seen[key[0]] = true
	}
	groups := make([]string, 0, len(seen))
	for g := range seen {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	snap.GroupsCheckpointed = len(groups)
	if limit > 0 && len(groups) > limit {
		snap.GroupsLeftOut = len(groups) - limit
		groups = groups[:limit]
		for key := range byGroupTopic {
			if key[0] > groups[limit-1] {
				delete(byGroupTopic, key)
			}
		}
	}
	return groups
}

// logGroupsLeftOut warns when the flow starts leaving groups out, and
// says so again when their number changes or none is left out any more.
func (s *Source) logGroupsLeftOut(snap *Snapshot) {
	if snap.GroupsLeftOut == s.groupsLeftOut {
		return
	}
	if snap.GroupsLeftOut == 0 {
		level.Info(s.logger).Log("msg", "every consumer group with checkpoints is reported again", "groups", snap.GroupsCheckpointed, "max_groups", s.cfg.MaxGroups)
	} else {
		level.Warn(s.logger).Log("msg", "consumer groups with checkpoints left out: more than max_groups, the first by name are reported",
			"groups", snap.GroupsCheckpointed, "left_out", snap.GroupsLeftOut, "max_groups", s.cfg.MaxGroups)
	}
	s.groupsLeftOut = snap.GroupsLeftOut
}

// committedOffsets asks the source for the groups' committed offsets, in
// one batched OffsetFetch (franz-go sends it to each group's coordinator).
func (s *Source) committedOffsets(ctx context.Context, groups []string) (map[checkpointKey]int64, error) {
	req := kmsg.NewPtrOffsetFetchRequest()
	for _, g := range groups {
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = g
		req.Groups = append(req.Groups, rg)
	}
	// A group whose coordinator could not be found (FindCoordinator
	// refused without Describe on the group) fails its own shard: the
	// others' answers still count, and the error names the groups left out.
	kresp, err := s.src.client.Request(ctx, req)
	resp, _ := kresp.(*kmsg.OffsetFetchResponse)
	if resp == nil {
		return nil, fmt.Errorf("offset fetch for %d groups: %w", len(groups), err)
	}
	out := map[checkpointKey]int64{}
	var failed error
	if err != nil {
		answered := map[string]bool{}
		for _, g := range resp.Groups {
			answered[g.Group] = true
		}
		var missing []string
		for _, g := range groups {
			if !answered[g] {
				missing = append(missing, g)
			}
		}
		if len(missing) == 0 {
			failed = fmt.Errorf("offset fetch for %d groups: %w", len(groups), err)
		} else {
			failed = needsGrant(fmt.Errorf("offset fetch for %s: %w", groupList(missing), err), "Describe", groupList(missing), s.src.name)
		}
	}
	for _, g := range resp.Groups {
		if err := kerr.ErrorForCode(g.ErrorCode); err != nil {
			failed = needsGrant(fmt.Errorf("offset fetch for group %s: %w", g.Group, err), "Describe", "group "+g.Group, s.src.name)
			continue
		}
		for _, t := range g.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode == 0 && p.Offset >= 0 {
					out[checkpointKey{g.Group, t.Topic, p.Partition}] = p.Offset
				}
			}
		}
	}
	return out, failed
}
