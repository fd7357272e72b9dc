package settings

import (
	"errors"
	"fmt"
	"regexp"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/failover-exporter/failover_exporter/config"
)

// Defaults of a Kafka cluster's own settings.
const (
	DefaultClusterName        = "kafka"
	DefaultVersion            = "3.0.0"
	DefaultRequestTimeout     = 3 * time.Second
	DefaultTopicConfigRefresh = time.Minute
	DefaultClientID           = "failover_exporter"
)

// Cluster describes one Kafka cluster to watch.
type Cluster struct {
	// Name is the value of the kafka_cluster label.
	Name             string   `yaml:"name"`
	BootstrapServers []string `yaml:"bootstrap_servers" example:"[host:9092]"`
	// AllowedTargets, in a module only, lists where a /probe target may
	// take the module's settings (config/allowlist.go); AllowAnyTarget lets any
	// target take them, for a module that carries no credentials.
	AllowedTargets []string `yaml:"allowed_targets" example:"[10.0.0.0/8:9092]"`
	AllowAnyTarget bool     `yaml:"allow_any_target"`
	// Version is the Kafka protocol version sarama speaks. The default,
	// 3.0.0, sends Metadata v11 and DescribeConfigs v4, which Kafka 2.8
	// through 4.x accept (4.0 removed versions older than 2.1).
	Version  string `yaml:"version"`
	ClientID string `yaml:"client_id"`
	// RefreshInterval is how often metadata is read.
	RefreshInterval time.Duration `yaml:"refresh_interval"`
	// RefreshTimeout bounds one whole refresh; defaults to 80% of the interval.
	RefreshTimeout time.Duration `yaml:"refresh_timeout"`
	DialTimeout    time.Duration `yaml:"dial_timeout"`
	RequestTimeout time.Duration `yaml:"request_timeout"`
	// BackdateLimit is how far back an episode the cluster confirms may
	// start, at the exporter's first failed probe of the broker that caused
	// it (the outage clock, collector/episode/backdate.go). Set it above
	// broker.session.timeout.ms plus a refresh.
	BackdateLimit time.Duration `yaml:"backdate_limit"`
	// TopicConfigRefreshInterval is how often min.insync.replicas is re-read
	// for known topics; new topics are always read on the next refresh.
	TopicConfigRefreshInterval time.Duration `yaml:"topic_config_refresh_interval"`
	Topics                     TopicFilter   `yaml:"topics"`
	// PartitionMetrics chooses which per-partition series are served:
	// lean (default), unhealthy, full or none; topic and broker series are
	// served in every mode.
	PartitionMetrics PartitionMetrics `yaml:"partition_metrics"`
	// PartitionMetricsHold is how long a partition keeps its detailed
	// series after it was last unhealthy, so that its recovery is seen and
	// a flapping partition's series do not come and go.
	PartitionMetricsHold time.Duration `yaml:"partition_metrics_hold"`
	TLS                  config.TLS    `yaml:"tls"`
	SASL                 SASL          `yaml:"sasl"`
	// Canary writes to the cluster; it is off unless enabled.
	Canary Canary `yaml:"canary"`
	// FailureBudget tunes what counts as safe to stop (budget.go).
	FailureBudget Budget `yaml:"failure_budget"`
}

// Canary configures the Kafka write canary: one record per partition
// of its own topic every interval, with acks=all and an idempotent
// producer, read back after the partition's next leader change.
type Canary struct {
	Enabled bool `yaml:"enabled"`
	// Interval between two rounds; default the refresh interval.
	Interval time.Duration `yaml:"interval"`
	// Topic is the canary's own topic; the canary touches no other.
	Topic string `yaml:"topic"`
	// CreateTopic lets the canary create the topic (default true) and heal
	// it (docs/canary.md); false expects it to exist and never changes it.
	CreateTopic *bool `yaml:"create_topic"`
	// ReplicationFactor and MinInsyncReplicas are the topic's. Capped at
	// the live brokers when the canary creates it, they are raised when
	// brokers return; below them the topic is reported degraded.
	ReplicationFactor int `yaml:"replication_factor"`
	MinInsyncReplicas int `yaml:"min_insync_replicas"`
	// Lease, on unless false, makes the exporters of a cluster that enable
	// the canary share it: one of them writes at a time, the leader of a
	// consumer group of the cluster (docs/canary.md, several exporters).
	Lease *bool `yaml:"lease"`
}

// LeaseEnabled reports whether the canary writes only while it holds the
// cluster's canary lease.
func (c Canary) LeaseEnabled() bool { return c.Lease == nil || *c.Lease }

// LeaseGroup is the consumer group whose leader holds the canary lease:
// named after the topic, so that exporters sharing a topic share a lease
// and a prefixed ACL on the topic's name covers both.
func (c Canary) LeaseGroup() string { return c.Topic + ".lease" }

