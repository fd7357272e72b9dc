package redis

import (
	"sort"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/failover-exporter/failover_exporter/collector/watch"
)

const (
	namespace    = "redis_cluster"
	clusterLabel = "redis_cluster"
)

var (
	clusterLabels = []string{clusterLabel}
	nodeLabels    = []string{clusterLabel, "node_id", "address"}
)

// metricNames collects the names of the snapshot descriptors as they are
// built, because a prometheus.Desc does not expose its name.
var metricNames = []string{
	namespace + "_up",
	"redis_cluster_exporter_refresh_duration_seconds",
	"redis_cluster_exporter_last_refresh_success_timestamp_seconds",
	"redis_cluster_exporter_refreshes_total",
	"redis_cluster_exporter_refresh_failures_total",
}

func newDesc(name, help string, labels []string, extra []string) *prometheus.Desc {
	metricNames = append(metricNames, name)
	all := append(append([]string(nil), labels...), extra...)
	return prometheus.NewDesc(name, help+" As of the last refresh.", all, nil)
}

func clusterDesc(name, help string, extra ...string) *prometheus.Desc {
	return newDesc(namespace+"_"+name, help, clusterLabels, extra)
}

func nodeDesc(name, help string, extra ...string) *prometheus.Desc {
	return newDesc(namespace+"_node_"+name, help, nodeLabels, extra)
}

// Descriptors, built once.
var (
	health = watch.NewHealthDescs(namespace+"_up",
		"1 if the last refresh read the cluster topology from at least one node.", "redis_cluster_exporter", clusterLabel)

	stateOKDesc = clusterDesc("state_ok",
		"1 if every reachable master reports cluster_state:ok, 0 if any reports fail.")
	slotsDesc = clusterDesc("slots",
		"Hash slots by the state of the master owning them in the cluster's view (unassigned: no owner); the states sum to 16384.", "state")
	slotsWithoutReplicaDesc = clusterDesc("slots_without_replica",
		"Hash slots whose master has no healthy replica.")
	mastersDesc = clusterDesc("masters",
		"Masters that own at least one hash slot.")
	knownNodesDesc = clusterDesc("known_nodes",
		"Nodes in the cluster topology.")
	currentEpochDesc = clusterDesc("current_epoch",
		"Highest cluster current epoch reported by a reachable node.")
	viewsConsistentDesc = clusterDesc("views_consistent",
		"1 if all reachable nodes agree on which master owns each slot.")
	failoversDesc = clusterDesc("failovers_total",
		"Times a shard's master changed to a node that was its replica, observed by this exporter.")

	nodeInfoDesc = nodeDesc("info",
		"Always 1; role is master or replica, master_id the id of a replica's master.", "role", "master_id")
	nodeMasterDesc = nodeDesc("master",
		"1 if the node is a master, 0 if a replica.")
	nodeSlotsDesc = nodeDesc("slots",
		"Hash slots the node owns.")
	nodeReplicasDesc = nodeDesc("replicas",
		"For a master, its healthy replicas (state ok, link to the master up).")
	nodeStateDesc = nodeDesc("state",
		"1 for the node's state in the cluster's view, 0 for the other states.", "state")
	nodeLinkDesc = nodeDesc("link_connected",
		"1 if the cluster bus link to the node is connected, as another node sees it.")
	nodeConfigEpochDesc = nodeDesc("config_epoch",
		"The node's config epoch.")
	nodeMigratingDesc = nodeDesc("migrating_slots",
		"Slots the node is migrating to another node.")
	nodeImportingDesc = nodeDesc("importing_slots",
		"Slots the node is importing from another node.")
	nodeUpDesc = nodeDesc("up",
		"1 if the exporter read the node itself.")
	nodeMasterLinkDesc = nodeDesc("master_link_up",
		"For a replica, 1 if its replication link to its master is up.")
	nodeLagDesc = nodeDesc("replication_lag_bytes",
		"For a replica, its master's replication offset minus the offset the replica acknowledged.")
	nodeKeysDesc = nodeDesc("keys",
		"Keys stored on the node (DBSIZE).")
	nodeMemoryDesc = nodeDesc("memory_used_bytes",
		"Memory the node uses (used_memory).")
	nodeRoleChangesDesc = nodeDesc("role_changes_total",
		"Role changes of the node observed by this exporter.")

	snapshotDescs = []*prometheus.Desc{
		stateOKDesc, slotsDesc, slotsWithoutReplicaDesc, mastersDesc, knownNodesDesc, currentEpochDesc,
		viewsConsistentDesc, failoversDesc,
		nodeInfoDesc, nodeMasterDesc, nodeSlotsDesc, nodeReplicasDesc, nodeStateDesc, nodeLinkDesc,
		nodeConfigEpochDesc, nodeMigratingDesc, nodeImportingDesc, nodeUpDesc, nodeMasterLinkDesc,
		nodeLagDesc, nodeKeysDesc, nodeMemoryDesc, nodeRoleChangesDesc,
	}
)

