package main

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/exporter-toolkit/web"
	"github.com/prometheus/exporter-toolkit/web/kingpinflag"

	"github.com/failover-exporter/failover_exporter/collector/events"
	"github.com/failover-exporter/failover_exporter/config"
)

// flags are the command-line settings; everything else is in the config file.
type flags struct {
	configFile        string
	configCheck       bool
	kafkaServers      []string
	kafkaName         string
	kafkaVersion      string
	kafkaPartitions   string
	kafkaNoPartitions bool
	kafkaTopicFilter  string
	kafkaTopicSkip    string
	redisAddrs        []string
	redisName         string
	redisPasswordFile string
	slotKeys          []string
	refreshInterval   time.Duration
	telemetryPath     string
	idleTimeout       time.Duration
	enablePprof       bool
	logLevel          string
	logFormat         string
	eventCapacity     int
	webConfig         *web.FlagConfig
}

// defineServeFlags declares the flags on app; their values land in f.
func defineServeFlags(app *kingpin.Application, f *flags) {
	app.Flag("config.file", "YAML file listing clusters to watch; see README.").StringVar(&f.configFile)
	app.Flag("config.check", "Validate --config.file and the flags, then exit.").BoolVar(&f.configCheck)
	app.Flag("kafka.server", "Kafka bootstrap server HOST:PORT (repeatable); enables the Kafka collector for one cluster.").StringsVar(&f.kafkaServers)
	app.Flag("kafka.cluster-name", "Value of the kafka_cluster label for the --kafka.server cluster.").Default(config.DefaultKafkaClusterName).StringVar(&f.kafkaName)
	app.Flag("kafka.version", "Kafka protocol version to speak to the --kafka.server cluster (at least "+config.MinKafkaVersion.String()+").").Default(config.DefaultKafkaVersion).StringVar(&f.kafkaVersion)
	app.Flag("kafka.partition-metrics", "Per-partition series for the --kafka.server cluster: lean (five per healthy partition, detail where unhealthy), unhealthy (only unhealthy partitions), full or none (topic and broker series only).").
		Default(string(config.DefaultPartitionMetrics)).EnumVar(&f.kafkaPartitions, "lean", "unhealthy", "full", "none")
	// The flag was a boolean before modes: its negation still means none.
	app.Flag("no-kafka.partition-metrics", "Same as --kafka.partition-metrics=none (the flag was a boolean before modes).").Hidden().BoolVar(&f.kafkaNoPartitions)
	app.Flag("kafka.topic-filter", "Regular expression of topics to watch in the --kafka.server cluster.").StringVar(&f.kafkaTopicFilter)
	app.Flag("kafka.topic-exclude", "Regular expression of topics to leave out in the --kafka.server cluster.").StringVar(&f.kafkaTopicSkip)
	app.Flag("redis.addr", "Redis Cluster seed node HOST:PORT (repeatable); enables the Redis collector for one cluster.").StringsVar(&f.redisAddrs)
	app.Flag("redis.cluster-name", "Value of the redis_cluster label for the --redis.addr cluster.").Default(config.DefaultRedisClusterName).StringVar(&f.redisName)
	app.Flag("redis.password-file", "File holding the password of the --redis.addr cluster (never the password itself on the command line).").StringVar(&f.redisPasswordFile)
	app.Flag("refresh.interval", "How often clusters given by flags are read ("+config.MinRefreshInterval.String()+" to "+config.MaxRefreshInterval.String()+").").Default(config.DefaultRefreshInterval.String()).DurationVar(&f.refreshInterval)
	app.Flag("web.telemetry-path", "Path under which to expose metrics.").Default("/metrics").StringVar(&f.telemetryPath)
	app.Flag("web.idle-timeout", "Close keep-alive HTTP connections idle this long.").Default("2m").DurationVar(&f.idleTimeout)
	app.Flag("web.enable-pprof", "Serve Go profiles under /debug/pprof/ (and link them from the landing page).").BoolVar(&f.enablePprof)
	app.Flag("log.level", "Only log messages with the given severity or above: debug, info, warn, error.").Default("info").EnumVar(&f.logLevel, "debug", "info", "warn", "error")
	app.Flag("log.format", "Output format of log messages: logfmt or json.").Default("logfmt").EnumVar(&f.logFormat, "logfmt", "json")
	app.Flag("events.capacity", "How many of the latest cluster events (transitions seen between refreshes) to keep for /api/v1/events and the status page (1 to "+strconv.Itoa(config.MaxEventCapacity)+").").Default(strconv.Itoa(events.DefaultCapacity)).IntVar(&f.eventCapacity)
	f.webConfig = kingpinflag.AddFlags(app, ":9877")
}

