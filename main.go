// Command failover_exporter serves the replication state of Kafka clusters
// and the sharding and replication state of Redis Clusters to Prometheus.
package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/common/version"
	"github.com/prometheus/exporter-toolkit/web"

	"github.com/failover-exporter/failover_exporter/collector"
	"github.com/failover-exporter/failover_exporter/collector/exposition"
	"github.com/failover-exporter/failover_exporter/collector/maintenance"
	"github.com/failover-exporter/failover_exporter/config"
	"github.com/failover-exporter/failover_exporter/status"
	"github.com/failover-exporter/failover_exporter/systems"
)

const exporterName = collector.ExporterName

// registry is every system the binary watches, declares flags and
// answers the failure budget of: the systems' registry (a test adds a
// system of its own).
var registry = systems.All

// commands are the systems' own commands (systems.Commands).
var commands = systems.Commands

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr *os.File) int {
	cl, cmd, err := parseCommandLine(args, stdout, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v (see --help)\n", exporterName, err)
		return 2
	}
	switch cmd {
	case cl.safeToStop.FullCommand():
		return runSafeToStop(cl.stopFlags, stdout, stderr)
	case cl.serve.FullCommand():
		f := cl.serveFlags
		if err := runServe(f, newLoggers(stderr, f.logFormat, f.logLevel)); err != nil {
			// Plain text: this is read by a person at a terminal or in a
			// crash-looping pod's log, not by a log pipeline.
			fmt.Fprintf(stderr, "%s: %v\n", exporterName, err)
			return 1
		}
	default:
		if r, ok := cl.commands[cmd]; ok {
			if err := r.Run(context.Background(), stdout); err != nil {
				fmt.Fprintf(stderr, "%s %s: %v\n", exporterName, cmd, err)
				return 1
			}
		}
	}
	return 0
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
	for _, c := range f.clusters {
		if !c.Given() {
			continue
		}
		if err := c.AddTo(cfg, f.refreshInterval); err != nil {
			return nil, err
		}
	}
	if err := cfg.Complete(); err != nil {
		return nil, fmt.Errorf("flags and config file: %w", err)
	}
	total := 0
	for _, n := range collector.Watched(registry, cfg) {
		total += n
	}
	if total == 0 && !config.HasModules(cfg) {
		return nil, fmt.Errorf("nothing to watch: give %s or a --config.file listing clusters (or modules for /probe)", f.addrFlags(""))
	}
	return cfg, nil
}

// errNothingToReload answers a reload when no config file was given.
var errNothingToReload = errors.New("nothing to reload: the exporter was started without --config.file, and flags are read only at start")

