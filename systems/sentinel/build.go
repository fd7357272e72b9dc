package sentinel

import (
	"cmp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	redisproto "github.com/failover-exporter/failover_exporter/systems/redis/proto"
	"github.com/failover-exporter/failover_exporter/systems/sentinel/settings"
)

// build turns one refresh's answers into a snapshot.
func build(cfg settings.Set, views map[string]sentinelView, nodes map[string]nodeView) *Snapshot {
	snap := &Snapshot{}
	// The sentinels known: the seeds, those read, and those a sentinel
	// read lists (as Sentinel itself does until SENTINEL RESET). One read
	// before that nobody lists any more is forgotten.
	known := append(listedSentinels(views), cfg.Sentinels...)
	for a, v := range views {
		if v.err == nil {
			known = append(known, a)
		}
	}
	sort.Strings(known)
	for _, a := range slices.Compact(known) {
		st := Sentinel{Addr: a, Zone: cfg.FailureBudget.Zones[a]}
		if v, ok := views[a]; ok && v.err == nil && !v.answeredAt.IsZero() {
			st.Read = true
			snap.ReadAt = later(snap.ReadAt, v.answeredAt)
		} else if ok && v.err != nil {
			st.Error = v.err.Error()
		} else {
			st.Error = "not asked: found after the refresh's last round of discovery"
		}
		snap.Sentinels = append(snap.Sentinels, st)
	}
	for _, v := range nodes {
		snap.ReadAt = later(snap.ReadAt, v.answeredAt)
	}
	names := slices.Clone(cfg.Masters)
	for _, v := range views {
		for name := range v.masters {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range slices.Compact(names) {
		snap.Masters = append(snap.Masters, buildMaster(cfg, name, views, nodes))
	}
	return snap
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// buildMaster is one watched master: the sentinels' reports compared, and
// its data nodes as they report themselves.
func buildMaster(cfg settings.Set, name string, views map[string]sentinelView, nodes map[string]nodeView) Master {
	m := Master{Name: name, CandidateLoss: -1}
	var sentinels []string
	for _, v := range views {
		r, ok := v.masters[name]
		if !ok || v.err != nil {
			continue
		}
		m.Reports = append(m.Reports, r)
		m.ReadSentinels = append(m.ReadSentinels, v.addr)
		sentinels = append(sentinels, v.addr)
		sentinels = append(sentinels, r.Sentinels...)
		m.Quorum = max(m.Quorum, r.Quorum)
		m.DownAfter = max(m.DownAfter, r.DownAfter)
	}
	slices.SortFunc(m.Reports, func(a, b Report) int { return strings.Compare(a.Sentinel, b.Sentinel) })
	sort.Strings(m.ReadSentinels)
	sort.Strings(sentinels)
	m.KnownSentinels = slices.Compact(sentinels)
	m.Addr, m.Disagree = agreedAddr(m.Reports)

	var addrs []string
	for _, r := range m.Reports {
		addrs = append(addrs, r.Addr)
		for _, rep := range r.Replicas {
			addrs = append(addrs, rep.Addr)
		}
	}
	sort.Strings(addrs)
	for _, a := range slices.Compact(addrs) {
		m.Nodes = append(m.Nodes, readNode(a, nodes[a], cfg.FailureBudget.Zones[a]))
	}
	if master := m.node(m.Addr); master != nil && master.Read && master.Role == roleMaster {
		m.Up = true
	}
	m.judgeReplicas(nodes[m.Addr].info, cfg.FailureBudget.CaughtUpBound())
	return m
}

// agreedAddr is the master address most reports give (ties go to the
// highest config epoch, then the lowest address), and whether they differ.
func agreedAddr(reports []Report) (addr string, disagree bool) {
	count := map[string]int{}
	epoch := map[string]int64{}
	for _, r := range reports {
		count[r.Addr]++
		epoch[r.Addr] = max(epoch[r.Addr], r.ConfigEpoch)
	}
	for a := range count {
		if addr == "" || count[a] > count[addr] ||
			count[a] == count[addr] && (epoch[a] > epoch[addr] || epoch[a] == epoch[addr] && a < addr) {
			addr = a
		}
	}
	return addr, len(count) > 1
}

// Roles a node reports.
const (
	roleMaster  = "master"
	roleReplica = "replica"
)

// readNode is a data node as its INFO replication says it is.
func readNode(addr string, v nodeView, zone string) Node {
	n := Node{Addr: addr, Lag: -1, Priority: -1, Zone: zone}
	switch {
	case v.addr == "":
		n.Error = "did not answer before the refresh deadline"
		return n
	case v.err != nil:
		n.Error = v.err.Error()
		return n
	}
	f := v.info
	switch f.Value("role") {
	case "master":
		n.Role = roleMaster
		n.Offset = atoi64(f.Value("master_repl_offset"))
	case "slave", "replica":
		n.Role = roleReplica
		n.MasterAddr = hostPort(f.Value("master_host"), f.Value("master_port"))
		n.LinkUp = f.Value("master_link_status") == "up"
		if !n.LinkUp {
			n.LinkDownFor = time.Duration(atoi64(f.Value("master_link_down_since_seconds"))) * time.Second
		}
		n.Offset = atoi64(f.Value("slave_repl_offset"))
		if p, ok := f.Get("slave_priority"); ok {
			n.Priority = int(atoi64(p))
		} else if p, ok := f.Get("replica_priority"); ok {
			n.Priority = int(atoi64(p))
		}
	default:
		n.Error = "INFO replication: unknown role " + strconv.Quote(f.Value("role"))
		return n
	}
	n.Read = true
	return n
}

// judgeReplicas fills each replica's lag and whether the sentinels may
// promote it, and the candidate they would promote now, from the master's
// INFO replication (masterInfo, nil when unread) and the sentinels'
// reports. Sentinel promotes the replica of lowest priority, then highest
// offset, then lowest run id. Replicas within caughtUp bytes of the
// master are taken as equal in offset: a master's death leaves every
// replica that was streaming from it at the same final offset, and the
// few bytes one trails by at a read are in flight, not lost.
func (m *Master) judgeReplicas(masterInfo redisproto.InfoFields, caughtUp int64) {
	acked := ackedOffsets(masterInfo)
	var candidates []*Node
	for i := range m.Nodes {
		n := &m.Nodes[i]
		if n.Addr == m.Addr || !n.Read || n.Role != roleReplica || n.MasterAddr != m.Addr {
			continue
		}
		if m.Up {
			if off, ok := acked[n.Addr]; ok {
				n.Lag = max(0, m.node(m.Addr).Offset-off)
			} else {
				n.Lag = max(0, m.node(m.Addr).Offset-n.Offset)
			}
		}
		if n.Priority < 0 {
			n.Priority = m.reportedPriority(n.Addr)
		}
		n.Promotable = n.Priority > 0 && !m.flaggedDown(n.Addr) && (n.LinkUp || n.LinkDownFor <= 10*m.DownAfter)
		if n.Promotable {
			candidates = append(candidates, n)
		}
	}
	if len(candidates) == 0 {
		return
	}
	offset := func(n *Node) int64 {
		if m.Up && m.node(m.Addr).Offset-n.Offset <= caughtUp {
			return m.node(m.Addr).Offset
		}
		return n.Offset
	}
	best := slices.MinFunc(candidates, func(a, b *Node) int {
		return cmp.Or(cmp.Compare(a.Priority, b.Priority), cmp.Compare(offset(b), offset(a)), compareRunIDs(m.runID(a.Addr), m.runID(b.Addr)))
	})
	m.Candidate = best.Addr
	if m.Up {
		m.CandidateLoss = max(0, m.node(m.Addr).Offset-best.Offset)
	}
}

// compareRunIDs orders run ids as Sentinel does: lexicographically, an
// unknown one last.
func compareRunIDs(a, b string) int {
	switch {
	case a == b:
		return 0
	case a == "":
		return 1
	case b == "":
		return -1
	}
	return strings.Compare(a, b)
}

// ackedOffsets are the offsets a master's replicas acknowledged, by
// address (INFO replication's slaveN lines).
func ackedOffsets(info redisproto.InfoFields) map[string]int64 {
	out := map[string]int64{}
	for i := 0; ; i++ {
		line, ok := info.Get("slave" + strconv.Itoa(i))
		if !ok {
			return out
		}
		kv := map[string]string{}
		for _, part := range strings.Split(line, ",") {
			if k, v, ok := strings.Cut(part, "="); ok {
				kv[k] = v
			}
		}
		if a := hostPort(kv["ip"], kv["port"]); a != "" {
			out[a] = atoi64(kv["offset"])
		}
	}
}

// flaggedDown reports whether a sentinel read flags the replica down or
// disconnected: it would not promote it.
func (m *Master) flaggedDown(addr string) bool {
	for _, r := range m.Reports {
		for _, rep := range r.Replicas {
			if rep.Addr == addr && rep.Down {
				return true
			}
		}
	}
	return false
}

// reportedPriority is the replica's priority as the sentinels report it
// (the lowest), -1 when none does.
func (m *Master) reportedPriority(addr string) int {
	p := -1
	for _, r := range m.Reports {
		for _, rep := range r.Replicas {
			if rep.Addr == addr && rep.Priority >= 0 && (p < 0 || rep.Priority < p) {
				p = rep.Priority
			}
		}
	}
	return p
}

// runID is the replica's run id as a sentinel reports it.
func (m *Master) runID(addr string) string {
	for _, r := range m.Reports {
		for _, rep := range r.Replicas {
			if rep.Addr == addr && rep.RunID != "" {
				return rep.RunID
			}
		}
	}
	return ""
}
