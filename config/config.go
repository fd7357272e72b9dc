// Package config holds the exporter's configuration file format, its
// defaults and validation, and each cluster's Fingerprint. It holds no
// state: on a reload, main loads a new Config and hands it to
// collector.Manager.Apply, which restarts the clusters whose fingerprint
// changed.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/failover-exporter/failover_exporter/internal/readfile"
)

// Defaults applied to every cluster that does not set its own.
const (
	DefaultRefreshInterval       = 5 * time.Second
	DefaultKafkaClusterName      = "kafka"
	DefaultRedisClusterName      = "redis"
	DefaultKafkaVersion          = "3.0.0"
	DefaultDialTimeout           = 3 * time.Second
	DefaultRequestTimeout        = 3 * time.Second
	DefaultTopicConfigRefresh    = time.Minute
	DefaultKafkaClientID         = "failover_exporter"
	DefaultRedisCommandTimeout   = 2 * time.Second
	defaultRefreshTimeoutPercent = 80
	// DefaultBackdateLimit is above Redis's default cluster-node-timeout
	// (15 s) and Kafka's broker.session.timeout.ms (9 s) plus a few
	// refreshes: the longest a cluster usually takes to confirm a failure.
	DefaultBackdateLimit = time.Minute
	// MaxBackdateLimit keeps a node the exporter cannot reach for an hour
	// from lending that hour to a later real failure.
	MaxBackdateLimit = time.Hour
)

// Config is the whole configuration file.
type Config struct {
	Kafka []KafkaCluster `yaml:"kafka"`
	Redis []RedisCluster `yaml:"redis"`
	// Mirrors are MirrorMaker 2 flows between clusters of Kafka.
	Mirrors []Mirror `yaml:"mirrors"`
}

// KafkaCluster describes one Kafka cluster to watch.
type KafkaCluster struct {
	// Name is the value of the kafka_cluster label.
	Name             string   `yaml:"name"`
	BootstrapServers []string `yaml:"bootstrap_servers"`
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
	TLS                  TLS           `yaml:"tls"`
	SASL                 SASL          `yaml:"sasl"`
	// Canary writes to the cluster; it is off unless enabled.
	Canary KafkaCanary `yaml:"canary"`
	// FailureBudget tunes what counts as safe to stop (config/budget.go).
	FailureBudget KafkaBudget `yaml:"failure_budget"`
}

// KafkaCanary configures the Kafka write canary: one record per partition
// of its own topic every interval, with acks=all and an idempotent
// producer, read back after the partition's next leader change.
type KafkaCanary struct {
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
}

// CreateTopicEnabled reports whether the canary may create its topic.
func (c KafkaCanary) CreateTopicEnabled() bool { return c.CreateTopic == nil || *c.CreateTopic }

// Defaults of the Kafka write canary.
const (
	DefaultKafkaCanaryTopic             = "__failover_exporter_canary"
	DefaultKafkaCanaryReplicationFactor = 3
	DefaultKafkaCanaryMinInsyncReplicas = 2
)

// PartitionMetrics is how many per-partition series a Kafka cluster gets.
// What Prometheus pays grows with it; see the README's sizing section.
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
	Include *Regexp `yaml:"include"`
	Exclude *Regexp `yaml:"exclude"`
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

// RedisCluster describes one Redis Cluster to watch.
type RedisCluster struct {
	// Name is the value of the redis_cluster label.
	Name string `yaml:"name"`
	// Addrs are seed nodes; any reachable one is enough.
	Addrs           []string      `yaml:"addrs"`
	Username        string        `yaml:"username"`
	Password        Secret        `yaml:"password"`
	RefreshInterval time.Duration `yaml:"refresh_interval"`
	RefreshTimeout  time.Duration `yaml:"refresh_timeout"`
	DialTimeout     time.Duration `yaml:"dial_timeout"`
	// BackdateLimit is how far back a failover or unserved-slots episode
	// may start, at the exporter's first failed probe of the master that
	// caused it (the outage clock, collector/episode/backdate.go). Set it
	// above cluster-node-timeout plus a refresh.
	BackdateLimit time.Duration `yaml:"backdate_limit"`
	// CommandTimeout bounds each command sent to one node.
	CommandTimeout time.Duration `yaml:"command_timeout"`
	TLS            TLS           `yaml:"tls"`
	// Canary writes to the cluster; it is off unless enabled.
	Canary RedisCanary `yaml:"canary"`
	// SlotStats reads each master's hottest slots; off unless top is set.
	SlotStats RedisSlotStats `yaml:"slot_stats"`
	// FailureBudget tunes what stopping a node or zone would do (budget_redis.go).
	FailureBudget RedisBudget `yaml:"failure_budget"`
}

