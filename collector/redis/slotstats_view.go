package redis

import (
	"fmt"
	"math"
	"slices"

	"github.com/failover-exporter/failover_exporter/internal/redisproto"
	"github.com/failover-exporter/failover_exporter/status/model"
)

// keyBands is how many equal bands the status page's key map has: 128
// slots each, narrow enough to show a hot region, few enough for a page.
const keyBands = 128

// maxHotSlots bounds the status page's table of hottest slots.
const maxHotSlots = 10

// keyMap shades the slot map by keys, for the status page. The masters'
// hottest slots (slot_stats) count exactly; each master's other keys
// (DBSIZE minus those) are shared evenly among its other slots, which is
// all the exporter knows of them. nil when no master's slot stats were read.
func keyMap(s *Snapshot) *model.KeyMap {
	byID := make(map[string]*Node, len(s.Nodes))
	read := false
	for i := range s.Nodes {
		n := &s.Nodes[i]
		byID[n.ID] = n
		read = read || n.SlotStats != nil
	}
	if !read {
		return nil
	}
	km := &model.KeyMap{}
	// Per slot: the exact count where known, else the owner's share.
	exact := map[int]int64{}
	var hot []SlotStat
	owners := map[int]*Node{}
	share := map[string]float64{}
	for i := range s.Nodes {
		n := &s.Nodes[i]
		if n.Role != RoleMaster || n.Slots == 0 || !n.Reachable {
			continue
		}
		rest := n.Keys
		others := n.Slots
		if st := n.SlotStats; st != nil {
			km.Usage = km.Usage || st.Usage
			for _, h := range st.ByKeys {
				exact[h.Slot] = h.Keys
				owners[h.Slot] = n
				rest -= h.Keys
				others--
				hot = append(hot, h)
			}
		}
		if others > 0 && rest > 0 {
			share[n.ID] = float64(rest) / float64(others)
		}
	}
	bandKeys := make([]float64, keyBands)
	hottest := make([]int, keyBands)
	for b := range hottest {
		hottest[b] = -1
	}
	const width = redisproto.SlotCount / keyBands
	for _, r := range s.SlotRanges {
		for slot := r.First; slot <= r.Last; slot++ {
			b := slot / width
			if keys, ok := exact[slot]; ok {
				bandKeys[b] += float64(keys)
				if hottest[b] < 0 || keys > exact[hottest[b]] {
					hottest[b] = slot
				}
				continue
			}
			bandKeys[b] += share[r.Owner]
		}
	}
	most := slices.Max(bandKeys)
	for b := range keyBands {
		band := model.KeyBand{First: b * width, Last: (b+1)*width - 1, Keys: int64(bandKeys[b] + 0.5),
			Color: keyShade(bandKeys[b], most), Percent: fmt.Sprintf("%.4f", 100.0/keyBands), Hottest: hottest[b]}
		if hottest[b] >= 0 {
			band.HottestKeys = exact[hottest[b]]
		}
		km.Bands = append(km.Bands, band)
	}
	slices.SortFunc(hot, func(a, b SlotStat) int {
		if a.Keys != b.Keys {
			if a.Keys > b.Keys {
				return -1
			}
			return 1
		}
		return a.Slot - b.Slot
	})
	for _, h := range hot[:min(len(hot), maxHotSlots)] {
		row := model.HotSlot{Slot: h.Slot, Keys: h.Keys, Owner: owners[h.Slot].Addr}
		if owners[h.Slot].SlotStats.Usage {
			row.CPU = fmt.Sprintf("%.3f s", float64(h.CPUMicroseconds)/1e6)
			row.NetworkIn, row.NetworkOut = byteSize(h.NetworkBytesIn), byteSize(h.NetworkBytesOut)
		}
		km.Hot = append(km.Hot, row)
	}
	return km
}

// keyShade is a band's colour: from a pale blue-grey for no keys to a dark
// blue for the band with the most, linear in keys so that a hot band stands
// out as much as it holds more. Blue, as a healthy master's colours are:
// on the page red and orange mean trouble.
func keyShade(keys, most float64) string {
	const (
		r0, g0, b0 = 0xee, 0xf2, 0xf7
		r1, g1, b1 = 0x0b, 0x3d, 0x91
	)
	f := 0.0
	if most > 0 {
		f = keys / most
	}
	mix := func(a, b int) int { return a + int(math.Round(float64(b-a)*f)) }
	return fmt.Sprintf("#%02x%02x%02x", mix(r0, r1), mix(g0, g1), mix(b0, b1))
}

// byteSize formats a byte count in binary units.
func byteSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	value, exp := float64(n)/unit, 0
	for value >= unit && exp < 4 {
		value /= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", value, "KMGTP"[exp])
}
