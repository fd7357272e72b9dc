package status

import (
	"fmt"
	"html"
	"strings"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/collector/watch"
	"github.com/failover-exporter/failover_exporter/status/model"
	"github.com/failover-exporter/failover_exporter/systems/mirror"
)

// TestPageShowsAMirrorFlow: a flow's section, built by mirror.Views from a
// snapshot, answers "if eu died now, what would us lack" on the page.
func TestPageShowsAMirrorFlow(t *testing.T) {
	readAt := t0.Add(40 * time.Second)
	s := &mirror.Snapshot{SourceCluster: "eu", TargetCluster: "us", ReadAt: readAt, SourceUp: true, TargetUp: true,
		Topics: []mirror.Topic{
			{Name: "orders", Remote: "eu.orders", Partitions: 2, RemotePartitions: 2, NotReplicated: 49, RPO: 12 * time.Second, RPOKnown: true},
			{Name: "payments", Remote: "eu.payments", Partitions: 1, Missing: true, NotReplicated: 100, RPO: time.Minute, RPOKnown: true},
			{Name: `<img src=x onerror=alert(1)>`, Remote: "eu.x", Partitions: 1, RemotePartitions: 1, RPOKnown: true},
		},
		Heartbeat: mirror.HeartbeatState{Known: true, Timestamp: readAt.Add(-3 * time.Second), Age: 3 * time.Second},
		Syncs:     mirror.SyncsState{Partitions: 3, CaughtUp: true},
		Groups: []mirror.GroupTopic{{Group: "billing", Topic: "orders", Reread: 25, RereadKnown: true, OldestCheckpoint: readAt.Add(-30 * time.Second),
			Partitions: make([]mirror.GroupPartition, 2)}},
	}
	for i := range 30 {
		s.Topics = append(s.Topics, mirror.Topic{Name: fmt.Sprintf("quiet%02d", i), Remote: fmt.Sprintf("eu.quiet%02d", i), Partitions: 1, RemotePartitions: 1, RPOKnown: true})
	}
	p := modelPage(nil)
	p.Sources.Clusters = func(now time.Time) []model.Cluster {
		return mirror.Views([]watch.Named[mirror.Snapshot]{{Name: "eu-us", State: &watch.State[mirror.Snapshot]{Snapshot: s, Up: true, LastSuccess: readAt}}}, now)
	}
	_, body := render(t, p, "/")
	secs := sectionsOf(t, body)
	if len(secs) != 1 || secs[0].system != "mirror" || secs[0].name != "eu-us" {
		t.Fatalf("sections %+v", secs)
	}
	sec := secs[0].body
	for _, want := range []string{
		`<h2>Cross-cluster replication eu-us: eu → us</h2>`,
		`data-stat="up">refresh<b>up</b>last ok 1s ago</div>`,
		`<div class="stat good" data-stat="replication">replication<b>up</b>heartbeat 3.0s old</div>`,
		`<div class="stat bad" data-stat="not-replicated">records not replicated<b>149</b>in 2 of 33 topics</div>`,
		`<div class="stat warn" data-stat="rpo">worst RPO<b>1m00s</b>topic payments</div>`,
		`<div class="stat bad" data-stat="missing">topics missing on target<b>1</b>of 33; 0 with other partition counts</div>`,
		`<div class="stat" data-stat="reread">records groups would re-read<b>25</b>1 group</div>`,
		`<p data-note>If eu died now, us would lack 149 records of 2 topics, up to 1m00s of data (payments); 1 topic is missing on us; consumer groups would re-read 25 records.</p>`,
		`<h3>Topics, worst first</h3>`,
		`<tr data-row="payments" class="bad"><td>payments</td><td>eu.payments</td><td class="num">100</td><td class="num">1m00s</td><td class="num">1 / –</td><td>missing on target</td></tr>`,
		`<tr data-row="orders" class="warn"><td>orders</td><td>eu.orders</td><td class="num">49</td><td class="num">12s</td><td class="num">2 / 2</td><td>behind</td></tr>`,
		`<p class="more">and 13 more topics, 0 of them behind (worst first; the figures above count them all)</p>`,
		`<h3>Consumer groups, most to re-read first</h3>`,
		`<tr data-row="billing"><td>billing</td><td>orders</td><td class="num">25</td><td class="num">30s</td><td class="num">2</td></tr>`,
		`&lt;img src=x onerror=alert(1)&gt;`,
	} {
		if !strings.Contains(sec, want) {
			t.Errorf("section lacks %s", want)
		}
	}
	if strings.Contains(sec, "<img") {
		t.Errorf("a topic name was not escaped")
	}
	if n := strings.Count(sec, `<tr data-row=`); n != 21 {
		t.Errorf("%d rows, want 20 topics and 1 group", n)
	}
	// Worst first, as an SRE reads down the table.
	text := html.UnescapeString(sec)
	if i, j := strings.Index(text, `data-row="payments"`), strings.Index(text, `data-row="orders"`); i < 0 || j < i {
		t.Errorf("topics not worst first")
	}
}
