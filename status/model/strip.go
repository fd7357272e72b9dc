package model

// Strip is a bar across the section, of segments side by side, each as wide
// as its share of what the strip shows (a Redis Cluster's hash slots by
// owner, or by keys). Every value is already formatted.
type Strip struct {
	// Name, when set, is a class beside "strip": one of the page's
	// ("keys" draws a thinner strip).
	Name string
	// Label says what the strip shows to those who cannot see it.
	Label string
	// Segments lie side by side, in order.
	Segments []Segment
	// Marks lie over the segments, each at its own offset (slots moving).
	Marks []Segment
	// Legend, when set, is written under the strip.
	Legend []LegendEntry
	// Caption is a paragraph under the strip and its legend.
	Caption []Span
}

// Segment is a piece of a strip, or a mark over it.
type Segment struct {
	// Width is its share of the strip's width and Left a mark's offset
	// from the strip's start, both in percent ("12.5000").
	Width, Left string
	// Color is a #rrggbb colour, the page refuses anything else; empty
	// leaves it to the class.
	Color string
	// Class is how the page draws it beyond its colour, one of its strip
	// classes: st-<state> hatches a segment in trouble (st-pfail, st-fail,
	// st-noaddr, st-handshake, st-unassigned), moving stripes a mark. The
	// page drops a class that is not a plain name.
	Class string
	// Title is what the segment is, shown when pointed at.
	Title string
	// Attrs are its data-* attributes, in order, as Row's.
	Attrs []Attr
}

// LegendEntry explains a colour or a class of a strip.
type LegendEntry struct {
	// Class and Color as a Segment's; the swatch shows them.
	Class, Color string
	Text         string
}
