package redis

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/failover-exporter/failover_exporter/collector/watch/watchtest"
	"github.com/failover-exporter/failover_exporter/systems/redis/proto"
)

func TestMigrationAPIOf(t *testing.T) {
	for _, tc := range []struct {
		info string
		want migrationAPI
	}{
		{"# Server\r\nredis_version:7.0.15\r\nredis_mode:cluster\r\n", migrationAPINone},
		{"# Server\r\nredis_version:8.2.1\r\n", migrationAPINone},
		{"# Server\r\nredis_version:8.4.0\r\n", migrationAPIRedis},
		{"# Server\r\nredis_version:9.0.0\r\n", migrationAPIRedis},
		// Valkey says redis_version 7.2.4 for clients that check it.
		{"# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:8.1.8\r\n", migrationAPINone},
		{"# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:9.1.2\r\n", migrationAPIValkey},
		{"", migrationAPINone},
	} {
		if got := migrationAPIOf(tc.info); got != tc.want {
			t.Errorf("%q: %v, want %v", tc.info, got, tc.want)
		}
	}
}

// A job of CLUSTER GETSLOTMIGRATIONS as Valkey 9.1.2 answered it in the
// lab, from the source.
var valkeyExport = map[string]string{
	"name": "2dd88442553e8871b253f61df56f62e8bd9e071f", "operation": "EXPORT", "slot_ranges": "0-3000",
	"target_node": "7d123b51956a6a68877588dacdadbc1c51cc1ad2", "source_node": "95f335bae4b66f5def3710d041d9f81a8afac9ef",
	"create_time": "1796124622", "last_update_time": "1796124623", "last_ack_time": "1796124622",
	"state": "success", "message": "", "cow_size": "2330624", "remaining_repl_size": "0",
}

