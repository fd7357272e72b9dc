package sentinel

import (
	"fmt"
	"strings"

	"github.com/failover-exporter/failover_exporter/collector/system"
	"github.com/failover-exporter/failover_exporter/status/model"
)

// maxRows bounds each table of the status page; the rest are counted.
const maxRows = 100

// Views are the status page's parts of the deployments: per master its
// address and whether the sentinels agree, its nodes, and the sentinels.
var Views = system.Views("sentinel", "Redis Sentinel ", func(c *model.Cluster, s *Snapshot) {
	c.Stats = stats(s)
	c.Tables = []model.Table{mastersTable(s), sentinelsTable(s)}
})

// stats are the summary row: masters, how many are writable, sentinels read.
func stats(s *Snapshot) []model.Stat {
	writable, disagree := 0, 0
	for i := range s.Masters {
		if s.Masters[i].writable() && s.Masters[i].Up {
			writable++
		}
		if s.Masters[i].Disagree {
			disagree++
		}
	}
	read := 0
	for _, st := range s.Sentinels {
		if st.Read {
			read++
		}
	}
	return []model.Stat{
		{Name: "masters", Label: "masters writable", Value: fmt.Sprintf("%d / %d", writable, len(s.Masters)), Level: levelOf(writable == len(s.Masters))},
		{Name: "disagree", Label: "sentinels disagree", Value: fmt.Sprint(disagree), Level: levelOf(disagree == 0)},
		{Name: "sentinels", Label: "sentinels read", Value: fmt.Sprintf("%d / %d", read, len(s.Sentinels)), Level: levelOf(read == len(s.Sentinels))},
	}
}

func levelOf(good bool) string {
	if good {
		return "good"
	}
	return "bad"
}

// mastersTable lists each master, then its replicas indented under it.
func mastersTable(s *Snapshot) model.Table {
	t := model.Table{Name: "sentinel-masters", Title: "Masters and their replicas", Empty: "No master watched.",
		Columns: []model.Column{{Title: "master"}, {Title: "address", Code: true}, {Title: "role"}, {Title: "sentinels say"}, {Title: "lag", Numeric: true}, {Title: "would be promoted"}}}
	for i := range s.Masters {
		m := &s.Masters[i]
		say := m.Addr
		if m.Disagree {
			say = "disagree: " + reportedAddrs(m)
		}
		if o, ok := s.Episodes.Open[m.Name]; ok {
			say += fmt.Sprintf("; not writable for %s", o.Age(s.ReadAt).Round(1e9))
		}
		t.Rows = append(t.Rows, model.Row{Key: m.Name, Level: levelOf(m.Up && m.writable() && !m.Disagree),
			Cells: []string{m.Name, m.Addr, nodeRole(m.node(m.Addr)), say, "", lossText(m)}})
		for j := range m.Nodes {
			n := &m.Nodes[j]
			if n.Addr == m.Addr {
				continue
			}
			lag := ""
			if n.Lag >= 0 {
				lag = fmt.Sprintf("%d B", n.Lag)
			}
			promote := ""
			if n.Addr == m.Candidate {
				promote = "yes"
			}
			t.Rows = append(t.Rows, model.Row{Key: m.Name + "/" + n.Addr, Indent: true, Level: levelOf(n.Read && (n.LinkUp || n.Role == roleMaster)),
				Cells: []string{"", n.Addr, nodeRole(n), "", lag, promote}})
		}
	}
	if len(t.Rows) > maxRows {
		t.More, t.Rows = len(t.Rows)-maxRows, t.Rows[:maxRows]
		t.MoreText = fmt.Sprintf("and %d more rows", t.More)
	}
	return t
}

// nodeRole is what the node says it is, or why it is unknown.
func nodeRole(n *Node) string {
	switch {
	case n == nil:
		return "unknown"
	case !n.Read:
		return "not read: " + n.Error
	case n.Role == roleReplica && !n.LinkUp:
		return "replica of " + n.MasterAddr + ", link down"
	}
	return roleText(n)
}

// lossText says which replica a failover now would promote, and what it
// would lose.
func lossText(m *Master) string {
	switch {
	case m.Candidate == "":
		return "none could be"
	case m.CandidateLoss >= 0:
		return fmt.Sprintf("%s, losing %d B", m.Candidate, m.CandidateLoss)
	}
	return m.Candidate
}

// sentinelsTable lists the sentinels.
func sentinelsTable(s *Snapshot) model.Table {
	t := model.Table{Name: "sentinels", Title: "Sentinels", Columns: []model.Column{{Title: "address", Code: true}, {Title: "state"}, {Title: "stop now"}}}
	for _, st := range s.Sentinels {
		state := "read"
		if !st.Read {
			state = "not read: " + st.Error
		}
		stop := ""
		if s.Budget != nil {
			if a, ok := s.Budget.Sentinels[st.Addr]; ok {
				stop = "safe"
				if !a.Safe {
					var why []string
					for _, f := range a.Findings {
						why = append(why, string(f.Reason))
					}
					stop = "unsafe: " + strings.Join(why, ", ")
				}
			}
		}
		t.Rows = append(t.Rows, model.Row{Key: st.Addr, Level: levelOf(st.Read), Cells: []string{st.Addr, state, stop}})
	}
	if len(t.Rows) > maxRows {
		t.More, t.Rows = len(t.Rows)-maxRows, t.Rows[:maxRows]
		t.MoreText = fmt.Sprintf("and %d more sentinels", t.More)
	}
	return t
}
