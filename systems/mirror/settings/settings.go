package settings

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/failover-exporter/failover_exporter/config"
	kafkasettings "github.com/failover-exporter/failover_exporter/systems/kafka/settings"
)

// Flow describes one MirrorMaker 2 replication flow between two Kafka
// clusters of the config, read from the clusters themselves: the flow's
// offset syncs, checkpoints and heartbeats, and both clusters' offsets
// (systems/mirror, docs/mirror.md).
type Flow struct {
	// Name is the value of the mirror label.
	Name string `yaml:"name"`
	// Source and Target name clusters of the config's kafka list; the flow
	// connects with their settings, TLS and SASL included.
	Source string `yaml:"source"`
	Target string `yaml:"target"`
	// SourceAlias and TargetAlias are the clusters' aliases in the
	// MirrorMaker 2 config; they default to the clusters' names.
	SourceAlias string `yaml:"source_alias"`
	TargetAlias string `yaml:"target_alias"`
	// ReplicationPolicy names remote topics: default (<source
	// alias>.<topic>, MM2's DefaultReplicationPolicy with separator ".")
	// or identity (the topic's own name, IdentityReplicationPolicy).
	ReplicationPolicy string `yaml:"replication_policy"`
	// ReplicationPolicySeparator is MM2's replication.policy.separator:
	// what joins the source alias and the topic in a remote topic's name,
	// "." by default. Unless InternalTopicSeparatorEnabled is false it
	// also joins the parts of MM2's internal topics' default names.
	ReplicationPolicySeparator string `yaml:"replication_policy_separator"`
	// InternalTopicSeparatorEnabled is MM2's
	// replication.policy.internal.topic.separator.enabled (true by
	// default): false keeps "." in the internal topics' names whatever the
	// separator.
	InternalTopicSeparatorEnabled *bool `yaml:"internal_topic_separator_enabled"`
	// Topics selects the source topics the flow replicates (anchored; all
	// by default). MM2's internal topics are never counted.
	Topics *config.Regexp `yaml:"topics"`
	// OffsetSyncsTopic is MM2's offset-syncs topic, on the cluster
	// OffsetSyncsTopicLocation names (source by default, as MM2's
	// offset-syncs.topic.location).
	OffsetSyncsTopic         string `yaml:"offset_syncs_topic"`
	OffsetSyncsTopicLocation string `yaml:"offset_syncs_topic_location"`
	// CheckpointsTopic is MM2's checkpoints topic on the target.
	CheckpointsTopic string `yaml:"checkpoints_topic"`
	// HeartbeatsTopic is the heartbeats topic on the source; it reaches the
	// target as <source alias>.heartbeats with either policy.
	HeartbeatsTopic string        `yaml:"heartbeats_topic"`
	RefreshInterval time.Duration `yaml:"refresh_interval"`
	RefreshTimeout  time.Duration `yaml:"refresh_timeout"`
	// StallAfter is the age of the newest replicated heartbeat beyond
	// which the flow counts as stalled (an event, and
	// kafka_mirror_stalled). Above MM2's emit.heartbeats.interval.seconds
	// (1 s by default) plus a refresh.
	StallAfter time.Duration `yaml:"stall_after"`
	// PartitionMetrics adds per-partition series (records not replicated,
	// seconds behind) to the per-topic ones.
	PartitionMetrics bool `yaml:"partition_metrics" hint:"a mirror's partition_metrics is true (per-partition series too) or false; the modes lean, unhealthy, full and none are a kafka cluster's"`
	// MaxGroups bounds the consumer groups the flow reports (their series
	// are per group and topic): beyond it, the first by name are, and
	// kafka_mirror_groups_left_out counts the others.
	MaxGroups int `yaml:"max_groups"`
	// Connect, when set, is the Kafka Connect REST API of the workers that
	// run the flow's Mirror connectors: their and their tasks' states are
	// read from it too. MM2's dedicated mode serves no such API.
	Connect *Connect `yaml:"connect"`

	// SourceCluster and TargetCluster are the named clusters' settings,
	// filled in by Config.Complete.
	SourceCluster kafkasettings.Cluster `yaml:"-"`
	TargetCluster kafkasettings.Cluster `yaml:"-"`
}

