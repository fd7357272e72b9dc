package redis

import (
	"github.com/go-kit/log"

	"github.com/failover-exporter/failover_exporter/collector/watch"
	"github.com/failover-exporter/failover_exporter/config"
)

// NewWatcher returns a watcher that reads the cluster described by cfg. It
// does no network I/O; connections are made by the first refresh and closed
// when the watcher's Run returns. cfg must have its defaults applied
// (config.Config.Complete).
func NewWatcher(cfg config.RedisCluster, logger log.Logger) (*watch.Watcher[Snapshot], error) {
	logger = watch.ClusterLogger(logger, "redis", cfg.Name)
	src, err := newSource(cfg, logger)
	if err != nil {
		return nil, err
	}
	w := watch.New(cfg.Name, cfg.RefreshInterval, cfg.RefreshTimeout, src.refresh, logger)
	w.OnStop(src.close)
	return w, nil
}
