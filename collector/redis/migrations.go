package redis

// Atomic slot migration (issue 20, item 1): Valkey 9.0+ moves slots with
// CLUSTER MIGRATESLOTS and reports each job in CLUSTER GETSLOTMIGRATIONS;
// Redis 8.4+ with CLUSTER MIGRATION IMPORT and CLUSTER MIGRATION STATUS.
// Neither sets the MIGRATING/IMPORTING flags of CLUSTER NODES, so a move is
// seen only there. Both keep finished jobs (success, failed, cancelled) in a
// bounded log, which is how a failed or cancelled move is seen at all.
//
// Which command a node has is read once per connection from INFO server
// (migrationAPIOf); the command is then sent in the node's pipeline on
// every refresh, and only to nodes that have it. A reply that is an error
// (an ACL refusing it, a server swapped under the same address) leaves the
// node's jobs unread and the refresh goes on.

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/failover-exporter/failover_exporter/collector/events"
	"github.com/failover-exporter/failover_exporter/collector/exposition"
	"github.com/failover-exporter/failover_exporter/internal/redisproto"
)

// migrationAPI is the atomic slot migration command a node has.
type migrationAPI int32

const (
	migrationAPIUnknown migrationAPI = iota // not read yet
	migrationAPINone                        // Redis before 8.4, Valkey before 9.0
	migrationAPIValkey                      // CLUSTER GETSLOTMIGRATIONS
	migrationAPIRedis                       // CLUSTER MIGRATION STATUS ALL
)

// migrationAPIOf reads the API from INFO server: Valkey 9.0+ (server_name
// valkey, or a valkey_version line) or Redis 8.4+ (redis_version, without
// either).
func migrationAPIOf(infoServer string) migrationAPI {
	fields, err := parseInfoFields(infoServer)
	if err != nil {
		return migrationAPINone
	}
	if v := fields.value("valkey_version"); v != "" || fields.value("server_name") == "valkey" {
		if major, _ := versionOf(v); major >= 9 {
			return migrationAPIValkey
		}
		return migrationAPINone
	}
	if major, minor := versionOf(fields.value("redis_version")); major > 8 || major == 8 && minor >= 4 {
		return migrationAPIRedis
	}
	return migrationAPINone
}

// versionOf returns the major and minor numbers of "8.4.0" (0, 0 when it
// is not one).
func versionOf(v string) (major, minor int) {
	parts := strings.SplitN(v, ".", 3)
	major, _ = strconv.Atoi(parts[0])
	if len(parts) > 1 {
		minor, _ = strconv.Atoi(parts[1])
	}
	return major, minor
}

// readMigrationAPI returns the node's API, reading INFO server the first
// time (one more round trip, once per connection). It returns
// migrationAPIUnknown, to be tried again next refresh, when INFO fails.
func (nc *nodeClient) readMigrationAPI(ctx context.Context, client rueidis.Client) migrationAPI {
	if api := migrationAPI(nc.migrationAPI.Load()); api != migrationAPIUnknown {
		return api
	}
	text, err := client.Do(ctx, client.B().Info().Section("server").Build()).ToString()
	if err != nil {
		return migrationAPIUnknown
	}
	api := migrationAPIOf(text)
	nc.migrationAPI.Store(int32(api))
	return api
}

// migrationCommand is the command that lists the node's jobs, nil for none.
func migrationCommand(client rueidis.Client, api migrationAPI) rueidis.Completed {
	switch api {
	case migrationAPIValkey:
		return client.B().Arbitrary("CLUSTER", "GETSLOTMIGRATIONS").Build()
	default:
		return client.B().Arbitrary("CLUSTER", "MIGRATION", "STATUS", "ALL").Build()
	}
}

// readMigrations decodes the reply of migrationCommand. An unknown command
// means the server is not what INFO said (swapped under the address): the
// API is read again next time.
func (nc *nodeClient) readMigrations(reply rueidis.RedisResult, api migrationAPI) ([]SlotMigration, error) {
	rows, err := reply.ToArray()
	if err != nil {
		if e, ok := rueidis.IsRedisErr(err); ok && strings.Contains(strings.ToLower(e.Error()), "unknown") {
			nc.migrationAPI.Store(int32(migrationAPIUnknown))
		}
		return nil, err
	}
	jobs := make([]SlotMigration, 0, len(rows))
	for i, row := range rows {
		fields, err := migrationFields(row)
		if err != nil {
			return nil, fmt.Errorf("job %d: %w", i, err)
		}
		parse := parseValkeyMigration
		if api == migrationAPIRedis {
			parse = parseRedisMigration
		}
		job, err := parse(fields)
		if err != nil {
			return nil, fmt.Errorf("job %d: %w", i, err)
		}
		jobs = append(jobs, job)
	}
	return jobs, nil
}

