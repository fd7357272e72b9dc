package mirror

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/failover-exporter/failover_exporter/collector/system"
	"github.com/failover-exporter/failover_exporter/status/model"
)

// The status page's tables list at most this many topics and groups, worst
// first, and count the rest, so that the page stays cheap whatever the
// flow's size.
const (
	maxViewTopics = 20
	maxViewGroups = 20
	// maxGroupTopicNames bounds the topic names of a group's row.
	maxGroupTopicNames = 3
)

// Views are the status page's parts of the given flows, as of now: per
// flow, what a failover to the target now would lose.
var Views = system.Views("mirror", "Cross-cluster replication ", view)

// view lays out one flow's snapshot under its head.
func view(c *model.Cluster, s *Snapshot) {
	c.Title += ": " + s.SourceCluster + " → " + s.TargetCluster
	l := lossOf(s)
	c.Stats = flowStats(s, l)
	c.Notes = flowNotes(s, l)
	c.Tables = []model.Table{topicTable(s), groupTable(s)}
	if s.Connect.Configured {
		c.Stats = append(c.Stats, connectStat(s.Connect))
		c.Notes = append(c.Notes, connectNotes(s.Connect)...)
		c.Tables = append(c.Tables, connectorTable(s.Connect))
	}
}

// loss is the flow's figures added up over its topics and groups.
type loss struct {
	records int64
	// behind counts topics with records not replicated or seconds
	// behind; unknownParts the partitions without a figure.
	behind, unknownParts int
	missing, mismatched  int
	// rpo is the largest known topic RPO, of rpoTopic; rpoUnknown counts
	// topics without one.
	rpo        time.Duration
	rpoTopic   string
	rpoUnknown int
	// reread sums the records groups would read again (those read);
	// groups counts the groups, rereadUnknown the group topics unread.
	reread        int64
	groups        int
	rereadUnknown int
}

func lossOf(s *Snapshot) loss {
	var l loss
	for i := range s.Topics {
		t := &s.Topics[i]
		l.records += t.NotReplicated
		l.unknownParts += t.Unknown
		if t.NotReplicated > 0 || t.RPO > 0 {
			l.behind++
		}
		// Without the target, no topic is known to be missing.
		if t.Missing && s.TargetUp {
			l.missing++
		}
		if t.PartitionMismatch() && s.TargetUp {
			l.mismatched++
		}
		switch {
		case !t.RPOKnown:
			l.rpoUnknown++
		case t.RPO > l.rpo:
			l.rpo, l.rpoTopic = t.RPO, t.Name
		}
	}
	groups := map[string]bool{}
	for _, g := range s.Groups {
		groups[g.Group] = true
		l.reread += g.Reread
		if !g.RereadKnown {
			l.rereadUnknown++
		}
	}
	l.groups = len(groups)
	return l
}