// checkFlags runs every check of the flags alone, each message naming its
// flag. --config.check and the start both run it.
func checkFlags(f flags) error {
	var errs []error
	if err := checkTelemetryPath(f.telemetryPath, f.enablePprof); err != nil {
		errs = append(errs, fmt.Errorf("--web.telemetry-path %w", err))
	}
	if err := config.CheckEventCapacity("--events.capacity", f.eventCapacity); err != nil {
		errs = append(errs, err)
	}
	if f.idleTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--web.idle-timeout %s must be positive", f.idleTimeout))
	}
	if err := config.CheckRefreshInterval("--refresh.interval", f.refreshInterval); err != nil {
		errs = append(errs, err)
	}
	if err := config.CheckKafkaVersion(f.kafkaVersion); err != nil {
		errs = append(errs, fmt.Errorf("--kafka.version %w", err))
	}
	for _, s := range splitList(f.kafkaServers) {
		if err := config.CheckAddr(s); err != nil {
			errs = append(errs, fmt.Errorf("--kafka.server: bootstrap server %w", err))
		}
	}
	for _, s := range splitList(f.redisAddrs) {
		if err := config.CheckAddr(s); err != nil {
			errs = append(errs, fmt.Errorf("--redis.addr: addr %w", err))
		}
	}
	if f.redisPasswordFile != "" && len(f.redisAddrs) == 0 {
		errs = append(errs, errors.New("--redis.password-file is for the --redis.addr cluster; give --redis.addr, or set password: {file: PATH} in the config file"))
	}
	for _, addr := range *f.webConfig.WebListenAddresses {
		if err := checkListenAddress(addr); err != nil {
			errs = append(errs, fmt.Errorf("--web.listen-address %q: %w", addr, err))
		}
	}
	if path := *f.webConfig.WebConfigFile; path != "" {
		if err := web.Validate(path); err != nil {
			errs = append(errs, fmt.Errorf("--web.config.file %s: %w", path, err))
		}
	}
	return errors.Join(errs...)
}

// checkTelemetryPath refuses paths that http.ServeMux would panic on or
// that would shadow another endpoint. The message follows the flag name.
func checkTelemetryPath(p string, pprof bool) error {
	if !strings.HasPrefix(p, "/") {
		return fmt.Errorf("%q must start with /, as in /metrics", p)
	}
	for _, r := range p {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/-._~", r)) {
			return fmt.Errorf("%q: use only letters, digits and / - . _ ~", p)
		}
	}
	// /-/ is the exporter's own: a second registration of /-/ready would
	// make http.ServeMux panic.
	if p == "/-" || strings.HasPrefix(p, "/-/") {
		return fmt.Errorf("%q collides with the exporter's /-/healthy, /-/ready and /-/reload", p)
	}
	if p == "/api/v1/events" {
		return fmt.Errorf("%q collides with the event log", p)
	}
	if pprof && strings.HasPrefix(p+"/", "/debug/pprof/") {
		return fmt.Errorf("%q collides with /debug/pprof/ (--web.enable-pprof)", p)
	}
	return nil
}

// checkListenAddress refuses what net.Listen would, without listening:
// the port may still be taken at start.
func checkListenAddress(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return errors.New("want [HOST]:PORT, as in :9877")
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return fmt.Errorf("port %q is not a port number", port)
	}
	return nil
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
