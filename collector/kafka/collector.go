package kafka

import (
	"slices"
	"sort"
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/failover-exporter/failover_exporter/collector/watch"
)

const clusterLabel = "kafka_cluster"

// fromRefresh is appended to every HELP text: values are read by the
// background refresh, not at scrape time.
const fromRefresh = " (as of the last successful refresh)."

type descs struct {
	health watch.HealthDescs

	partitionLeader            *prometheus.Desc
	partitionReplicas          *prometheus.Desc
	partitionISR               *prometheus.Desc
	partitionOfflineReplicas   *prometheus.Desc
	partitionUnderReplicated   *prometheus.Desc
	partitionUnderMinISR       *prometheus.Desc
	partitionAtMinISR          *prometheus.Desc
	partitionOffline           *prometheus.Desc
	partitionLeaderIsPreferred *prometheus.Desc
	partitionLeaderChanges     *prometheus.Desc
	partitionISRShrinks        *prometheus.Desc
	partitionISRExpands        *prometheus.Desc

	topicPartitions        *prometheus.Desc
	topicReplicationFactor *prometheus.Desc
	topicMinISR            *prometheus.Desc
	topicUnderReplicated   *prometheus.Desc
	topicUnderMinISR       *prometheus.Desc
	topicAtMinISR          *prometheus.Desc
	topicOffline           *prometheus.Desc

	brokerUp                *prometheus.Desc
	brokerInfo              *prometheus.Desc
	brokerLeaderPartitions  *prometheus.Desc
	brokerReplicaPartitions *prometheus.Desc
	brokerOutOfSync         *prometheus.Desc

	clusterBrokers         *prometheus.Desc
	clusterExpectedBrokers *prometheus.Desc
}

// metricNames lists every metric name, filled as descriptors are built.
var metricNames []string

func newDesc(name, help string, labels ...string) *prometheus.Desc {
	metricNames = append(metricNames, name)
	return prometheus.NewDesc(name, help, append([]string{clusterLabel}, labels...), nil)
}