// flowStats are the section's summary boxes.
// long: one summary box after another, in the page's order, each a few
// lines built from the same snapshot and loss: split, the boxes would be
// scattered over functions that each take both.
func flowStats(s *Snapshot, l loss) []model.Stat {
	heartbeat := "no heartbeat on the target"
	if s.Heartbeat.Known {
		heartbeat = "heartbeat " + seconds(s.Heartbeat.Age) + " old"
	}
	replication := model.Stat{Name: "replication", Label: "replication", Value: "up", Detail: heartbeat, Level: "good"}
	switch {
	case !s.TargetUp:
		replication.Value, replication.Detail, replication.Level = "unknown", "target not read", "bad"
	case s.Stalled:
		replication.Value, replication.Level = "stalled", "bad"
	}

	clusters := model.Stat{Name: "clusters", Label: "clusters read", Value: "both", Detail: "source " + s.SourceCluster + ", target " + s.TargetCluster, Level: "good"}
	switch {
	case !s.SourceUp:
		clusters.Value, clusters.Level = "target only", "bad"
	case !s.TargetUp:
		clusters.Value, clusters.Level = "source only", "bad"
	}

	notRead := "source not read"
	if !s.TargetUp {
		notRead = "target not read"
	}
	records := model.Stat{Name: "not-replicated", Label: "records not replicated", Value: "unknown", Detail: notRead, Level: "bad"}
	rpo := model.Stat{Name: "rpo", Label: "worst RPO", Value: "unknown", Detail: notRead + "; " + heartbeat, Level: "bad"}
	if !s.TargetUp {
		rpo.Detail = notRead
	}
	if s.SourceUp && s.TargetUp {
		records.Value = strconv.FormatInt(l.records, 10)
		records.Detail = fmt.Sprintf("in %d of %s", l.behind, count(len(s.Topics), "topic"))
		if l.unknownParts > 0 {
			records.Detail += "; " + count(l.unknownParts, "partition") + " unknown"
		}
		records.Level = "good"
		switch {
		case l.missing > 0 || l.mismatched > 0:
			records.Level = "bad"
		case l.records > 0 || l.unknownParts > 0:
			records.Level = "warn"
		}

		rpo.Value, rpo.Detail, rpo.Level = seconds(l.rpo), "", "good"
		if l.rpo > 0 {
			rpo.Detail = "topic " + l.rpoTopic
		}
		if l.rpoUnknown > 0 {
			rpo.Detail = strings.TrimPrefix(rpo.Detail+"; "+count(l.rpoUnknown, "topic")+" unknown", "; ")
		}
		if l.rpo > 0 || l.rpoUnknown > 0 {
			rpo.Level = "warn"
		}
	}
	stats := []model.Stat{replication, clusters, records, rpo}

	if s.SourceUp && s.TargetUp {
		missing := model.Stat{Name: "missing", Label: "topics missing on target", Value: strconv.Itoa(l.missing),
			Detail: fmt.Sprintf("of %d; %d with other partition counts", len(s.Topics), l.mismatched), Level: "good"}
		if l.missing > 0 || l.mismatched > 0 {
			missing.Level = "bad"
		}
		stats = append(stats, missing)
	}

	groups := model.Stat{Name: "reread", Label: "records groups would re-read", Value: strconv.FormatInt(l.reread, 10), Detail: count(l.groups, "group")}
	switch {
	case l.groups == 0:
		groups.Detail = "no checkpointed groups"
	case l.rereadUnknown == len(s.Groups):
		groups.Value, groups.Level = "unknown", "warn"
		groups.Detail += "; committed offsets not read"
	case l.rereadUnknown > 0:
		groups.Value = "≥ " + groups.Value
		groups.Detail += "; " + count(l.rereadUnknown, "group topic") + " not read"
	}
	stats = append(stats, groups)

	syncs := model.Stat{Name: "offset-syncs", Label: "offset syncs", Value: "caught up", Detail: count(s.Syncs.Partitions, "partition") + " synced", Level: "good"}
	if !s.Syncs.CaughtUp {
		syncs.Value, syncs.Level = "reading", "warn"
	}
	return append(stats, syncs)
}

// flowNotes answer the section's question in a sentence, and say what
// its figures lack.
func flowNotes(s *Snapshot, l loss) []model.Note {
	var notes []model.Note
	switch {
	case !s.SourceUp:
		text := fmt.Sprintf("Source %s was not read in the last refresh: what %s lacks is unknown.", s.SourceCluster, s.TargetCluster)
		if s.Heartbeat.Known {
			text += fmt.Sprintf(" Its newest heartbeat on %s is %s old: the flow's RPO as far as the target knows.", s.TargetCluster, seconds(s.Heartbeat.Age))
		}
		notes = append(notes, model.Note{Level: "error", Text: text})
	case !s.TargetUp:
		notes = append(notes, model.Note{Level: "error", Text: fmt.Sprintf("Target %s was not read in the last refresh: what it lacks is unknown.", s.TargetCluster)})
	default:
		notes = append(notes, model.Note{Text: lossSentence(s, l)})
	}
	if !s.Syncs.CaughtUp {
		notes = append(notes, model.Note{Level: "warn", Text: "The offset-syncs topic is not read to its end yet: records not replicated may lack partitions."})
	}
	return notes
}

