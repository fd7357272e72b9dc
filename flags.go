package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path"
	"path/filepath"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/exporter-toolkit/web"
	"github.com/prometheus/exporter-toolkit/web/kingpinflag"
	"gopkg.in/yaml.v3"

	"github.com/failover-exporter/failover_exporter/collector/events"
	"github.com/failover-exporter/failover_exporter/config"
	"github.com/failover-exporter/failover_exporter/internal/readfile"
)

// flags are the server's command-line settings; everything else is in the
// config file.
type flags struct {
	configFile               string
	configCheck              bool
	kafkaServers             []string
	kafkaName                string
	kafkaVersion             string
	kafkaPartitions          string
	kafkaNoPartitions        bool
	kafkaTopicFilter         string
	kafkaTopicSkip           string
	redisAddrs               []string
	redisName                string
	redisPasswordFile        string
	refreshInterval          time.Duration
	telemetryPath            string
	idleTimeout              time.Duration
	enablePprof              bool
	logLevel                 string
	logFormat                string
	eventCapacity            int
	probeMaxTargets          int
	probeIdleTimeout         time.Duration
	probeDiscoveredOnMetrics bool
	webConfig                *web.FlagConfig
	// given says which flags with a default the user wrote, so that a
	// setting that would be ignored is refused instead.
	given givenFlags
}

// givenFlags records which defaulted flags were set on the command line.
type givenFlags struct {
	kafkaName, kafkaVersion, kafkaPartitions, redisName, refreshInterval bool
}

