package redis

// The atomic slot migration jobs as the snapshot holds them, and the
// snapshot's questions about them (see migrations.go).

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/failover-exporter/failover_exporter/systems/redis/proto"
)

// Migration operations, as Valkey names them. Redis's "migrate" is an
// export, "import" an import.
const (
	MigrationExport = "EXPORT"
	MigrationImport = "IMPORT"
)

// MigrationOutcome is how a finished job ended; empty while it runs.
type MigrationOutcome string

// Outcomes, in Valkey's words (Redis's completed is success, its canceled
// cancelled).
const (
	MigrationRunning   MigrationOutcome = ""
	MigrationSuccess   MigrationOutcome = "success"
	MigrationFailed    MigrationOutcome = "failed"
	MigrationCancelled MigrationOutcome = "cancelled"
)

// migrationOutcomes are the finished outcomes, in series order.
var migrationOutcomes = []MigrationOutcome{MigrationSuccess, MigrationFailed, MigrationCancelled}

// SlotSpan is slots First to Last, inclusive.
type SlotSpan struct{ First, Last int }

// SlotMigration is one atomic slot migration job as one node reports it.
// The source (EXPORT) and the target (IMPORT) each report the job under
// the same Name.
type SlotMigration struct {
	Name      string
	Operation string // MigrationExport or MigrationImport
	Slots     []SlotSpan
	// Source and Target are node ids.
	Source, Target string
	// State is the server's own word for where the job is
	// ("snapshotting", "wait-stream-eof", "success", ...); Outcome says
	// whether it has finished, and how.
	State   string
	Outcome MigrationOutcome
	// Message is the server's message, the error of a failed job.
	Message string
	// Created and Updated are the job's creation and last state change.
	Created, Updated time.Time
	// RemainingReplBytes is the replication stream the source still has
	// to send (Valkey's remaining_repl_size); HasRemaining is false where
	// the server does not say (Redis).
	RemainingReplBytes int64
	HasRemaining       bool
}

// SlotCount is how many slots the job moves.
func (m *SlotMigration) SlotCount() int {
	n := 0
	for _, s := range m.Slots {
		n += s.Last - s.First + 1
	}
	return n
}

// RangesText is the job's slot ranges as the servers write them.
func (m *SlotMigration) RangesText() string {
	parts := make([]string, len(m.Slots))
	for i, s := range m.Slots {
		parts[i] = strconv.Itoa(s.First)
		if s.Last != s.First {
			parts[i] += "-" + strconv.Itoa(s.Last)
		}
	}
	return strings.Join(parts, " ")
}

// NodeMigrations is what one node reports of atomic slot migrations.
type NodeMigrations struct {
	Jobs []SlotMigration
}

// InFlightSlots counts the slots of the node's running jobs of the given
// operation.
func (nm *NodeMigrations) InFlightSlots(operation string) int {
	n := 0
	for i := range nm.Jobs {
		if j := &nm.Jobs[i]; j.Outcome == MigrationRunning && j.Operation == operation {
			n += j.SlotCount()
		}
	}
	return n
}

// LastFinished is the node's most recently finished job, nil for none.
func (nm *NodeMigrations) LastFinished() *SlotMigration {
	var last *SlotMigration
	for i := range nm.Jobs {
		j := &nm.Jobs[i]
		if j.Outcome != MigrationRunning && (last == nil || j.Updated.After(last.Updated)) {
			last = j
		}
	}
	return last
}

// markMigrationSlots marks in inFlight the slots of the view's running jobs
// and in explained those too and the slots of jobs that succeeded within
// disputeSettleTime of the view: the views may disagree on their owner for
// that long while gossip spreads the move, which is a move, not a
// conflict.
func markMigrationSlots(v *nodeView, inFlight, explained *[redisproto.SlotCount]bool) {
	for i := range v.Migrations {
		j := &v.Migrations[i]
		running := j.Outcome == MigrationRunning
		recent := j.Outcome == MigrationSuccess && !j.Updated.IsZero() && v.AnsweredAt.Sub(j.Updated) < disputeSettleTime
		if !running && !recent {
			continue
		}
		for _, s := range j.Slots {
			for slot := s.First; slot <= s.Last; slot++ {
				explained[slot] = true
				if running {
					inFlight[slot] = true
				}
			}
		}
	}
}

// RunningMigrations are the jobs some member reports running, one per job
// (the source and the target report it under the same name): the source's
// report where it says the job runs, else the target's; oldest first. A
// job the source says has finished while the target still imports runs
// until the target says so too, as redis_cluster_slots_in_migration counts
// it.
func (s *Snapshot) RunningMigrations() []*SlotMigration {
	jobs, names := decidingReports(s, func(job *SlotMigration) bool { return job.Outcome == MigrationRunning })
	running := make([]*SlotMigration, 0, len(names))
	for _, name := range names {
		running = append(running, jobs[name])
	}
	slices.SortStableFunc(running, func(a, b *SlotMigration) int { return a.Created.Compare(b.Created) })
	return running
}

// InFlightSpans are the slots of every running job some member reports,
// merged into sorted spans.
func (s *Snapshot) InFlightSpans() []SlotSpan {
	var marked [redisproto.SlotCount]bool
	any := false
	for _, job := range s.RunningMigrations() {
		for _, sp := range job.Slots {
			for slot := sp.First; slot <= sp.Last; slot++ {
				marked[slot], any = true, true
			}
		}
	}
	if !any {
		return nil
	}
	var spans []SlotSpan
	for slot, m := range marked {
		if !m {
			continue
		}
		if n := len(spans); n > 0 && spans[n-1].Last == slot-1 {
			spans[n-1].Last = slot
			continue
		}
		spans = append(spans, SlotSpan{slot, slot})
	}
	return spans
}
