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
	option, err := ClientOption(cfg)
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

// Master is a master that owns slots, as one node's CLUSTER NODES reply
// lists it.
type Master struct {
	ID string
	// Addr is "ip:port", empty for a node without an address.
	Addr        string
	ConfigEpoch uint64
	// Failing is true when the answering node flags the master fail or fail?.
	Failing bool
	// Slots are inclusive ranges.
	Slots [][2]int
}

// OwnsSlot reports whether slot is in one of the master's ranges.
func (m Master) OwnsSlot(slot int) bool {
	for _, r := range m.Slots {
		if slot >= r[0] && slot <= r[1] {
			return true
		}
	}
	return false
}

// ParseMasters lists the masters owning slots in a CLUSTER NODES reply.
func ParseMasters(clusterNodes string) ([]Master, error) {
	lines, err := parseClusterNodes(clusterNodes)
	if err != nil {
		return nil, err
	}
	var out []Master
	for _, l := range lines {
		if !l.Flags.Master || len(l.Slots) == 0 {
			continue
		}
		m := Master{ID: l.ID, Addr: l.Addr, ConfigEpoch: l.ConfigEpoch, Failing: l.Flags.Fail || l.Flags.PFail}
		for _, r := range l.Slots {
			m.Slots = append(m.Slots, [2]int{r.First, r.Last})
		}
		out = append(out, m)
	}
	return out, nil
}