func TestParseValkeyMigration(t *testing.T) {
	m, err := parseValkeyMigration(valkeyExport)
	if err != nil {
		t.Fatal(err)
	}
	if m.Operation != MigrationExport || m.Outcome != MigrationSuccess || m.SlotCount() != 3001 || m.RangesText() != "0-3000" ||
		m.Source != valkeyExport["source_node"] || m.Target != valkeyExport["target_node"] ||
		m.Updated.Sub(m.Created) != time.Second || !m.HasRemaining {
		t.Errorf("parsed %+v", m)
	}
	running := clone(valkeyExport, "state", "snapshotting", "slot_ranges", "0-10 20 30-31", "remaining_repl_size", "4096")
	if m, err = parseValkeyMigration(running); err != nil {
		t.Fatal(err)
	}
	if m.Outcome != MigrationRunning || m.SlotCount() != 14 || m.RemainingReplBytes != 4096 || m.RangesText() != "0-10 20 30-31" {
		t.Errorf("running: %+v", m)
	}
	for _, state := range []string{"failed", "cancelled"} {
		if m, _ := parseValkeyMigration(clone(valkeyExport, "state", state)); string(m.Outcome) != state {
			t.Errorf("state %s: outcome %q", state, m.Outcome)
		}
	}
	for _, bad := range []map[string]string{
		clone(valkeyExport, "name", ""),
		clone(valkeyExport, "slot_ranges", "0-16384"),
		clone(valkeyExport, "slot_ranges", "10-5"),
		clone(valkeyExport, "slot_ranges", "x"),
	} {
		if _, err := parseValkeyMigration(bad); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}

// TestParseRedisMigration reads CLUSTER MIGRATION STATUS ALL of Redis 8.4
// as its documentation gives the fields (id, slots, source, dest,
// operation import/migrate, state, last_error, retries, create_time,
// start_time, end_time, write_pause_ms; times in milliseconds), and as the
// 8.4 source writes them (slots_range, importing/migrating, done_time).
// No Redis 8.4 server can be had here.
func TestParseRedisMigration(t *testing.T) {
	documented := map[string]string{
		"id": "24cf41718b20f7f05901743dffc40bc9b15db339", "slots": "0-1000 2000-3000",
		"source": "a6f810b8a6f810b8a6f810b8a6f810b8a6f810b8", "dest": "7c5ab2607c5ab2607c5ab2607c5ab2607c5ab260",
		"operation": "migrate", "state": "completed", "last_error": "", "retries": "0",
		"create_time": "1790405105443", "start_time": "1790405105443", "end_time": "1790405107445", "write_pause_ms": "2",
	}
	m, err := parseRedisMigration(documented)
	if err != nil {
		t.Fatal(err)
	}
	if m.Name != documented["id"] || m.Operation != MigrationExport || m.Outcome != MigrationSuccess || m.SlotCount() != 2002 ||
		m.Source != documented["source"] || m.Target != documented["dest"] || m.Updated.Sub(m.Created) != 2002*time.Millisecond || m.HasRemaining {
		t.Errorf("documented reply: %+v", m)
	}
	source := map[string]string{
		"id": "24cf41718b20f7f05901743dffc40bc9b15db339", "slots_range": "5-9", "source": "a", "dest": "b",
		"operation": "importing", "state": "wait-stream-eof", "last_error": "", "retries": "1",
		"create_time": "1790405105443", "start_time": "0", "done_time": "0", "write_pause_ms": "0",
	}
	if m, err = parseRedisMigration(source); err != nil {
		t.Fatal(err)
	}
	if m.Operation != MigrationImport || m.Outcome != MigrationRunning || m.SlotCount() != 5 || !m.Updated.Equal(m.Created) {
		t.Errorf("8.4 source's reply: %+v", m)
	}
	for state, want := range map[string]MigrationOutcome{"done": MigrationSuccess, "failed": MigrationFailed, "canceled": MigrationCancelled, "accumulate-buffer": MigrationRunning} {
		if m, _ := parseRedisMigration(clone(source, "state", state)); m.Outcome != want {
			t.Errorf("state %s: outcome %q, want %q", state, m.Outcome, want)
		}
	}
	failed, _ := parseRedisMigration(clone(documented, "state", "failed", "last_error", "Main channel - Connection is closed"))
	if failed.Message != "Main channel - Connection is closed" {
		t.Errorf("last_error: %q", failed.Message)
	}
	if _, err := parseRedisMigration(clone(documented, "operation", "sideways")); err == nil {
		t.Error("unknown operation: no error")
	}
}

func FuzzParseSlotSpans(f *testing.F) {
	for _, s := range []string{"0-3000", "0-10 20 30-31", "1,2-3", "", "16383", "5-", "-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		spans, err := parseSlotSpans(text)
		if err != nil {
			return
		}
		for _, s := range spans {
			if s.First < 0 || s.Last >= redisproto.SlotCount || s.First > s.Last {
				t.Fatalf("%q: span %+v", text, s)
			}
		}
		job := SlotMigration{Slots: spans}
		again, err := parseSlotSpans(job.RangesText())
		if err != nil || len(again) != len(spans) {
			t.Fatalf("%q: RangesText %q reads back as %v, %v", text, job.RangesText(), again, err)
		}
	})
}

