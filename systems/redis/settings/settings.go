package settings

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/failover-exporter/failover_exporter/config"
)

// Defaults of a Redis Cluster's own settings.
const (
	DefaultClusterName    = "redis"
	DefaultCommandTimeout = 2 * time.Second
)

// Cluster describes one Redis Cluster to watch.
type Cluster struct {
	// Name is the value of the redis_cluster label.
	Name string `yaml:"name"`
	// Addrs are seed nodes; any reachable one is enough.
	Addrs []string `yaml:"addrs" example:"[host:6379]"`
	// AllowedTargets, in a module only, lists where a /probe target may
	// take the module's settings (config/allowlist.go); AllowAnyTarget lets any
	// target take them, for a module that carries no credentials.
	AllowedTargets  []string      `yaml:"allowed_targets" example:"[10.0.0.0/8:9092]"`
	AllowAnyTarget  bool          `yaml:"allow_any_target"`
	Username        string        `yaml:"username"`
	Password        config.Secret `yaml:"password"`
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
	TLS            config.TLS    `yaml:"tls"`
	// Canary writes to the cluster; it is off unless enabled.
	Canary Canary `yaml:"canary"`
	// SlotStats reads each master's hottest slots; off unless top is set.
	SlotStats SlotStats `yaml:"slot_stats"`
	// FailureBudget tunes what stopping a node or zone would do (budget.go).
	FailureBudget Budget `yaml:"failure_budget"`
}

// SlotStats configures the hot-slot series: CLUSTER SLOT-STATS
// (Valkey 8.0+, Redis 8.2+) asked of every master on each refresh, for its
// Top slots by key count, and by CPU time and network bytes where the
// server has cluster-slot-stats-enabled on.
type SlotStats struct {
	// Top is how many slots per master and per statistic are served; 0
	// turns the series off.
	Top int `yaml:"top"`
}

// MaxSlotStatsTop bounds slot_stats.top: the series are per slot, so their
// number is top times the masters, per statistic.
const MaxSlotStatsTop = 100

// Canary configures a Redis write canary: per master, one key (in a slot
// the master owns, in Redis Cluster; one per master name under Sentinel),
// SET with an increasing value every interval, and after a promotion a
// read from the new master to count acknowledged writes it does not have.
type Canary struct {
	Enabled bool `yaml:"enabled"`
	// Interval between two rounds of writes; default the refresh interval.
	Interval time.Duration `yaml:"interval"`
	// KeyPrefix starts every canary key; the canary touches no other key.
	KeyPrefix string `yaml:"key_prefix"`
	// KeyTTL is set on every write, so keys vanish when the canary stops.
	KeyTTL time.Duration `yaml:"key_ttl"`
	// Wait, if positive, follows each SET with WAIT 1 <Wait>: a write counts
	// as acknowledged only once a replica has it.
	Wait time.Duration `yaml:"wait" zero:"allowed"` // 0s: no WAIT after the SET
	// Lease, on unless false, makes the exporters of a cluster that enable
	// the canary share it: one of them writes at a time, by a lease held
	// in the cluster (docs/canary.md, several exporters). Off, every
	// exporter writes, and two would confuse each other's counts.
	Lease *bool `yaml:"lease"`
}

// LeaseEnabled reports whether the canary writes only while it holds the
// cluster's canary lease.
func (c Canary) LeaseEnabled() bool { return c.Lease == nil || *c.Lease }

// Defaults of the write canaries.
const (
	DefaultCanaryKeyPrefix = "__failover_exporter_canary:"
	DefaultCanaryKeyTTL    = time.Hour
)

func (r *Cluster) applyDefaults() {
	if r.Name == "" {
		r.Name = DefaultClusterName
	}
	config.DefaultTimings(&r.RefreshInterval, &r.RefreshTimeout)
	if r.DialTimeout == 0 {
		r.DialTimeout = config.DefaultDialTimeout
	}
	if r.CommandTimeout == 0 {
		r.CommandTimeout = DefaultCommandTimeout
	}
	if r.BackdateLimit == 0 {
		r.BackdateLimit = config.DefaultBackdateLimit
	}
	r.Canary.Complete(r.RefreshInterval, r.RefreshTimeout)
}

