package redis

import (
	"testing"

	"github.com/failover-exporter/failover_exporter/systems/redis/proto"
)

// TestKeyMap: the slot map shaded by keys. Master B (slots 8192-16383, 8,300
// keys) has two hot slots counted exactly and 300 keys shared by its other
// 8190 slots; master A is not reachable, so its slots count none.
func TestKeyMap(t *testing.T) {
	s := failingOver()
	if newKeyMap(s) != nil {
		t.Fatal("a key map without slot stats; want none")
	}
	b := &s.Nodes[1]
	b.Keys = 8300
	hot := SlotStat{Slot: 9000, Keys: 5000, CPUMicroseconds: 1_500_000, NetworkBytesIn: 2048, NetworkBytesOut: 300}
	warm := SlotStat{Slot: 16383, Keys: 3000}
	b.SlotStats = &SlotStats{ByKeys: []SlotStat{hot, warm}, Usage: true, ByCPU: []SlotStat{hot}}
	km := newClusterView(s).Keys
	if km == nil || len(km.Bands) != keyBands {
		t.Fatalf("key map %+v, want %d bands", km, keyBands)
	}
	share := 300.0 / 8190
	const width = redisproto.SlotCount / keyBands
	for i, band := range km.Bands {
		if band.First != i*width || band.Last != (i+1)*width-1 {
			t.Errorf("band %d covers %d-%d", i, band.First, band.Last)
		}
		want, hottest := 0.0, -1
		switch {
		case band.First >= 8192 && band.First <= 9000 && 9000 <= band.Last:
			want, hottest = 5000+share*(width-1), 9000
		case band.Last == 16383:
			want, hottest = 3000+share*(width-1), 16383
		case band.First >= 8192:
			want = share * width
		}
		if band.Keys != int64(want+0.5) || band.Hottest != hottest {
			t.Errorf("band %d-%d: %d keys, hottest %d; want %.0f, %d", band.First, band.Last, band.Keys, band.Hottest, want, hottest)
		}
	}
	// The band of slot 9000 is the darkest, an unread master's the palest.
	if c := km.Bands[9000/width].Color; c != "#0b3d91" {
		t.Errorf("hottest band %s, want the darkest shade #0b3d91", c)
	}
	if c := km.Bands[0].Color; c != "#eef2f7" {
		t.Errorf("band without keys %s, want the palest shade #eef2f7", c)
	}
	if len(km.Hot) != 2 || km.Hot[0].Slot != 9000 || km.Hot[0].Owner != "127.0.0.1:7001" || km.Hot[0].CPU != "1.500 s" ||
		km.Hot[0].NetworkIn != "2.0 KiB" || km.Hot[0].NetworkOut != "300 B" || km.Hot[1].Slot != 16383 || !km.Usage {
		t.Errorf("hot slots %+v", km.Hot)
	}
}
