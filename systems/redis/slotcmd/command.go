package slotcmd

import (
	"context"
	"io"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/failover-exporter/failover_exporter/collector/system"
	"github.com/failover-exporter/failover_exporter/config"
	"github.com/failover-exporter/failover_exporter/lib/flagvalue"
	"github.com/failover-exporter/failover_exporter/systems/redis/settings"
)

// Command is the slot command as the registry declares it beside the
// server's (systems.Commands).
var Command = system.Command{Name: "slot", Define: define}

// Flags are the slot command's settings: the keys, and the cluster whose
// owners to print. The server's other cluster flags (its name, its
// refresh interval) change nothing in one read, so the command has none.
type Flags struct {
	Keys         []string
	Addrs        []string
	PasswordFile string
}

func define(app *kingpin.Application) system.Runner {
	f := &Flags{}
	cmd := app.Command("slot", "Print each KEY's Redis Cluster hash slot, and with --redis.addr the address of the node that owns it.")
	cmd.Flag("redis.addr", "Redis Cluster seed node HOST:PORT (repeatable); each key's line then names the master that owns its slot.").StringsVar(&f.Addrs)
	cmd.Flag("redis.password-file", "File holding the password of the --redis.addr cluster (never the password itself on the command line).").StringVar(&f.PasswordFile)
	cmd.Arg("key", "Keys to look up.").Required().StringsVar(&f.Keys)
	return f
}

// Run prints the hash slot of each key, and its owner when seeds are
// given, within 30 s.
func (f *Flags) Run(ctx context.Context, stdout io.Writer) error {
	rc := settings.Cluster{Addrs: flagvalue.SplitList(f.Addrs), Password: config.Secret{File: f.PasswordFile}}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return Run(ctx, stdout, f.Keys, rc)
}
