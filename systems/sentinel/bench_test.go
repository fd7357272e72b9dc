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
	l := lab.StartSentinel(b, lab.SentinelOptions{})
	set := labSetB(b, l)
	src, err := newSource(set, nopLogger())
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	var prev *Snapshot
	deadline := time.Now().Add(60 * time.Second)
	for prev == nil || !settled(3, 2)(prev) {
		if time.Now().After(deadline) {
			b.Fatal("not settled")
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
}
