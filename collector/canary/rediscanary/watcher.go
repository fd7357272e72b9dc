package rediscanary

import (
	"github.com/go-kit/log"

	"github.com/failover-exporter/failover_exporter/collector/watch"
	"github.com/failover-exporter/failover_exporter/config"
)

// NewWatcher returns a watcher that runs the write canary of the cluster
// described by cfg every cfg.Canary.Interval. It does no network I/O until
// it runs; its connections are closed when Run returns. cfg must have its
// defaults applied (config.Config.Complete).
func NewWatcher(cfg config.RedisCluster, logger log.Logger) (*watch.Watcher[Snapshot], error) {
	// Its lines read collector=redis_canary cluster=NAME, apart from the
	// watcher's collector=redis.
	logger = watch.ClusterLogger(logger, "redis_canary", cfg.Name)
	src, err := newSource(cfg, logger)
	if err != nil {
		return nil, err
	}
	w := watch.New(cfg.Name, cfg.Canary.Interval, cfg.Canary.Interval, src.round, logger)
	w.OnStop(src.close)
	return w, nil
}
