package redis

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/rueidis"

	"github.com/failover-exporter/failover_exporter/config"
)

// NoOwner is what ReadSlotOwners gives for a slot no master owns, and for
// an owner without an address.
const NoOwner = "-"

// ReadSlotOwners maps every slot to the address of the master that owns
// it, according to the first seed of cfg that answers CLUSTER NODES. cfg
// must have its defaults applied (config.Config.Complete).
func ReadSlotOwners(ctx context.Context, cfg config.RedisCluster) (*[SlotCount]string, error) {
	if len(cfg.Addrs) == 0 {
		return nil, errors.New("no seed addresses")
	}
	if cfg.CommandTimeout <= 0 || cfg.DialTimeout <= 0 {
		return nil, errors.New("command and dial timeouts must be positive; was config.Complete called?")
	}
	option, err := clientOption(cfg)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, addr := range cfg.Addrs {
		owners, err := readSlotOwnersFrom(ctx, option, addr, cfg.CommandTimeout)
		if err == nil {
			return owners, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", addr, err))
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("no seed answered CLUSTER NODES: %w", errors.Join(errs...))
}

func readSlotOwnersFrom(ctx context.Context, option rueidis.ClientOption, addr string, commandTimeout time.Duration) (*[SlotCount]string, error) {
	option.InitAddress = []string{addr}
	client, err := rueidis.NewClient(option)
	if err != nil {
		if client != nil {
			client.Close()
		}
		return nil, fmt.Errorf("connect: %w", err)
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	reply, err := client.Do(ctx, client.B().ClusterNodes().Build()).ToString()
	if err != nil {
		return nil, fmt.Errorf("CLUSTER NODES: %w", err)
	}
	lines, err := parseClusterNodes(reply)
	if err != nil {
		return nil, err
	}
	var owners [SlotCount]string
	for i := range owners {
		owners[i] = NoOwner
	}
	for _, line := range lines {
		addr := line.Addr
		if addr == "" {
			addr = NoOwner
		}
		for _, r := range line.Slots {
			for slot := r.First; slot <= r.Last; slot++ {
				owners[slot] = addr
			}
		}
	}
	return &owners, nil
}