// Connect is the Kafka Connect REST API a flow's connector states
// are read from (GET /connectors?expand=status&expand=info).
type Connect struct {
	// URL is the REST API's base, http:// or https://.
	URL string `yaml:"url"`
	// Username and Password are HTTP basic auth credentials, when the REST
	// API requires them; the password is read from a file or the
	// environment.
	Username string        `yaml:"username"`
	Password config.Secret `yaml:"password"`
	TLS      config.TLS    `yaml:"tls"`
	// Connectors names the flow's connectors. By default they are found by
	// their class (MirrorSourceConnector, MirrorCheckpointConnector,
	// MirrorHeartbeatConnector) and the flow's source and target aliases.
	Connectors []string `yaml:"connectors" example:"[connector-name]"`
}

func (c *Connect) validate() error {
	var errs []error
	u, urlErr := checkConnectURL(c.URL)
	if urlErr != nil {
		errs = append(errs, urlErr)
	}
	if c.Password.IsSet() || c.Username != "" {
		if c.Username == "" {
			errs = append(errs, errors.New("connect.password is set without connect.username"))
		}
		if err := c.Password.Validate("connect.password"); err != nil {
			errs = append(errs, err)
		}
	}
	if err := c.TLS.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("connect.%w", err))
	}
	if c.TLS.Enabled && urlErr == nil && u.Scheme == "http" {
		errs = append(errs, fmt.Errorf("connect.tls is enabled but connect.url %q is http", c.URL))
	}
	for _, name := range c.Connectors {
		if strings.TrimSpace(name) == "" {
			errs = append(errs, errors.New("connect.connectors holds an empty name"))
		}
	}
	return errors.Join(errs...)
}

// checkConnectURL refuses a connect.url the exporter could not use as the
// REST API's base: it needs http:// or https://, a host and a valid port,
// and no query, fragment or user:password, which would be mangled into
// every request and shown wherever the URL is. Messages show the URL
// without those parts.
func checkConnectURL(raw string) (*url.URL, error) {
	const example = "e.g. http://connect:8083"
	if raw == "" {
		return nil, fmt.Errorf("connect.url is required: the Kafka Connect REST API, %s", example)
	}
	shown := strconv.Quote(config.RedactURL(raw))
	if !strings.Contains(raw, "://") {
		return nil, fmt.Errorf("connect.url %s has no scheme: write http:// or https:// before the host, %s", shown, example)
	}
	u, err := url.Parse(raw)
	if err != nil {
		var urlErr *url.Error
		if errors.As(err, &urlErr) {
			err = urlErr.Err // its message repeats the whole URL
		}
		return nil, fmt.Errorf("connect.url %s is not a URL (%v), %s", shown, err, example)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("connect.url %s: the scheme must be http or https", shown)
	case u.User != nil:
		return nil, errors.New("connect.url must not hold credentials: use connect.username and connect.password")
	case u.Host == "" || u.Hostname() == "":
		return nil, fmt.Errorf("connect.url %s has no host, %s", shown, example)
	case u.RawQuery != "" || u.ForceQuery:
		return nil, fmt.Errorf("connect.url %s must not have a query (?...): the exporter asks for /connectors?expand=status&expand=info under the URL itself, and credentials go in connect.username and connect.password", shown)
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return nil, fmt.Errorf("connect.url %s must not have a fragment (#...)", shown)
	}
	if port := u.Port(); port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("connect.url %s: port %s is outside 1-65535", shown, port)
		}
	} else if strings.HasSuffix(u.Host, ":") {
		return nil, fmt.Errorf("connect.url %s: the port after the colon is empty", shown)
	}
	return u, nil
}

// Replication policies.
const (
	ReplicationPolicyDefault  = "default"
	ReplicationPolicyIdentity = "identity"
)

