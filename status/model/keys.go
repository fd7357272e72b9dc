package model

// KeyMap shades a Redis Cluster's slot map by keys, from each master's
// hottest slots (slot_stats) and its key count.
type KeyMap struct {
	// Bands split the 16384 slots into equal runs, in slot order.
	Bands []KeyBand
	// Hot are the cluster's hottest slots by keys, most first, bounded.
	Hot []HotSlot
	// Usage is true when some master counts CPU and network per slot, so
	// that Hot's CPU and network columns mean something.
	Usage bool
}

// KeyBand is a run of slots shaded by the keys in it.
type KeyBand struct {
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

// HotSlot is one of the cluster's hottest slots.
type HotSlot struct {
	Slot  int
	Keys  int64
	Owner string
	// CPU ("1.2 s") and network ("3.4 MiB") counters, empty when the
	// server does not count them.
	CPU, NetworkIn, NetworkOut string
}