// RedisSlotStats configures the hot-slot series: CLUSTER SLOT-STATS
// (Valkey 8.0+, Redis 8.2+) asked of every master on each refresh, for its
// Top slots by key count, and by CPU time and network bytes where the
// server has cluster-slot-stats-enabled on.
type RedisSlotStats struct {
	// Top is how many slots per master and per statistic are served; 0
	// turns the series off.
	Top int `yaml:"top"`
}

// MaxSlotStatsTop bounds slot_stats.top: the series are per slot, so their
// number is top times the masters, per statistic.
const MaxSlotStatsTop = 100

// RedisCanary configures the Redis write canary: per master, one key in a
// slot the master owns, SET with an increasing value every interval, and
// after a promotion a read from the new master to count acknowledged
// writes it does not have.
type RedisCanary struct {
	Enabled bool `yaml:"enabled"`
	// Interval between two rounds of writes; default the refresh interval.
	Interval time.Duration `yaml:"interval"`
	// KeyPrefix starts every canary key; the canary touches no other key.
	KeyPrefix string `yaml:"key_prefix"`
	// KeyTTL is set on every write, so keys vanish when the canary stops.
	KeyTTL time.Duration `yaml:"key_ttl"`
	// Wait, if positive, follows each SET with WAIT 1 <Wait>: a write counts
	// as acknowledged only once a replica has it.
	Wait time.Duration `yaml:"wait"`
}

// Defaults of the write canaries.
const (
	DefaultRedisCanaryKeyPrefix = "__failover_exporter_canary:"
	DefaultRedisCanaryKeyTTL    = time.Hour
)

// TLS configures a client TLS connection.
type TLS struct {
	Enabled            bool   `yaml:"enabled"`
	CAFile             string `yaml:"ca_file"`
	CertFile           string `yaml:"cert_file"`
	KeyFile            string `yaml:"key_file"`
	ServerName         string `yaml:"server_name"`
	InsecureSkipVerify bool   `yaml:"insecure_skip_verify"`
}

// SASL configures Kafka SASL authentication.
type SASL struct {
	// Mechanism is PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512; empty disables SASL.
	Mechanism string `yaml:"mechanism"`
	Username  string `yaml:"username"`
	Password  Secret `yaml:"password"`
}

// Secret is read from a file or an environment variable, never written in
// the configuration file itself, so it cannot leak through the file, the
// command line or a config dump.
type Secret struct {
	File string `yaml:"file"`
	Env  string `yaml:"env"`
}

// UnmarshalYAML accepts only {file: PATH} or {env: VARIABLE}: one of the
// two, not empty, and no other key (Node.Decode does not inherit the
// file's KnownFields, so {flie: PATH} would otherwise be no password at
// all). An inline value is refused without echoing it, so that a password
// typed into the file does not end up in an error message or a log.
// Parse's checkTypes refuses the same with the key path first.
func (s *Secret) UnmarshalYAML(value *yaml.Node) error {
	const want = "use {file: PATH} or {env: VARIABLE}"
	if value.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: secrets are not accepted inline; %s", value.Line, want)
	}
	var got Secret
	for i := 0; i+1 < len(value.Content); i += 2 {
		key, v := value.Content[i], value.Content[i+1]
		var dst *string
		switch key.Value {
		case "file":
			dst = &got.File
		case "env":
			dst = &got.Env
		default:
			return fmt.Errorf("line %d: a secret takes only the key file or env; %s", key.Line, want)
		}
		if err := v.Decode(dst); err != nil || *dst == "" {
			return fmt.Errorf("line %d: secret %s must be a non-empty name; %s", v.Line, key.Value, want)
		}
	}
	switch {
	case got.File != "" && got.Env != "":
		return fmt.Errorf("line %d: a secret takes file or env, not both", value.Line)
	case !got.IsSet():
		return fmt.Errorf("line %d: the secret names no file and no variable; %s", value.Line, want)
	}
	*s = got
	return nil
}