// CreateTopicEnabled reports whether the canary may create its topic.
func (c Canary) CreateTopicEnabled() bool { return c.CreateTopic == nil || *c.CreateTopic }

// Defaults of the Kafka write canary.
const (
	DefaultCanaryTopic             = "__failover_exporter_canary"
	DefaultCanaryReplicationFactor = 3
	DefaultCanaryMinInsyncReplicas = 2
)

// PartitionMetrics is how many per-partition series a Kafka cluster gets.
// What Prometheus pays grows with it; see docs/metrics-cost.md.
type PartitionMetrics string

// The partition_metrics modes.
const (
	// PartitionMetricsLean serves five series per healthy partition and the
	// rest only where they say something: for unhealthy partitions, and for
	// those that recovered within the hold. Transition counters are served
	// per topic and per broker. The default.
	PartitionMetricsLean PartitionMetrics = "lean"
	// PartitionMetricsUnhealthy serves per-partition series only for
	// partitions that are unhealthy, reassigning or in an open episode, and
	// for the hold after they recover: sparse, for the largest clusters.
	PartitionMetricsUnhealthy PartitionMetrics = "unhealthy"
	// PartitionMetricsFull serves every per-partition series for every
	// partition, counters included, as before lean became the default.
	PartitionMetricsFull PartitionMetrics = "full"
	// PartitionMetricsNone serves no per-partition series.
	PartitionMetricsNone PartitionMetrics = "none"
)

// PartitionMetricsModes lists the modes, default first.
var PartitionMetricsModes = []PartitionMetrics{PartitionMetricsLean, PartitionMetricsUnhealthy, PartitionMetricsFull, PartitionMetricsNone}

// Values are the modes, and the booleans the setting was before them
// (config.Enum).
func (PartitionMetrics) Values() []any {
	values := []any{}
	for _, m := range PartitionMetricsModes {
		values = append(values, string(m))
	}
	return append(values, true, false)
}

// Defaults of the partition series.
const (
	DefaultPartitionMetrics     = PartitionMetricsLean
	DefaultPartitionMetricsHold = 10 * time.Minute
	// MaxPartitionMetricsHold bounds the hold: a partition detailed for a
	// day after each hiccup is a full mode by another name.
	MaxPartitionMetricsHold = 24 * time.Hour
)

// ParsePartitionMetrics reads a mode by name.
func ParsePartitionMetrics(name string) (PartitionMetrics, error) {
	for _, m := range PartitionMetricsModes {
		if string(m) == name {
			return m, nil
		}
	}
	return "", fmt.Errorf("partition_metrics %q: want one of lean, unhealthy, full, none", name)
}

// UnmarshalYAML takes a mode's name, or a boolean as the setting was
// before modes: true was the default (now lean), false is none.
func (m *PartitionMetrics) UnmarshalYAML(value *yaml.Node) error {
	if value.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: partition_metrics must be one of lean, unhealthy, full, none", value.Line)
	}
	if value.Tag == "!!bool" {
		var on bool
		if err := value.Decode(&on); err != nil {
			return err
		}
		*m = PartitionMetricsNone
		if on {
			*m = PartitionMetricsLean
		}
		return nil
	}
	mode, err := ParsePartitionMetrics(value.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", value.Line, err)
	}
	*m = mode
	return nil
}

// TopicFilter selects topics by regular expression. A topic is watched when
// it matches Include (all topics if empty) and does not match Exclude.
type TopicFilter struct {
	Include *config.Regexp `yaml:"include"`
	Exclude *config.Regexp `yaml:"exclude"`
}

// Match reports whether topic passes the filter.
func (f TopicFilter) Match(topic string) bool {
	if f.Include != nil && !f.Include.MatchString(topic) {
		return false
	}
	if f.Exclude != nil && f.Exclude.MatchString(topic) {
		return false
	}
	return true
}

// Judged reports whether the failure budget judges topic: when the topic
// filter watches it, or failure_budget.unwatched_topics says judge.
// (Internal topics are judged whatever both say.)
func (k Cluster) Judged(topic string) bool {
	return k.FailureBudget.UnwatchedTopics.Judged() || k.Topics.Match(topic)
}

// SASL configures Kafka SASL authentication.
type SASL struct {
	// Mechanism is PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512; empty disables SASL.
	Mechanism string        `yaml:"mechanism"`
	Username  string        `yaml:"username"`
	Password  config.Secret `yaml:"password"`
}

