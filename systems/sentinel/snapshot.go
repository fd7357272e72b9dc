package sentinel

import (
	"time"

	"github.com/failover-exporter/failover_exporter/collector/episode"
	"github.com/failover-exporter/failover_exporter/collector/events"
)

// Snapshot is one refresh of a Sentinel deployment: what each sentinel
// the exporter read says of every watched master, and what each data node
// says of itself. Nothing in it is taken on one sentinel's word alone: a
// node's role is the node's own (INFO replication), and the master the
// sentinels name is compared across them.
type Snapshot struct {
	// ReadAt is when the last answer of the refresh arrived; ProbedAt when
	// the refresh began (the outage clock dates failed probes by it).
	ReadAt, ProbedAt time.Time
	// Sentinels are every sentinel the exporter knows of: the seeds, and
	// the sentinels the ones it read list, by address.
	Sentinels []Sentinel
	// Masters are the watched masters, by name.
	Masters []Master
	// Events are the transitions this refresh saw (transitions.go).
	Events events.List
	// Episodes time the masters' outages (episodes.go).
	Episodes Episodes
	// Budget is what stopping each member or zone now would do
	// (budget.go), computed once per refresh.
	Budget *Budget
}

// Sentinel is one sentinel as the exporter knows it.
type Sentinel struct {
	Addr string
	// Read is true when the exporter read the sentinel this refresh.
	Read bool
	// Error is why it was not read.
	Error string
	// Zone is its availability zone (failure_budget.zones), if known.
	Zone string
}

// Master is one watched master: what the sentinels say of it, and what
// its data nodes say of themselves.
type Master struct {
	Name string
	// Reports are what each sentinel read says of the master, by the
	// sentinel's address, sorted.
	Reports []Report
	// Addr is the master's address as most sentinels read report it (ties
	// go to the highest config epoch); Disagree is true while the
	// sentinels read report more than one address.
	Addr     string
	Disagree bool
	// Settled is the last address every sentinel read agreed on: this
	// refresh's Addr when they agree, else the previous refresh's Settled.
	// A change of it is a failover; a split brain flipping sides is not.
	Settled string
	// Quorum is the highest quorum a sentinel reports; KnownSentinels the
	// sentinels known to monitor the master (read, or listed by one read),
	// ReadSentinels those the exporter read this refresh.
	Quorum                        int
	KnownSentinels, ReadSentinels []string
	// DownAfter is the down-after-milliseconds the sentinels use.
	DownAfter time.Duration
	// Nodes are the master's data nodes: every address a sentinel reports
	// as its master or a replica, and every replica the master lists.
	Nodes []Node
	// Candidate is the replica the sentinels would promote now, "" when
	// none may be; CandidateLoss what promoting it now would lose, in
	// bytes (-1 when unknown: the master or the candidate was not read).
	Candidate     string
	CandidateLoss int64
	// Up is true when the exporter read the master at Addr and it says it
	// is a master.
	Up bool
}

// Report is one sentinel's view of one master.
type Report struct {
	Sentinel string
	// Addr is what SENTINEL GET-MASTER-ADDR-BY-NAME answered: during a
	// failover, the promoted replica's address as soon as it is promoted.
	Addr string
	// Instance is the address of the instance the sentinel's flags are
	// about (SENTINEL MASTERS' ip and port): until the failover ends, the
	// old master's.
	Instance string
	// SDown, ODown and Failover are the sentinel's flags of the master.
	SDown, ODown, Failover bool
	Quorum                 int
	ConfigEpoch            int64
	// DownAfter is the sentinel's down-after-milliseconds for the master.
	DownAfter time.Duration
	// OtherSentinels is num-other-sentinels.
	OtherSentinels int
	// CKQuorum is SENTINEL CKQUORUM's verdict, CKQuorumText its words.
	CKQuorum     bool
	CKQuorumText string
	// Replicas are SENTINEL REPLICAS, by address.
	Replicas []ReplicaReport
	// Sentinels are the other sentinels it lists (SENTINEL SENTINELS).
	Sentinels []string
}

// ReplicaReport is one sentinel's view of one replica.
type ReplicaReport struct {
	Addr, RunID string
	// Down is true when the sentinel flags it s_down, o_down or
	// disconnected: the sentinel would not promote it.
	Down     bool
	Priority int
	// Offset is slave-repl-offset as the sentinel last read it.
	Offset int64
	// LinkDown is master-link-down-time.
	LinkDown time.Duration
}

// Node is one data node of a master set, as it reports itself.
type Node struct {
	Addr string
	// Read is true when the exporter read the node this refresh; Error is
	// why not.
	Read  bool
	Error string
	// Role is "master" or "replica", the node's own word.
	Role string
	// MasterAddr is a replica's master, as the replica reports it.
	MasterAddr string
	// LinkUp is a replica's master_link_status; LinkDownFor how long it
	// has been down (master_link_down_since_seconds).
	LinkUp      bool
	LinkDownFor time.Duration
	// Offset is a master's master_repl_offset, a replica's
	// slave_repl_offset.
	Offset int64
	// Lag is a replica's lag behind its master in bytes, -1 when unknown.
	Lag int64
	// Priority is a replica's replica-priority (0: never promoted), -1
	// when unknown.
	Priority int
	// Promotable is true when the sentinels may promote the replica now
	// and the exporter read it.
	Promotable bool
	// ProbeFailedSince is the start of the run of failed reads of the node
	// the exporter is in, zero while it reads it (the outage clock).
	ProbeFailedSince time.Time
	// Zone is its availability zone (failure_budget.zones), if known.
	Zone string
}

// Episodes are the masters' open outages and the histogram of the
// failovers that ended, carried from snapshot to snapshot.
type Episodes struct {
	// Open holds, by master name, the masters clients cannot write to.
	Open map[string]Outage
	// FailoverSeconds counts the failovers that ended while this exporter
	// watched, by master name.
	FailoverSeconds map[string]*episode.Histogram
	// Failovers counts the master changes observed, by master name.
	Failovers map[string]uint64
}

// Outage is a master clients cannot write to.
type Outage struct {
	episode.Open
	// From is the master's address when the outage began.
	From string
}

// master returns the watched master called name, nil when there is none.
func (s *Snapshot) master(name string) *Master {
	for i := range s.Masters {
		if s.Masters[i].Name == name {
			return &s.Masters[i]
		}
	}
	return nil
}

// node returns the master set's node at addr, nil when there is none.
func (m *Master) node(addr string) *Node {
	for i := range m.Nodes {
		if m.Nodes[i].Addr == addr {
			return &m.Nodes[i]
		}
	}
	return nil
}

// flagged reports whether a sentinel read flags the master with f.
func (m *Master) flagged(f func(Report) bool) bool {
	for _, r := range m.Reports {
		if f(r) {
			return true
		}
	}
	return false
}