// lossSentence says what the target would lack if the source died now.
func lossSentence(s *Snapshot, l loss) string {
	var b strings.Builder
	fmt.Fprintf(&b, "If %s died now, %s would lack ", s.SourceCluster, s.TargetCluster)
	if l.records == 0 && l.rpo == 0 && l.unknownParts == 0 && l.rpoUnknown == 0 && l.missing == 0 && l.mismatched == 0 {
		fmt.Fprintf(&b, "nothing: all %s caught up", count(len(s.Topics), "topic"))
	} else {
		fmt.Fprintf(&b, "%s of %s", count64(l.records, "record"), count(l.behind, "topic"))
		if l.rpo > 0 {
			fmt.Fprintf(&b, ", up to %s of data (%s)", seconds(l.rpo), l.rpoTopic)
		}
		if l.unknownParts > 0 {
			fmt.Fprintf(&b, ", and %s no figure yet", count(l.unknownParts, "partition")+agree(l.unknownParts, " has", " have"))
		}
		if l.missing > 0 {
			fmt.Fprintf(&b, "; %s missing on %s", count(l.missing, "topic")+agree(l.missing, " is", " are"), s.TargetCluster)
		}
		if l.mismatched > 0 {
			fmt.Fprintf(&b, "; %s another partition count there", count(l.mismatched, "topic")+agree(l.mismatched, " has", " have"))
		}
	}
	if l.reread > 0 {
		fmt.Fprintf(&b, "; consumer groups would re-read %s", count64(l.reread, "record"))
	}
	b.WriteString(".")
	return b.String()
}

// topicTable lists the topics, most records not replicated first.
func topicTable(s *Snapshot) model.Table {
	t := model.Table{Name: "mirror-topics", Title: "Topics, worst first",
		Columns: []model.Column{{Title: "topic"}, {Title: "remote topic"}, {Title: "records not replicated", Numeric: true},
			{Title: "RPO", Numeric: true}, {Title: "partitions (source / target)", Numeric: true}, {Title: "state"}},
		Empty: "None: the flow replicates no topic (its topics filter, MM2's internal topics left out).",
		Note:  "Records not replicated: from MM2's latest offset sync and the target's high watermark; RPO: the newest source record's timestamp minus the newest replicated one's, the largest partition's (docs/mirror.md says how exact).",
	}
	switch {
	case !s.SourceUp:
		t.Empty, t.Note = "Not read: the source cluster did not answer the last refresh.", ""
		return t
	case !s.TargetUp:
		t.Empty, t.Note = "Not read: the target cluster did not answer the last refresh.", ""
		return t
	}
	topics := make([]*Topic, len(s.Topics))
	for i := range s.Topics {
		topics[i] = &s.Topics[i]
	}
	sort.Slice(topics, func(i, j int) bool { return worseTopic(topics[i], topics[j]) })
	if len(topics) > maxViewTopics {
		behind := 0
		for _, tp := range topics[maxViewTopics:] {
			if topicState(tp) != "caught up" {
				behind++
			}
		}
		t.More = len(topics) - maxViewTopics
		t.MoreText = fmt.Sprintf("and %d more topics, %d of them behind (worst first; the figures above count them all)", t.More, behind)
		topics = topics[:maxViewTopics]
	}
	for _, tp := range topics {
		records := strconv.FormatInt(tp.NotReplicated, 10)
		if tp.Partitions > 0 && tp.Unknown >= tp.Partitions {
			records = "unknown"
		}
		rpo := "unknown"
		if tp.RPOKnown {
			rpo = seconds(tp.RPO)
		}
		remoteParts := strconv.Itoa(tp.RemotePartitions)
		if tp.Missing {
			remoteParts = "–"
		}
		state := topicState(tp)
		level := ""
		switch {
		case tp.Missing || tp.PartitionMismatch() || targetBehindSync(tp):
			level = "bad"
		case state != "caught up":
			level = "warn"
		}
		t.Rows = append(t.Rows, model.Row{Key: tp.Name, Level: level,
			Cells: []string{tp.Name, tp.Remote, records, rpo, strconv.Itoa(tp.Partitions) + " / " + remoteParts, state}})
	}
	return t
}

// worseTopic orders topics by what a failover would lose: records, then
// seconds, then trouble without a figure, then by name.
func worseTopic(a, b *Topic) bool {
	if a.NotReplicated != b.NotReplicated {
		return a.NotReplicated > b.NotReplicated
	}
	if ua, ub := !a.RPOKnown || a.Unknown > 0, !b.RPOKnown || b.Unknown > 0; ua != ub {
		return ua
	}
	if a.RPO != b.RPO {
		return a.RPO > b.RPO
	}
	if ta, tb := a.Missing || a.PartitionMismatch(), b.Missing || b.PartitionMismatch(); ta != tb {
		return ta
	}
	return a.Name < b.Name
}