// migrationFields turns one job (a map in RESP3, a flat array of names and
// values in RESP2) into text fields.
func migrationFields(row rueidis.RedisMessage) (map[string]string, error) {
	m, err := row.AsMap()
	if err != nil {
		return nil, err
	}
	fields := make(map[string]string, len(m))
	for name, value := range m {
		if s, err := value.ToString(); err == nil {
			fields[name] = s
		} else if n, err := value.AsInt64(); err == nil {
			fields[name] = strconv.FormatInt(n, 10)
		}
	}
	return fields, nil
}

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
	switch m.State {
	case "success":
		m.Outcome = MigrationSuccess
	case "failed":
		m.Outcome = MigrationFailed
	case "cancelled", "canceled":
		m.Outcome = MigrationCancelled
	}
	m.Created = unixTime(f["create_time"], time.Second)
	m.Updated = unixTime(f["last_update_time"], time.Second)
	if v, ok := f["remaining_repl_size"]; ok {
		m.RemainingReplBytes, _ = strconv.ParseInt(v, 10, 64)
		m.HasRemaining = true
	}
	return m, nil
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
	switch m.State {
	case "completed", "done":
		m.Outcome = MigrationSuccess
	case "failed":
		m.Outcome = MigrationFailed
	case "canceled", "cancelled":
		m.Outcome = MigrationCancelled
	}
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
	jobs := map[string]*SlotMigration{}
	var names []string
	for i := range s.Nodes {
		nm := s.Nodes[i].Migrations
		if nm == nil {
			continue
		}
		for j := range nm.Jobs {
			job := &nm.Jobs[j]
			if job.Outcome != MigrationRunning {
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
	jobs, names := decidingReports(next)
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
// the job, else the target. names are in the order first seen.
func decidingReports(s *Snapshot) (jobs map[string]*SlotMigration, names []string) {
	jobs = map[string]*SlotMigration{}
	for i := range s.Nodes {
		nm := s.Nodes[i].Migrations
		if nm == nil {
			continue
		}
		for j := range nm.Jobs {
			job := &nm.Jobs[j]
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

// migrationMetrics is the atomic slot migration families' metric table.
// Node series are served for the reachable nodes whose server has atomic
// slot migration.
var migrationMetrics = func() struct {
	jobs, slots, remaining, lastOutcome, finished *exposition.Desc
} {
	node := []string{"node_id", "address"}
	const servers = " Atomic slot migration: Valkey 9.0+ (CLUSTER GETSLOTMIGRATIONS) and Redis 8.4+ (CLUSTER MIGRATION STATUS); absent on other servers."
	return struct {
		jobs, slots, remaining, lastOutcome, finished *exposition.Desc
	}{
		jobs: newGauge("redis_cluster_node_slot_migration_jobs",
			"Atomic slot migration jobs in the node's log by operation (export: the node is the source; import: the target) and state (in_progress, or how it finished: success, failed, cancelled); in_progress is always served, the others while non-zero. The log is bounded (cluster-slot-migration-log-max-len)."+servers+fromRefresh,
			append(node, "operation", "state")...),
		slots: newGauge("redis_cluster_node_slot_migration_slots",
			"Hash slots in the node's atomic slot migration jobs in progress, by operation (export or import)."+servers+fromRefresh,
			append(node, "operation")...),
		remaining: newGauge("redis_cluster_node_slot_migration_remaining_replication_bytes",
			"Replication stream the node still has to send for its export jobs in progress (remaining_repl_size; Valkey only)."+servers+fromRefresh, node...),
		lastOutcome: newGauge("redis_cluster_node_slot_migration_last_outcome",
			"1 for the outcome (success, failed, cancelled) of the node's most recently finished atomic slot migration job, 0 for the others; absent while its log has no finished job."+servers+fromRefresh,
			append(node, "outcome")...),
		finished: newCounter("redis_cluster_slot_migrations_finished_total",
			"Atomic slot migration jobs this exporter saw finish, by outcome (success, failed, cancelled); each job once, however many nodes report it."+servers+fromRefresh, "outcome"),
	}
}()

// emitMigrations emits the atomic slot migration series.
func emitMigrations(ch exposition.Sink, cluster string, s *Snapshot) {
	m := &migrationMetrics
	if !exposition.Wants(ch, m.jobs, m.slots, m.remaining, m.lastOutcome, m.finished) {
		return
	}
	served := false
	labels := []string{cluster, "", "", "", ""}
	for i := range s.Nodes {
		n := &s.Nodes[i]
		nm := n.Migrations
		if nm == nil {
			continue
		}
		served = true
		labels[1], labels[2] = n.ID, n.Addr
		for _, op := range []string{MigrationExport, MigrationImport} {
			labels[3] = strings.ToLower(op)
			ch.Add(m.slots, float64(nm.InFlightSlots(op)), labels[:4]...)
			counts := map[MigrationOutcome]int{}
			for j := range nm.Jobs {
				if nm.Jobs[j].Operation == op {
					counts[nm.Jobs[j].Outcome]++
				}
			}
			labels[4] = "in_progress"
			ch.Add(m.jobs, float64(counts[MigrationRunning]), labels...)
			for _, o := range migrationOutcomes {
				if counts[o] > 0 {
					labels[4] = string(o)
					ch.Add(m.jobs, float64(counts[o]), labels...)
				}
			}
		}
		var remaining int64
		hasRemaining := false
		for j := range nm.Jobs {
			if job := &nm.Jobs[j]; job.HasRemaining {
				hasRemaining = true
				if job.Outcome == MigrationRunning && job.Operation == MigrationExport {
					remaining += job.RemainingReplBytes
				}
			}
		}
		if hasRemaining {
			ch.Add(m.remaining, float64(remaining), labels[:3]...)
		}
		if last := nm.LastFinished(); last != nil {
			for _, o := range migrationOutcomes {
				labels[3] = string(o)
				ch.Add(m.lastOutcome, bool01(last.Outcome == o), labels[:4]...)
			}
		}
	}
	if served {
		for i, o := range migrationOutcomes {
			ch.Add(m.finished, float64(s.MigrationsFinished[i]), cluster, string(o))
		}
	}
}
