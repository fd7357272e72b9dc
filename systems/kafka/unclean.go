package kafka

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// What an unclean election would lose: a partition whose leader is gone
// with every replica of its ISR and ELR has no clean leader; only
// `kafka-leader-election.sh --election-type unclean` (or
// unclean.leader.election.enable) brings it back, on a replica that was
// out of sync, and the records that replica lacks are gone. The catch-up
// read keeps, for every partition with a replica out of the ISR, the high
// watermark its leader last answered (ListOffsets for the latest offset,
// as a consumer asks), and carries it while the partition has no leader;
// once it has none, the live replicas out of its ISR and ELR are asked
// for their log end offsets (the debugging replica id, as the catch-up
// asks a follower). What each lacks of the last high watermark is at
// least what its election would lose: the writes acknowledged after the
// last read are not counted, nor those of a leader answered with
// acks=1 beyond its high watermark. An exporter that started after the
// leader was lost never read the high watermark, and says so.

// Watermark is a partition's high watermark as its leader last answered.
type Watermark struct {
	Offset int64
	ReadAt time.Time
}

// UncleanCandidate is one live replica of a partition without a clean
// leader: its log end offset, when it answered.
type UncleanCandidate struct {
	Broker int32
	LogEnd int64
	// Read is false when the replica did not answer (its log end is
	// unknown, and so what its election would lose).
	Read bool
}

// UncleanEstimate is, for one partition without a clean leader, what an
// unclean election of each live candidate would lose.
type UncleanEstimate struct {
	Key PartitionKey
	// Watermark is the last high watermark read from the partition's
	// leader; WatermarkKnown is false when the exporter never read one
	// (it started after the leader was lost).
	Watermark      Watermark
	WatermarkKnown bool
	Candidates     []UncleanCandidate
}

// Behind is what candidate c lacks of the last high watermark; false when
// either is unknown.
func (e UncleanEstimate) Behind(c UncleanCandidate) (int64, bool) {
	if !e.WatermarkKnown || !c.Read {
		return 0, false
	}
	return max(0, e.Watermark.Offset-c.LogEnd), true
}

// uncleanCandidates are the live replicas of p an unclean election could
// choose: p has no leader, and none of its live replicas is in its ISR or
// ELR (a live one there is a clean leader the controller elects).
func uncleanCandidates(p *Partition, live map[int32]string) []int32 {
	if !p.Offline() {
		return nil
	}
	var out []int32
	for _, id := range p.Replicas {
		if _, ok := live[id]; !ok {
			continue
		}
		if slices.Contains(p.ISR, id) || slices.Contains(p.ELR(), id) {
			return nil
		}
		out = append(out, id)
	}
	return out
}

// liveOf is the set of the snapshot's live brokers.
func (s *Snapshot) liveOf() map[int32]string {
	live := map[int32]string{}
	for i := range s.Brokers {
		if s.Brokers[i].Up {
			live[s.Brokers[i].ID] = ""
		}
	}
	return live
}

// UncleanEstimates lists the watched partitions without a clean leader
// that have a live replica, with what the last catch-up read knows of
// each candidate, sorted by partition.
func (s *Snapshot) UncleanEstimates() []UncleanEstimate {
	var out []UncleanEstimate
	live := s.liveOf()
	for ti := range s.Topics {
		t := &s.Topics[ti]
		for pi := range t.Partitions {
			p := &t.Partitions[pi]
			ids := uncleanCandidates(p, live)
			if len(ids) == 0 {
				continue
			}
			e := UncleanEstimate{Key: PartitionKey{Topic: t.Name, Partition: p.ID}}
			var read map[int32]int64
			if s.CatchUp != nil {
				e.Watermark, e.WatermarkKnown = s.CatchUp.Watermarks[e.Key]
				read = s.CatchUp.Candidates[e.Key]
			}
			for _, id := range ids {
				end, ok := read[id]
				e.Candidates = append(e.Candidates, UncleanCandidate{Broker: id, LogEnd: end, Read: ok})
			}
			out = append(out, e)
		}
	}
	return out
}

// maxUncleanListed bounds the partitions an answer or the status page
// names one by one.
const maxUncleanListed = 10

// Text says what electing each candidate would lose, for an answer or the
// status page: "t/0 has no clean leader: electing broker 3 would lose at
// least 500 records (the high watermark 1500, read 12s before now)".
func (e UncleanEstimate) Text(now time.Time) string {
	var parts []string
	for _, c := range e.Candidates {
		if n, ok := e.Behind(c); ok {
			parts = append(parts, fmt.Sprintf("electing broker %d would lose at least %d records", c.Broker, n))
		} else if !c.Read {
			parts = append(parts, fmt.Sprintf("broker %d did not say its log end", c.Broker))
		}
	}
	text := fmt.Sprintf("%s/%d has no clean leader", e.Key.Topic, e.Key.Partition)
	if !e.WatermarkKnown {
		return text + ": what an unclean election would lose is unknown (the exporter has not read its high watermark since it started)"
	}
	return text + ": " + strings.Join(parts, ", ") + fmt.Sprintf(" (its high watermark was %d when last read, %s ago; later writes are not counted)",
		e.Watermark.Offset, now.Sub(e.Watermark.ReadAt).Round(time.Second))
}

// UncleanNotes are the texts of the estimates, at most maxUncleanListed
// and a count of the others.
func (s *Snapshot) UncleanNotes(now time.Time) []string {
	estimates := s.UncleanEstimates()
	var notes []string
	for i, e := range estimates {
		if i == maxUncleanListed {
			notes = append(notes, fmt.Sprintf("and %d more partitions without a clean leader", len(estimates)-maxUncleanListed))
			break
		}
		notes = append(notes, e.Text(now))
	}
	return notes
}
