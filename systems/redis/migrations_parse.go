package redis

// Parsing the atomic slot migration replies of Valkey and Redis (see
// migrations.go).

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/failover-exporter/failover_exporter/systems/redis/proto"
)

// parseSlotSpans reads "0-1000 2000-3000" (Valkey), also with commas
// (Redis).
func parseSlotSpans(text string) ([]SlotSpan, error) {
	var spans []SlotSpan
	for _, r := range strings.FieldsFunc(text, func(c rune) bool { return c == ' ' || c == ',' }) {
		first, last, isRange := strings.Cut(r, "-")
		a, err := strconv.Atoi(first)
		if err != nil {
			return nil, fmt.Errorf("slot range %q", r)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(last); err != nil {
				return nil, fmt.Errorf("slot range %q", r)
			}
		}
		if a < 0 || b >= redisproto.SlotCount || a > b {
			return nil, fmt.Errorf("slot range %q out of 0-%d", r, redisproto.SlotCount-1)
		}
		spans = append(spans, SlotSpan{a, b})
	}
	return spans, nil
}

// parseValkeyMigration reads one job of CLUSTER GETSLOTMIGRATIONS (Valkey
// 9.0+); times are in seconds.
func parseValkeyMigration(f map[string]string) (SlotMigration, error) {
	m := SlotMigration{Name: f["name"], Operation: strings.ToUpper(f["operation"]), Source: f["source_node"], Target: f["target_node"],
		State: f["state"], Message: f["message"]}
	if m.Name == "" {
		return m, fmt.Errorf("no name in %v", f)
	}
	var err error
	if m.Slots, err = parseSlotSpans(f["slot_ranges"]); err != nil {
		return m, err
	}
	m.Outcome = migrationOutcome(m.State, "success")
	m.Created = unixTime(f["create_time"], time.Second)
	m.Updated = unixTime(f["last_update_time"], time.Second)
	if v, ok := f["remaining_repl_size"]; ok {
		m.RemainingReplBytes, _ = strconv.ParseInt(v, 10, 64)
		m.HasRemaining = true
	}
	return m, nil
}

// migrationOutcome is the outcome of a job in the state its server
// reports: succeeded in one of the states success names (the servers
// differ), failed or cancelled (either spelling) as both spell them, and
// running in any other.
func migrationOutcome(state string, success ...string) MigrationOutcome {
	switch {
	case slices.Contains(success, state):
		return MigrationSuccess
	case state == "failed":
		return MigrationFailed
	case state == "cancelled" || state == "canceled":
		return MigrationCancelled
	}
	return MigrationRunning
}

// parseRedisMigration reads one task of CLUSTER MIGRATION STATUS (Redis
// 8.4+), in Valkey's words: operation migrate is EXPORT, state completed
// success, canceled cancelled; times are in milliseconds. The field names
// are those of the documentation (slots, end_time) or of the 8.4 source
// (slots_range, done_time), and the operation "import"/"migrate" or
// "importing"/"migrating".
func parseRedisMigration(f map[string]string) (SlotMigration, error) {
	m := SlotMigration{Name: f["id"], Source: f["source"], Target: f["dest"], State: f["state"], Message: f["last_error"]}
	if m.Name == "" {
		return m, fmt.Errorf("no id in %v", f)
	}
	switch strings.ToLower(f["operation"]) {
	case "import", "importing":
		m.Operation = MigrationImport
	case "migrate", "migrating":
		m.Operation = MigrationExport
	default:
		return m, fmt.Errorf("task %s: operation %q", m.Name, f["operation"])
	}
	slots, ok := f["slots"]
	if !ok {
		slots = f["slots_range"]
	}
	var err error
	if m.Slots, err = parseSlotSpans(slots); err != nil {
		return m, err
	}
	m.Outcome = migrationOutcome(m.State, "completed", "done")
	m.Created = unixTime(f["create_time"], time.Millisecond)
	m.Updated = m.Created
	for _, name := range []string{"start_time", "end_time", "done_time"} {
		if t := unixTime(f[name], time.Millisecond); t.After(m.Updated) {
			m.Updated = t
		}
	}
	return m, nil
}

// unixTime reads a Unix time in the given unit; zero when absent or not
// positive.
func unixTime(text string, unit time.Duration) time.Time {
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil || n <= 0 {
		return time.Time{}
	}
	return time.Unix(0, 0).Add(time.Duration(n) * unit)
}
