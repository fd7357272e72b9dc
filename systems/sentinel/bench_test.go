package sentinel

import (
	"runtime"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/internal/lab"
)

// BenchmarkLabRefresh is one refresh of a real deployment: 3 sentinels, 1
// master set of 3 data nodes (every sentinel asked 2 pipelines, every node
// 1), and the bytes a snapshot keeps alive, which is what a watched master
// set costs between refreshes.
//
//	go test -run '^$' -bench LabRefresh -benchmem ./systems/sentinel/
func BenchmarkLabRefresh(b *testing.B) {
	benchLabRefresh(b, lab.SentinelOptions{Masters: 1, Replicas: 2, Sentinels: 3})
}

// BenchmarkLabRefresh10Masters is BenchmarkLabRefresh for issue 44's
// figure: the same 3 sentinels monitoring 10 master sets of 3 data nodes
// each (30 nodes).
func BenchmarkLabRefresh10Masters(b *testing.B) {
	benchLabRefresh(b, lab.SentinelOptions{Masters: 10, Replicas: 2, Sentinels: 3})
}

// benchLabRefresh starts the lab, refreshes until it is settled, keeps 64
// snapshots to weigh what one keeps alive, then times refreshes. It reports
// the kept bytes per snapshot and per master set besides ns/op, B/op and
// allocs/op.
func benchLabRefresh(b *testing.B, opts lab.SentinelOptions) {
	l := lab.StartSentinel(b, opts)
	set := labSetB(b, l)
	src, err := newSource(set, nopLogger())
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	ready := settledSets(opts.Sentinels, opts.Masters, opts.Replicas)
	var prev *Snapshot
	deadline := time.Now().Add(60 * time.Second)
	for prev == nil || !ready(prev) {
		if time.Now().After(deadline) {
			b.Fatalf("not settled:\n%s", describe(prev))
		}
		prev = refreshB(b, src, prev)
		time.Sleep(250 * time.Millisecond)
	}
	kept := make([]*Snapshot, 0, 64)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range 64 {
		prev = refreshB(b, src, prev)
		kept = append(kept, prev)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	perSnapshot := float64(after.HeapAlloc-before.HeapAlloc) / float64(len(kept))
	b.ResetTimer()
	for b.Loop() {
		prev = refreshB(b, src, prev)
	}
	runtime.KeepAlive(kept)
	b.ReportMetric(perSnapshot, "kept-B/snapshot")
	b.ReportMetric(perSnapshot/float64(opts.Masters), "kept-B/master-set")
}

// settledSets is settled for a deployment of several master sets: every
// sentinel read, every master agreed on, up and writable, with every
// replica promotable and a candidate named.
func settledSets(sentinels, masters, replicas int) func(*Snapshot) bool {
	return func(s *Snapshot) bool {
		if len(s.Masters) != masters || len(s.Sentinels) != sentinels {
			return false
		}
		for i := range s.Masters {
			m := &s.Masters[i]
			promotable := 0
			for _, n := range m.Nodes {
				if n.Promotable {
					promotable++
				}
			}
			if len(m.ReadSentinels) != sentinels || m.Disagree || !m.Up || !m.writable() || promotable != replicas || m.Candidate == "" {
				return false
			}
		}
		return true
	}
}
