package redis

// Atomic slot migrations between two snapshots: the jobs that finished,
// counted once, and their events (see migrations.go).

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/failover-exporter/failover_exporter/collector/events"
)

// migrationSeen is what the exporter remembers of a job across refreshes.
type migrationSeen struct {
	outcome MigrationOutcome
	// seen is when a member last reported the job.
	seen time.Time
}

// migrationMemory is how long a job no member reports any more is
// remembered, so that a node that misses a refresh does not make it
// "start" again.
const migrationMemory = 10 * time.Minute

// carryMigrations counts the jobs that finished since prev (by name: the
// source and the target report the same job), adds their events and
// remembers every job for the next refresh. A job already finished when
// first seen counts only if it finished after prev was read: the servers'
// logs keep old jobs, which must not count again when the exporter starts
// or a node comes back. A job finishes once: the first finished outcome
// the exporter decides on is the one counted.
//
// The source decides a job's outcome whenever it reported the job, even
// while the target already says otherwise: on Valkey 9.1 a job the source
// cancels is "failed" (connection lost) on the target, and the target may
// be read a moment after the source within one refresh. Without the
// source's report the target's decides, except that a target's finished
// outcome waits one refresh when the source was read the refresh before
// and not this one (a missed read rather than a dead source): the job is
// taken as still running until then.
func carryMigrations(prev, next *Snapshot) {
	next.migrations = map[string]migrationSeen{}
	if prev != nil {
		next.MigrationsFinished = prev.MigrationsFinished
		for name, m := range prev.migrations {
			if next.ReadAt.Sub(m.seen) < migrationMemory {
				next.migrations[name] = m
			}
		}
	}
	jobs, names := decidingReports(next, nil)
	slices.SortFunc(names, func(a, b string) int { return jobs[a].Created.Compare(jobs[b].Created) })
	for _, name := range names {
		job := jobs[name]
		outcome := job.Outcome
		if outcome != MigrationRunning && job.Operation != MigrationExport && sourceMissedRead(prev, next, job.Source) {
			outcome = MigrationRunning
		}
		before, known := next.migrations[name]
		if known && before.outcome != MigrationRunning {
			// Finished already: counted once, whatever a node says now.
			next.migrations[name] = migrationSeen{outcome: before.outcome, seen: next.ReadAt}
			continue
		}
		next.migrations[name] = migrationSeen{outcome: outcome, seen: next.ReadAt}
		if prev == nil {
			continue
		}
		if known && before.outcome == outcome {
			continue
		}
		if !known && outcome != MigrationRunning && !finishedSince(job, prev.ReadAt) {
			continue
		}
		if outcome != MigrationRunning {
			next.MigrationsFinished[outcomeIndex(outcome)]++
		}
		if !known && outcome != MigrationRunning {
			// Began and ended between two refreshes: its start too.
			next.Events.Add(next.ReadAt, EventSlotMigrationStarted, migrationSubject(next, job), "", migrationText(job, next.ReadAt))
		}
		next.Events.Add(next.ReadAt, migrationEventKind(outcome), migrationSubject(next, job), string(before.outcome), migrationText(job, next.ReadAt))
	}
}

// decidingReports are the snapshot's jobs by name, each as the node that
// decides it reports it: the source (its EXPORT side) where it reported
// the job, else the target. names are in the order first seen. With keep,
// only the reports keep accepts count.
func decidingReports(s *Snapshot, keep func(*SlotMigration) bool) (jobs map[string]*SlotMigration, names []string) {
	jobs = map[string]*SlotMigration{}
	for i := range s.Nodes {
		nm := s.Nodes[i].Migrations
		if nm == nil {
			continue
		}
		for j := range nm.Jobs {
			job := &nm.Jobs[j]
			if keep != nil && !keep(job) {
				continue
			}
			have, ok := jobs[job.Name]
			if !ok {
				names = append(names, job.Name)
			}
			if !ok || have.Operation != MigrationExport && job.Operation == MigrationExport {
				jobs[job.Name] = job
			}
		}
	}
	return jobs, names
}

// sourceMissedRead reports whether the node id's jobs were read in prev
// and not in next.
func sourceMissedRead(prev, next *Snapshot, id string) bool {
	if prev == nil {
		return false
	}
	readIn := func(s *Snapshot) bool {
		for i := range s.Nodes {
			if s.Nodes[i].ID == id {
				return s.Nodes[i].Migrations != nil
			}
		}
		return false
	}
	return readIn(prev) && !readIn(next)
}

// finishedSince reports whether the job's last change is at or after t
// (the servers give seconds: t is rounded down to one).
func finishedSince(job *SlotMigration, t time.Time) bool {
	return !job.Updated.IsZero() && !job.Updated.Before(t.Truncate(time.Second))
}

func outcomeIndex(o MigrationOutcome) int {
	return slices.Index(migrationOutcomes, o)
}

func migrationEventKind(o MigrationOutcome) events.Kind {
	switch o {
	case MigrationSuccess:
		return EventSlotMigrationFinished
	case MigrationFailed:
		return EventSlotMigrationFailed
	case MigrationCancelled:
		return EventSlotMigrationCancelled
	default:
		return EventSlotMigrationStarted
	}
}

// migrationSubject is the job's source node.
func migrationSubject(s *Snapshot, job *SlotMigration) events.Subject {
	for i := range s.Nodes {
		if s.Nodes[i].ID == job.Source {
			return events.NodeSubject(job.Source, s.Nodes[i].Addr)
		}
	}
	return events.NodeSubject(job.Source, "")
}

// migrationText says what moves where, how it stands and, once finished,
// how long it took by the server's clock: "slots 0-3000 (3001) abc → def:
// success after 1s", with the server's message when there is one.
func migrationText(job *SlotMigration, now time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "slots %s (%d) %s → %s: %s", job.RangesText(), job.SlotCount(), shortNodeID(job.Source), shortNodeID(job.Target), job.State)
	if !job.Created.IsZero() {
		end := now
		if job.Outcome != MigrationRunning && !job.Updated.IsZero() {
			end = job.Updated
		}
		fmt.Fprintf(&b, " after %s", end.Sub(job.Created).Round(time.Second))
	}
	if job.Message != "" {
		fmt.Fprintf(&b, " (%s)", job.Message)
	}
	return b.String()
}

func shortNodeID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}