// checkAll runs every check a start runs, without starting anything: the
// flags, the config file, and what building each cluster's client checks.
func checkAll(f flags) (*config.Config, error) {
	if err := checkFlags(f); err != nil {
		return nil, err
	}
	cfg, err := loadConfig(f)
	if err != nil {
		return nil, err
	}
	if err := collector.Check(registry, cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

func runServe(f flags, logs loggers) error {
	logger := logs.main
	cfg, err := checkAll(f)
	if err != nil {
		return err
	}
	systemd := f.webConfig.WebSystemdSocket != nil && *f.webConfig.WebSystemdSocket
	if f.configCheck {
		return checkListen(f, cfg, systemd, logger)
	}
	// Listen before connecting to any cluster, so that an address that
	// cannot be bound stops the start with a message naming the flag.
	var listeners []net.Listener
	if !systemd {
		var inUse error
		listeners, inUse, err = listen(*f.webConfig.WebListenAddresses)
		if err = errors.Join(err, inUse); err != nil {
			return err
		}
		defer func() {
			for _, l := range listeners {
				l.Close()
			}
		}()
	}
	level.Info(logger).Log("msg", "starting "+exporterName, "version", version.Info(), "build_context", version.BuildContext())
	tuneRuntime(f.enablePprof, logger)

	manager, mux, reload, err := buildServer(f, cfg, logger)
	if err != nil {
		return err
	}
	defer manager.Stop()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go reloadOnHUP(ctx, hup, reload, logger)

	server := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		// Without it, idle keep-alive connections (and their goroutines)
		// stay until the client closes them.
		IdleTimeout: f.idleTimeout,
	}
	return serveUntilSignal(ctx, server, listeners, systemd, f, logs)
}

// buildServer builds what a start serves, connecting to nothing it was
// not configured to: the registry of the exporter's own metrics, the
// manager watching cfg's clusters, the reload of the config file (nil
// without one) and the mux of every endpoint. The caller stops the
// manager.
func buildServer(f flags, cfg *config.Config, logger log.Logger) (*collector.Manager, *http.ServeMux, func() error, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	self := collector.NewSelfMetrics(registry)
	reg.MustRegister(self.Collectors()...)

	manager := collector.NewManager(registry, logger, f.eventCapacity)
	manager.ConfigureDiscovery(collector.DiscoveryOptions{MaxTargets: f.probeMaxTargets, IdleTimeout: f.probeIdleTimeout, Metrics: self.Discovery,
		OnMetrics: f.probeDiscoveredOnMetrics})
	if err := manager.Apply(cfg); err != nil {
		manager.Stop()
		return nil, nil, nil, err
	}
	self.ReloadOK.Set(1)
	self.ReloadTime.SetToCurrentTime()

	var reload func() error
	if f.configFile != "" {
		reload = (&reloader{flags: f, manager: manager, ok: self.ReloadOK, time: self.ReloadTime, logger: logger}).reload
	}

	endpoints := managerEndpoints(manager, reg, reload, logger)
	token, err := maintenanceToken(f.maintenanceTokenFile)
	if err != nil {
		manager.Stop()
		return nil, nil, nil, err
	}
	windows := maintenance.NewRegistry(manager, manager.Events())
	reg.MustRegister(maintenance.NewCollector(windows, collector.ExporterName))
	manager.ServeWindows(windows.Windows)
	endpoints.status.Clusters = windows.WithViews(endpoints.status.Clusters)
	endpoints.maintenance = maintenance.Handler(windows, token)
	manager.AtStop(windows.Start(time.Second))
	mux, err := newMux(f, reg, endpoints)
	if err != nil {
		manager.Stop()
		return nil, nil, nil, err
	}
	return manager, mux, reload, nil
}

// checkListen is --config.check's end: the check binds what the start
// would and lets go at once. An address another process holds is only
// reported: the check often runs beside the exporter it checks, which
// holds it.
func checkListen(f flags, cfg *config.Config, systemd bool, logger log.Logger) error {
	if !systemd {
		listeners, inUse, err := listen(*f.webConfig.WebListenAddresses)
		if inUse != nil {
			level.Warn(logger).Log("msg", "a start would fail unless the address is freed", "err", inUse)
		}
		if err != nil {
			return err
		}
		for _, l := range listeners {
			l.Close()
		}
	}
	kv := []any{"msg", "configuration is valid"}
	for _, s := range registry {
		if s.Part() == "" {
			kv = append(kv, s.Name()+"_clusters", len(s.Clusters(cfg)))
		}
	}
	level.Info(logger).Log(kv...)
	return nil
}

// reloader reads the config file again, checks it and applies it to the
// manager, one reload at a time (SIGHUP and /-/reload may race).
type reloader struct {
	mu       sync.Mutex
	flags    flags
	manager  *collector.Manager
	ok, time prometheus.Gauge
	logger   log.Logger
}

func (r *reloader) reload() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	next, err := loadConfig(r.flags)
	if err == nil {
		err = collector.Check(registry, next)
	}
	if err == nil {
		err = r.manager.Apply(next)
	}
	if err != nil {
		r.ok.Set(0)
		level.Error(r.logger).Log("msg", "reload failed; keeping the previous configuration", "err", err)
		return err
	}
	r.ok.Set(1)
	r.time.SetToCurrentTime()
	level.Info(r.logger).Log("msg", "configuration reloaded")
	return nil
}

// reloadOnHUP calls reload on each SIGHUP until ctx ends; reload is nil
// when there is no config file to read again.
func reloadOnHUP(ctx context.Context, hup <-chan os.Signal, reload func() error, logger log.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			if reload == nil {
				level.Warn(logger).Log("msg", "SIGHUP ignored", "err", errNothingToReload)
				continue
			}
			_ = reload()
		}
	}
}

// serveUntilSignal serves until the server fails or ctx ends, then shuts
// the server down.
func serveUntilSignal(ctx context.Context, server *http.Server, listeners []net.Listener, systemd bool, f flags, logs loggers) error {
	serveErr := make(chan error, 1)
	go func() {
		if systemd {
			// exporter-toolkit takes the sockets systemd hands over.
			serveErr <- web.ListenAndServe(server, f.webConfig, logs.toolkit)
			return
		}
		serveErr <- web.ServeMultiple(listeners, server, f.webConfig, logs.toolkit)
	}()
	select {
	case err := <-serveErr:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		if path := *f.webConfig.WebConfigFile; path != "" {
			return fmt.Errorf("serve with --web.config.file %s: %w", path, err)
		}
		return err
	case <-ctx.Done():
		level.Info(logs.main).Log("msg", "shutting down")
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return server.Shutdown(shutdownCtx)
	}
}

// managerEndpoints are the HTTP endpoints of the manager's clusters: the
// registry and every cluster on /metrics, one cluster on /probe, and what
// reads the manager's state.
func managerEndpoints(manager *collector.Manager, reg *prometheus.Registry, reload func() error, logger log.Logger) endpoints {
	logError := func(msg string, err error) { level.Error(logger).Log("msg", msg, "err", err) }
	return endpoints{
		metrics: exposition.Handler(reg, manager.TextWriters(), logError),
		probe:   exposition.ProbeHandler(probeTarget(manager), logError),
		ready:   manager.Ready,
		reload:  reload,
		events:  manager.Events().Handler(manager.Known),
		budget:  manager,
		status:  status.Sources{Clusters: manager.Views, Events: manager.Events()},
	}
}