var d = func() descs {
	partition := []string{"topic", "partition"}
	topic := []string{"topic"}
	broker := []string{"broker"}
	x := descs{
		health: watch.NewHealthDescs("kafka_up",
			"1 if the last refresh of this Kafka cluster succeeded, else 0. While 0, partition, topic and broker series are not served.",
			"kafka_exporter", clusterLabel),

		partitionLeader: newDesc("kafka_partition_leader",
			"Broker ID of the partition's leader, -1 when it has none"+fromRefresh, partition...),
		partitionReplicas: newDesc("kafka_partition_replicas",
			"Number of replicas assigned to the partition"+fromRefresh, partition...),
		partitionISR: newDesc("kafka_partition_in_sync_replicas",
			"Number of replicas in the partition's in-sync replica set (ISR)"+fromRefresh, partition...),
		partitionOfflineReplicas: newDesc("kafka_partition_offline_replicas",
			"Number of the partition's assigned replicas on brokers that are down or on offline log directories"+fromRefresh, partition...),
		partitionUnderReplicated: newDesc("kafka_partition_under_replicated",
			"1 if the ISR is smaller than the assigned replicas"+fromRefresh, partition...),
		partitionUnderMinISR: newDesc("kafka_partition_under_min_isr",
			"1 if the ISR is smaller than the topic's effective min.insync.replicas, so acks=all writes fail"+fromRefresh, partition...),
		partitionAtMinISR: newDesc("kafka_partition_at_min_isr",
			"1 if the ISR equals the topic's effective min.insync.replicas, so one more loss blocks acks=all writes"+fromRefresh, partition...),
		partitionOffline: newDesc("kafka_partition_offline",
			"1 if the partition has no leader"+fromRefresh, partition...),
		partitionLeaderIsPreferred: newDesc("kafka_partition_leader_is_preferred",
			"1 if the leader is the first assigned (preferred) replica"+fromRefresh, partition...),
		partitionLeaderChanges: newDesc("kafka_partition_leader_changes_total",
			"Leader changes this exporter observed between consecutive refreshes, including to and from no leader.", partition...),
		partitionISRShrinks: newDesc("kafka_partition_isr_shrinks_total",
			"Refreshes in which this exporter observed the partition's ISR lose members.", partition...),
		partitionISRExpands: newDesc("kafka_partition_isr_expands_total",
			"Refreshes in which this exporter observed the partition's ISR gain members.", partition...),

		topicPartitions: newDesc("kafka_topic_partitions",
			"Number of partitions of the topic"+fromRefresh, topic...),
		topicReplicationFactor: newDesc("kafka_topic_replication_factor",
			"Replication factor of the topic (largest replica count of its partitions)"+fromRefresh, topic...),
		topicMinISR: newDesc("kafka_topic_min_insync_replicas",
			"Effective min.insync.replicas of the topic: its override, else the broker or cluster default"+fromRefresh, topic...),
		topicUnderReplicated: newDesc("kafka_topic_under_replicated_partitions",
			"Partitions of the topic whose ISR is smaller than their assigned replicas"+fromRefresh, topic...),
		topicUnderMinISR: newDesc("kafka_topic_under_min_isr_partitions",
			"Partitions of the topic whose ISR is below min.insync.replicas"+fromRefresh, topic...),
		topicAtMinISR: newDesc("kafka_topic_at_min_isr_partitions",
			"Partitions of the topic whose ISR equals min.insync.replicas"+fromRefresh, topic...),
		topicOffline: newDesc("kafka_topic_offline_partitions",
			"Partitions of the topic without a leader"+fromRefresh, topic...),

		brokerUp: newDesc("kafka_broker_up",
			"1 if the broker is registered and live, 0 if replicas are assigned to it but it is not"+fromRefresh, broker...),
		brokerInfo: newDesc("kafka_broker_info",
			"Always 1; carries the broker's advertised address and rack (last known address for a broker that is down)"+fromRefresh,
			"broker", "address", "rack"),
		brokerLeaderPartitions: newDesc("kafka_broker_leader_partitions",
			"Partitions this broker leads, across all topics"+fromRefresh, broker...),
		brokerReplicaPartitions: newDesc("kafka_broker_replica_partitions",
			"Partition replicas assigned to this broker, across all topics"+fromRefresh, broker...),
		brokerOutOfSync: newDesc("kafka_broker_out_of_sync_replicas",
			"Replicas on this broker that are not in their partition's ISR, across all topics"+fromRefresh, broker...),

		clusterBrokers: newDesc("kafka_cluster_brokers",
			"Live brokers"+fromRefresh),
		clusterExpectedBrokers: newDesc("kafka_cluster_expected_brokers",
			"Brokers that are live or hold replica assignments; fewer live than expected means brokers are down"+fromRefresh),
	}
	metricNames = append(metricNames, "kafka_up", "kafka_exporter_refresh_duration_seconds",
		"kafka_exporter_last_refresh_success_timestamp_seconds", "kafka_exporter_refreshes_total",
		"kafka_exporter_refresh_failures_total")
	sort.Strings(metricNames)
	return x
}()

// MetricNames returns every metric name the Kafka collector can emit.
func MetricNames() []string { return slices.Clone(metricNames) }

type watchedCluster struct {
	watcher          *watch.Watcher[Snapshot]
	partitionMetrics bool
}

// Collector serves the latest snapshot of every watched Kafka cluster. It
// never talks to a cluster: Collect only reads published snapshots.
type Collector struct {
	mu       sync.RWMutex
	clusters map[string]watchedCluster
}

// NewCollector returns a collector with no clusters.
func NewCollector() *Collector {
	return &Collector{clusters: map[string]watchedCluster{}}
}

// Set adds or replaces the watcher of the cluster called name.
func (c *Collector) Set(name string, w *watch.Watcher[Snapshot], partitionMetrics bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.clusters[name] = watchedCluster{watcher: w, partitionMetrics: partitionMetrics}
}

// Remove stops serving the cluster called name.
func (c *Collector) Remove(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.clusters, name)
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	d.health.Describe(ch)
	for _, x := range []*prometheus.Desc{
		d.partitionLeader, d.partitionReplicas, d.partitionISR, d.partitionOfflineReplicas,
		d.partitionUnderReplicated, d.partitionUnderMinISR, d.partitionAtMinISR, d.partitionOffline,
		d.partitionLeaderIsPreferred, d.partitionLeaderChanges, d.partitionISRShrinks, d.partitionISRExpands,
		d.topicPartitions, d.topicReplicationFactor, d.topicMinISR, d.topicUnderReplicated,
		d.topicUnderMinISR, d.topicAtMinISR, d.topicOffline,
		d.brokerUp, d.brokerInfo, d.brokerLeaderPartitions, d.brokerReplicaPartitions, d.brokerOutOfSync,
		d.clusterBrokers, d.clusterExpectedBrokers,
	} {
		ch <- x
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.RLock()
	names := make([]string, 0, len(c.clusters))
	for name := range c.clusters {
		names = append(names, name)
	}
	clusters := make([]watchedCluster, 0, len(names))
	sort.Strings(names)
	for _, name := range names {
		clusters = append(clusters, c.clusters[name])
	}
	c.mu.RUnlock()

	for i, name := range names {
		state := clusters[i].watcher.Current()
		watch.Collect(d.health, ch, name, state)
		// A snapshot from before a failed refresh is not served as current.
		if !state.Up || state.Snapshot == nil {
			continue
		}
		collectSnapshot(ch, name, state.Snapshot, clusters[i].partitionMetrics)
	}
}

