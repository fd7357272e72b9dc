package redis

import (
	"fmt"

	"github.com/failover-exporter/failover_exporter/internal/redisproto"
	"github.com/failover-exporter/failover_exporter/status/model"
)

// maxMoves bounds the status page's table of atomic slot migrations in
// flight; the rest are counted.
const maxMoves = 20

// slotMoves are the atomic slot migration jobs in flight, for the status
// page: the jobs of RunningMigrations, with their nodes' addresses and
// their slot ranges placed on the slot map.
func slotMoves(s *Snapshot, byID map[string]*Node) (moves []model.SlotMove, more int) {
	running := s.RunningMigrations()
	if len(running) > maxMoves {
		more = len(running) - maxMoves
		running = running[:maxMoves]
	}
	addr := func(id string) string {
		if n := byID[id]; n != nil && n.Addr != "" {
			return n.Addr
		}
		return model.ShortID(id)
	}
	for _, job := range running {
		m := model.SlotMove{Name: job.Name, Ranges: job.RangesText(), Slots: job.SlotCount(),
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
			m.Bands = append(m.Bands, model.MoveBand{First: sp.First, Last: sp.Last,
				Left:    fmt.Sprintf("%.4f", float64(sp.First)*100/redisproto.SlotCount),
				Percent: fmt.Sprintf("%.4f", float64(sp.Last-sp.First+1)*100/redisproto.SlotCount)})
		}
		moves = append(moves, m)
	}
	return moves, more
}