// Where MM2 keeps the offset syncs (offset-syncs.topic.location).
const (
	OffsetSyncsOnSource = "source"
	OffsetSyncsOnTarget = "target"
)

// Defaults of a mirror flow.
const (
	DefaultHeartbeatsTopic = "heartbeats"
	DefaultStallAfter      = 30 * time.Second
	DefaultSeparator       = "."
	DefaultMaxGroups       = 1000
)

// InternalSeparator is what joins the parts of MM2's internal topics'
// names (DefaultReplicationPolicy.internalSeparator).
func (m Flow) InternalSeparator() string {
	if m.InternalTopicSeparatorEnabled != nil && !*m.InternalTopicSeparatorEnabled {
		return DefaultSeparator
	}
	return m.ReplicationPolicySeparator
}

func (m *Flow) applyDefaults() {
	if m.SourceAlias == "" {
		m.SourceAlias = m.Source
	}
	if m.TargetAlias == "" {
		m.TargetAlias = m.Target
	}
	if m.ReplicationPolicy == "" {
		m.ReplicationPolicy = ReplicationPolicyDefault
	}
	if m.Topics == nil {
		m.Topics, _ = config.NewRegexp(".*")
	}
	if m.ReplicationPolicySeparator == "" {
		m.ReplicationPolicySeparator = DefaultSeparator
	}
	if m.OffsetSyncsTopicLocation == "" {
		m.OffsetSyncsTopicLocation = OffsetSyncsOnSource
	}
	sep := m.InternalSeparator()
	if m.OffsetSyncsTopic == "" {
		// MM2's offsetSyncsTopic(alias): the alias of the other cluster
		// than the one the topic is on.
		alias := m.TargetAlias
		if m.OffsetSyncsTopicLocation == OffsetSyncsOnTarget {
			alias = m.SourceAlias
		}
		m.OffsetSyncsTopic = "mm2-offset-syncs" + sep + alias + sep + "internal"
	}
	if m.CheckpointsTopic == "" {
		m.CheckpointsTopic = m.SourceAlias + sep + "checkpoints" + sep + "internal"
	}
	if m.HeartbeatsTopic == "" {
		m.HeartbeatsTopic = DefaultHeartbeatsTopic
	}
	config.DefaultTimings(&m.RefreshInterval, &m.RefreshTimeout)
	if m.StallAfter == 0 {
		m.StallAfter = DefaultStallAfter
	}
	if m.MaxGroups == 0 {
		m.MaxGroups = DefaultMaxGroups
	}
}

