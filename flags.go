package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path"
	"path/filepath"
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
	"github.com/failover-exporter/failover_exporter/collector/maintenance"
	"github.com/failover-exporter/failover_exporter/collector/system"
	"github.com/failover-exporter/failover_exporter/config"
	"github.com/failover-exporter/failover_exporter/lib/flagvalue"
	"github.com/failover-exporter/failover_exporter/lib/readfile"
)

// flags are the server's command-line settings; everything else is in the
// config file.
type flags struct {
	configFile  string
	configCheck bool
	// clusters are the clusters the systems' own flags describe
	// (system.Spec.Flags: --kafka.server, --redis.addr and theirs).
	clusters                 []system.FlagCluster
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
	// maintenanceTokenFile holds the bearer token of POST and DELETE
	// /api/v1/maintenance; empty: maintenance windows are off.
	maintenanceTokenFile string
	// given says which flags with a default the user wrote, so that a
	// setting that would be ignored is refused instead.
	given givenFlags
}

// givenFlags records which defaulted flags were set on the command line.
type givenFlags struct {
	refreshInterval bool
}

// defineServeFlags declares the server's flags on its command; their
// values land in f. None is the application's: the other commands take
// none of them, and no command logs but the server.
func defineServeFlags(cmd *kingpin.CmdClause, f *flags) {
	cmd.Flag("config.file", "YAML file listing clusters to watch; see docs/configuration.md.").StringVar(&f.configFile)
	cmd.Flag("config.check", "Validate --config.file and the flags, then exit.").BoolVar(&f.configCheck)
	for _, sys := range registry {
		if c := sys.DeclareFlags(cmd); c != nil {
			f.clusters = append(f.clusters, c)
		}
	}
	cmd.Flag("refresh.interval", "How often clusters given by flags are read ("+config.MinRefreshInterval.String()+" to "+config.MaxRefreshInterval.String()+").").Default(config.DefaultRefreshInterval.String()).IsSetByUser(&f.given.refreshInterval).SetValue(&flagvalue.Duration{Flag: "--refresh.interval", Dst: &f.refreshInterval})
	cmd.Flag("web.telemetry-path", "Path under which to expose metrics.").Default("/metrics").StringVar(&f.telemetryPath)
	cmd.Flag("web.idle-timeout", "Close keep-alive HTTP connections idle this long.").Default("2m").SetValue(&flagvalue.Duration{Flag: "--web.idle-timeout", Dst: &f.idleTimeout})
	cmd.Flag("web.enable-pprof", "Serve Go profiles under /debug/pprof/ (and link them from the landing page).").BoolVar(&f.enablePprof)
	cmd.Flag("log.level", "Only log messages with the given severity or above: debug, info, warn, error.").Default("info").SetValue(&flagvalue.Enum{Flag: "--log.level", Dst: &f.logLevel, Options: []string{"debug", "info", "warn", "error"}})
	cmd.Flag("log.format", "Output format of log messages: logfmt or json.").Default("logfmt").SetValue(&flagvalue.Enum{Flag: "--log.format", Dst: &f.logFormat, Options: []string{"logfmt", "json"}})
	cmd.Flag("events.capacity", "How many of the latest cluster events (transitions seen between refreshes) to keep for /api/v1/events and the status page (1 to "+strconv.Itoa(config.MaxEventCapacity)+").").Default(strconv.Itoa(events.DefaultCapacity)).SetValue(&flagvalue.Count{Flag: "--events.capacity", Dst: &f.eventCapacity, Min: 1, Max: config.MaxEventCapacity})
	cmd.Flag("probe.max-targets", "How many discovered targets (/probe with module=) may be watched at once; a probe of one more is answered 429 (0 to "+strconv.Itoa(maxProbeTargets)+"; 0 turns discovered targets off).").Default("100").SetValue(&flagvalue.Count{Flag: "--probe.max-targets", Dst: &f.probeMaxTargets, Min: 0, Max: maxProbeTargets})
	cmd.Flag("probe.discovered-on-metrics", "Serve the discovered targets (/probe with module=) on /metrics and the status page too. Off, only /probe serves them, so that no probe changes what /metrics carries.").Default("false").BoolVar(&f.probeDiscoveredOnMetrics)
	cmd.Flag("probe.idle-timeout", "Stop watching a discovered target no probe asked for this long, and free its memory.").Default("10m").SetValue(&flagvalue.Duration{Flag: "--probe.idle-timeout", Dst: &f.probeIdleTimeout})
	cmd.Flag("web.maintenance-token-file", "File holding the bearer token that opens and withdraws maintenance windows (POST and DELETE "+maintenance.Path+", safe-to-stop --announce); read access to the other endpoints does not give it. Without it, windows are off.").StringVar(&f.maintenanceTokenFile)
	f.webConfig = kingpinflag.AddFlags(cmd, ":9877")
}

// maxProbeTargets bounds --probe.max-targets: each target is a watcher
// and its memory.
const maxProbeTargets = 10_000

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
	} else if f.given.refreshInterval && !f.anyFlagCluster() {
		errs = append(errs, fmt.Errorf("--refresh.interval is for the clusters given by %s, and there are none; set refresh_interval: for each cluster of the config file", f.addrFlags("and")))
	}
	for _, c := range f.clusters {
		errs = append(errs, c.Check()...)
	}
	if err := checkListenAddresses(*f.webConfig.WebListenAddresses); err != nil {
		errs = append(errs, err)
	}
	if path := *f.webConfig.WebConfigFile; path != "" {
		if err := checkWebConfigFile(path); err != nil {
			errs = append(errs, err)
		}
	}
	if _, err := maintenanceToken(f.maintenanceTokenFile); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// maintenanceToken reads the token of --web.maintenance-token-file: the
// file's contents without surrounding white space; nil without the flag.
// The message never holds the token.
func maintenanceToken(file string) ([]byte, error) {
	if file == "" {
		return nil, nil
	}
	const flag = "--web.maintenance-token-file"
	b, err := readfile.Bounded(flag, file, readfile.SecretLimit)
	if err != nil {
		return nil, err
	}
	token := []byte(strings.TrimSpace(string(b)))
	if len(token) < 16 {
		return nil, fmt.Errorf("%s %s: the token is %d characters long; give at least 16 (e.g. openssl rand -hex 32)", flag, file, len(token))
	}
	return token, nil
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

// anyFlagCluster reports whether the systems' flags name a cluster.
func (f flags) anyFlagCluster() bool {
	return slices.ContainsFunc(f.clusters, system.FlagCluster.Given)
}

// addrFlags lists the flags that name a cluster: "--kafka.server and
// --redis.addr" (with "and"), or "--kafka.server, --redis.addr" (with "").
func (f flags) addrFlags(and string) string {
	var names []string
	for _, c := range f.clusters {
		names = append(names, c.AddrFlag())
	}
	return joinWords(names, and)
}

// joinWords writes names as a list for a message: "a, b and c" with last
// "and", "a, b, c" with last "".
func joinWords(names []string, last string) string {
	if last == "" || len(names) < 2 {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:len(names)-1], ", ") + " " + last + " " + names[len(names)-1]
}