func (k *Cluster) applyDefaults() {
	if k.Name == "" {
		k.Name = DefaultClusterName
	}
	if k.Version == "" {
		k.Version = DefaultVersion
	}
	if k.ClientID == "" {
		k.ClientID = DefaultClientID
	}
	if k.FailureBudget.UnwatchedTopics == "" {
		k.FailureBudget.UnwatchedTopics = JudgeUnwatched
	}
	if k.FailureBudget.Coordinators == "" {
		k.FailureBudget.Coordinators = InformCoordinators
	}
	config.DefaultTimings(&k.RefreshInterval, &k.RefreshTimeout)
	if k.DialTimeout == 0 {
		k.DialTimeout = config.DefaultDialTimeout
	}
	if k.RequestTimeout == 0 {
		k.RequestTimeout = DefaultRequestTimeout
	}
	if k.TopicConfigRefreshInterval == 0 {
		k.TopicConfigRefreshInterval = DefaultTopicConfigRefresh
	}
	if k.BackdateLimit == 0 {
		k.BackdateLimit = config.DefaultBackdateLimit
	}
	if k.PartitionMetrics == "" {
		k.PartitionMetrics = DefaultPartitionMetrics
	}
	if k.PartitionMetricsHold == 0 {
		k.PartitionMetricsHold = DefaultPartitionMetricsHold
	}
	if k.Canary.Interval == 0 {
		k.Canary.Interval = k.RefreshInterval
	}
	if k.Canary.Topic == "" {
		k.Canary.Topic = DefaultCanaryTopic
	}
	if k.Canary.ReplicationFactor == 0 {
		k.Canary.ReplicationFactor = DefaultCanaryReplicationFactor
	}
	if k.Canary.MinInsyncReplicas == 0 {
		k.Canary.MinInsyncReplicas = DefaultCanaryMinInsyncReplicas
	}
}

func (k *Cluster) validate() error {
	var errs []error
	if len(k.BootstrapServers) == 0 {
		errs = append(errs, errors.New("bootstrap_servers is empty"))
	}
	for _, s := range k.BootstrapServers {
		if err := config.CheckAddr(s); err != nil {
			errs = append(errs, fmt.Errorf("bootstrap server %w", err))
		}
	}
	if err := CheckVersion(k.Version); err != nil {
		errs = append(errs, fmt.Errorf("version %w", err))
	}
	if err := k.FailureBudget.Validate(); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, config.ValidateTimings(k.RefreshInterval, k.RefreshTimeout, k.DialTimeout, k.RequestTimeout, "request_timeout")...)
	if k.TopicConfigRefreshInterval < 0 {
		errs = append(errs, errors.New("topic_config_refresh_interval must be positive"))
	}
	if err := config.CheckBackdateLimit(k.BackdateLimit); err != nil {
		errs = append(errs, err)
	}
	if _, err := ParsePartitionMetrics(string(k.PartitionMetrics)); err != nil {
		errs = append(errs, err)
	}
	if k.PartitionMetricsHold <= 0 || k.PartitionMetricsHold > MaxPartitionMetricsHold {
		errs = append(errs, fmt.Errorf("partition_metrics_hold %s must be positive and at most %s", k.PartitionMetricsHold, MaxPartitionMetricsHold))
	}
	if err := k.TLS.Validate(); err != nil {
		errs = append(errs, err)
	}
	switch k.SASL.Mechanism {
	case "":
		if k.SASL.Username != "" || k.SASL.Password.IsSet() {
			errs = append(errs, errors.New("sasl.username or sasl.password set without sasl.mechanism"))
		}
	case "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512":
		if k.SASL.Username == "" {
			errs = append(errs, errors.New("sasl.username is required with sasl.mechanism"))
		}
		if err := k.SASL.Password.Validate("sasl.password"); err != nil {
			errs = append(errs, err)
		}
	default:
		errs = append(errs, fmt.Errorf("sasl.mechanism %q is not one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512", k.SASL.Mechanism))
	}
	if err := k.Canary.validate(k.RefreshInterval); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// TopicName is what Kafka accepts as a topic name.
var TopicName = regexp.MustCompile(`^[a-zA-Z0-9._-]{1,249}$`)

// validate checks the canary's settings; refreshInterval is the cluster's,
// which the interval defaults to and which is checked (once) on its own.
func (c Canary) validate(refreshInterval time.Duration) error {
	var errs []error
	if c.Interval != refreshInterval {
		if err := config.CheckRefreshInterval("canary.interval", c.Interval); err != nil {
			errs = append(errs, err)
		}
	}
	if !TopicName.MatchString(c.Topic) || c.Topic == "." || c.Topic == ".." {
		errs = append(errs, fmt.Errorf("canary.topic %q is not a valid Kafka topic name", c.Topic))
	}
	switch {
	case c.ReplicationFactor < 1 || c.MinInsyncReplicas < 1 || c.MinInsyncReplicas > c.ReplicationFactor:
		errs = append(errs, fmt.Errorf("canary.replication_factor %d and canary.min_insync_replicas %d: want 1 <= min_insync_replicas <= replication_factor",
			c.ReplicationFactor, c.MinInsyncReplicas))
	case c.ReplicationFactor > MaxReplicationFactor:
		errs = append(errs, fmt.Errorf("canary.replication_factor %d is more than %d, the most Kafka allows", c.ReplicationFactor, MaxReplicationFactor))
	}
	return errors.Join(errs...)
}