// validate checks the flow's own settings and resolves its clusters from
// kafka, the config's Kafka clusters by name; known lists them for
// messages, computed once for all flows.
func (m *Flow) validate(kafka map[string]kafkasettings.Cluster, known func() string) error {
	var errs []error
	if m.Name == "" {
		errs = append(errs, errors.New("name is required (the mirror label)"))
	}
	for _, side := range []struct{ key, name string }{{"source", m.Source}, {"target", m.Target}} {
		if side.name == "" {
			errs = append(errs, fmt.Errorf("%s is required: the name of a cluster of the kafka list", side.key))
			continue
		}
		if _, ok := kafka[side.name]; !ok {
			errs = append(errs, fmt.Errorf("%s %q is not a cluster of the kafka list (%s)", side.key, side.name, known()))
		}
	}
	if m.Source != "" && m.Source == m.Target {
		errs = append(errs, fmt.Errorf("source and target are both %q: a flow replicates between two clusters", m.Source))
	}
	switch m.ReplicationPolicy {
	case ReplicationPolicyDefault, ReplicationPolicyIdentity:
	default:
		errs = append(errs, fmt.Errorf("replication_policy %q is not one of default, identity", m.ReplicationPolicy))
	}
	switch m.OffsetSyncsTopicLocation {
	case OffsetSyncsOnSource, OffsetSyncsOnTarget:
	default:
		errs = append(errs, fmt.Errorf("offset_syncs_topic_location %q is not one of source, target", m.OffsetSyncsTopicLocation))
	}
	for _, alias := range []struct{ key, value string }{{"source_alias", m.SourceAlias}, {"target_alias", m.TargetAlias}} {
		if alias.value != "" && !kafkasettings.TopicName.MatchString(alias.value+".x") {
			errs = append(errs, fmt.Errorf("%s %q cannot be part of a Kafka topic name", alias.key, alias.value))
		}
	}
	if !kafkasettings.TopicName.MatchString(m.ReplicationPolicySeparator) {
		errs = append(errs, fmt.Errorf("replication_policy_separator %q cannot be part of a Kafka topic name", m.ReplicationPolicySeparator))
	}
	if m.SourceAlias != "" && m.SourceAlias == m.TargetAlias {
		errs = append(errs, fmt.Errorf("source_alias and target_alias are both %q", m.SourceAlias))
	}
	for _, topic := range []struct{ key, value string }{
		{"offset_syncs_topic", m.OffsetSyncsTopic}, {"checkpoints_topic", m.CheckpointsTopic}, {"heartbeats_topic", m.HeartbeatsTopic},
	} {
		if !kafkasettings.TopicName.MatchString(topic.value) || topic.value == "." || topic.value == ".." {
			errs = append(errs, fmt.Errorf("%s %q is not a valid Kafka topic name", topic.key, topic.value))
		}
	}
	// Each request has its cluster's dial and request timeouts.
	errs = append(errs, config.ValidateTimings(m.RefreshInterval, m.RefreshTimeout, time.Second, time.Second, "")...)
	if m.StallAfter <= 0 {
		errs = append(errs, fmt.Errorf("stall_after %s must be positive", m.StallAfter))
	}
	if m.Connect != nil {
		if err := m.Connect.validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if m.MaxGroups < 0 {
		errs = append(errs, fmt.Errorf("max_groups %d must be positive (default %d)", m.MaxGroups, DefaultMaxGroups))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	m.SourceCluster, m.TargetCluster = kafka[m.Source], kafka[m.Target]
	return nil
}

// maxListedNames bounds the cluster names a message lists.
const maxListedNames = 10

func listNames(kafka map[string]kafkasettings.Cluster) string {
	if len(kafka) == 0 {
		return "the kafka list is empty"
	}
	names := make([]string, 0, len(kafka))
	for name := range kafka {
		names = append(names, fmt.Sprintf("%q", name))
	}
	slices.Sort(names)
	// A few names are a hint; all of thousands, in each of thousands of
	// messages, would make the check quadratic in the file's size.
	if len(names) > maxListedNames {
		return fmt.Sprintf("known: %s and %d more", strings.Join(names[:maxListedNames], ", "), len(names)-maxListedNames)
	}
	return "known: " + strings.Join(names, ", ")
}

// Fingerprint identifies the flow's settings and both clusters' settings,
// with the current contents of their TLS files and SASL passwords: a
// reload restarts the flow when either cluster's connection changed.
func (m Flow) Fingerprint() (string, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return "", fmt.Errorf("fingerprint config: %w", err)
	}
	parts := [][]byte{b}
	for _, k := range []kafkasettings.Cluster{m.SourceCluster, m.TargetCluster} {
		parts = append(parts, k.TLS.FileContents()...)
		parts = append(parts, k.SASL.Password.CurrentValue())
	}
	if m.Connect != nil {
		parts = append(parts, m.Connect.TLS.FileContents()...)
		parts = append(parts, m.Connect.Password.CurrentValue())
	}
	return config.KeyedDigest(parts...), nil
}

// ClusterName is the entry's name (system.Settings).
func (m Flow) ClusterName() string { return m.Name }

// Timing is the refresh interval and the bound on one refresh
// (system.Settings).
func (m Flow) Timing() (interval, timeout time.Duration) { return m.RefreshInterval, m.RefreshTimeout }
