// Command failover_exporter serves the replication state of Kafka clusters
// and the sharding and replication state of Redis Clusters to Prometheus.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/common/version"
	"github.com/prometheus/exporter-toolkit/web"
	"github.com/prometheus/exporter-toolkit/web/kingpinflag"
	sloggokit "github.com/tjhop/slog-gokit"

	"github.com/failover-exporter/failover_exporter/collector"
	"github.com/failover-exporter/failover_exporter/collector/exposition"
	"github.com/failover-exporter/failover_exporter/config"
	"github.com/failover-exporter/failover_exporter/internal/slotcmd"
)

const exporterName = collector.ExporterName

// flags are the command-line settings; everything else is in the config file.
type flags struct {
	configFile       string
	configCheck      bool
	kafkaServers     []string
	kafkaName        string
	kafkaVersion     string
	kafkaPartitions  bool
	kafkaTopicFilter string
	kafkaTopicSkip   string
	redisAddrs       []string
	redisName        string
	slotKeys         []string
	refreshInterval  time.Duration
	telemetryPath    string
	logLevel         string
	logFormat        string
	webConfig        *web.FlagConfig
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr *os.File) int {
	app := kingpin.New(exporterName, "Prometheus exporter for Kafka replication and Redis Cluster sharding and failover.")
	app.Version(version.Print(exporterName))
	app.HelpFlag.Short('h')
	app.UsageWriter(stdout)
	app.ErrorWriter(stderr)

	var f flags
	serve := app.Command("serve", "Serve metrics (the default).").Default()
	app.Flag("config.file", "YAML file listing clusters to watch; see README.").StringVar(&f.configFile)
	app.Flag("config.check", "Validate --config.file and the flags, then exit.").BoolVar(&f.configCheck)
	app.Flag("kafka.server", "Kafka bootstrap server HOST:PORT (repeatable); enables the Kafka collector for one cluster.").StringsVar(&f.kafkaServers)
	app.Flag("kafka.cluster-name", "Value of the kafka_cluster label for the --kafka.server cluster.").Default(config.DefaultKafkaClusterName).StringVar(&f.kafkaName)
	app.Flag("kafka.version", "Kafka protocol version to speak to the --kafka.server cluster.").Default(config.DefaultKafkaVersion).StringVar(&f.kafkaVersion)
	app.Flag("kafka.partition-metrics", "Serve per-partition series for the --kafka.server cluster (--no-kafka.partition-metrics keeps topic and broker series only).").Default("true").BoolVar(&f.kafkaPartitions)
	app.Flag("kafka.topic-filter", "Regular expression of topics to watch in the --kafka.server cluster.").StringVar(&f.kafkaTopicFilter)
	app.Flag("kafka.topic-exclude", "Regular expression of topics to leave out in the --kafka.server cluster.").StringVar(&f.kafkaTopicSkip)
	app.Flag("redis.addr", "Redis Cluster seed node HOST:PORT (repeatable); enables the Redis collector for one cluster.").StringsVar(&f.redisAddrs)
	app.Flag("redis.cluster-name", "Value of the redis_cluster label for the --redis.addr cluster.").Default(config.DefaultRedisClusterName).StringVar(&f.redisName)
	app.Flag("refresh.interval", "How often clusters given by flags are read.").Default(config.DefaultRefreshInterval.String()).DurationVar(&f.refreshInterval)
	app.Flag("web.telemetry-path", "Path under which to expose metrics.").Default("/metrics").StringVar(&f.telemetryPath)
	app.Flag("log.level", "Only log messages with the given severity or above: debug, info, warn, error.").Default("info").EnumVar(&f.logLevel, "debug", "info", "warn", "error")
	app.Flag("log.format", "Output format of log messages: logfmt or json.").Default("logfmt").EnumVar(&f.logFormat, "logfmt", "json")
	f.webConfig = kingpinflag.AddFlags(app, ":9877")
	slot := app.Command("slot", "Print each KEY's Redis Cluster hash slot, and with --redis.addr the address of the node that owns it.")
	slot.Arg("key", "Keys to look up.").Required().StringsVar(&f.slotKeys)

	cmd, err := app.Parse(args)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v (see --help)\n", exporterName, err)
		return 2
	}
	logger := newLogger(stderr, f.logFormat, f.logLevel)

	switch cmd {
	case slot.FullCommand():
		if err := runSlot(f, stdout); err != nil {
			fmt.Fprintf(stderr, "%s slot: %v\n", exporterName, err)
			return 1
		}
	case serve.FullCommand():
		if err := runServe(f, logger); err != nil {
			// Plain text: this is read by a person at a terminal or in a
			// crash-looping pod's log, not by a log pipeline.
			fmt.Fprintf(stderr, "%s: %v\n", exporterName, err)
			return 1
		}
	}
	return 0
}

func newLogger(w *os.File, format, lvl string) log.Logger {
	var logger log.Logger
	if format == "json" {
		logger = log.NewJSONLogger(log.NewSyncWriter(w))
	} else {
		logger = log.NewLogfmtLogger(log.NewSyncWriter(w))
	}
	logger = level.NewFilter(logger, level.Allow(level.ParseDefault(lvl, level.InfoValue())))
	return log.With(logger, "ts", log.DefaultTimestampUTC, "caller", log.DefaultCaller)
}