// IsSet reports whether a source for the secret is configured.
func (s Secret) IsSet() bool { return s.File != "" || s.Env != "" }

// Value reads the secret. Trailing newlines in files are trimmed.
func (s Secret) Value() (string, error) {
	switch {
	case s.File != "":
		b, err := readfile.Bounded("secret file", s.File, readfile.SecretLimit)
		if err != nil {
			return "", err
		}
		return strings.TrimRight(string(b), "\r\n"), nil
	case s.Env != "":
		v, ok := os.LookupEnv(s.Env)
		if !ok {
			return "", fmt.Errorf("secret environment variable %s is not set", s.Env)
		}
		return v, nil
	}
	return "", nil
}

// String never prints the secret itself.
func (s Secret) String() string {
	switch {
	case s.File != "":
		return "file:" + s.File
	case s.Env != "":
		return "env:" + s.Env
	}
	return ""
}

// Regexp is a regular expression anchored at both ends, as in Prometheus.
type Regexp struct {
	*regexp.Regexp
	original string
}

// NewRegexp compiles an anchored regular expression.
func NewRegexp(s string) (*Regexp, error) {
	re, err := regexp.Compile("^(?:" + s + ")$")
	if err != nil {
		return nil, err
	}
	return &Regexp{Regexp: re, original: s}, nil
}

// UnmarshalYAML compiles the expression at load time.
func (r *Regexp) UnmarshalYAML(value *yaml.Node) error {
	var s string
	if err := value.Decode(&s); err != nil {
		return err
	}
	re, err := NewRegexp(s)
	if err != nil {
		return fmt.Errorf("line %d: invalid regular expression %q: %w", value.Line, s, err)
	}
	*r = *re
	return nil
}

// MarshalText returns the expression as written, so that configs compare
// and print by their text.
func (r *Regexp) MarshalText() ([]byte, error) { return []byte(r.original), nil }

// String returns the expression as written.
func (r *Regexp) String() string { return r.original }

// Load reads and validates a configuration file of at most MaxConfigSize
// bytes.
func Load(path string) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read config file: %w", err)
	}
	defer f.Close()
	// Read one byte past the limit, never the whole of a huge file.
	b, err := io.ReadAll(io.LimitReader(f, MaxConfigSize+1))
	if err != nil {
		return nil, fmt.Errorf("read config file %s: %w", path, err)
	}
	if len(b) > MaxConfigSize {
		return nil, fmt.Errorf("config file %s is larger than %d KiB; a config file listing clusters is a few KiB", path, MaxConfigSize>>10)
	}
	cfg, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	return cfg, nil
}

