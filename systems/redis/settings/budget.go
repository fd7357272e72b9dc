package settings

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/failover-exporter/failover_exporter/config"
)

// Budget configures a Redis Cluster's failure budget: what stopping
// one node or one availability zone now would do (systems/redis's
// budget.go, the redis_cluster_*_stop_* series, /api/v1/safe-to-stop).
// The budget is always computed; these settings only tune it.
type Budget struct {
	// HealthyReplicaHeadroom makes stopping a master's last healthy
	// replica unsafe (reason last_healthy_replica): the master would serve
	// on with no replica to take over. A replica the exporter did not read
	// this refresh is not healthy here.
	HealthyReplicaHeadroom bool `yaml:"healthy_replica_headroom"`
	// CaughtUpBytes is the replication lag within which a healthy replica
	// counts as caught up, the one to fail over to; nil for
	// DefaultCaughtUpBytes (CaughtUpBound).
	CaughtUpBytes *int64 `yaml:"caught_up_bytes"`
	// AllowResyncStops lets a stop be safe that a resync makes unsafe by
	// default: a stop in a shard whose replica is in a full sync (reason
	// shard_syncing), and the stop of a replica that could not resume from
	// its master's backlog when it comes back (full_sync_on_return).
	AllowResyncStops bool `yaml:"allow_resync_stops"`
	// Zones maps node addresses ("ip:port", as CLUSTER NODES gives them)
	// to availability zones. A node listed here is in that zone whatever
	// its availability_zone (Valkey 8.1+) says; the others keep theirs.
	Zones map[string]string `yaml:"zones"`
}

// DefaultCaughtUpBytes is the caught-up bound when none is set: 1 MiB.
// A replica acknowledges its offset once a second (REPLCONF ACK), so a
// replica that is fully in sync still reads up to a second of writes
// behind its master; 1 MiB forgives that at writes up to 1 MB/s, while a
// replica resyncing or stuck reads many megabytes behind. It is the bound
// RedisClusterReplicationLagGrowing starts at too.
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

// budgetKeys are the keys failure_budget accepts.
var budgetKeys = []string{"healthy_replica_headroom", "caught_up_bytes", "allow_resync_stops", "zones"}

// UnmarshalYAML decodes failure_budget strictly and validates it at load
// time: a custom decoder does not inherit the file decoder's KnownFields,
// so unknown keys are refused here.
func (b *Budget) UnmarshalYAML(value *yaml.Node) error {
	if value.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: failure_budget must be a mapping", value.Line)
	}
	for i := 0; i+1 < len(value.Content); i += 2 {
		key := value.Content[i]
		if !slices.Contains(budgetKeys, key.Value) {
			return fmt.Errorf("line %d: field %s not found in failure_budget (want one of %s)", key.Line, key.Value, strings.Join(budgetKeys, ", "))
		}
	}
	type plain Budget
	var decoded plain
	if err := value.Decode(&decoded); err != nil {
		return err
	}
	*b = Budget(decoded)
	if err := b.Validate(); err != nil {
		return fmt.Errorf("line %d: %w", value.Line, err)
	}
	return nil
}

// Validate checks the settings: a non-negative caught-up bound, and zones
// keyed by IP:PORT with non-empty names.
func (b Budget) Validate() error {
	var errs []error
	if b.CaughtUpBytes != nil && *b.CaughtUpBytes < 0 {
		errs = append(errs, fmt.Errorf("failure_budget.caught_up_bytes %d must not be negative", *b.CaughtUpBytes))
	}
	if len(b.Zones) > MaxBudgetZones {
		errs = append(errs, fmt.Errorf("failure_budget.zones lists %d nodes, more than %d", len(b.Zones), MaxBudgetZones))
	}
	addrs := make([]string, 0, len(b.Zones))
	for addr := range b.Zones {
		addrs = append(addrs, addr)
	}
	slices.Sort(addrs)
	for _, addr := range addrs {
		if err := config.CheckAddr(addr); err != nil {
			errs = append(errs, fmt.Errorf("failure_budget.zones: %w", err))
			continue
		}
		host, _, _ := net.SplitHostPort(addr)
		if net.ParseIP(host) == nil {
			errs = append(errs, fmt.Errorf("failure_budget.zones: %q: give the node's IP:PORT as CLUSTER NODES lists it, not a host name", addr))
		}
		if strings.TrimSpace(b.Zones[addr]) == "" {
			errs = append(errs, fmt.Errorf("failure_budget.zones: %q: the zone name is empty", addr))
		}
	}
	return errors.Join(errs...)
}
