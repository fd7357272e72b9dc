package mirror

import "time"

// Lag is how far one partition's replication is behind, in records.
type Lag struct {
	// NotReplicated is the source records past the last replicated one
	// (the source high watermark minus ReplicatedEnd); Known is false when
	// there is no figure (see partitionLag).
	NotReplicated int64
	Known         bool
	// ReplicatedEnd is the source offset one past the newest record the
	// target has, as estimated from the latest offset sync.
	ReplicatedEnd int64
	// Synced is set when an offset sync was used; Upstream and Downstream
	// are its offsets.
	Synced               bool
	Upstream, Downstream int64
	// TargetBehindSync is set when the target's end is not past the
	// sync's downstream offset: the target lost records the sync says it
	// had (an unclean election, a recreated topic), or the sync is of an
	// older remote topic. The figure then counts those records as not
	// replicated.
	TargetBehindSync bool
}

// partitionLag estimates the records of one source partition the target
// lacks. sourceStart and sourceEnd are the source's log start offset and
// high watermark, targetEnd the remote partition's high watermark (0 when
// the remote topic is missing), sync the latest offset sync read for the
// partition (nil when none).
//
// MM2 writes a sync (upstream U, downstream D) for a record it replicated,
// and writes the next one only when the downstream offset has moved
// offset.lag.max (100) past it, when an upstream offset was skipped
// (compaction, transaction markers), when the target was truncated, or at
// its periodic offset commit. Between two syncs upstream and downstream
// offsets advance together, one for one, so the record at target offset
// targetEnd-1 came from source offset U + (targetEnd-1-D), and the target
// has everything before source offset U + targetEnd - D. docs/mirror.md
// says when that is exact and which way it errs.
func partitionLag(sourceStart, sourceEnd, targetEnd int64, sync *OffsetSync) Lag {
	var lag Lag
	switch {
	case sync != nil:
		lag.Synced, lag.Upstream, lag.Downstream = true, sync.Upstream, sync.Downstream
		lag.ReplicatedEnd = sync.Upstream + (targetEnd - sync.Downstream)
		lag.TargetBehindSync = targetEnd <= sync.Downstream
	case targetEnd == 0:
		// Nothing on the target: nothing of what the source keeps was
		// replicated.
		lag.ReplicatedEnd = sourceStart
	case sourceEnd == sourceStart:
		// Nothing on the source to lack.
		lag.ReplicatedEnd = sourceEnd
	default:
		// Records on both sides and no sync read: MM2 writes one for the
		// first record it replicates in each task's lifetime, so this is a
		// sync not read yet (the offset-syncs topic is being caught up on,
		// or lives elsewhere than configured).
		return lag
	}
	lag.Known = true
	// Records the source deleted cannot be lost with it; a target ahead of
	// the source (a source topic recreated) lacks nothing.
	end := min(max(lag.ReplicatedEnd, sourceStart), sourceEnd)
	lag.NotReplicated = sourceEnd - end
	return lag
}

// secondsBehind is the time between the newest source record and the
// newest replicated one: 0 when nothing is missing, else newestSource
// minus newestReplicated, both record timestamps, at least 0. known is
// false when a record was needed and not read.
func secondsBehind(notReplicated int64, newestSource, newestReplicated time.Time) (behind time.Duration, known bool) {
	if notReplicated == 0 {
		return 0, true
	}
	if newestSource.IsZero() || newestReplicated.IsZero() {
		return 0, false
	}
	return max(0, newestSource.Sub(newestReplicated)), true
}

// reread is how many records a group resuming from its checkpoint on the
// target reads again: those it committed on the source after the
// checkpoint was taken. committed is -1 when unknown.
func reread(committed, checkpointed int64) (int64, bool) {
	if committed < 0 {
		return 0, false
	}
	return max(0, committed-checkpointed), true
}
