package mirror

// Judging what the source read: records not replicated (lag), seconds
// behind (RPO) and the stall verdict. Nothing here talks to a cluster.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// topicLags works out every replicated partition's records not
// replicated.
func (s *Source) topicLags(topics []string, starts, ends, targetEnds map[partitionKey]int64, targetUp bool) []Topic {
	out := make([]Topic, 0, len(topics))
	for _, name := range topics {
		t := Topic{Name: name, Remote: s.policy.remoteTopic(name), Partitions: len(s.src.topics[name].leaders), RPOKnown: true}
		remote, present := s.dst.topics[t.Remote]
		if targetUp {
			t.Missing = !present
			t.RemotePartitions = len(remote.leaders)
		}
		for _, p := range s.src.topics[name].partitions() {
			key := partitionKey{name, p}
			start, okStart := starts[key]
			end, okEnd := ends[key]
			if !okStart || !okEnd || !targetUp {
				t.Unknown++
				t.RPOKnown = false
				continue
			}
			// A partition the remote topic lacks (MM2 has not added it yet)
			// holds nothing: targetEnd 0. One it has whose offset was not
			// read is unknown.
			targetEnd, okTarget := targetEnds[partitionKey{t.Remote, p}]
			_, remoteHas := remote.leaders[p]
			if present && remoteHas && !okTarget {
				t.Unknown++
				t.RPOKnown = false
				continue
			}
			var sync *OffsetSync
			if got, ok := s.latestSync[key]; ok {
				sync = &got
			}
			part := Partition{ID: p, SourceStart: start, SourceEnd: end, TargetEnd: targetEnd, Lag: partitionLag(start, end, targetEnd, sync)}
			if !part.Known {
				t.Unknown++
				t.RPOKnown = false
			}
			t.NotReplicated += part.NotReplicated
			t.Parts = append(t.Parts, part)
		}
		out = append(out, t)
	}
	return out
}

func (s *Source) setTopicRPO(t *Topic, newest, firstMissing, ref map[partitionKey]*kgo.Record) {
	for i := range t.Parts {
		p := &t.Parts[i]
		if !p.Known {
			continue
		}
		var newestTS, refTS time.Time
		if r := newest[partitionKey{t.Name, p.ID}]; r != nil {
			newestTS = r.Timestamp
		}
		if r := ref[partitionKey{t.Remote, p.ID}]; r != nil {
			refTS = r.Timestamp
		} else if r := firstMissing[partitionKey{t.Name, p.ID}]; r != nil {
			refTS = r.Timestamp
		}
		p.RPO, p.RPOKnown = secondsBehind(p.NotReplicated, newestTS, refTS)
		if !p.RPOKnown {
			t.RPOKnown = false
		}
		t.RPO = max(t.RPO, p.RPO)
	}
}

// judgeStall sets Stalled from the heartbeat's age; while the target is
// unreachable the previous verdict stands.
func (s *Source) judgeStall(snap, prev *Snapshot) {
	switch {
	case snap.Heartbeat.Known:
		snap.Stalled = snap.Heartbeat.Age > s.cfg.StallAfter
	case snap.TargetUp:
		// No heartbeat on a target that answered: MM2 never replicated
		// one, or the topic is gone.
		snap.Stalled = true
	case prev != nil:
		snap.Stalled = prev.Stalled
	}
}