// Complete fills the canary's defaults from its entry's refresh interval
// and timeout; the Sentinel section's canary is completed the same way.
func (c *Canary) Complete(refreshInterval, refreshTimeout time.Duration) {
	if c.Interval == 0 {
		c.Interval = refreshInterval
	}
	if c.KeyPrefix == "" {
		c.KeyPrefix = DefaultCanaryKeyPrefix
	}
	if c.KeyTTL == 0 {
		// An hour, or what a failover needs of a canary of long intervals.
		c.KeyTTL = max(DefaultCanaryKeyTTL, c.MinKeyTTL(refreshTimeout))
	}
}

func (r *Cluster) validate() error {
	var errs []error
	if len(r.Addrs) == 0 {
		errs = append(errs, errors.New("addrs is empty"))
	}
	for _, s := range r.Addrs {
		if err := config.CheckAddr(s); err != nil {
			errs = append(errs, fmt.Errorf("addr %w", err))
		}
	}
	errs = append(errs, config.ValidateTimings(r.RefreshInterval, r.RefreshTimeout, r.DialTimeout, r.CommandTimeout, "command_timeout")...)
	if err := r.FailureBudget.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := config.CheckBackdateLimit(r.BackdateLimit); err != nil {
		errs = append(errs, err)
	}
	if r.Password.IsSet() {
		if err := r.Password.Validate("password"); err != nil {
			errs = append(errs, err)
		}
	}
	if err := r.TLS.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := r.Canary.Validate(r.RefreshInterval, r.RefreshTimeout); err != nil {
		errs = append(errs, err)
	}
	if r.SlotStats.Top < 0 || r.SlotStats.Top > MaxSlotStatsTop {
		errs = append(errs, fmt.Errorf("slot_stats.top %d must be between 0 (off) and %d", r.SlotStats.Top, MaxSlotStatsTop))
	}
	return errors.Join(errs...)
}

// MinCanaryKeyTTL is the least canary.key_ttl accepted, however
// short the canary's interval.
const MinCanaryKeyTTL = time.Minute

// MinKeyTTL is the shortest key_ttl a failover leaves the canary able to
// judge: the key must outlive the time from the last write the old master
// acknowledged to the canary's read of it from the promoted replica, or a
// key found missing may have expired rather than been lost, and is then
// counted unverifiable (docs/canary.md). That time is the failure's
// detection and the election (cluster-node-timeout, 15 s by default, which
// the exporter does not know), up to an interval before the failure and a
// round after it (interval plus refresh_timeout). Ten intervals plus the
// refresh timeout, and at least MinCanaryKeyTTL (four default
// cluster-node-timeouts), leave room for a slow failover.
func (c Canary) MinKeyTTL(refreshTimeout time.Duration) time.Duration {
	return max(MinCanaryKeyTTL, 10*c.Interval+refreshTimeout)
}

// Validate checks the canary's settings; refreshInterval is the entry's,
// which the interval defaults to and which is checked (once) on its own;
// refreshTimeout is the entry's too.
func (c Canary) Validate(refreshInterval, refreshTimeout time.Duration) error {
	var errs []error
	if c.Interval != refreshInterval {
		if err := config.CheckRefreshInterval("canary.interval", c.Interval); err != nil {
			errs = append(errs, err)
		}
	}
	// The canary picks the hash tag itself; a brace in the prefix would
	// become the tag and put every key in one slot.
	if strings.ContainsAny(c.KeyPrefix, "{}") {
		errs = append(errs, fmt.Errorf("canary.key_prefix %q must not contain { or }", c.KeyPrefix))
	}
	if least := c.MinKeyTTL(refreshTimeout); c.Enabled && c.KeyTTL < least {
		errs = append(errs, fmt.Errorf("canary.key_ttl %s is shorter than %s, which a failover needs: a key that may expire before the canary reads it from the promoted replica cannot tell a lost write from an expired one (at least 1m, and 10 times canary.interval plus refresh_timeout; default 1h, or that bound when it is longer)", c.KeyTTL, least))
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
