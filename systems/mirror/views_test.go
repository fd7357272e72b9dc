package mirror

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/collector/watch"
	"github.com/failover-exporter/failover_exporter/status/model"
)

// laggingFlow is flow eu → us read on both clusters: five topics in
// trouble and 20 caught up; two groups with records to re-read and 21
// idle ones.
func laggingFlow() *Snapshot {
	caughtUp := func(name string) Topic {
		return Topic{Name: name, Remote: "eu." + name, Partitions: 1, RemotePartitions: 1, RPOKnown: true,
			Parts: []Partition{{ID: 0, SourceEnd: 10, TargetEnd: 10, Lag: Lag{Known: true, Synced: true, Upstream: 5, Downstream: 5}, RPOKnown: true}}}
	}
	s := &Snapshot{
		SourceCluster: "eu", TargetCluster: "us", ReadAt: readAt, SourceUp: true, TargetUp: true,
		Topics: []Topic{
			caughtUp("a-first-by-name"),
			{Name: "audit", Remote: "eu.audit", Partitions: 3, RemotePartitions: 2, NotReplicated: 5, RPO: 400 * time.Millisecond, RPOKnown: true},
			{Name: "clicks", Remote: "eu.clicks", Partitions: 2, RemotePartitions: 2, Unknown: 1},
			{Name: "orders", Remote: "eu.orders", Partitions: 2, RemotePartitions: 2, NotReplicated: 49, RPO: 12 * time.Second, RPOKnown: true},
			{Name: "payments", Remote: "eu.payments", Partitions: 1, Missing: true, NotReplicated: 100, RPO: time.Minute, RPOKnown: true},
			{Name: "restored", Remote: "eu.restored", Partitions: 1, RemotePartitions: 1, NotReplicated: 7, RPO: 3 * time.Second, RPOKnown: true,
				Parts: []Partition{{ID: 0, SourceEnd: 57, TargetEnd: 20, Lag: Lag{Known: true, NotReplicated: 7, Synced: true, Upstream: 50, Downstream: 30, TargetBehindSync: true}}}},
		},
		Heartbeat: HeartbeatState{Known: true, Timestamp: readAt.Add(-3 * time.Second), Age: 3 * time.Second},
		Syncs:     SyncsState{Partitions: 30, Newest: readAt.Add(-time.Minute), CaughtUp: true},
		Groups: []GroupTopic{
			{Group: "billing", Topic: "orders", Reread: 25, RereadKnown: true, OldestCheckpoint: readAt.Add(-30 * time.Second), Partitions: make([]GroupPartition, 2)},
			{Group: "billing", Topic: "payments", OldestCheckpoint: readAt.Add(-90 * time.Second), Partitions: make([]GroupPartition, 1)},
			{Group: "search", Topic: "clicks", Reread: 300, RereadKnown: true, OldestCheckpoint: readAt.Add(-5 * time.Second), Partitions: make([]GroupPartition, 2)},
		},
	}
	for i := range 20 {
		s.Topics = append(s.Topics, caughtUp(fmt.Sprintf("t%02d", i)))
	}
	for i := range 21 {
		// Idle groups: the older checkpoint first among equals.
		s.Groups = append(s.Groups, GroupTopic{Group: fmt.Sprintf("idle%02d", i), Topic: "orders", RereadKnown: true,
			OldestCheckpoint: readAt.Add(-time.Duration(100-i) * time.Minute), Partitions: make([]GroupPartition, 2)})
	}
	s.Groups = append(s.Groups, GroupTopic{Group: "wide", Topic: "a-first-by-name", RereadKnown: true, Partitions: make([]GroupPartition, 1)},
		GroupTopic{Group: "wide", Topic: "audit", RereadKnown: true, Partitions: make([]GroupPartition, 3)},
		GroupTopic{Group: "wide", Topic: "orders", RereadKnown: true, Partitions: make([]GroupPartition, 2)},
		GroupTopic{Group: "wide", Topic: "t00", Reread: 1, RereadKnown: true, Partitions: make([]GroupPartition, 1)})
	return s
}

func flowView(s *Snapshot, up bool) model.Cluster {
	st := &watch.State[Snapshot]{Snapshot: s, Up: up, Refreshes: 4}
	if s != nil {
		st.LastSuccess = s.ReadAt
	}
	return Views([]watch.Named[Snapshot]{{Name: "eu-us", State: st}}, readAt.Add(2*time.Second))[0]
}

func statsByName(c model.Cluster) map[string]model.Stat {
	out := map[string]model.Stat{}
	for _, s := range c.Stats {
		out[s.Name] = s
	}
	return out
}

