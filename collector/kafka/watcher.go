package kafka

import (
	"github.com/go-kit/log"

	"github.com/failover-exporter/failover_exporter/collector/watch"
	"github.com/failover-exporter/failover_exporter/config"
)

// NewWatcher returns a watcher that refreshes cfg's cluster on its refresh
// interval. It does no network I/O until the watcher runs; the connection
// is closed when Run returns.
func NewWatcher(cfg config.KafkaCluster, logger log.Logger) (*watch.Watcher[Snapshot], error) {
	logger = watch.ClusterLogger(logger, "kafka", cfg.Name)
	src, err := newSource(cfg, logger)
	if err != nil {
		return nil, err
	}
	w := watch.New(cfg.Name, cfg.RefreshInterval, cfg.RefreshTimeout, src.refresh, logger)
	w.OnStop(src.close)
	return w, nil
}
