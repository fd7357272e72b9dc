package main

import (
	"context"
	"io"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/failover-exporter/failover_exporter/config"
	"github.com/failover-exporter/failover_exporter/lib/flagvalue"
	redissettings "github.com/failover-exporter/failover_exporter/systems/redis/settings"
	"github.com/failover-exporter/failover_exporter/systems/redis/slotcmd"
)

// slotFlags are the slot command's settings: the keys, and the cluster
// whose owners to print. The server's other cluster flags (its name, its
// refresh interval) change nothing in one read, so the command has none.
type slotFlags struct {
	keys              []string
	redisAddrs        []string
	redisPasswordFile string
}

func defineSlot(app *kingpin.Application) (*kingpin.CmdClause, *slotFlags) {
	f := &slotFlags{}
	cmd := app.Command("slot", "Print each KEY's Redis Cluster hash slot, and with --redis.addr the address of the node that owns it.")
	cmd.Flag("redis.addr", "Redis Cluster seed node HOST:PORT (repeatable); each key's line then names the master that owns its slot.").StringsVar(&f.redisAddrs)
	cmd.Flag("redis.password-file", "File holding the password of the --redis.addr cluster (never the password itself on the command line).").StringVar(&f.redisPasswordFile)
	cmd.Arg("key", "Keys to look up.").Required().StringsVar(&f.keys)
	return cmd, f
}

// runSlot prints the hash slot of each key, and its owner when seeds are
// given.
func runSlot(f *slotFlags, stdout io.Writer) error {
	rc := redissettings.Cluster{Addrs: flagvalue.SplitList(f.redisAddrs), Password: config.Secret{File: f.redisPasswordFile}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return slotcmd.Run(ctx, stdout, f.keys, rc)
}
