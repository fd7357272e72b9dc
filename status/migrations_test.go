package status

import (
	"strings"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/systems/redis"
)

// The slot map marks the slots of an atomic slot migration in flight, with
// a table of the jobs: each job once, as its source reports it, while some
// member says it runs; finished jobs and servers without atomic migration
// add nothing.
func TestPageMarksSlotsInFlight(t *testing.T) {
	_, plain := render(t, testPage(kafkaWithDeadBroker(1, 1), redisFailingOver(), nil), "/")
	if strings.Contains(plain, "Slot migrations in flight") || strings.Contains(plain, "data-moving=") {
		t.Error("slots in flight without a migration")
	}

	r := redisFailingOver()
	readAt := r.ReadAt.Truncate(time.Second)
	job := redis.SlotMigration{Name: "7c1e0a", Operation: redis.MigrationExport,
		Slots:  []redis.SlotSpan{{First: 8192, Last: 9000}, {First: 12000, Last: 12000}},
		Source: idB, Target: idD, State: "snapshotting", Created: readAt.Add(-3 * time.Second), Updated: readAt,
		HasRemaining: true, RemainingReplBytes: 3 << 20}
	imported := job
	imported.Operation, imported.State = redis.MigrationImport, "receiving-snapshot"
	done := redis.SlotMigration{Name: "0ld", Operation: redis.MigrationExport, Slots: []redis.SlotSpan{{First: 100, Last: 200}},
		Source: idB, Target: idD, State: "success", Outcome: redis.MigrationSuccess, Created: readAt.Add(-time.Hour), Updated: readAt.Add(-time.Hour)}
	r.Nodes[1].Migrations = &redis.NodeMigrations{Jobs: []redis.SlotMigration{done, job}}
	r.Nodes[2].Migrations = &redis.NodeMigrations{Jobs: []redis.SlotMigration{imported}}
	code, body := render(t, testPage(kafkaWithDeadBroker(1, 1), r, nil), "/")
	if code != 200 {
		t.Fatalf("status %d", code)
	}
	for _, want := range []string{
		// On the slot map, one band per range of the job, placed by slot.
		`<div class="moving" style="left:50.0000%;width:4.9377%" title="slots 8192-9000 moving 127.0.0.1:7001 → 127.0.0.1:7003 (snapshotting)" data-first="8192" data-last="9000" data-moving="7c1e0a"></div>`,
		`<div class="moving" style="left:73.2422%;width:0.0061%" title="slots 12000-12000 moving 127.0.0.1:7001 → 127.0.0.1:7003 (snapshotting)" data-first="12000" data-last="12000" data-moving="7c1e0a"></div>`,
		`<i class="moving"></i>moving (atomic slot migration)`,
		"<h3>Slot migrations in flight</h3>",
		// The source's report, not the target's.
		`<tr data-moving="7c1e0a"><td>8192-9000 12000</td><td class="num">810</td><td>127.0.0.1:7001</td><td>127.0.0.1:7003</td><td>snapshotting</td><td>3s</td><td class="num">3.0 MiB</td></tr>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if n := strings.Count(body, `class="moving" style=`); n != 2 {
		t.Errorf("%d bands in flight, want 2 (the finished job's slots are not moving)", n)
	}
	if n := strings.Count(body, `<tr data-moving=`); n != 1 {
		t.Errorf("%d rows of jobs in flight, want 1 (source and target report the same job)", n)
	}

	// The source says it succeeded, the target still imports: in flight
	// until the target says so too, as redis_cluster_slots_in_migration
	// counts it, with the target's state and no stream size.
	job.Outcome, job.State = redis.MigrationSuccess, "success"
	r.Nodes[1].Migrations.Jobs[1] = job
	_, body = render(t, testPage(kafkaWithDeadBroker(1, 1), r, nil), "/")
	if want := `<tr data-moving="7c1e0a"><td>8192-9000 12000</td><td class="num">810</td><td>127.0.0.1:7001</td><td>127.0.0.1:7003</td><td>receiving-snapshot</td><td>3s</td><td class="num"></td></tr>`; !strings.Contains(body, want) {
		t.Errorf("page lacks %s", want)
	}

	// Both say it finished: nothing in flight.
	imported.Outcome, imported.State = redis.MigrationSuccess, "success"
	r.Nodes[2].Migrations.Jobs[0] = imported
	_, body = render(t, testPage(kafkaWithDeadBroker(1, 1), r, nil), "/")
	if strings.Contains(body, "data-moving=") {
		t.Error("a finished job still in flight on the page")
	}
}