// Parse decodes a configuration strictly (unknown keys are errors), applies
// defaults and validates the result.
func Parse(b []byte) (*Config, error) {
	if err := checkUTF8(b); err != nil {
		return nil, err
	}
	// Types first, by key path: the typed decoder stops at the first bad
	// value, with a message that names neither the key nor what to write,
	// and takes an explicit 0s for the default.
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err == nil {
		if err := checkTypes(&doc); err != nil {
			return nil, err
		}
	}
	cfg := &Config{}
	if err := decodeStrict(b, cfg); err != nil {
		return nil, err
	}
	if err := cfg.Complete(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// decodeStrict decodes the file's one document into cfg, refusing unknown
// keys; a trailing "---" starts an empty document, which is no second
// config. A panic of the YAML decoder on input checkTypes let through is
// an error about the file, not a crash of the check or the reload.
func decodeStrict(b []byte, cfg *Config) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the YAML decoder failed on this file (%v); check its anchors, aliases and merge keys", r)
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(cfg); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	for {
		var extra yaml.Node
		err := dec.Decode(&extra)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil || len(extra.Content) != 1 || !isNull(extra.Content[0]) {
			return fmt.Errorf("line %d: more than one YAML document; put all clusters in one", extra.Line)
		}
	}
}

// Complete applies defaults and validates. It is called by Parse and must be
// called on configs built in code (for example from flags).
func (c *Config) Complete() error {
	var errs []error
	names := map[string]bool{}
	for i := range c.Kafka {
		k := &c.Kafka[i]
		k.applyDefaults()
		if err := checkName(k.Name); err != nil {
			errs = append(errs, fmt.Errorf("kafka cluster %d: %w", i+1, err))
		} else if err := k.validate(); err != nil {
			errs = append(errs, fmt.Errorf("kafka cluster %d (%q): %w", i+1, k.Name, err))
		}
		if names["kafka/"+k.Name] {
			errs = append(errs, fmt.Errorf("kafka cluster %q is defined twice", k.Name))
		}
		names["kafka/"+k.Name] = true
	}
	for i := range c.Redis {
		r := &c.Redis[i]
		r.applyDefaults()
		if err := checkName(r.Name); err != nil {
			errs = append(errs, fmt.Errorf("redis cluster %d: %w", i+1, err))
		} else if err := r.validate(); err != nil {
			errs = append(errs, fmt.Errorf("redis cluster %d (%q): %w", i+1, r.Name, err))
		}
		if names["redis/"+r.Name] {
			errs = append(errs, fmt.Errorf("redis cluster %q is defined twice", r.Name))
		}
		names["redis/"+r.Name] = true
	}
	kafka := map[string]KafkaCluster{}
	for _, k := range c.Kafka {
		kafka[k.Name] = k
	}
	known := sync.OnceValue(func() string { return listNames(kafka) })
	for i := range c.Mirrors {
		m := &c.Mirrors[i]
		m.applyDefaults()
		if err := checkName(m.Name); err != nil {
			errs = append(errs, fmt.Errorf("mirror %d: %w", i+1, err))
		} else if err := m.validate(kafka, known); err != nil {
			errs = append(errs, fmt.Errorf("mirror %d (%q): %w", i+1, m.Name, err))
		}
		if names["mirror/"+m.Name] {
			errs = append(errs, fmt.Errorf("mirror %q is defined twice", m.Name))
		}
		names["mirror/"+m.Name] = true
	}
	return errors.Join(errs...)
}

// refreshTimeoutFor is the default refresh_timeout, or 0 (reported by
// validation as the interval's problem, not the timeout's) when the
// interval is out of bounds.
func refreshTimeoutFor(interval time.Duration) time.Duration {
	if CheckRefreshInterval("", interval) != nil {
		return 0
	}
	return interval * defaultRefreshTimeoutPercent / 100
}

func (k *KafkaCluster) applyDefaults() {
	if k.Name == "" {
		k.Name = DefaultKafkaClusterName
	}
	if k.Version == "" {
		k.Version = DefaultKafkaVersion
	}
	if k.ClientID == "" {
		k.ClientID = DefaultKafkaClientID
	}
	if k.RefreshInterval == 0 {
		k.RefreshInterval = DefaultRefreshInterval
	}
	if k.RefreshTimeout == 0 {
		k.RefreshTimeout = refreshTimeoutFor(k.RefreshInterval)
	}
	if k.DialTimeout == 0 {
		k.DialTimeout = DefaultDialTimeout
	}
	if k.RequestTimeout == 0 {
		k.RequestTimeout = DefaultRequestTimeout
	}
	if k.TopicConfigRefreshInterval == 0 {
		k.TopicConfigRefreshInterval = DefaultTopicConfigRefresh
	}
	if k.BackdateLimit == 0 {
		k.BackdateLimit = DefaultBackdateLimit
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
		k.Canary.Topic = DefaultKafkaCanaryTopic
	}
	if k.Canary.ReplicationFactor == 0 {
		k.Canary.ReplicationFactor = DefaultKafkaCanaryReplicationFactor
	}
	if k.Canary.MinInsyncReplicas == 0 {
		k.Canary.MinInsyncReplicas = DefaultKafkaCanaryMinInsyncReplicas
	}
}

func (k *KafkaCluster) validate() error {
	var errs []error
	if len(k.BootstrapServers) == 0 {
		errs = append(errs, errors.New("bootstrap_servers is empty"))
	}
	for _, s := range k.BootstrapServers {
		if err := CheckAddr(s); err != nil {
			errs = append(errs, fmt.Errorf("bootstrap server %w", err))
		}
	}
	if err := CheckKafkaVersion(k.Version); err != nil {
		errs = append(errs, fmt.Errorf("version %w", err))
	}
	if err := k.FailureBudget.Validate(); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, validateTimings(k.RefreshInterval, k.RefreshTimeout, k.DialTimeout, k.RequestTimeout, "request_timeout")...)
	if k.TopicConfigRefreshInterval < 0 {
		errs = append(errs, errors.New("topic_config_refresh_interval must be positive"))
	}
	if err := checkBackdateLimit(k.BackdateLimit); err != nil {
		errs = append(errs, err)
	}
	if _, err := ParsePartitionMetrics(string(k.PartitionMetrics)); err != nil {
		errs = append(errs, err)
	}
	if k.PartitionMetricsHold <= 0 || k.PartitionMetricsHold > MaxPartitionMetricsHold {
		errs = append(errs, fmt.Errorf("partition_metrics_hold %s must be positive and at most %s", k.PartitionMetricsHold, MaxPartitionMetricsHold))
	}
	if err := k.TLS.validate(); err != nil {
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
		if err := k.SASL.Password.validate("sasl.password"); err != nil {
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

// kafkaTopicName is what Kafka accepts as a topic name.
var kafkaTopicName = regexp.MustCompile(`^[a-zA-Z0-9._-]{1,249}$`)

// validate checks the canary's settings; refreshInterval is the cluster's,
// which the interval defaults to and which is checked (once) on its own.
func (c KafkaCanary) validate(refreshInterval time.Duration) error {
	var errs []error
	if c.Interval != refreshInterval {
		if err := CheckRefreshInterval("canary.interval", c.Interval); err != nil {
			errs = append(errs, err)
		}
	}
	if !kafkaTopicName.MatchString(c.Topic) || c.Topic == "." || c.Topic == ".." {
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

func (r *RedisCluster) applyDefaults() {
	if r.Name == "" {
		r.Name = DefaultRedisClusterName
	}
	if r.RefreshInterval == 0 {
		r.RefreshInterval = DefaultRefreshInterval
	}
	if r.RefreshTimeout == 0 {
		r.RefreshTimeout = refreshTimeoutFor(r.RefreshInterval)
	}
	if r.DialTimeout == 0 {
		r.DialTimeout = DefaultDialTimeout
	}
	if r.CommandTimeout == 0 {
		r.CommandTimeout = DefaultRedisCommandTimeout
	}
	if r.BackdateLimit == 0 {
		r.BackdateLimit = DefaultBackdateLimit
	}
	if r.Canary.Interval == 0 {
		r.Canary.Interval = r.RefreshInterval
	}
	if r.Canary.KeyPrefix == "" {
		r.Canary.KeyPrefix = DefaultRedisCanaryKeyPrefix
	}
	if r.Canary.KeyTTL == 0 {
		r.Canary.KeyTTL = DefaultRedisCanaryKeyTTL
	}
}

func (r *RedisCluster) validate() error {
	var errs []error
	if len(r.Addrs) == 0 {
		errs = append(errs, errors.New("addrs is empty"))
	}
	for _, s := range r.Addrs {
		if err := CheckAddr(s); err != nil {
			errs = append(errs, fmt.Errorf("addr %w", err))
		}
	}
	errs = append(errs, validateTimings(r.RefreshInterval, r.RefreshTimeout, r.DialTimeout, r.CommandTimeout, "command_timeout")...)
	if err := r.FailureBudget.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := checkBackdateLimit(r.BackdateLimit); err != nil {
		errs = append(errs, err)
	}
	if r.Password.IsSet() {
		if err := r.Password.validate("password"); err != nil {
			errs = append(errs, err)
		}
	}
	if err := r.TLS.validate(); err != nil {
		errs = append(errs, err)
	}
	if err := r.Canary.validate(r.RefreshInterval); err != nil {
		errs = append(errs, err)
	}
	if r.SlotStats.Top < 0 || r.SlotStats.Top > MaxSlotStatsTop {
		errs = append(errs, fmt.Errorf("slot_stats.top %d must be between 0 (off) and %d", r.SlotStats.Top, MaxSlotStatsTop))
	}
	return errors.Join(errs...)
}

// validate checks the canary's settings; refreshInterval is the cluster's,
// which the interval defaults to and which is checked (once) on its own.
func (c RedisCanary) validate(refreshInterval time.Duration) error {
	var errs []error
	if c.Interval != refreshInterval {
		if err := CheckRefreshInterval("canary.interval", c.Interval); err != nil {
			errs = append(errs, err)
		}
	}
	// The canary picks the hash tag itself; a brace in the prefix would
	// become the tag and put every key in one slot.
	if strings.ContainsAny(c.KeyPrefix, "{}") {
		errs = append(errs, fmt.Errorf("canary.key_prefix %q must not contain { or }", c.KeyPrefix))
	}
	if c.KeyTTL < time.Second {
		errs = append(errs, fmt.Errorf("canary.key_ttl %s is shorter than 1s", c.KeyTTL))
	}
	if c.Wait < 0 {
		errs = append(errs, fmt.Errorf("canary.wait %s is negative", c.Wait))
	}
	// A round (topology, then SET and WAIT) must fit in the interval.
	if c.Wait*2 > c.Interval {
		errs = append(errs, fmt.Errorf("canary.wait %s is more than half of canary.interval %s", c.Wait, c.Interval))
	}
	return errors.Join(errs...)
}

// checkBackdateLimit refuses a limit that would backdate nothing or
// lend an exporter-side outage of hours to a later failure.
func checkBackdateLimit(limit time.Duration) error {
	if limit <= 0 || limit > MaxBackdateLimit {
		return fmt.Errorf("backdate_limit %s must be positive and at most %s", limit, MaxBackdateLimit)
	}
	return nil
}

// validateTimings returns one message per bad setting; a refresh_timeout
// that was derived from a bad interval is the interval's problem only.
func validateTimings(interval, timeout, dial, request time.Duration, requestKey string) []error {
	var errs []error
	intervalErr := CheckRefreshInterval("refresh_interval", interval)
	if intervalErr != nil {
		errs = append(errs, intervalErr)
	}
	switch {
	case timeout == 0 && intervalErr != nil:
	case timeout <= 0:
		errs = append(errs, fmt.Errorf("refresh_timeout %s must be positive", timeout))
	case intervalErr == nil && timeout > interval:
		errs = append(errs, fmt.Errorf("refresh_timeout %s must be positive and at most refresh_interval %s", timeout, interval))
	}
	if dial <= 0 {
		errs = append(errs, fmt.Errorf("dial_timeout %s must be positive", dial))
	}
	if request <= 0 {
		errs = append(errs, fmt.Errorf("%s %s must be positive", requestKey, request))
	}
	return errs
}

func (t TLS) validate() error {
	if !t.Enabled {
		if t.CAFile != "" || t.CertFile != "" || t.KeyFile != "" || t.ServerName != "" || t.InsecureSkipVerify {
			return errors.New("tls settings given but tls.enabled is false")
		}
		return nil
	}
	if (t.CertFile == "") != (t.KeyFile == "") {
		return errors.New("tls.cert_file and tls.key_file must be set together")
	}
	// Read and parse the files, so that --config.check and a reload refuse
	// what the clusters would fail on when they start.
	if _, err := t.ClientConfig(); err != nil {
		return fmt.Errorf("tls: %w", err)
	}
	return nil
}

func (s Secret) validate(field string) error {
	if s.File != "" && s.Env != "" {
		return fmt.Errorf("%s: set either file or env, not both", field)
	}
	if !s.IsSet() {
		return fmt.Errorf("%s: set file or env", field)
	}
	if _, err := s.Value(); err != nil {
		return fmt.Errorf("%s: %w", field, err)
	}
	return nil
}