// topicState says what is wrong with a topic read on both clusters, or
// "caught up".
func topicState(t *Topic) string {
	var states []string
	switch {
	case t.Missing:
		states = append(states, "missing on target")
	case t.PartitionMismatch():
		states = append(states, fmt.Sprintf("partition mismatch: %d on the target", t.RemotePartitions))
	}
	if targetBehindSync(t) {
		states = append(states, "target behind its offset sync (records lost there)")
	}
	if t.Unknown > 0 {
		states = append(states, fmt.Sprintf("%d of %d partitions unknown (no offset sync read)", t.Unknown, t.Partitions))
	}
	if len(states) == 0 && (t.NotReplicated > 0 || t.RPO > 0 || !t.RPOKnown) {
		states = append(states, "behind")
	}
	if len(states) == 0 {
		return "caught up"
	}
	return strings.Join(states, "; ")
}

// targetBehindSync reports whether a partition of a topic the target has
// holds fewer records than MM2's offset sync says it had.
func targetBehindSync(t *Topic) bool {
	if t.Missing {
		return false
	}
	for _, p := range t.Parts {
		if p.TargetBehindSync {
			return true
		}
	}
	return false
}

// groupRow is one consumer group's checkpoints over its topics.
type groupRow struct {
	name          string
	topics        []string
	reread        int64
	known, unread int
	oldest        time.Time
	partitions    int
}

// groupTable lists the consumer groups, most records to re-read first.
func groupTable(s *Snapshot) model.Table {
	t := model.Table{Name: "mirror-groups", Title: "Consumer groups, most to re-read first",
		Columns: []model.Column{{Title: "group"}, {Title: "topics"}, {Title: "records to re-read", Numeric: true},
			{Title: "oldest checkpoint", Numeric: true}, {Title: "partitions", Numeric: true}},
		Empty: "None: no consumer group has a checkpoint for a replicated topic on the target.",
		Note: "Records to re-read: what the group committed on the source since its latest checkpoint, a lower bound (unknown while its committed offsets are not read). " +
			"MM2 checkpoints only when a group's offset moves: an idle group's checkpoint ages with nothing wrong.",
	}
	if s.GroupsLeftOut > 0 {
		t.Note += fmt.Sprintf(" Only the first %d of %d groups by name are read (the flow's max_groups); %s left out.",
			s.GroupsCheckpointed-s.GroupsLeftOut, s.GroupsCheckpointed, count(s.GroupsLeftOut, "group")+agree(s.GroupsLeftOut, " is", " are"))
	}
	byName := map[string]*groupRow{}
	var rows []*groupRow
	for _, g := range s.Groups {
		r := byName[g.Group]
		if r == nil {
			r = &groupRow{name: g.Group}
			byName[g.Group] = r
			rows = append(rows, r)
		}
		r.topics = append(r.topics, g.Topic)
		r.reread += g.Reread
		if g.RereadKnown {
			r.known++
		} else {
			r.unread++
		}
		if !g.OldestCheckpoint.IsZero() && (r.oldest.IsZero() || g.OldestCheckpoint.Before(r.oldest)) {
			r.oldest = g.OldestCheckpoint
		}
		r.partitions += len(g.Partitions)
	}
	sort.Slice(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a.reread != b.reread {
			return a.reread > b.reread
		}
		if (a.unread > 0) != (b.unread > 0) {
			return a.unread > 0
		}
		if !a.oldest.Equal(b.oldest) {
			return a.oldest.Before(b.oldest)
		}
		return a.name < b.name
	})
	if len(rows) > maxViewGroups {
		t.More = len(rows) - maxViewGroups
		t.MoreText = fmt.Sprintf("and %d more groups (most to re-read first; the figures above count them all)", t.More)
		rows = rows[:maxViewGroups]
	}
	for _, r := range rows {
		reread := strconv.FormatInt(r.reread, 10)
		switch {
		case r.known == 0:
			reread = "unknown"
		case r.unread > 0:
			reread = "≥ " + reread
		}
		age := ""
		if !r.oldest.IsZero() {
			age = model.Age(s.ReadAt.Sub(r.oldest))
		}
		topics := r.topics
		if len(topics) > maxGroupTopicNames {
			topics = append(topics[:maxGroupTopicNames:maxGroupTopicNames], fmt.Sprintf("and %d more", len(r.topics)-maxGroupTopicNames))
		}
		t.Rows = append(t.Rows, model.Row{Key: r.name, Cells: []string{r.name, strings.Join(topics, ", "), reread, age, strconv.Itoa(r.partitions)}})
	}
	return t
}