// column is one column of a table's rows.
func column(t model.Table, i int) []string {
	var out []string
	for _, r := range t.Rows {
		out = append(out, r.Cells[i])
	}
	return out
}

// TestViewsLaggingFlow: what an SRE reads before failing over to us.
func TestViewsLaggingFlow(t *testing.T) {
	c := flowView(laggingFlow(), true)
	if c.System != "mirror" || c.Name != "eu-us" {
		t.Errorf("part %+v, want mirror eu-us with only generic parts", c)
	}
	if c.Title != "Cross-cluster replication eu-us: eu → us" {
		t.Errorf("title %q", c.Title)
	}
	if h := *c.Head; h != (model.Head{Up: true, HasData: true, LastOK: "2s ago", Refreshes: 4}) {
		t.Errorf("head %+v", h)
	}
	want := map[string]model.Stat{
		"replication":    {Name: "replication", Label: "replication", Value: "up", Detail: "heartbeat 3.0s old", Level: "good"},
		"clusters":       {Name: "clusters", Label: "clusters read", Value: "both", Detail: "source eu, target us", Level: "good"},
		"not-replicated": {Name: "not-replicated", Label: "records not replicated", Value: "161", Detail: "in 4 of 26 topics; 1 partition unknown", Level: "bad"},
		"rpo":            {Name: "rpo", Label: "worst RPO", Value: "1m00s", Detail: "topic payments; 1 topic unknown", Level: "warn"},
		"missing":        {Name: "missing", Label: "topics missing on target", Value: "1", Detail: "of 26; 1 with other partition counts", Level: "bad"},
		"reread":         {Name: "reread", Label: "records groups would re-read", Value: "≥ 326", Detail: "24 groups; 1 group topic not read"},
		"offset-syncs":   {Name: "offset-syncs", Label: "offset syncs", Value: "caught up", Detail: "30 partitions synced", Level: "good"},
	}
	if got := statsByName(c); !reflect.DeepEqual(got, want) {
		for name := range want {
			if got[name] != want[name] {
				t.Errorf("stat %s:\n got %+v\nwant %+v", name, got[name], want[name])
			}
		}
	}
	if len(c.Notes) != 1 || !reflect.DeepEqual(c.Notes[0], model.Note{Text: "If eu died now, us would lack 161 records of 4 topics, up to 1m00s of data (payments), and 1 partition has no figure yet; " +
		"1 topic is missing on us; 1 topic has another partition count there; consumer groups would re-read 326 records."}) {
		t.Errorf("notes %+v", c.Notes)
	}
	if len(c.Tables) != 2 {
		t.Fatalf("%d tables, want topics and groups", len(c.Tables))
	}

	topics := c.Tables[0]
	wantTopics := append([]string{"payments", "orders", "restored", "audit", "clicks", "a-first-by-name"},
		"t00", "t01", "t02", "t03", "t04", "t05", "t06", "t07", "t08", "t09", "t10", "t11", "t12", "t13")
	if got := column(topics, 0); !reflect.DeepEqual(got, wantTopics) {
		t.Errorf("topics, worst first:\n got %q\nwant %q", got, wantTopics)
	}
	if topics.More != 6 || topics.MoreText != "and 6 more topics, 0 of them behind (worst first; the figures above count them all)" {
		t.Errorf("more: %d %q", topics.More, topics.MoreText)
	}
	for i, want := range []model.Row{
		{Key: "payments", Level: "bad", Cells: []string{"payments", "eu.payments", "100", "1m00s", "1 / –", "missing on target"}},
		{Key: "orders", Level: "warn", Cells: []string{"orders", "eu.orders", "49", "12s", "2 / 2", "behind"}},
		{Key: "restored", Level: "bad", Cells: []string{"restored", "eu.restored", "7", "3.0s", "1 / 1", "target behind its offset sync (records lost there)"}},
		{Key: "audit", Level: "bad", Cells: []string{"audit", "eu.audit", "5", "0.4s", "3 / 2", "partition mismatch: 2 on the target"}},
		{Key: "clicks", Level: "warn", Cells: []string{"clicks", "eu.clicks", "0", "unknown", "2 / 2", "1 of 2 partitions unknown (no offset sync read)"}},
		{Key: "a-first-by-name", Cells: []string{"a-first-by-name", "eu.a-first-by-name", "0", "0s", "1 / 1", "caught up"}},
	} {
		if got := topics.Rows[i]; !reflect.DeepEqual(got, want) {
			t.Errorf("topic row %d:\n got %+v\nwant %+v", i, got, want)
		}
	}

	groups := c.Tables[1]
	wantGroups := []string{"search", "billing", "wide"}
	for i := range 17 {
		wantGroups = append(wantGroups, fmt.Sprintf("idle%02d", i)) // oldest checkpoint first
	}
	if got := column(groups, 0); !reflect.DeepEqual(got, wantGroups) {
		t.Errorf("groups, most to re-read first:\n got %q\nwant %q", got, wantGroups)
	}
	if groups.More != 4 || groups.MoreText != "and 4 more groups (most to re-read first; the figures above count them all)" {
		t.Errorf("more: %d %q", groups.More, groups.MoreText)
	}
	for i, want := range []model.Row{
		{Key: "search", Cells: []string{"search", "clicks", "300", "5s", "2"}},
		{Key: "billing", Cells: []string{"billing", "orders, payments", "≥ 25", "1m30s", "3"}},
		{Key: "wide", Cells: []string{"wide", "a-first-by-name, audit, orders, and 1 more", "1", "", "7"}},
		{Key: "idle00", Cells: []string{"idle00", "orders", "0", "1h40m", "2"}},
	} {
		if got := groups.Rows[i]; !reflect.DeepEqual(got, want) {
			t.Errorf("group row %d:\n got %+v\nwant %+v", i, got, want)
		}
	}
}

