package redis

import (
	"fmt"

	"github.com/failover-exporter/failover_exporter/collector/events"
	"github.com/failover-exporter/failover_exporter/status/model"
	"github.com/failover-exporter/failover_exporter/systems/redis/proto"
)

// movingJob is an atomic slot migration job in flight (Valkey 9.0+, Redis
// 8.4+): the slot map marks its slots, a table lists it.
type movingJob struct {
	// Name is the server's name (Valkey) or id (Redis) of the job.
	Name string
	// Ranges are its slot ranges as the servers write them ("0-3000 5000");
	// Slots counts them.
	Ranges string
	Slots  int
	// Source and Target are the nodes' addresses, or short IDs of nodes
	// the snapshot does not know.
	Source, Target string
	// State is the server's word for where the job is ("snapshotting").
	State string
	// Age is how long ago the job was created ("3s"); empty when the
	// server does not say.
	Age string
	// Remaining is the replication stream the source still has to send
	// ("1.2 MiB"); empty where the server does not say (Redis).
	Remaining string
	// Bands place its slot ranges on the slot map.
	Bands []moveBand
}

// moveBand is one slot range of a move, placed on the slot map.
type moveBand struct {
	First, Last int
	// Left and Percent are its offset and width, as shares of the strip.
	Left, Percent string
}

// maxMoves bounds the status page's table of atomic slot migrations in
// flight; the rest are counted.
const maxMoves = 20

// slotMoves are the atomic slot migration jobs in flight, for the status
// page: the jobs of RunningMigrations, with their nodes' addresses and
// their slot ranges placed on the slot map.
func slotMoves(s *Snapshot, byID map[string]*Node) (moves []movingJob, more int) {
	running := s.RunningMigrations()
	if len(running) > maxMoves {
		more = len(running) - maxMoves
		running = running[:maxMoves]
	}
	addr := func(id string) string {
		if n := byID[id]; n != nil && n.Addr != "" {
			return n.Addr
		}
		return events.ShortID(id)
	}
	for _, job := range running {
		m := movingJob{Name: job.Name, Ranges: job.RangesText(), Slots: job.SlotCount(),
			Source: addr(job.Source), Target: addr(job.Target), State: job.State}
		if !job.Created.IsZero() && !s.ReadAt.IsZero() {
			m.Age = model.Age(s.ReadAt.Sub(job.Created))
		}
		// The stream is the source's to send: the target's report says
		// nothing of it.
		if job.HasRemaining && job.Operation == MigrationExport {
			m.Remaining = byteSize(job.RemainingReplBytes)
		}
		for _, sp := range job.Slots {
			m.Bands = append(m.Bands, moveBand{First: sp.First, Last: sp.Last,
				Left:    fmt.Sprintf("%.4f", float64(sp.First)*100/redisproto.SlotCount),
				Percent: fmt.Sprintf("%.4f", float64(sp.Last-sp.First+1)*100/redisproto.SlotCount)})
		}
		moves = append(moves, m)
	}
	return moves, more
}
