package redis

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/redis/rueidis"

	"github.com/failover-exporter/failover_exporter/config"
)

// RunSlotCommand implements `failover_exporter slot KEY...`: it prints
// "KEY SLOT" for every key, in order, or "KEY SLOT ADDR" when cfg has seed
// addresses, ADDR being the master that owns the slot according to the first
// seed that answers CLUSTER NODES ("-" if the slot is unassigned).
func RunSlotCommand(ctx context.Context, out io.Writer, keys []string, cfg config.RedisCluster) error {
	if len(keys) == 0 {
		return errors.New("no keys given")
	}
	var owners *[SlotCount]string
	if len(cfg.Addrs) > 0 {
		var err error
		if owners, err = readSlotOwners(ctx, cfg); err != nil {
			return err
		}
	}
	for _, key := range keys {
		slot := KeySlot(key)
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

// readSlotOwners maps every slot to its owner's address, asking the seeds in
// turn until one answers.
func readSlotOwners(ctx context.Context, cfg config.RedisCluster) (*[SlotCount]string, error) {
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = config.DefaultDialTimeout
	}
	if cfg.CommandTimeout <= 0 {
		cfg.CommandTimeout = config.DefaultRedisCommandTimeout
	}
	option, err := baseClientOption(cfg)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, addr := range cfg.Addrs {
		owners, err := readSlotOwnersFrom(ctx, option, addr, cfg)
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

func readSlotOwnersFrom(ctx context.Context, option rueidis.ClientOption, addr string, cfg config.RedisCluster) (*[SlotCount]string, error) {
	option.InitAddress = []string{addr}
	client, err := rueidis.NewClient(option)
	if err != nil {
		if client != nil {
			client.Close()
		}
		return nil, fmt.Errorf("connect: %w", err)
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(ctx, cfg.CommandTimeout)
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
		owners[i] = "-"
	}
	for _, line := range lines {
		addr := line.Addr
		if addr == "" {
			addr = "-"
		}
		for _, r := range line.Slots {
			for slot := r.First; slot <= r.Last; slot++ {
				owners[slot] = addr
			}
		}
	}
	return &owners, nil
}
