package settings

import (
	"errors"
	"fmt"
	"time"

	"github.com/failover-exporter/failover_exporter/config"
	redissettings "github.com/failover-exporter/failover_exporter/systems/redis/settings"
)

// Defaults of a Sentinel deployment's own settings.
const (
	DefaultName           = "sentinel"
	DefaultCommandTimeout = 2 * time.Second
)

// The keys of the two connections, for messages.
const (
	sentinelConnectionKey = "sentinel_connection"
	nodeConnectionKey     = "node_connection"
)

// Set describes one Redis Sentinel deployment to watch: its sentinels and
// the masters they monitor, with their replicas.
type Set struct {
	// Name is the value of the sentinel_cluster label.
	Name string `yaml:"name"`
	// Sentinels are seeds; any reachable one is enough, the others are
	// found with SENTINEL SENTINELS.
	Sentinels []string `yaml:"sentinels" example:"[host:26379]"`
	// Masters are the master names to watch, as the sentinels know them;
	// empty for every master they monitor.
	Masters []string `yaml:"masters" example:"[mymaster]"`
	// AllowedTargets, in a module only, lists where a /probe target (the
	// sentinels' addresses) may take the module's settings
	// (config/allowlist.go); AllowAnyTarget lets any target take them, for
	// a module that carries no credentials.
	AllowedTargets []string `yaml:"allowed_targets" example:"[10.0.0.0/8:26379]"`
	AllowAnyTarget bool     `yaml:"allow_any_target"`
	// SentinelConnection is how to reach the sentinels; NodeConnection how
	// to reach the data nodes (masters and replicas), whose credentials
	// are usually not the sentinels'.
	SentinelConnection Connection    `yaml:"sentinel_connection"`
	NodeConnection     Connection    `yaml:"node_connection"`
	RefreshInterval    time.Duration `yaml:"refresh_interval"`
	RefreshTimeout     time.Duration `yaml:"refresh_timeout"`
	DialTimeout        time.Duration `yaml:"dial_timeout"`
	// CommandTimeout bounds each command sent to one sentinel or node.
	CommandTimeout time.Duration `yaml:"command_timeout"`
	// BackdateLimit is how far back a failover episode may start, at the
	// exporter's first failed probe of the master (the outage clock,
	// collector/episode/backdate.go). Set it above the masters'
	// down-after-milliseconds plus a refresh.
	BackdateLimit time.Duration `yaml:"backdate_limit"`
	// FailureBudget tunes what stopping a node, a sentinel or a zone would
	// do (budget.go).
	FailureBudget Budget `yaml:"failure_budget"`
	// Canary writes to each watched master the sentinels name, through
	// node_connection; it is off unless enabled. Its keys are Redis
	// Cluster's canary's (docs/canary.md): one key per master name.
	Canary Canary `yaml:"canary"`
}

// Canary is the write canary's settings, the same keys as a Redis
// Cluster's canary.
type Canary = redissettings.Canary

// Connection is how to reach one kind of server: the sentinels, or the
// data nodes.
type Connection struct {
	Username string        `yaml:"username"`
	Password config.Secret `yaml:"password"`
	TLS      config.TLS    `yaml:"tls"`
}

func (s *Set) applyDefaults() {
	if s.Name == "" {
		s.Name = DefaultName
	}
	config.DefaultTimings(&s.RefreshInterval, &s.RefreshTimeout)
	if s.DialTimeout == 0 {
		s.DialTimeout = config.DefaultDialTimeout
	}
	if s.CommandTimeout == 0 {
		s.CommandTimeout = DefaultCommandTimeout
	}
	if s.BackdateLimit == 0 {
		s.BackdateLimit = config.DefaultBackdateLimit
	}
	s.Canary.Complete(s.RefreshInterval, s.RefreshTimeout)
}

func (s *Set) validate() error {
	errs := s.checkSentinels()
	errs = append(errs, s.checkMasters()...)
	errs = append(errs, config.ValidateTimings(s.RefreshInterval, s.RefreshTimeout, s.DialTimeout, s.CommandTimeout, "command_timeout")...)
	if err := config.CheckBackdateLimit(s.BackdateLimit); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, s.SentinelConnection.validate(sentinelConnectionKey)...)
	errs = append(errs, s.NodeConnection.validate(nodeConnectionKey)...)
	if err := s.FailureBudget.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := s.Canary.Validate(s.RefreshInterval, s.RefreshTimeout); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (s *Set) checkSentinels() []error {
	if len(s.Sentinels) == 0 {
		return []error{errors.New("sentinels is empty: list at least one sentinel's HOST:PORT")}
	}
	var errs []error
	for _, addr := range s.Sentinels {
		if err := config.CheckAddr(addr); err != nil {
			errs = append(errs, fmt.Errorf("sentinels: %w", err))
		}
	}
	return errs
}

// checkMasters refuses a master name that cannot be watched as given: the
// names are label values and words of SENTINEL commands (LabelSafe), and
// none is listed twice.
func (s *Set) checkMasters() []error {
	var errs []error
	seen := make(map[string]bool, len(s.Masters))
	for i, name := range s.Masters {
		switch {
		case name == "":
			errs = append(errs, fmt.Errorf("masters[%d] is empty: give the master's name as the sentinels monitor it", i))
		case !LabelSafe(name):
			errs = append(errs, fmt.Errorf("masters[%d] %q: a master name must be printable ASCII without spaces, at most %d bytes", i, name, MaxLabel))
		case seen[name]:
			errs = append(errs, fmt.Errorf("masters[%d] %q is listed twice", i, name))
		}
		seen[name] = true
	}
	return errs
}

// MaxLabel bounds a name or address read from the config or a reply:
// each becomes a label value.
const MaxLabel = 256

// LabelSafe reports whether s may become a label value and a word of a
// SENTINEL command: not empty, at most MaxLabel bytes, printable ASCII
// without spaces. The config's master names and every name and address
// the sentinels and nodes answer are held to it.
func LabelSafe(s string) bool {
	if s == "" || len(s) > MaxLabel {
		return false
	}
	for i := range len(s) {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}

// validate checks the connection's password and TLS; key names it in the
// messages.
func (c Connection) validate(key string) []error {
	var errs []error
	if c.Password.IsSet() {
		if err := c.Password.Validate(key + ".password"); err != nil {
			errs = append(errs, err)
		}
	}
	if err := c.TLS.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", key, err))
	}
	return errs
}
