package collector

import (
	"fmt"

	"github.com/go-kit/log"

	"github.com/failover-exporter/failover_exporter/collector/kafka"
	"github.com/failover-exporter/failover_exporter/collector/redis"
	"github.com/failover-exporter/failover_exporter/config"
)

// Check builds every cluster's client settings without connecting, so
// that --config.check and a reload refuse what Apply would refuse at start.
func Check(cfg *config.Config) error {
	for _, kc := range cfg.Kafka {
		if _, err := kafka.NewWatcher(kc, log.NewNopLogger()); err != nil {
			return fmt.Errorf("kafka cluster %q: %w", kc.Name, err)
		}
	}
	for _, rc := range cfg.Redis {
		if _, err := redis.NewWatcher(rc, log.NewNopLogger()); err != nil {
			return fmt.Errorf("redis cluster %q: %w", rc.Name, err)
		}
	}
	return nil
}
