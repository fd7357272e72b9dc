package redis

import (
	"errors"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/failover-exporter/failover_exporter/collector/system"
	"github.com/failover-exporter/failover_exporter/config"
	"github.com/failover-exporter/failover_exporter/systems/redis/settings"
)

// flagCluster is the Redis Cluster of the --redis.* flags (Spec.Flags).
type flagCluster struct {
	system.Addrs
	name, passwordFile string
	givenName          bool
}

// declareFlags declares the --redis.* flags on the server's command.
func declareFlags(cmd *kingpin.CmdClause) system.FlagCluster {
	f := &flagCluster{}
	f.Declare(cmd, "redis.addr", "addr", "Redis Cluster seed node HOST:PORT (repeatable); enables the Redis collector for one cluster.")
	cmd.Flag("redis.cluster-name", "Value of the redis_cluster label for the --redis.addr cluster.").Default(settings.DefaultClusterName).IsSetByUser(&f.givenName).StringVar(&f.name)
	cmd.Flag("redis.password-file", "File holding the password of the --redis.addr cluster (never the password itself on the command line).").StringVar(&f.passwordFile)
	return f
}

// Check checks the --redis.addr cluster's flags.
func (f *flagCluster) Check() []error {
	errs := f.CheckAddrs()
	if !f.Given() {
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
		Addrs:           f.List(),
		Password:        config.Secret{File: f.passwordFile},
		RefreshInterval: refresh,
	}))
	return nil
}
