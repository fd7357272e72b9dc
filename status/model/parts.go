package model

// The generic parts: a system with no specific part above fills these
// instead, and the page renders them with no template of its own. Every
// value is already formatted.

// Stat is one box of a section's summary row.
type Stat struct {
	// Name identifies it on the page (data-stat).
	Name string
	// Label is above the value, Detail under it ("oldest 45s").
	Label, Value, Detail string
	// Level is "good", "warn", "bad" or empty; the page ignores anything
	// else.
	Level string
}

// Note is a paragraph under the summary row.
type Note struct {
	// Level is "warn", "error" or empty, as Stat's.
	Level string
	// Attrs, when set, identify it on the page instead of data-note
	// (data-canary="degraded"), as Row's.
	Attrs []Attr
	Text  string
	// Spans follow Text: pieces of the paragraph, those with a level
	// marked as such ("Failed: ..." as an error).
	Spans []Span
}

// Span is a piece of a paragraph.
type Span struct {
	// Level is "warn", "error" or empty, as Note's.
	Level string
	Text  string
	// Code writes Text as code (a command, a setting).
	Code bool
}

// Table is a titled part of a section: a table, a strip over a table, or
// a strip alone (no Columns).
type Table struct {
	// Name identifies it on the page (its class).
	Name  string
	Title string
	// Strip, when set, is drawn under the title.
	Strip *Strip
	// Intro is a paragraph before the table.
	Intro string
	// Columns head the table; Rows have a cell per column.
	Columns []Column
	Rows    []Row
	// More counts the rows left out; MoreText says so ("and 5 more
	// topics, worst first").
	More     int
	MoreText string
	// Empty is said instead of a table with columns but no rows
	// ("None.").
	Empty string
	// Note is a paragraph after the table; NoteSpans follow it, as a
	// Note's Spans follow its Text.
	Note      string
	NoteSpans []Span
}

// Column is a table's column.
type Column struct {
	Title string
	// Numeric columns are right-aligned.
	Numeric bool
	// Code columns write their cells as code (node IDs).
	Code bool
}

// Row is one row of a table.
type Row struct {
	// Key identifies it on the page (data-row).
	Key string
	// Level is "good", "warn", "bad" or empty, as Stat's.
	Level string
	// Attrs, when set, stand instead of Key and Level: the row's own
	// attributes, in order (data-broker="3" class="bad").
	Attrs []Attr
	// Indent marks a row that belongs to the one above it (a replica
	// under its master): its first cell is indented behind an arrow.
	Indent bool
	Cells  []string
}

// Attr is an attribute of a row: a data-* attribute, or class with a
// level as its value (an empty class is written class="").
type Attr struct {
	Name, Value string
}
