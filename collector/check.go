package collector

import (
	"github.com/go-kit/log"

	"github.com/failover-exporter/failover_exporter/collector/system"
	"github.com/failover-exporter/failover_exporter/config"
)

// Check runs the plan a start would run, dry: it builds every cluster's
// watcher of every one of systems without connecting, and closes them all,
// so that --config.check and a reload refuse what Apply would refuse at
// start and leave nothing behind.
func Check(systems []system.System, cfg *config.Config) error {
	return NewManager(systems, log.NewNopLogger(), 1).Check(cfg)
}