func gauge(ch chan<- prometheus.Metric, desc *prometheus.Desc, v float64, labels ...string) {
	ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v, labels...)
}

func counter(ch chan<- prometheus.Metric, desc *prometheus.Desc, v uint64, labels ...string) {
	ch <- prometheus.MustNewConstMetric(desc, prometheus.CounterValue, float64(v), labels...)
}

func bool01(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func collectSnapshot(ch chan<- prometheus.Metric, cluster string, s *Snapshot, partitionMetrics bool) {
	gauge(ch, d.clusterBrokers, float64(s.LiveBrokers()), cluster)
	gauge(ch, d.clusterExpectedBrokers, float64(len(s.Brokers)), cluster)
	for i := range s.Brokers {
		b := &s.Brokers[i]
		id := brokerLabel(b.ID)
		gauge(ch, d.brokerUp, bool01(b.Up), cluster, id)
		gauge(ch, d.brokerInfo, 1, cluster, id, b.Address, b.Rack)
		gauge(ch, d.brokerLeaderPartitions, float64(b.LeaderPartitions), cluster, id)
		gauge(ch, d.brokerReplicaPartitions, float64(b.ReplicaPartitions), cluster, id)
		gauge(ch, d.brokerOutOfSync, float64(b.OutOfSyncReplicas), cluster, id)
	}
	for ti := range s.Topics {
		t := &s.Topics[ti]
		gauge(ch, d.topicPartitions, float64(len(t.Partitions)), cluster, t.Name)
		gauge(ch, d.topicReplicationFactor, float64(t.ReplicationFactor), cluster, t.Name)
		gauge(ch, d.topicUnderReplicated, float64(t.UnderReplicated), cluster, t.Name)
		gauge(ch, d.topicOffline, float64(t.Offline), cluster, t.Name)
		if t.MinISR > 0 {
			gauge(ch, d.topicMinISR, float64(t.MinISR), cluster, t.Name)
			gauge(ch, d.topicUnderMinISR, float64(t.UnderMinISR), cluster, t.Name)
			gauge(ch, d.topicAtMinISR, float64(t.AtMinISR), cluster, t.Name)
		}
		if !partitionMetrics {
			continue
		}
		for pi := range t.Partitions {
			p := &t.Partitions[pi]
			id := strconv.FormatInt(int64(p.ID), 10)
			gauge(ch, d.partitionLeader, float64(p.Leader), cluster, t.Name, id)
			gauge(ch, d.partitionReplicas, float64(len(p.Replicas)), cluster, t.Name, id)
			gauge(ch, d.partitionISR, float64(len(p.ISR)), cluster, t.Name, id)
			gauge(ch, d.partitionOfflineReplicas, float64(len(p.OfflineReplicas)), cluster, t.Name, id)
			gauge(ch, d.partitionUnderReplicated, bool01(p.UnderReplicated()), cluster, t.Name, id)
			gauge(ch, d.partitionOffline, bool01(p.Offline()), cluster, t.Name, id)
			gauge(ch, d.partitionLeaderIsPreferred, bool01(p.LeaderIsPreferred()), cluster, t.Name, id)
			if t.MinISR > 0 {
				gauge(ch, d.partitionUnderMinISR, bool01(p.UnderMinISR(t.MinISR)), cluster, t.Name, id)
				gauge(ch, d.partitionAtMinISR, bool01(p.AtMinISR(t.MinISR)), cluster, t.Name, id)
			}
			counter(ch, d.partitionLeaderChanges, p.LeaderChanges, cluster, t.Name, id)
			counter(ch, d.partitionISRShrinks, p.ISRShrinks, cluster, t.Name, id)
			counter(ch, d.partitionISRExpands, p.ISRExpands, cluster, t.Name, id)
		}
	}
}
