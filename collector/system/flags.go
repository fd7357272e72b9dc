package system

import (
	"fmt"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/failover-exporter/failover_exporter/config"
	"github.com/failover-exporter/failover_exporter/lib/flagvalue"
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

// Addrs is the repeatable flag that names a FlagCluster by its addresses
// (the AddrFlag), for a FlagCluster to embed: it gives Given and AddrFlag.
type Addrs struct {
	flag, what string
	values     []string
}

// Declare declares the repeatable flag name ("kafka.server") on cmd;
// what is an address's name in its messages ("bootstrap server").
func (a *Addrs) Declare(cmd *kingpin.CmdClause, name, what, help string) {
	a.flag, a.what = "--"+name, what
	cmd.Flag(name, help).StringsVar(&a.values)
}

// List are the addresses given, each comma-separated list split.
func (a *Addrs) List() []string { return flagvalue.SplitList(a.values) }

func (a *Addrs) Given() bool      { return len(a.List()) > 0 }
func (a *Addrs) AddrFlag() string { return a.flag }

// CheckAddrs checks each address given, each message naming the flag.
func (a *Addrs) CheckAddrs() []error {
	var errs []error
	for _, s := range a.List() {
		if err := config.CheckAddr(s); err != nil {
			errs = append(errs, fmt.Errorf("%s: %s %w", a.flag, a.what, err))
		}
	}
	return errs
}