// connectStat sums up the connectors' states.
func connectStat(c ConnectState) model.Stat {
	st := model.Stat{Name: "connectors", Label: "connectors", Value: "unknown", Detail: "Connect REST API not read", Level: "bad"}
	if !c.Read {
		return st
	}
	var tasks, failed, notRunning int
	for _, conn := range c.Connectors {
		if conn.State == "FAILED" {
			failed++
		} else if conn.State != "RUNNING" {
			notRunning++
		}
		for _, t := range conn.Tasks {
			tasks++
			if t.State == "FAILED" {
				failed++
			} else if t.State != "RUNNING" {
				notRunning++
			}
		}
	}
	st.Value, st.Level = "running", "good"
	st.Detail = count(len(c.Connectors), "connector") + ", " + count(tasks, "task")
	switch {
	case failed > 0:
		st.Value, st.Level = fmt.Sprintf("%d failed", failed), "bad"
	case len(c.Missing) > 0:
		st.Value, st.Level = "missing", "bad"
		st.Detail = "no " + strings.Join(c.Missing, ", ") + "; " + st.Detail
	case notRunning > 0:
		st.Value, st.Level = fmt.Sprintf("%d not running", notRunning), "warn"
	}
	return st
}

// connectNotes name each failed connector or task and why.
func connectNotes(c ConnectState) []model.Note {
	var notes []model.Note
	for _, conn := range c.Connectors {
		if conn.State == "FAILED" {
			notes = append(notes, model.Note{Level: "error", Text: fmt.Sprintf("Connector %s FAILED on %s: %s", conn.Name, conn.Worker, orNone(conn.Trace))})
		}
		for _, t := range conn.Tasks {
			if t.State == "FAILED" {
				notes = append(notes, model.Note{Level: "error", Text: fmt.Sprintf("Task %d of %s FAILED on %s: %s. It stays failed until restarted (POST /connectors/<name>/tasks/%d/restart).",
					t.ID, conn.Name, t.Worker, orNone(t.Trace), t.ID)})
			}
		}
	}
	return notes
}

func orNone(trace string) string {
	if trace == "" {
		return "no trace given"
	}
	return trace
}

// connectorTable lists the flow's connectors and their tasks' states.
func connectorTable(c ConnectState) model.Table {
	t := model.Table{Name: "mirror-connectors", Title: "Connectors (Kafka Connect REST API)",
		Columns: []model.Column{{Title: "connector"}, {Title: "kind"}, {Title: "state"}, {Title: "tasks"}, {Title: "worker"}},
		Empty:   "None: the REST API runs no connector of this flow.",
	}
	if !c.Read {
		t.Empty = "Not read: the Connect REST API did not answer at the last refresh."
		return t
	}
	for _, conn := range c.Connectors {
		byState := map[string]int{}
		level := "good"
		if conn.State != "RUNNING" {
			level = "warn"
		}
		for _, task := range conn.Tasks {
			byState[task.State]++
			if task.State != "RUNNING" && level == "good" {
				level = "warn"
			}
		}
		if conn.State == "FAILED" || byState["FAILED"] > 0 {
			level = "bad"
		}
		var tasks []string
		for _, state := range slices.Sorted(maps.Keys(byState)) {
			tasks = append(tasks, fmt.Sprintf("%d %s", byState[state], state))
		}
		if len(tasks) == 0 {
			tasks = []string{"none"}
		}
		t.Rows = append(t.Rows, model.Row{Key: conn.Name, Level: level, Cells: []string{conn.Name, conn.Kind, conn.State, strings.Join(tasks, ", "), conn.Worker}})
	}
	if len(c.Missing) > 0 {
		t.Note = "Not found: " + strings.Join(c.Missing, ", ") + "."
	}
	return t
}

// seconds writes a duration of data as the page shows RPOs: tenths below
// 10 s, where they matter ("0.4s"), else as model.Age ("2m05s").
func seconds(d time.Duration) string {
	switch {
	case d <= 0:
		return "0s"
	case d < 10*time.Second:
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + "s"
	}
	return model.Age(d)
}

// count writes "1 topic", "3 topics".
func count(n int, noun string) string { return count64(int64(n), noun) }

func count64(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.FormatInt(n, 10) + " " + noun + "s"
}

// agree picks the verb for a count: agree(n, " is", " are").
func agree(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