// defineServeFlags declares the server's flags on its command; their
// values land in f. None is the application's: the other commands take
// none of them, and no command logs but the server.
func defineServeFlags(cmd *kingpin.CmdClause, f *flags) {
	cmd.Flag("config.file", "YAML file listing clusters to watch; see docs/configuration.md.").StringVar(&f.configFile)
	cmd.Flag("config.check", "Validate --config.file and the flags, then exit.").BoolVar(&f.configCheck)
	cmd.Flag("kafka.server", "Kafka bootstrap server HOST:PORT (repeatable); enables the Kafka collector for one cluster.").StringsVar(&f.kafkaServers)
	cmd.Flag("kafka.cluster-name", "Value of the kafka_cluster label for the --kafka.server cluster.").Default(config.DefaultKafkaClusterName).IsSetByUser(&f.given.kafkaName).StringVar(&f.kafkaName)
	cmd.Flag("kafka.version", "Kafka protocol version to speak to the --kafka.server cluster (at least "+config.MinKafkaVersion.String()+").").Default(config.DefaultKafkaVersion).IsSetByUser(&f.given.kafkaVersion).StringVar(&f.kafkaVersion)
	cmd.Flag("kafka.partition-metrics", "Per-partition series for the --kafka.server cluster: lean (five per healthy partition, detail where unhealthy), unhealthy (only unhealthy partitions), full or none (topic and broker series only).").
		Default(string(config.DefaultPartitionMetrics)).IsSetByUser(&f.given.kafkaPartitions).SetValue(&enumValue{flag: "--kafka.partition-metrics", dst: &f.kafkaPartitions, options: []string{"lean", "unhealthy", "full", "none"}})
	// The flag was a boolean before modes: its negation still means none.
	cmd.Flag("no-kafka.partition-metrics", "Same as --kafka.partition-metrics=none (the flag was a boolean before modes).").Hidden().BoolVar(&f.kafkaNoPartitions)
	cmd.Flag("kafka.topic-filter", "Regular expression of topics to watch in the --kafka.server cluster.").StringVar(&f.kafkaTopicFilter)
	cmd.Flag("kafka.topic-exclude", "Regular expression of topics to leave out in the --kafka.server cluster.").StringVar(&f.kafkaTopicSkip)
	cmd.Flag("redis.addr", "Redis Cluster seed node HOST:PORT (repeatable); enables the Redis collector for one cluster.").StringsVar(&f.redisAddrs)
	cmd.Flag("redis.cluster-name", "Value of the redis_cluster label for the --redis.addr cluster.").Default(config.DefaultRedisClusterName).IsSetByUser(&f.given.redisName).StringVar(&f.redisName)
	cmd.Flag("redis.password-file", "File holding the password of the --redis.addr cluster (never the password itself on the command line).").StringVar(&f.redisPasswordFile)
	cmd.Flag("refresh.interval", "How often clusters given by flags are read ("+config.MinRefreshInterval.String()+" to "+config.MaxRefreshInterval.String()+").").Default(config.DefaultRefreshInterval.String()).IsSetByUser(&f.given.refreshInterval).SetValue(&durationValue{flag: "--refresh.interval", dst: &f.refreshInterval})
	cmd.Flag("web.telemetry-path", "Path under which to expose metrics.").Default("/metrics").StringVar(&f.telemetryPath)
	cmd.Flag("web.idle-timeout", "Close keep-alive HTTP connections idle this long.").Default("2m").SetValue(&durationValue{flag: "--web.idle-timeout", dst: &f.idleTimeout})
	cmd.Flag("web.enable-pprof", "Serve Go profiles under /debug/pprof/ (and link them from the landing page).").BoolVar(&f.enablePprof)
	cmd.Flag("log.level", "Only log messages with the given severity or above: debug, info, warn, error.").Default("info").SetValue(&enumValue{flag: "--log.level", dst: &f.logLevel, options: []string{"debug", "info", "warn", "error"}})
	cmd.Flag("log.format", "Output format of log messages: logfmt or json.").Default("logfmt").SetValue(&enumValue{flag: "--log.format", dst: &f.logFormat, options: []string{"logfmt", "json"}})
	cmd.Flag("events.capacity", "How many of the latest cluster events (transitions seen between refreshes) to keep for /api/v1/events and the status page (1 to "+strconv.Itoa(config.MaxEventCapacity)+").").Default(strconv.Itoa(events.DefaultCapacity)).SetValue(&countValue{flag: "--events.capacity", dst: &f.eventCapacity, min: 1, max: config.MaxEventCapacity})
	cmd.Flag("probe.max-targets", "How many discovered targets (/probe with module=) may be watched at once; a probe of one more is answered 429 (0 to "+strconv.Itoa(maxProbeTargets)+"; 0 turns discovered targets off).").Default("100").SetValue(&countValue{flag: "--probe.max-targets", dst: &f.probeMaxTargets, min: 0, max: maxProbeTargets})
	cmd.Flag("probe.discovered-on-metrics", "Serve the discovered targets (/probe with module=) on /metrics and the status page too. Off, only /probe serves them, so that no probe changes what /metrics carries.").Default("false").BoolVar(&f.probeDiscoveredOnMetrics)
	cmd.Flag("probe.idle-timeout", "Stop watching a discovered target no probe asked for this long, and free its memory.").Default("10m").SetValue(&durationValue{flag: "--probe.idle-timeout", dst: &f.probeIdleTimeout})
	f.webConfig = kingpinflag.AddFlags(cmd, ":9877")
}

// durationValue is a duration flag whose parse errors name the flag and
// the expected form; kingpin's own say only "time: missing unit".
type durationValue struct {
	flag string
	dst  *time.Duration
}

func (v *durationValue) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err == nil {
		*v.dst = d
		return nil
	}
	if _, numErr := strconv.ParseFloat(s, 64); numErr == nil {
		return fmt.Errorf("%s %q has no unit; write a duration such as %ss or %sms", v.flag, s, s, s)
	}
	return fmt.Errorf("%s %q is not a duration; write one such as 5s, 500ms or 2m", v.flag, s)
}

func (v *durationValue) String() string {
	if v.dst == nil {
		return ""
	}
	return v.dst.String()
}

// enumValue is kingpin's enum flag with the flag's name in its error.
type enumValue struct {
	flag    string
	dst     *string
	options []string
}

func (v *enumValue) Set(s string) error {
	if !slices.Contains(v.options, s) {
		// The words are kingpin's, which scripts may match on.
		return fmt.Errorf("%s: enum value must be one of %s, got '%s'", v.flag, strings.Join(v.options, ","), s)
	}
	*v.dst = s
	return nil
}

func (v *enumValue) String() string {
	if v.dst == nil {
		return ""
	}
	return *v.dst
}

