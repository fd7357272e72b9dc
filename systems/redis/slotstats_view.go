package redis

import (
	"fmt"
	"math"
	"slices"

	"github.com/failover-exporter/failover_exporter/systems/redis/proto"
)

// keyBands is how many equal bands the status page's key map has: 128
// slots each, narrow enough to show a hot region, few enough for a page.
const keyBands = 128

// maxHotSlots bounds the status page's table of hottest slots.
const maxHotSlots = 10

// keyMap shades a cluster's slot map by keys, from each master's hottest
// slots (slot_stats) and its key count.
type keyMap struct {
	// Bands split the 16384 slots into equal runs, in slot order.
	Bands []keyBand
	// Hot are the cluster's hottest slots by keys, most first, bounded.
	Hot []hotSlot
	// Usage is true when some master counts CPU and network per slot, so
	// that Hot's CPU and network columns mean something.
	Usage bool
}

// keyBand is a run of slots shaded by the keys in it.
type keyBand struct {
	First, Last int
	// Keys is exact for the masters' hottest slots and, for the rest of
	// each master's slots, its remaining keys shared evenly among them.
	Keys int64
	// Color is a #rrggbb shade: darker holds more keys.
	Color string
	// Percent is the band's share of the strip's width.
	Percent string
	// Hottest is the band's hottest slot among those counted exactly, -1
	// when none is.
	Hottest     int
	HottestKeys int64
}

// hotSlot is one of the cluster's hottest slots.
type hotSlot struct {
	Slot  int
	Keys  int64
	Owner string
	// CPU ("1.2 s") and network ("3.4 MiB") counters, empty when the
	// server does not count them.
	CPU, NetworkIn, NetworkOut string
}

// newKeyMap shades the slot map by keys, for the status page. The masters'
// hottest slots (slot_stats) count exactly; each master's other keys
// (DBSIZE minus those) are shared evenly among its other slots, which is
// all the exporter knows of them. nil when no master's slot stats were read.
func newKeyMap(s *Snapshot) *keyMap {
	read := false
	for i := range s.Nodes {
		read = read || s.Nodes[i].SlotStats != nil
	}
	if !read {
		return nil
	}
	km := &keyMap{}
	keys := countSlotKeys(s)
	km.Usage = keys.usage
	bandKeys, hottest := keys.bands(s.SlotRanges)
	const width = redisproto.SlotCount / keyBands
	most := slices.Max(bandKeys)
	for b := range keyBands {
		band := keyBand{First: b * width, Last: (b+1)*width - 1, Keys: int64(bandKeys[b] + 0.5),
			Color: keyShade(bandKeys[b], most), Percent: fmt.Sprintf("%.4f", 100.0/keyBands), Hottest: hottest[b]}
		if hottest[b] >= 0 {
			band.HottestKeys = keys.exact[hottest[b]]
		}
		km.Bands = append(km.Bands, band)
	}
	km.Hot = keys.hotRows()
	return km
}

// slotKeyCounts is what newKeyMap knows of the slots' keys: per slot, the exact
// count where known (exact, with the slot's owner), else the owner's share
// of its other keys (share, by master id).
type slotKeyCounts struct {
	exact  map[int]int64
	owners map[int]*Node
	share  map[string]float64
	hot    []SlotStat
	usage  bool // some master's slot stats have usage figures
}

func countSlotKeys(s *Snapshot) slotKeyCounts {
	k := slotKeyCounts{exact: map[int]int64{}, owners: map[int]*Node{}, share: map[string]float64{}}
	for i := range s.Nodes {
		n := &s.Nodes[i]
		if n.Role != RoleMaster || n.Slots == 0 || !n.Reachable {
			continue
		}
		rest := n.Keys
		others := n.Slots
		if st := n.SlotStats; st != nil {
			k.usage = k.usage || st.Usage
			for _, h := range st.ByKeys {
				k.exact[h.Slot] = h.Keys
				k.owners[h.Slot] = n
				rest -= h.Keys
				others--
				k.hot = append(k.hot, h)
			}
		}
		if others > 0 && rest > 0 {
			k.share[n.ID] = float64(rest) / float64(others)
		}
	}
	return k
}

// bands adds up the keys of each band's slots, and finds each band's
// hottest slot of exact count (-1 for none).
func (k *slotKeyCounts) bands(ranges []SlotRange) (bandKeys []float64, hottest []int) {
	bandKeys = make([]float64, keyBands)
	hottest = make([]int, keyBands)
	for b := range hottest {
		hottest[b] = -1
	}
	const width = redisproto.SlotCount / keyBands
	for _, r := range ranges {
		for slot := r.First; slot <= r.Last; slot++ {
			b := slot / width
			if keys, ok := k.exact[slot]; ok {
				bandKeys[b] += float64(keys)
				if hottest[b] < 0 || keys > k.exact[hottest[b]] {
					hottest[b] = slot
				}
				continue
			}
			bandKeys[b] += k.share[r.Owner]
		}
	}
	return bandKeys, hottest
}

// hotRows is the table of the hottest slots, most keys first.
func (k *slotKeyCounts) hotRows() []hotSlot {
	slices.SortFunc(k.hot, func(a, b SlotStat) int {
		if a.Keys != b.Keys {
			if a.Keys > b.Keys {
				return -1
			}
			return 1
		}
		return a.Slot - b.Slot
	})
	var rows []hotSlot
	for _, h := range k.hot[:min(len(k.hot), maxHotSlots)] {
		row := hotSlot{Slot: h.Slot, Keys: h.Keys, Owner: k.owners[h.Slot].Addr}
		if k.owners[h.Slot].SlotStats.Usage {
			row.CPU = fmt.Sprintf("%.3f s", float64(h.CPUMicroseconds)/1e6)
			row.NetworkIn, row.NetworkOut = byteSize(h.NetworkBytesIn), byteSize(h.NetworkBytesOut)
		}
		rows = append(rows, row)
	}
	return rows
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