// loadConfig reads the config file, if any, and adds the clusters given by
// flags.
func loadConfig(f flags) (*config.Config, error) {
	cfg := &config.Config{}
	if f.configFile != "" {
		var err error
		if cfg, err = config.Load(f.configFile); err != nil {
			return nil, err
		}
	}
	if len(f.kafkaServers) > 0 {
		kc := config.KafkaCluster{
			Name:             f.kafkaName,
			BootstrapServers: splitList(f.kafkaServers),
			Version:          f.kafkaVersion,
			RefreshInterval:  f.refreshInterval,
		}
		if !f.kafkaPartitions {
			off := false
			kc.PartitionMetrics = &off
		}
		for _, re := range []struct {
			flag, expr string
			dst        **config.Regexp
		}{{"kafka.topic-filter", f.kafkaTopicFilter, &kc.Topics.Include}, {"kafka.topic-exclude", f.kafkaTopicSkip, &kc.Topics.Exclude}} {
			if re.expr == "" {
				continue
			}
			r, err := config.NewRegexp(re.expr)
			if err != nil {
				return nil, fmt.Errorf("--%s: %w", re.flag, err)
			}
			*re.dst = r
		}
		cfg.Kafka = append(cfg.Kafka, kc)
	}
	if len(f.redisAddrs) > 0 {
		cfg.Redis = append(cfg.Redis, config.RedisCluster{
			Name:            f.redisName,
			Addrs:           splitList(f.redisAddrs),
			RefreshInterval: f.refreshInterval,
		})
	}
	if err := cfg.Complete(); err != nil {
		return nil, fmt.Errorf("flags and config file: %w", err)
	}
	if len(cfg.Kafka)+len(cfg.Redis) == 0 {
		return nil, errors.New("nothing to watch: give --kafka.server, --redis.addr or a --config.file listing clusters")
	}
	return cfg, nil
}

// splitList accepts both repeated flags and comma-separated values.
func splitList(values []string) []string {
	var out []string
	for _, v := range values {
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
	}
	return out
}

// runSlot prints the hash slot of each key, and its owner when seeds are
// given.
func runSlot(f flags, stdout *os.File) error {
	rc := config.RedisCluster{Name: f.redisName, Addrs: splitList(f.redisAddrs), RefreshInterval: f.refreshInterval}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return slotcmd.Run(ctx, stdout, f.slotKeys, rc)
}

func runServe(f flags, logger log.Logger) error {
	cfg, err := loadConfig(f)
	if err != nil {
		return err
	}
	if f.configCheck {
		level.Info(logger).Log("msg", "configuration is valid", "kafka_clusters", len(cfg.Kafka), "redis_clusters", len(cfg.Redis))
		return nil
	}
	level.Info(logger).Log("msg", "starting "+exporterName, "version", version.Info(), "build_context", version.BuildContext())

	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	self := collector.NewSelfMetrics()
	reg.MustRegister(self.Collectors()...)
	reloadOK, reloadTime := self.ReloadOK, self.ReloadTime

	manager := collector.NewManager(logger)
	if err := manager.Apply(cfg); err != nil {
		return err
	}
	defer manager.Stop()
	reloadOK.Set(1)
	reloadTime.SetToCurrentTime()

	var reloadMu sync.Mutex
	reload := func() error {
		reloadMu.Lock()
		defer reloadMu.Unlock()
		next, err := loadConfig(f)
		if err == nil {
			err = manager.Apply(next)
		}
		if err != nil {
			reloadOK.Set(0)
			level.Error(logger).Log("msg", "reload failed; keeping the previous configuration", "err", err)
			return err
		}
		reloadOK.Set(1)
		reloadTime.SetToCurrentTime()
		level.Info(logger).Log("msg", "configuration reloaded")
		return nil
	}

	mux := http.NewServeMux()
	mux.Handle(f.telemetryPath, exposition.Handler(reg, manager.TextWriters(), func(msg string, err error) {
		level.Error(logger).Log("msg", msg, "err", err)
	}))
	mux.HandleFunc("/-/healthy", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "Healthy")
	})
	mux.HandleFunc("/-/ready", func(w http.ResponseWriter, _ *http.Request) {
		if !manager.Ready() {
			http.Error(w, "Not ready: waiting for the first refresh of every cluster", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "Ready")
	})
	mux.HandleFunc("/-/reload", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost && r.Method != http.MethodPut {
			http.Error(w, "Use POST or PUT to reload the configuration", http.StatusMethodNotAllowed)
			return
		}
		if err := reload(); err != nil {
			http.Error(w, "Reload failed: "+err.Error(), http.StatusInternalServerError)
			return
		}
		fmt.Fprintln(w, "Reloaded")
	})
	if f.telemetryPath != "/" {
		landing, err := web.NewLandingPage(web.LandingConfig{
			Name:        "Failover Exporter",
			Description: "Kafka replication and Redis Cluster sharding and failover",
			Version:     version.Info(),
			Links: []web.LandingLinks{
				{Address: f.telemetryPath, Text: "Metrics"},
				{Address: "/-/healthy", Text: "Health"},
				{Address: "/-/ready", Text: "Readiness", Description: "ready once every cluster was read once"},
			},
		})
		if err != nil {
			return fmt.Errorf("landing page: %w", err)
		}
		mux.Handle("/", landing)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				_ = reload()
			}
		}
	}()

	server := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	slogger := slog.New(sloggokit.NewGoKitHandler(logger, nil))
	serveErr := make(chan error, 1)
	go func() { serveErr <- web.ListenAndServe(server, f.webConfig, slogger) }()
	select {
	case err := <-serveErr:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	case <-ctx.Done():
		level.Info(logger).Log("msg", "shutting down")
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return server.Shutdown(shutdownCtx)
	}
}