// maxProbeTargets bounds --probe.max-targets: each target is a watcher
// and its memory.
const maxProbeTargets = 10_000

// countValue is a flag that counts something: a whole number, never 1.5
// read as 1 or an overflow read as a negative number.
type countValue struct {
	flag string
	dst  *int
	// min and max bound the number in messages; checkFlags checks them.
	min, max int
}

func (v *countValue) Set(s string) error {
	n, err := strconv.ParseInt(s, 10, 0)
	if err != nil {
		var numErr *strconv.NumError
		if errors.As(err, &numErr) && errors.Is(numErr.Err, strconv.ErrRange) {
			return fmt.Errorf("%s %s is out of range; give a whole number from %d to %d", v.flag, s, v.min, v.max)
		}
		return fmt.Errorf("%s %q is not a whole number; give one from %d to %d", v.flag, s, v.min, v.max)
	}
	*v.dst = int(n)
	return nil
}

func (v *countValue) String() string {
	if v.dst == nil {
		return ""
	}
	return strconv.Itoa(*v.dst)
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
	if f.probeMaxTargets < 0 || f.probeMaxTargets > maxProbeTargets {
		errs = append(errs, fmt.Errorf("--probe.max-targets %d: give a whole number from 0 to %d", f.probeMaxTargets, maxProbeTargets))
	}
	if f.probeIdleTimeout < time.Second {
		errs = append(errs, fmt.Errorf("--probe.idle-timeout %s must be at least 1s (and longer than the scrape interval of the targets)", f.probeIdleTimeout))
	}
	if err := config.CheckRefreshInterval("--refresh.interval", f.refreshInterval); err != nil {
		errs = append(errs, err)
	} else if f.given.refreshInterval && len(splitList(f.kafkaServers)) == 0 && len(splitList(f.redisAddrs)) == 0 {
		errs = append(errs, errors.New("--refresh.interval is for the clusters given by --kafka.server and --redis.addr, and there are none; set refresh_interval: for each cluster of the config file"))
	}
	errs = append(errs, checkKafkaFlags(f)...)
	for _, s := range splitList(f.redisAddrs) {
		if err := config.CheckAddr(s); err != nil {
			errs = append(errs, fmt.Errorf("--redis.addr: addr %w", err))
		}
	}
	if len(splitList(f.redisAddrs)) == 0 {
		if f.redisPasswordFile != "" {
			errs = append(errs, errors.New("--redis.password-file is for the --redis.addr cluster; give --redis.addr, or set password: {file: PATH} in the config file"))
		}
		if f.given.redisName {
			errs = append(errs, errors.New("--redis.cluster-name names the --redis.addr cluster and does nothing without --redis.addr; give --redis.addr, or set name: in the config file"))
		}
	}
	if err := checkListenAddresses(*f.webConfig.WebListenAddresses); err != nil {
		errs = append(errs, err)
	}
	if path := *f.webConfig.WebConfigFile; path != "" {
		if err := checkWebConfigFile(path); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// checkKafkaFlags checks the flags of the --kafka.server cluster: each
// value whenever it is given, and that none is given without the cluster
// it is for.
func checkKafkaFlags(f flags) []error {
	var errs []error
	servers := splitList(f.kafkaServers)
	for _, s := range servers {
		if err := config.CheckAddr(s); err != nil {
			errs = append(errs, fmt.Errorf("--kafka.server: bootstrap server %w", err))
		}
	}
	// ignored is the message for a flag given without --kafka.server.
	ignored := func(flag, what, key string) error {
		return fmt.Errorf("%s %s and does nothing without --kafka.server; give --kafka.server, or set %s in the config file", flag, what, key)
	}
	if err := config.CheckKafkaVersion(f.kafkaVersion); err != nil {
		errs = append(errs, fmt.Errorf("--kafka.version %w", err))
	} else if f.given.kafkaVersion && len(servers) == 0 {
		errs = append(errs, ignored("--kafka.version", "is for the --kafka.server cluster", "version:"))
	}
	for _, re := range []struct{ flag, expr, key string }{
		{"--kafka.topic-filter", f.kafkaTopicFilter, "topics: {include: ...}"},
		{"--kafka.topic-exclude", f.kafkaTopicSkip, "topics: {exclude: ...}"},
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
	if f.kafkaNoPartitions && f.given.kafkaPartitions && f.kafkaPartitions != string(config.PartitionMetricsNone) {
		errs = append(errs, fmt.Errorf("--no-kafka.partition-metrics (none) contradicts --kafka.partition-metrics=%s; give one of them", f.kafkaPartitions))
	}
	if len(servers) == 0 {
		if f.given.kafkaName {
			errs = append(errs, ignored("--kafka.cluster-name", "names the --kafka.server cluster", "name:"))
		}
		if f.given.kafkaPartitions {
			errs = append(errs, ignored("--kafka.partition-metrics", "is for the --kafka.server cluster", "partition_metrics:"))
		} else if f.kafkaNoPartitions {
			errs = append(errs, ignored("--no-kafka.partition-metrics", "is for the --kafka.server cluster", "partition_metrics: none"))
		}
	}
	return errs
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

// checkTelemetryPath refuses paths that http.ServeMux would panic on, that
// it would never route to (it redirects to the cleaned path), or that
// would shadow another endpoint. The message follows the flag name.
func checkTelemetryPath(p string, pprof bool) error {
	if !strings.HasPrefix(p, "/") {
		return fmt.Errorf("%q must start with /, as in /metrics", p)
	}
	for _, r := range p {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/-._~", r)) {
			return fmt.Errorf("%q: use only letters, digits and / - . _ ~", p)
		}
	}
	// http.ServeMux answers a request for an unclean path with a redirect
	// to the clean one, so //metrics or /metrics/. would never be served.
	if clean := path.Clean(p); clean != p {
		return fmt.Errorf("%q is not a clean path (no //, /./, /../ or trailing /): requests for it are redirected to %q; write a path such as /metrics", p, clean)
	}
	// /-/ is the exporter's own: a second registration of /-/ready would
	// make http.ServeMux panic.
	if p == "/-" || strings.HasPrefix(p, "/-/") {
		return fmt.Errorf("%q collides with the exporter's /-/healthy, /-/ready and /-/reload", p)
	}
	if p == "/api/v1" || strings.HasPrefix(p, "/api/v1/") {
		return fmt.Errorf("%q collides with the exporter's API under /api/v1/ (the event log is /api/v1/events)", p)
	}
	if pprof && strings.HasPrefix(p+"/", "/debug/pprof/") {
		return fmt.Errorf("%q collides with /debug/pprof/ (--web.enable-pprof)", p)
	}
	return nil
}

// checkListenAddresses checks the form of each --web.listen-address
// (HOST:PORT, an IP address that parses, each address once). Whether the
// host resolves and the address can be bound is found by listen.
func checkListenAddresses(addrs []string) error {
	var errs []error
	seen := map[string]bool{}
	for _, addr := range addrs {
		if err := checkListenAddress(addr); err != nil {
			errs = append(errs, fmt.Errorf("--web.listen-address %q: %w", addr, err))
			continue
		}
		// Port 0 asks for any free port: twice means two ports.
		if _, port, _ := net.SplitHostPort(addr); seen[addr] && port != "0" {
			errs = append(errs, fmt.Errorf("--web.listen-address %q is given twice; give each address once", addr))
		}
		seen[addr] = true
	}
	return errors.Join(errs...)
}

// checkListenAddress refuses what net.Listen would refuse for its form
// alone, without resolving or listening.
func checkListenAddress(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return errors.New("want [HOST]:PORT, as in :9877 or 127.0.0.1:9877")
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return fmt.Errorf("port %q is not a port number (0 to 65535)", port)
	}
	// A host of digits and dots is meant as an IPv4 address; as a name it
	// would be looked up in DNS and fail with "no such host".
	if host != "" && strings.Trim(host, "0123456789.") == "" && net.ParseIP(host) == nil {
		return fmt.Errorf("%q is not an IP address; give one such as 127.0.0.1, or :PORT for every interface", host)
	}
	return nil
}

// listenTimeout bounds the name lookups of the listen addresses.
const listenTimeout = 10 * time.Second

// listen binds every listen address, or returns an error naming the flag
// and the address that cannot be bound, having closed what it bound.
// --config.check closes the listeners at once; a start serves on them.
// inUse is the error of each address another process holds: a check runs
// beside the exporter it checks, so it reports these apart.
func listen(addrs []string) (listeners []net.Listener, inUse, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), listenTimeout)
	defer cancel()
	var errs, busy []error
	var lc net.ListenConfig
	for _, addr := range addrs {
		l, err := lc.Listen(ctx, "tcp", addr)
		if err == nil {
			listeners = append(listeners, l)
			continue
		}
		msg, ours := listenError(addr, err, listeners)
		if errors.Is(err, syscall.EADDRINUSE) && !ours {
			busy = append(busy, msg)
			continue
		}
		errs = append(errs, msg)
	}
	if len(errs) > 0 || len(busy) > 0 {
		for _, l := range listeners {
			l.Close()
		}
		listeners = nil
	}
	return listeners, errors.Join(busy...), errors.Join(errs...)
}