// TestViewsSourceGone: the source died; the target still says how old
// the newest replicated data is and where groups would resume.
func TestViewsSourceGone(t *testing.T) {
	s := laggingFlow()
	s.SourceUp, s.Topics, s.Stalled = false, nil, true
	s.Heartbeat = HeartbeatState{Known: true, Timestamp: readAt.Add(-95 * time.Second), Age: 95 * time.Second}
	for i := range s.Groups {
		s.Groups[i].Reread, s.Groups[i].RereadKnown = 0, false
	}
	c := flowView(s, true)
	stats := statsByName(c)
	for name, want := range map[string]string{
		"replication":    "stalled heartbeat 1m35s old bad",
		"clusters":       "target only source eu, target us bad",
		"not-replicated": "unknown source not read bad",
		"rpo":            "unknown source not read; heartbeat 1m35s old bad",
		"reread":         "unknown 24 groups; committed offsets not read warn",
	} {
		if got := stats[name]; got.Value+" "+got.Detail+" "+got.Level != want {
			t.Errorf("stat %s: %q %q %q, want %s", name, got.Value, got.Detail, got.Level, want)
		}
	}
	if _, ok := stats["missing"]; ok {
		t.Errorf("missing topics counted without the source's topic list")
	}
	if len(c.Notes) != 1 || !reflect.DeepEqual(c.Notes[0], model.Note{Level: "error", Text: "Source eu was not read in the last refresh: what us lacks is unknown. " +
		"Its newest heartbeat on us is 1m35s old: the flow's RPO as far as the target knows."}) {
		t.Errorf("notes %+v", c.Notes)
	}
	if tb := c.Tables[0]; len(tb.Rows) != 0 || tb.Empty != "Not read: the source cluster did not answer the last refresh." {
		t.Errorf("topic table %+v", tb)
	}
	if got := column(c.Tables[1], 2)[:3]; !reflect.DeepEqual(got, []string{"unknown", "unknown", "unknown"}) {
		t.Errorf("records to re-read without the source: %q", got)
	}
}

// TestViewsTargetGone: without the target nothing is known to be missing
// or behind, and the flow's state is unknown.
func TestViewsTargetGone(t *testing.T) {
	s := laggingFlow()
	s.TargetUp, s.Heartbeat = false, HeartbeatState{}
	for i := range s.Topics {
		tp := &s.Topics[i]
		// As topicLags leaves them without the target.
		tp.Missing, tp.RemotePartitions, tp.NotReplicated, tp.Unknown, tp.RPOKnown, tp.Parts = false, 0, 0, tp.Partitions, false, nil
	}
	c := flowView(s, true)
	stats := statsByName(c)
	for name, want := range map[string]string{
		"replication":    "unknown target not read bad",
		"clusters":       "source only source eu, target us bad",
		"not-replicated": "unknown target not read bad",
		"rpo":            "unknown target not read bad",
	} {
		if got := stats[name]; got.Value+" "+got.Detail+" "+got.Level != want {
			t.Errorf("stat %s: %q %q %q, want %s", name, got.Value, got.Detail, got.Level, want)
		}
	}
	if _, ok := stats["missing"]; ok {
		t.Errorf("topics counted missing on a target not read")
	}
	if len(c.Notes) != 1 || c.Notes[0].Level != "error" || c.Notes[0].Text != "Target us was not read in the last refresh: what it lacks is unknown." {
		t.Errorf("notes %+v", c.Notes)
	}
	if tb := c.Tables[0]; len(tb.Rows) != 0 || !strings.Contains(tb.Empty, "target cluster did not answer") {
		t.Errorf("topic table %+v", tb)
	}
}

