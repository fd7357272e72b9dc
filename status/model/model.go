// Package model holds the status page's view models: what one cluster's
// section shows, as plain values already counted, bounded and formatted.
// Each system builds them from its own snapshots (a Views function next to
// its collector); the page only renders them, so it links no client
// library and never reads a snapshot. It imports nothing of the exporter
// (a test holds it to that), so that every system can build it.
package model

// Cluster is one cluster's part of the status page. Parts with the same
// System and Name make one section: a write canary's part joins its
// cluster's. Every system's section is its head, its generic parts (stats,
// notes, tables and strips) and its events, so a new system needs no
// template work.
type Cluster struct {
	// System is the system's name ("kafka", "redis"...): with Name it
	// names the cluster, as in the event log (names are unique only within
	// a system).
	System string
	Name   string
	// Head is the cluster's refresh state; nil in a part that only adds to
	// a cluster's section, such as a canary's.
	Head *Head

	// Title is the section's heading; empty for the system's own (or
	// "<system> cluster <name>").
	Title string
	// Generic parts (parts.go, strip.go): boxes in the summary row,
	// paragraphs under it and tables, some with a strip. The parts of one
	// section add up.
	Stats  []Stat
	Notes  []Note
	Tables []Table
}

// Head is what every system shows: how its watcher's refreshes go.
type Head struct {
	Up bool
	// HasData is true once a snapshot was read; the system's part is from
	// the last successful refresh, stale when Up is false.
	HasData   bool
	LastError string
	// LastOK is when the last refresh succeeded, as an age ("3s ago");
	// empty when none did.
	LastOK    string
	Refreshes uint64
	Failures  uint64
}