// listenError says why addr cannot be listened on. ours reports that an
// earlier listen address of the exporter itself holds the port.
func listenError(addr string, err error, held []net.Listener) (msg error, ours bool) {
	prefix := fmt.Sprintf("--web.listen-address %q", addr)
	var dnsErr *net.DNSError
	switch {
	case errors.As(err, &dnsErr):
		return fmt.Errorf("%s: host %q does not resolve (%v); give an IP address or a name of this machine, or :PORT for every interface", prefix, dnsErr.Name, dnsErr.Err), false
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		return fmt.Errorf("%s: no interface of this machine has that address; give one of its addresses, or :PORT for every interface", prefix), false
	case errors.Is(err, syscall.EACCES):
		return fmt.Errorf("%s: permission denied (ports below 1024 need privileges)", prefix), false
	case errors.Is(err, syscall.EADDRINUSE):
		_, port, _ := net.SplitHostPort(addr)
		for _, l := range held {
			if tcp, ok := l.Addr().(*net.TCPAddr); ok && strconv.Itoa(tcp.Port) == port {
				return fmt.Errorf("%s: port %s is already taken by an earlier --web.listen-address (%s); give each address once", prefix, port, tcp), true
			}
		}
		return fmt.Errorf("%s: address already in use: another process listens there", prefix), false
	}
	return fmt.Errorf("%s: %w", prefix, err), false
}