// MetricNames lists every metric name the collector can emit, for the
// documentation and dashboard tests.
func MetricNames() []string {
	names := append([]string(nil), metricNames...)
	sort.Strings(names)
	return names
}

// Collector exports the current snapshot of each watched Redis Cluster. It
// only reads published snapshots, so a scrape never waits on a cluster.
type Collector struct {
	mu       sync.RWMutex
	watchers map[string]*watch.Watcher[Snapshot]
}

// NewCollector returns a collector that watches no cluster yet.
func NewCollector() *Collector {
	return &Collector{watchers: map[string]*watch.Watcher[Snapshot]{}}
}

// Set adds the cluster or replaces its watcher (after a configuration reload).
func (c *Collector) Set(name string, w *watch.Watcher[Snapshot]) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.watchers[name] = w
}

// Remove stops exporting the cluster.
func (c *Collector) Remove(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.watchers, name)
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	health.Describe(ch)
	for _, d := range snapshotDescs {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.RLock()
	names := make([]string, 0, len(c.watchers))
	for name := range c.watchers {
		names = append(names, name)
	}
	sort.Strings(names)
	states := make([]*watch.State[Snapshot], len(names))
	for i, name := range names {
		states[i] = c.watchers[name].Current()
	}
	c.mu.RUnlock()

	for i, name := range names {
		st := states[i]
		watch.Collect(health, ch, name, st)
		// A failed refresh leaves the previous snapshot in place; serving it
		// would present stale topology as current.
		if st.Up && st.Snapshot != nil {
			collectSnapshot(ch, name, st.Snapshot)
		}
	}
}

func collectSnapshot(ch chan<- prometheus.Metric, cluster string, s *Snapshot) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}

	gauge(stateOKDesc, boolValue(s.StateOK), cluster)
	gauge(slotsDesc, float64(s.SlotsOK), cluster, "ok")
	gauge(slotsDesc, float64(s.SlotsPFail), cluster, "pfail")
	gauge(slotsDesc, float64(s.SlotsFail), cluster, "fail")
	gauge(slotsDesc, float64(s.SlotsUnassigned), cluster, "unassigned")
	gauge(slotsWithoutReplicaDesc, float64(s.SlotsWithoutReplica), cluster)
	gauge(mastersDesc, float64(s.Masters), cluster)
	gauge(knownNodesDesc, float64(s.KnownNodes), cluster)
	gauge(currentEpochDesc, float64(s.CurrentEpoch), cluster)
	gauge(viewsConsistentDesc, boolValue(s.ViewsConsistent), cluster)
	counter(failoversDesc, float64(s.Failovers), cluster)

	for i := range s.Nodes {
		n := &s.Nodes[i]
		id, addr := n.ID, n.Addr
		gauge(nodeInfoDesc, 1, cluster, id, addr, string(n.Role), n.MasterID)
		gauge(nodeMasterDesc, boolValue(n.Role == RoleMaster), cluster, id, addr)
		gauge(nodeSlotsDesc, float64(n.Slots), cluster, id, addr)
		if n.Role == RoleMaster {
			gauge(nodeReplicasDesc, float64(n.HealthyReplicas), cluster, id, addr)
		}
		for _, state := range nodeStates {
			gauge(nodeStateDesc, boolValue(n.State == state), cluster, id, addr, string(state))
		}
		gauge(nodeLinkDesc, boolValue(n.LinkConnected), cluster, id, addr)
		gauge(nodeConfigEpochDesc, float64(n.ConfigEpoch), cluster, id, addr)
		gauge(nodeUpDesc, boolValue(n.Reachable), cluster, id, addr)
		counter(nodeRoleChangesDesc, float64(n.RoleChanges), cluster, id, addr)
		if n.HasReplicationLag {
			gauge(nodeLagDesc, float64(n.ReplicationLagBytes), cluster, id, addr)
		}
		if !n.Reachable {
			continue // the rest comes from the node itself
		}
		gauge(nodeMigratingDesc, float64(n.MigratingSlots), cluster, id, addr)
		gauge(nodeImportingDesc, float64(n.ImportingSlots), cluster, id, addr)
		if n.Role == RoleReplica {
			gauge(nodeMasterLinkDesc, boolValue(n.MasterLinkUp), cluster, id, addr)
		}
		gauge(nodeKeysDesc, float64(n.Keys), cluster, id, addr)
		gauge(nodeMemoryDesc, float64(n.MemoryUsed), cluster, id, addr)
	}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
