package sentinel

import (
	"errors"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/failover-exporter/failover_exporter/collector/system"
	"github.com/failover-exporter/failover_exporter/config"
	"github.com/failover-exporter/failover_exporter/systems/sentinel/settings"
)

// flagSet is the deployment of the --sentinel.* flags (Spec.Flags).
type flagSet struct {
	system.Addrs
	name                                   string
	masters                                []string
	givenName                              bool
	sentinelPasswordFile, nodePasswordFile string
}

// declareFlags declares the --sentinel.* flags on the server's command.
func declareFlags(cmd *kingpin.CmdClause) system.FlagCluster {
	f := &flagSet{}
	f.Declare(cmd, "sentinel.addr", "addr", "Redis Sentinel HOST:PORT (repeatable); enables the Sentinel collector for one deployment.")
	cmd.Flag("sentinel.cluster-name", "Value of the sentinel_cluster label for the --sentinel.addr deployment.").Default(settings.DefaultName).IsSetByUser(&f.givenName).StringVar(&f.name)
	cmd.Flag("sentinel.master", "A master name to watch (repeatable); default every master the sentinels monitor.").StringsVar(&f.masters)
	cmd.Flag("sentinel.password-file", "File holding the sentinels' password (never the password itself on the command line).").StringVar(&f.sentinelPasswordFile)
	cmd.Flag("sentinel.node-password-file", "File holding the data nodes' password.").StringVar(&f.nodePasswordFile)
	return f
}

// Check checks the --sentinel.addr deployment's flags.
func (f *flagSet) Check() []error {
	errs := f.CheckAddrs()
	if !f.Given() && (f.givenName || len(f.masters) > 0 || f.sentinelPasswordFile != "" || f.nodePasswordFile != "") {
		errs = append(errs, errors.New("--sentinel.cluster-name, --sentinel.master and the --sentinel.*password-file flags are for the --sentinel.addr deployment and do nothing without it; give --sentinel.addr, or use the sentinel: section of the config file"))
	}
	return errs
}

// AddTo adds the --sentinel.addr deployment to cfg.
func (f *flagSet) AddTo(cfg *config.Config, refresh time.Duration) error {
	settings.SetEntries(cfg, append(settings.Entries(cfg), settings.Set{
		Name:               f.name,
		Sentinels:          f.List(),
		Masters:            f.masters,
		SentinelConnection: settings.Connection{Password: config.Secret{File: f.sentinelPasswordFile}},
		NodeConnection:     settings.Connection{Password: config.Secret{File: f.nodePasswordFile}},
		RefreshInterval:    refresh,
	}))
	return nil
}