// checkWebConfigFile reads the web config with a bound, and the TLS files
// it names, before exporter-toolkit reads them without one: /dev/zero
// there would hang the check while memory grows.
func checkWebConfigFile(file string) error {
	const flag = "--web.config.file"
	b, err := readfile.Bounded(flag, file, readfile.ConfigLimit)
	if err != nil {
		return fmt.Errorf("%w; give exporter-toolkit's YAML web config file", err)
	}
	// Only the file names are read here; a value of the wrong type is left
	// for exporter-toolkit to report with its line.
	var files struct {
		TLS struct {
			CertFile     string `yaml:"cert_file"`
			KeyFile      string `yaml:"key_file"`
			ClientCAFile string `yaml:"client_ca_file"`
		} `yaml:"tls_server_config"`
	}
	if yaml.Unmarshal(b, &files) == nil {
		var errs []error
		for _, tf := range []struct{ key, name string }{
			{"cert_file", files.TLS.CertFile}, {"key_file", files.TLS.KeyFile}, {"client_ca_file", files.TLS.ClientCAFile},
		} {
			if tf.name == "" {
				continue
			}
			name := tf.name
			if !filepath.IsAbs(name) {
				// exporter-toolkit reads relative names from the web
				// config's directory.
				name = filepath.Join(filepath.Dir(file), name)
			}
			if _, err := readfile.Bounded(fmt.Sprintf("%s %s: tls_server_config.%s", flag, file, tf.key), name, readfile.PEMLimit); err != nil {
				errs = append(errs, err)
			}
		}
		if len(errs) > 0 {
			return errors.Join(errs...)
		}
	}
	if err := web.Validate(file); err != nil {
		return fmt.Errorf("%s %s: %w", flag, file, err)
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