// TestViewsCaughtUp: a healthy flow says so in a sentence.
func TestViewsCaughtUp(t *testing.T) {
	s := &Snapshot{SourceCluster: "eu", TargetCluster: "us", ReadAt: readAt, SourceUp: true, TargetUp: true,
		Topics:    []Topic{{Name: "orders", Remote: "eu.orders", Partitions: 1, RemotePartitions: 1, RPOKnown: true}},
		Heartbeat: HeartbeatState{Known: true, Age: 1500 * time.Millisecond},
		Syncs:     SyncsState{Partitions: 1},
	}
	c := flowView(s, true)
	if len(c.Notes) != 2 || c.Notes[0].Text != "If eu died now, us would lack nothing: all 1 topic caught up." ||
		!reflect.DeepEqual(c.Notes[1], model.Note{Level: "warn", Text: "The offset-syncs topic is not read to its end yet: records not replicated may lack partitions."}) {
		t.Errorf("notes %+v", c.Notes)
	}
	stats := statsByName(c)
	if r := stats["replication"]; r.Value != "up" || r.Detail != "heartbeat 1.5s old" || r.Level != "good" {
		t.Errorf("replication %+v", r)
	}
	if r := stats["reread"]; r.Value != "0" || r.Detail != "no checkpointed groups" {
		t.Errorf("reread %+v", r)
	}
	if r := stats["offset-syncs"]; r.Value != "reading" || r.Level != "warn" {
		t.Errorf("offset syncs %+v", r)
	}
	if tb := c.Tables[1]; len(tb.Rows) != 0 || tb.Empty == "" {
		t.Errorf("group table %+v", tb)
	}
}

// TestViewsNotReadYet: before the first refresh the section has its head
// and a title without cluster names.
func TestViewsNotReadYet(t *testing.T) {
	c := flowView(nil, false)
	if c.Title != "Cross-cluster replication eu-us" || c.Head == nil || c.Head.HasData || c.Stats != nil || c.Tables != nil {
		t.Errorf("part %+v", c)
	}
}

// TestViewsBounded: a flow of 100,000 topics and 10,000 groups makes a
// page part of 20 rows each.
func TestViewsBounded(t *testing.T) {
	s := &Snapshot{SourceCluster: "eu", TargetCluster: "us", ReadAt: readAt, SourceUp: true, TargetUp: true, Syncs: SyncsState{CaughtUp: true}}
	for i := range 100_000 {
		s.Topics = append(s.Topics, Topic{Name: fmt.Sprintf("t%06d", i), Partitions: 1, RemotePartitions: 1, NotReplicated: int64(i % 1000), RPOKnown: true})
	}
	for i := range 10_000 {
		s.Groups = append(s.Groups, GroupTopic{Group: fmt.Sprintf("g%05d", i), Topic: "t000001", Reread: int64(i), RereadKnown: true})
	}
	start := time.Now()
	c := flowView(s, true)
	t.Logf("FIGURE mirror view of 100,000 topics and 10,000 groups: %s", time.Since(start).Round(time.Millisecond))
	topics, groups := c.Tables[0], c.Tables[1]
	if len(topics.Rows) != maxViewTopics || topics.More != 100_000-maxViewTopics || topics.Rows[0].Cells[2] != "999" {
		t.Errorf("topics: %d rows, %d more, first %q", len(topics.Rows), topics.More, topics.Rows[0].Cells)
	}
	if !strings.HasPrefix(topics.MoreText, "and 99980 more topics, 99880 of them behind") {
		t.Errorf("more: %q", topics.MoreText)
	}
	if len(groups.Rows) != maxViewGroups || groups.More != 10_000-maxViewGroups || groups.Rows[0].Key != "g09999" {
		t.Errorf("groups: %d rows, %d more, first %q", len(groups.Rows), groups.More, groups.Rows[0].Key)
	}
	if strings.Contains(groups.Note, "max_groups") {
		t.Errorf("groups note speaks of groups left out, none was: %q", groups.Note)
	}
	s.GroupsCheckpointed, s.GroupsLeftOut = 10_005, 5
	if note := flowView(s, true).Tables[1].Note; !strings.Contains(note, "Only the first 10000 of 10005 groups by name are read (the flow's max_groups); 5 groups are left out.") {
		t.Errorf("groups note: %q", note)
	}
}
