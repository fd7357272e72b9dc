// Package slotcmd implements the `failover_exporter slot KEY...`
// subcommand: it prints each key's Redis Cluster hash slot and, given seed
// addresses, the master that owns it.
package slotcmd

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/failover-exporter/failover_exporter/config"
	"github.com/failover-exporter/failover_exporter/systems/redis"
	"github.com/failover-exporter/failover_exporter/systems/redis/proto"
	"github.com/failover-exporter/failover_exporter/systems/redis/settings"
)

// Run prints "KEY SLOT" for every key, in order, or "KEY SLOT ADDR" when
// cluster has seed addresses, ADDR being the master that owns the slot ("-"
// if the slot is unassigned). The owner is read as the watcher reads it
// (redis.ReadSlotOwners: every node the seeds lead to, members only, the
// highest config epoch), so it is the owner /metrics names. cluster is as
// given on the command line; Run applies the config defaults (timeouts
// among them) itself.
func Run(ctx context.Context, out io.Writer, keys []string, cluster settings.Cluster) error {
	if len(keys) == 0 {
		return errors.New("no keys given")
	}
	var owners *[redisproto.SlotCount]string
	if len(cluster.Addrs) > 0 {
		cfg := &config.Config{}
		settings.SetClusters(cfg, []settings.Cluster{cluster})
		if err := cfg.Complete(); err != nil {
			return err
		}
		var err error
		if owners, err = redis.ReadSlotOwners(ctx, settings.Clusters(cfg)[0]); err != nil {
			return err
		}
	}
	for _, key := range keys {
		slot := redisproto.KeySlot(key)
		var err error
		if owners == nil {
			_, err = fmt.Fprintf(out, "%s %d\n", key, slot)
		} else {
			_, err = fmt.Fprintf(out, "%s %d %s\n", key, slot, owners[slot])
		}
		if err != nil {
			return fmt.Errorf("write output: %w", err)
		}
	}
	return nil
}
