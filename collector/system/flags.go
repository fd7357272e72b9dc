package system

import (
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/failover-exporter/failover_exporter/config"
)

// FlagCluster is the one cluster a system's convenience flags describe
// (Spec.Flags), for a user without a config file: "--kafka.server=HOST:PORT"
// and the flags that go with it. The server reads it with its other flags;
// the system declares it, as node_exporter's collectors declare theirs.
type FlagCluster interface {
	// Given reports whether the flags name a cluster (AddrFlag was given).
	Given() bool
	// AddrFlag is the flag that names the cluster: "--kafka.server".
	AddrFlag() string
	// Check checks the flags alone, each message naming its flag: each
	// value whenever it is given, and none given without the cluster it
	// is for.
	Check() []error
	// AddTo adds the cluster to cfg, read every refresh (the server's
	// --refresh.interval).
	AddTo(cfg *config.Config, refresh time.Duration) error
}

// DeclareFlags declares the system's flags on the server's command and
// returns what they describe; nil for a system without flags.
func (d defined[S, C]) DeclareFlags(cmd *kingpin.CmdClause) FlagCluster {
	if d.spec.Flags == nil {
		return nil
	}
	return d.spec.Flags(cmd)
}
