package redis

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/go-kit/log"

	"github.com/failover-exporter/failover_exporter/systems/redis/proto"
	"github.com/failover-exporter/failover_exporter/systems/redis/settings"
)

// Slot ownership has one rule, redisproto.Merge: the watcher's snapshot,
// the write canary (redisproto.SlotMap) and the slot command
// (ReadSlotOwners) all go through it, so they name the same owner for the
// same replies.

// NoOwner is what ReadSlotOwners gives for a slot no master owns, and for
// an owner without an address.
const NoOwner = "-"

// ReadSlotOwners maps every slot to the address of the master that owns
// it, reading the cluster as the watcher does: the seeds, then every node
// they list, merged by the one slot-ownership rule. It is what the slot
// command prints, and names the owner /metrics would for the same replies.
// cfg must have its defaults applied (config.Config.Complete).
func ReadSlotOwners(ctx context.Context, cfg settings.Cluster) (*[redisproto.SlotCount]string, error) {
	s, err := newSource(cfg, log.NewNopLogger())
	if err != nil {
		return nil, err
	}
	defer s.Close()
	snap, err := s.Refresh(ctx, nil)
	if err != nil {
		if none, ok := errors.AsType[*noNodeAnsweredError](err); ok {
			return nil, fmt.Errorf("no seed answered CLUSTER NODES: %w", errors.Join(none.errs...))
		}
		return nil, err
	}
	return snap.slotOwnerAddrs(), nil
}

// slotOwnerAddrs maps every slot to its owner's address, NoOwner where
// there is none.
func (s *Snapshot) slotOwnerAddrs() *[redisproto.SlotCount]string {
	addrs := make(map[string]string, len(s.Nodes))
	for _, n := range s.Nodes {
		addrs[n.ID] = n.Addr
	}
	owners := new([redisproto.SlotCount]string)
	for _, r := range s.SlotRanges {
		addr := addrs[r.Owner]
		if r.Owner == "" || addr == "" {
			addr = NoOwner
		}
		for slot := r.First; slot <= r.Last; slot++ {
			owners[slot] = addr
		}
	}
	return owners
}

// noNodeAnsweredError is a refresh that no node answered, with each
// node's error.
type noNodeAnsweredError struct {
	errs []error
}

func (e *noNodeAnsweredError) Error() string {
	if len(e.errs) == 0 {
		return "no node answered"
	}
	return "no node answered: " + errors.Join(e.errs...).Error()
}

func (e *noNodeAnsweredError) Unwrap() []error { return slices.Clone(e.errs) }