func clone(m map[string]string, kv ...string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

// migrationJob is a job between A (source) and B (target) as node reports
// it.
func migrationJob(name, operation string, outcome MigrationOutcome, created, updated time.Time, first, last int) SlotMigration {
	state := string(outcome)
	if outcome == MigrationRunning {
		state = "snapshotting"
	}
	return SlotMigration{Name: name, Operation: operation, Slots: []SlotSpan{{first, last}}, Source: idA, Target: idB,
		State: state, Outcome: outcome, Created: created, Updated: updated, HasRemaining: true, RemainingReplBytes: 100}
}

// migrationSnapshot has A and B reporting the given jobs (A's EXPORT, B's
// IMPORT sides of each).
func migrationSnapshot(at time.Time, jobs ...SlotMigration) *Snapshot {
	s := &Snapshot{ReadAt: at, Nodes: []Node{
		{ID: idA, Addr: addrOf[idA], Role: RoleMaster, Reachable: true, Migrations: &NodeMigrations{}},
		{ID: idB, Addr: addrOf[idB], Role: RoleMaster, Reachable: true, Migrations: &NodeMigrations{}},
	}}
	for _, j := range jobs {
		s.Nodes[0].Migrations.Jobs = append(s.Nodes[0].Migrations.Jobs, j)
		imp := j
		imp.Operation = MigrationImport
		s.Nodes[1].Migrations.Jobs = append(s.Nodes[1].Migrations.Jobs, imp)
	}
	return s
}

func TestCarryMigrations(t *testing.T) {
	t0 := time.Unix(1796124600, 0)
	old := migrationJob("old", MigrationExport, MigrationSuccess, t0.Add(-time.Hour), t0.Add(-time.Hour), 0, 10)
	first := migrationSnapshot(t0, old)
	carryTransitions(nil, first)
	if len(first.Events.Events) != 0 || first.MigrationsFinished != [3]uint64{} {
		t.Fatalf("first snapshot: events %v, finished %v; an old job in the log must not count", first.Events.Events, first.MigrationsFinished)
	}

	running := migrationJob("j1", MigrationExport, MigrationRunning, t0.Add(time.Second), t0.Add(time.Second), 0, 3000)
	second := migrationSnapshot(t0.Add(2*time.Second), old, running)
	carryTransitions(first, second)
	if got := kinds(second); got != "slot_migration_started" {
		t.Errorf("job seen running: events %s", got)
	}
	if !strings.Contains(second.Events.Events[0].After, "slots 0-3000 (3001)") || second.Events.Events[0].Subject.NodeID != idA {
		t.Errorf("started event: %+v", second.Events.Events[0])
	}

	done := migrationJob("j1", MigrationExport, MigrationFailed, t0.Add(time.Second), t0.Add(3*time.Second), 0, 3000)
	done.Message = "target gone"
	third := migrationSnapshot(t0.Add(4*time.Second), old, done)
	carryTransitions(second, third)
	if got := kinds(third); got != "slot_migration_failed" {
		t.Errorf("job seen failed: events %s", got)
	}
	if e := third.Events.Events[0]; !strings.Contains(e.After, "failed after 2s (target gone)") {
		t.Errorf("failed event After %q", e.After)
	}
	if third.MigrationsFinished != [3]uint64{0, 1, 0} {
		t.Errorf("finished %v, want one failed", third.MigrationsFinished)
	}

	// A job that began and ended between two refreshes: started and
	// cancelled at once; and nothing again for the same job next time.
	quick := migrationJob("j2", MigrationExport, MigrationCancelled, t0.Add(4*time.Second), t0.Add(5*time.Second), 5, 5)
	fourth := migrationSnapshot(t0.Add(6*time.Second), old, done, quick)
	carryTransitions(third, fourth)
	if got := kinds(fourth); got != "slot_migration_started slot_migration_cancelled" {
		t.Errorf("quick job: events %s", got)
	}
	fifth := migrationSnapshot(t0.Add(7*time.Second), old, done, quick)
	carryTransitions(fourth, fifth)
	if len(fifth.Events.Events) != 0 || fifth.MigrationsFinished != [3]uint64{0, 1, 1} {
		t.Errorf("unchanged: events %s, finished %v", kinds(fifth), fifth.MigrationsFinished)
	}
}

// TestMigrationFinishesOnce: the source decides a job's outcome, and a job
// is counted once. On Valkey 9.1 a job the source cancels says "failed" on
// the target (connection lost); read a moment after the source within one
// refresh, or while the source's read was missed, the target's word must
// not count a failure, and the source's cancelled next refresh must not
// count the job again.
func TestMigrationFinishesOnce(t *testing.T) {
	t0 := time.Unix(1796124600, 0)
	running := migrationJob("j", MigrationExport, MigrationRunning, t0, t0, 0, 3000)
	targetFailed := migrationJob("j", MigrationImport, MigrationFailed, t0, t0.Add(2*time.Second), 0, 3000)
	cancelled := migrationJob("j", MigrationExport, MigrationCancelled, t0, t0.Add(2*time.Second), 0, 3000)
	// at has A (the source) report src, or nothing when src is nil, and B
	// (the target) report dst.
	at := func(sec int, src *SlotMigration, dst SlotMigration) *Snapshot {
		s := migrationSnapshot(t0.Add(time.Duration(sec) * time.Second))
		s.Nodes[0].Migrations = nil
		if src != nil {
			s.Nodes[0].Migrations = &NodeMigrations{Jobs: []SlotMigration{*src}}
		}
		s.Nodes[1].Migrations.Jobs = []SlotMigration{dst}
		return s
	}
	targetRunning := running
	targetRunning.Operation = MigrationImport
	check := func(s *Snapshot, wantEvents string, want [3]uint64) {
		t.Helper()
		if got := kinds(s); got != wantEvents || s.MigrationsFinished != want {
			t.Errorf("at %s: events %q, finished %v; want %q, %v", s.ReadAt.Sub(t0), got, s.MigrationsFinished, wantEvents, want)
		}
	}
	cancelledOnly := [3]uint64{0, 0, 1}

	// Within one refresh the source still runs, the target already failed.
	s1 := at(1, &running, targetRunning)
	carryTransitions(nil, s1)
	s2 := at(2, &running, targetFailed)
	carryTransitions(s1, s2)
	check(s2, "", [3]uint64{})
	s3 := at(3, &cancelled, targetFailed)
	carryTransitions(s2, s3)
	check(s3, "slot_migration_cancelled", cancelledOnly)
	s4 := at(4, &cancelled, targetFailed)
	carryTransitions(s3, s4)
	check(s4, "", cancelledOnly)

	// The source's read missed once: the target's word waits a refresh.
	s2 = at(2, nil, targetFailed)
	carryTransitions(s1, s2)
	check(s2, "", [3]uint64{})
	s3 = at(3, &cancelled, targetFailed)
	carryTransitions(s2, s3)
	check(s3, "slot_migration_cancelled", cancelledOnly)

	// The source is gone for good: the target's word decides, a refresh
	// later; the source coming back with another outcome counts nothing.
	s3 = at(3, nil, targetFailed)
	carryTransitions(s2, s3)
	check(s3, "slot_migration_failed", [3]uint64{0, 1, 0})
	s4 = at(4, &cancelled, targetFailed)
	carryTransitions(s3, s4)
	check(s4, "", [3]uint64{0, 1, 0})

	// A source never read (unreachable since the exporter started): the
	// target's word decides at once.
	s1 = at(1, nil, targetRunning)
	carryTransitions(nil, s1)
	s2 = at(2, nil, targetFailed)
	carryTransitions(s1, s2)
	check(s2, "slot_migration_failed", [3]uint64{0, 1, 0})
}

func kinds(s *Snapshot) string {
	var out []string
	for _, e := range s.Events.Events {
		out = append(out, string(e.Kind))
	}
	return strings.Join(out, " ")
}

// TestAtomicMoveIsNotAConflict: while an atomic migration runs, and just
// after it succeeded, the views may disagree on the slots' owner: a move,
// never a conflict, and the running job's slots are in migration.
func TestAtomicMoveIsNotAConflict(t *testing.T) {
	at := time.Unix(1796124600, 0)
	moved := append([]string(nil), healthyLines...)
	moved[0] = idA + " 127.0.0.1:17100@27100 master - 0 0 1 connected 101-5460"
	moved[1] = idB + " 127.0.0.1:17101@27101 master - 0 0 7 connected 0-100 5461-10922"
	views := healthyViews(t)
	// B has taken slots 0-100; A and the others do not know yet.
	views[1] = testView(t, idB, moved, 7, true, masterRepl(500))
	for i := range views {
		views[i].AnsweredAt = at
	}
	job := migrationJob("j", MigrationExport, MigrationRunning, at.Add(-time.Second), at, 0, 100)
	views[0].Migrations, views[0].MigrationsRead = []SlotMigration{job}, true
	// Each case is read twice, disputeSettleTime apart.
	build := func() *Snapshot {
		t.Helper()
		before, err := buildSnapshot(views)
		if err != nil {
			t.Fatal(err)
		}
		settleDisputes(nil, before, at)
		snap, err := buildSnapshot(views)
		if err != nil {
			t.Fatal(err)
		}
		settleDisputes(before, snap, at.Add(disputeSettleTime+time.Second))
		return snap
	}
	snap := build()
	if !snap.ViewsConsistent || snap.SlotsInConflict != 0 || snap.SlotsInMigration != 101 {
		t.Errorf("running job: consistent %v, %d in conflict, %d in migration; want true, 0, 101",
			snap.ViewsConsistent, snap.SlotsInConflict, snap.SlotsInMigration)
	}
	if spans := snap.InFlightSpans(); len(spans) != 1 || spans[0] != (SlotSpan{0, 100}) {
		t.Errorf("in-flight spans %v", spans)
	}

	// Just succeeded: still explained, no longer in migration.
	job.Outcome, job.State = MigrationSuccess, "success"
	views[0].Migrations = []SlotMigration{job}
	snap = build()
	if !snap.ViewsConsistent || snap.SlotsInMigration != 0 {
		t.Errorf("just succeeded: consistent %v, %d in migration", snap.ViewsConsistent, snap.SlotsInMigration)
	}

	// Long after it succeeded, the same disagreement is a conflict.
	views[0].Migrations[0].Updated = at.Add(-time.Minute)
	snap = build()
	if snap.ViewsConsistent || snap.SlotsInConflict != 101 {
		t.Errorf("a minute after: consistent %v, %d in conflict; want false, 101", snap.ViewsConsistent, snap.SlotsInConflict)
	}
}

// withMigrations gives testSnapshot's master a running export, a failed
// one before it, and one exporter-observed finished job of each outcome.
func withMigrations(s *Snapshot) *Snapshot {
	at := time.Unix(1796124600, 0)
	for i := range s.Nodes {
		if s.Nodes[i].ID != idA {
			continue
		}
		s.Nodes[i].Migrations = &NodeMigrations{Jobs: []SlotMigration{
			migrationJob("j1", MigrationExport, MigrationFailed, at, at.Add(time.Second), 0, 99),
			migrationJob("j2", MigrationExport, MigrationRunning, at.Add(2*time.Second), at.Add(2*time.Second), 0, 99),
		}}
	}
	s.MigrationsFinished = [3]uint64{1, 1, 1}
	return s
}

func TestEmitMigrations(t *testing.T) {
	c := NewCollector()
	c.Set("main", watchtest.Static[Snapshot]("main", withMigrations(testSnapshot()), nil))
	const a = `address="127.0.0.1:7000",node_id="099acb3ad33355bfc624e555c95f92f2c4c98dbe"`
	const c1 = `redis_cluster="main"`
	want := `
# HELP redis_cluster_node_slot_migration_jobs ` + migrationMetrics.jobs.Help + `
# TYPE redis_cluster_node_slot_migration_jobs gauge
redis_cluster_node_slot_migration_jobs{` + a + `,operation="export",` + c1 + `,state="failed"} 1
redis_cluster_node_slot_migration_jobs{` + a + `,operation="export",` + c1 + `,state="in_progress"} 1
redis_cluster_node_slot_migration_jobs{` + a + `,operation="import",` + c1 + `,state="in_progress"} 0
# HELP redis_cluster_node_slot_migration_last_outcome ` + migrationMetrics.lastOutcome.Help + `
# TYPE redis_cluster_node_slot_migration_last_outcome gauge
redis_cluster_node_slot_migration_last_outcome{` + a + `,outcome="cancelled",` + c1 + `} 0
redis_cluster_node_slot_migration_last_outcome{` + a + `,outcome="failed",` + c1 + `} 1
redis_cluster_node_slot_migration_last_outcome{` + a + `,outcome="success",` + c1 + `} 0
# HELP redis_cluster_node_slot_migration_remaining_replication_bytes ` + migrationMetrics.remaining.Help + `
# TYPE redis_cluster_node_slot_migration_remaining_replication_bytes gauge
redis_cluster_node_slot_migration_remaining_replication_bytes{` + a + `,` + c1 + `} 100
# HELP redis_cluster_node_slot_migration_slots ` + migrationMetrics.slots.Help + `
# TYPE redis_cluster_node_slot_migration_slots gauge
redis_cluster_node_slot_migration_slots{` + a + `,operation="export",` + c1 + `} 100
redis_cluster_node_slot_migration_slots{` + a + `,operation="import",` + c1 + `} 0
# HELP redis_cluster_slot_migrations_finished_total ` + migrationMetrics.finished.Help + `
# TYPE redis_cluster_slot_migrations_finished_total counter
redis_cluster_slot_migrations_finished_total{outcome="cancelled",redis_cluster="main"} 1
redis_cluster_slot_migrations_finished_total{outcome="failed",redis_cluster="main"} 1
redis_cluster_slot_migrations_finished_total{outcome="success",redis_cluster="main"} 1
`
	names := []string{"redis_cluster_node_slot_migration_jobs", "redis_cluster_node_slot_migration_last_outcome",
		"redis_cluster_node_slot_migration_remaining_replication_bytes", "redis_cluster_node_slot_migration_slots",
		"redis_cluster_slot_migrations_finished_total"}
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}
	// Without migrations read (Redis 7, Valkey 8), none of them.
	c.Set("main", watchtest.Static[Snapshot]("main", testSnapshot(), nil))
	if n := testutil.CollectAndCount(c, names...); n != 0 {
		t.Errorf("%d migration series without migrations read", n)
	}
}
