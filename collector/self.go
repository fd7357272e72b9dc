package collector

import (
	"github.com/prometheus/client_golang/prometheus"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"

	"github.com/failover-exporter/failover_exporter/collector/system"
)

// ExporterName prefixes the exporter's own series.
const ExporterName = "failover_exporter"

// SelfMetrics are the exporter's series about itself.
type SelfMetrics struct {
	BuildInfo prometheus.Collector
	// ReloadOK is 1 when the last load or reload of the config succeeded.
	ReloadOK prometheus.Gauge
	// ReloadTime is when the config was last loaded successfully.
	ReloadTime prometheus.Gauge
	// Discovery counts the targets /probe started (discovery.go).
	Discovery *DiscoveryMetrics
}

// NewSelfMetrics builds the exporter's own series.
func NewSelfMetrics(systems []system.System) SelfMetrics {
	return SelfMetrics{
		BuildInfo: versioncollector.NewCollector(ExporterName),
		ReloadOK: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: ExporterName + "_config_last_reload_successful",
			Help: "1 if the last configuration load or reload succeeded.",
		}),
		ReloadTime: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: ExporterName + "_config_last_reload_success_timestamp_seconds",
			Help: "Unix time of the last successful configuration load or reload.",
		}),
		Discovery: NewDiscoveryMetrics(systems),
	}
}

// Collectors lists them for registration.
func (s SelfMetrics) Collectors() []prometheus.Collector {
	return append([]prometheus.Collector{s.BuildInfo, s.ReloadOK, s.ReloadTime}, s.Discovery.Collectors()...)
}
