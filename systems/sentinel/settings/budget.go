package settings

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/failover-exporter/failover_exporter/config"
)

// Budget configures a Sentinel deployment's failure budget: what stopping
// one data node, one sentinel or one availability zone now would do (the
// redis_sentinel_*_stop_* series). The budget is always computed; these
// settings only tune it.
//
// Budget has no UnmarshalYAML of its own: the file's strict decoder
// (KnownFields) refuses its unknown keys and config's type walk its values
// of the wrong type, each with its line and key path, and Validate runs
// with the entry's checks.
type Budget struct {
	// HealthyReplicaHeadroom makes stopping a master's last promotable,
	// caught-up replica unsafe (reason last_promotable_replica): the master
	// would serve on with no replica to fail over to.
	HealthyReplicaHeadroom bool `yaml:"healthy_replica_headroom"`
	// CaughtUpBytes is the replication lag within which a replica counts
	// as caught up; nil for DefaultCaughtUpBytes (CaughtUpBound).
	CaughtUpBytes *int64 `yaml:"caught_up_bytes"`
	// Zones maps sentinels' and nodes' addresses ("ip:port", as the
	// sentinels report them) to availability zones.
	Zones map[string]string `yaml:"zones"`
}

// DefaultCaughtUpBytes is the caught-up bound when none is set: 1 MiB, the
// redis section's, for its reason: a replica acknowledges its offset once
// a second, so one fully in sync still reads up to a second of writes
// behind.
const DefaultCaughtUpBytes int64 = 1 << 20

// MaxBudgetZones bounds the zones map: zone series are per zone.
const MaxBudgetZones = 10000

// CaughtUpBound is the caught-up bound in bytes, the default when unset.
func (b Budget) CaughtUpBound() int64 {
	if b.CaughtUpBytes == nil {
		return DefaultCaughtUpBytes
	}
	return *b.CaughtUpBytes
}

// Validate checks the settings: a non-negative caught-up bound, and a
// bounded zones map keyed by HOST:PORT with non-empty names. A key may be
// a host name: Sentinel reports one when its announce-hostnames is on.
func (b Budget) Validate() error {
	var errs []error
	if b.CaughtUpBytes != nil && *b.CaughtUpBytes < 0 {
		errs = append(errs, fmt.Errorf("failure_budget.caught_up_bytes %d must not be negative", *b.CaughtUpBytes))
	}
	if len(b.Zones) > MaxBudgetZones {
		errs = append(errs, fmt.Errorf("failure_budget.zones lists %d addresses, more than %d", len(b.Zones), MaxBudgetZones))
	}
	for _, addr := range slices.Sorted(maps.Keys(b.Zones)) {
		if err := config.CheckAddr(addr); err != nil {
			errs = append(errs, fmt.Errorf("failure_budget.zones: %w", err))
		} else if strings.TrimSpace(b.Zones[addr]) == "" {
			errs = append(errs, fmt.Errorf("failure_budget.zones: %q: the zone name is empty", addr))
		}
	}
	return errors.Join(errs...)
}
