package kafka

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/failover-exporter/failover_exporter/collector/system"
	"github.com/failover-exporter/failover_exporter/config"
	"github.com/failover-exporter/failover_exporter/lib/flagvalue"
	"github.com/failover-exporter/failover_exporter/systems/kafka/settings"
)

// flagCluster is the Kafka cluster of the --kafka.* flags (Spec.Flags).
type flagCluster struct {
	system.Addrs
	name, version, partitions string
	noPartitions              bool
	topicFilter, topicSkip    string
	givenName, givenVersion   bool
	givenPartitions           bool
}

// declareFlags declares the --kafka.* flags on the server's command.
func declareFlags(cmd *kingpin.CmdClause) system.FlagCluster {
	f := &flagCluster{}
	f.Declare(cmd, "kafka.server", "bootstrap server", "Kafka bootstrap server HOST:PORT (repeatable); enables the Kafka collector for one cluster.")
	cmd.Flag("kafka.cluster-name", "Value of the kafka_cluster label for the --kafka.server cluster.").Default(settings.DefaultClusterName).IsSetByUser(&f.givenName).StringVar(&f.name)
	cmd.Flag("kafka.version", "Kafka protocol version to speak to the --kafka.server cluster (at least "+settings.MinVersion.String()+").").Default(settings.DefaultVersion).IsSetByUser(&f.givenVersion).StringVar(&f.version)
	cmd.Flag("kafka.partition-metrics", "Per-partition series for the --kafka.server cluster: lean (five per healthy partition, detail where unhealthy), unhealthy (only unhealthy partitions), full or none (topic and broker series only).").
		Default(string(settings.DefaultPartitionMetrics)).IsSetByUser(&f.givenPartitions).SetValue(&flagvalue.Enum{Flag: "--kafka.partition-metrics", Dst: &f.partitions, Options: []string{"lean", "unhealthy", "full", "none"}})
	// The flag was a boolean before modes: its negation still means none.
	cmd.Flag("no-kafka.partition-metrics", "Same as --kafka.partition-metrics=none (the flag was a boolean before modes).").Hidden().BoolVar(&f.noPartitions)
	cmd.Flag("kafka.topic-filter", "Regular expression of topics to watch in the --kafka.server cluster.").StringVar(&f.topicFilter)
	cmd.Flag("kafka.topic-exclude", "Regular expression of topics to leave out in the --kafka.server cluster.").StringVar(&f.topicSkip)
	return f
}

// Check checks the flags of the --kafka.server cluster: each value
// whenever it is given, and that none is given without the cluster it is
// for.
func (f *flagCluster) Check() []error {
	errs := f.CheckAddrs()
	servers := f.List()
	// ignored is the message for a flag given without --kafka.server.
	ignored := func(flag, what, key string) error {
		return fmt.Errorf("%s %s and does nothing without --kafka.server; give --kafka.server, or set %s in the config file", flag, what, key)
	}
	if err := settings.CheckVersion(f.version); err != nil {
		errs = append(errs, fmt.Errorf("--kafka.version %w", err))
	} else if f.givenVersion && len(servers) == 0 {
		errs = append(errs, ignored("--kafka.version", "is for the --kafka.server cluster", "version:"))
	}
	for _, re := range []struct{ flag, expr, key string }{
		{"--kafka.topic-filter", f.topicFilter, "topics: {include: ...}"},
		{"--kafka.topic-exclude", f.topicSkip, "topics: {exclude: ...}"},
	} {
		if re.expr == "" {
			continue
		}
		if err := checkRegexp(re.expr); err != nil {
			errs = append(errs, fmt.Errorf("%s %q is not a regular expression: %w; give one such as orders|payments\\..* (Go RE2 syntax, anchored at both ends)", re.flag, re.expr, err))
		} else if len(servers) == 0 {
			errs = append(errs, ignored(re.flag, "filters the topics of the --kafka.server cluster", re.key))
		}
	}
	if f.noPartitions && f.givenPartitions && f.partitions != string(settings.PartitionMetricsNone) {
		errs = append(errs, fmt.Errorf("--no-kafka.partition-metrics (none) contradicts --kafka.partition-metrics=%s; give one of them", f.partitions))
	}
	if len(servers) == 0 {
		if f.givenName {
			errs = append(errs, ignored("--kafka.cluster-name", "names the --kafka.server cluster", "name:"))
		}
		if f.givenPartitions {
			errs = append(errs, ignored("--kafka.partition-metrics", "is for the --kafka.server cluster", "partition_metrics:"))
		} else if f.noPartitions {
			errs = append(errs, ignored("--no-kafka.partition-metrics", "is for the --kafka.server cluster", "partition_metrics: none"))
		}
	}
	return errs
}

// AddTo adds the --kafka.server cluster to cfg.
func (f *flagCluster) AddTo(cfg *config.Config, refresh time.Duration) error {
	kc := settings.Cluster{
		Name:             f.name,
		BootstrapServers: f.List(),
		Version:          f.version,
		RefreshInterval:  refresh,
		PartitionMetrics: settings.PartitionMetrics(f.partitions),
	}
	if f.noPartitions {
		kc.PartitionMetrics = settings.PartitionMetricsNone
	}
	for _, re := range []struct {
		flag, expr string
		dst        **config.Regexp
	}{{"kafka.topic-filter", f.topicFilter, &kc.Topics.Include}, {"kafka.topic-exclude", f.topicSkip, &kc.Topics.Exclude}} {
		if re.expr == "" {
			continue
		}
		r, err := config.NewRegexp(re.expr)
		if err != nil {
			return fmt.Errorf("--%s: %w", re.flag, err)
		}
		*re.dst = r
	}
	settings.SetClusters(cfg, append(settings.Clusters(cfg), kc))
	return nil
}

// checkRegexp says what is wrong with expr as the flags' topic filters
// use it, in terms of expr itself rather than of the anchored form
// config.NewRegexp compiles.
func checkRegexp(expr string) error {
	_, err := regexp.Compile(expr)
	if err == nil {
		_, err = config.NewRegexp(expr)
	}
	var syntaxErr *syntax.Error
	if errors.As(err, &syntaxErr) {
		return fmt.Errorf("%s in %q", syntaxErr.Code, syntaxErr.Expr)
	}
	return err
}
