package redis

import (
	"errors"
	"fmt"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/failover-exporter/failover_exporter/collector/system"
	"github.com/failover-exporter/failover_exporter/config"
	"github.com/failover-exporter/failover_exporter/lib/flagvalue"
	"github.com/failover-exporter/failover_exporter/systems/redis/settings"
)

// flagCluster is the Redis Cluster of the --redis.* flags (Spec.Flags).
type flagCluster struct {
	addrs              []string
	name, passwordFile string
	givenName          bool
}

// declareFlags declares the --redis.* flags on the server's command.
func declareFlags(cmd *kingpin.CmdClause) system.FlagCluster {
	f := &flagCluster{}
	cmd.Flag("redis.addr", "Redis Cluster seed node HOST:PORT (repeatable); enables the Redis collector for one cluster.").StringsVar(&f.addrs)
	cmd.Flag("redis.cluster-name", "Value of the redis_cluster label for the --redis.addr cluster.").Default(settings.DefaultClusterName).IsSetByUser(&f.givenName).StringVar(&f.name)
	cmd.Flag("redis.password-file", "File holding the password of the --redis.addr cluster (never the password itself on the command line).").StringVar(&f.passwordFile)
	return f
}

func (f *flagCluster) Given() bool      { return len(flagvalue.SplitList(f.addrs)) > 0 }
func (f *flagCluster) AddrFlag() string { return "--redis.addr" }

// Check checks the --redis.addr cluster's flags.
func (f *flagCluster) Check() []error {
	var errs []error
	addrs := flagvalue.SplitList(f.addrs)
	for _, s := range addrs {
		if err := config.CheckAddr(s); err != nil {
			errs = append(errs, fmt.Errorf("--redis.addr: addr %w", err))
		}
	}
	if len(addrs) == 0 {
		if f.passwordFile != "" {
			errs = append(errs, errors.New("--redis.password-file is for the --redis.addr cluster; give --redis.addr, or set password: {file: PATH} in the config file"))
		}
		if f.givenName {
			errs = append(errs, errors.New("--redis.cluster-name names the --redis.addr cluster and does nothing without --redis.addr; give --redis.addr, or set name: in the config file"))
		}
	}
	return errs
}

// AddTo adds the --redis.addr cluster to cfg.
func (f *flagCluster) AddTo(cfg *config.Config, refresh time.Duration) error {
	settings.SetClusters(cfg, append(settings.Clusters(cfg), settings.Cluster{
		Name:            f.name,
		Addrs:           flagvalue.SplitList(f.addrs),
		Password:        config.Secret{File: f.passwordFile},
		RefreshInterval: refresh,
	}))
	return nil
}
